"""The offline observer: the observation log written from retained units, with no LLM.

Each world unit holds a person's turn (and the agent's reply, which is left out: the log is what people said). Of
the turn, the sentences that state something are kept, each with its time expressions resolved to dates on the
bank's clock ("last week [2024-06-03 to 2024-06-09]"), and the entry takes the highest priority of its sentences:

- high: what a reader must not lose about the speaker: a state claim (hindsight/claims: where they live and work,
  diet, partner, ...), or a first-person sentence that states a plan with a date ("I fly to Lisbon on the 3rd"), a
  change of state (moved, married, a new job, retired), a health matter (diagnosed, surgery, allergic) or a named
  life event (a wedding, a funeral, a graduation).
- medium: a preference ("I love Thai food", "can't stand horror films") or any other first-person statement: what
  makes an answer fit the person.
- low: the rest, and every question (a question asks; it states nothing to keep): the condenser drops these first.

Turns that are only small talk ("thanks!", "ok", "hi there") are not logged. Opinions and observations are the
agent's inferences and experience units its own actions: the log holds none of them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, tzinfo

from hindsight.claims.extract import claims_in
from hindsight.models import LogEntry, MemoryUnit, Network, Priority
from hindsight.recall.excerpt import reply_start
from hindsight.temporal.expressions import find_time_expressions
from hindsight.temporal.values import in_zone
from hindsight.text import split_sentences

# The networks the observer reads: what people said.
OBSERVED_NETWORKS = (Network.WORLD,)
PRIORITY_RANK = {Priority.HIGH: 0, Priority.MEDIUM: 1, Priority.LOW: 2}  # the order entries are kept in
_WHO = re.compile(r"^([^:\n]{1,64}): ")
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'll|i'd|me|my|mine|myself|we|we're|we've|we'll|our|us)\b", re.I)
# A plan counts only with a date; the others name a change of state, a health matter or a life event by themselves.
_PLAN = re.compile(r"\b(?:plan(?:s|ned|ning)?|going to|gonna|about to|will|shall|scheduled|booked|appointment|"
                   r"deadline|reservation|trip|flight)\b|'ll\b", re.I)
_LIFE = re.compile(
    r"\b(?:moved|moving (?:to|in|out|house)|relocat\w*|married|engaged|divorced|separated|broke up|pregnant|"
    r"gave birth|was born|graduated|promoted|got (?:hired|fired)|laid off|quit my job|retired|adopted|new job|"
    r"new (?:house|home|apartment)|bought a (?:house|home|car|flat|apartment)|passed away|died|"
    r"diagnos\w*|surgery|allerg\w*|hospital\w*|injur\w*|medication|chemo\w*|therapy|illness|disease|"
    r"wedding|funeral|graduation|anniversary|baby shower|job interview|retirement)\b", re.I)
_PREFERENCE = re.compile(
    r"\b(?:like|likes|love|loves|hate|hates|prefer|prefers|enjoy|enjoys|favou?rite|can't stand|cannot stand|"
    r"fan of|into|obsessed with|not a fan)\b", re.I)
_SMALL_TALK = re.compile(
    r"^(?:(?:hi|hello|hey|thanks|thank you|thx|ok|okay|sure|great|cool|nice|awesome|perfect|bye|goodbye|good "
    r"(?:morning|night|evening|afternoon)|lol|haha|yes|no|yeah|yep|nope|got it|sounds good|see you|cheers)"
    r"(?: so much| a lot| there| again)?[\s!.,?:)]*)+$", re.I)
_MAX_SENTENCES = 3  # of one turn, the highest priority first: the log is dense


def observe_units(units: Sequence[MemoryUnit], scope: str, now: datetime, zone: tzinfo) -> list[LogEntry]:
    """The log entries of the units (one at most per unit), oldest said first; the time they speak of resolved on
    the bank's clock (`zone`)."""
    entries = [e for u in units if u.network in OBSERVED_NETWORKS if (e := _entry(u, scope, now, zone)) is not None]
    return sorted(entries, key=lambda e: e.said_at)


def sentence_priority(sentence: str, said_at: datetime) -> Priority:
    """The priority of one sentence of a person's turn, by the rules of this module's docstring."""
    if sentence.rstrip().endswith("?"):
        return Priority.LOW
    if any(not c.topic for c in claims_in(sentence)):
        return Priority.HIGH
    first = _FIRST_PERSON.search(sentence) is not None
    if first and (_LIFE.search(sentence) or (_PLAN.search(sentence) and find_time_expressions(sentence, said_at))):
        return Priority.HIGH
    return Priority.MEDIUM if first or _PREFERENCE.search(sentence) else Priority.LOW


def person_turn(unit: MemoryUnit) -> tuple[str, str]:
    """Who spoke the unit's first turn, and what they said (without the agent's reply, told by the unit's source
    roles, not by a name)."""
    reply = reply_start(unit.text, unit.source.agent_names)
    if reply == 0:
        return "", ""  # the agent's reply alone
    said = unit.text if reply is None else unit.text[:reply]
    who = _WHO.match(said)
    return (who.group(1), said[who.end():].strip()) if who else ("", said.strip())


def _entry(unit: MemoryUnit, scope: str, now: datetime, zone: tzinfo) -> LogEntry | None:
    who, said = person_turn(unit)
    sentences = [s.strip() for s in split_sentences(said) if s.strip() and not _SMALL_TALK.match(s.strip())]
    if not sentences:
        return None
    # The store keeps the instant (UTC): "tomorrow" is the day after the day it was on the bank's clock.
    said_at = in_zone(unit.mentioned_at, zone)
    ranked = sorted(((sentence_priority(s, said_at), i, s) for i, s in enumerate(sentences)),
                    key=lambda r: (PRIORITY_RANK[r[0]], r[1]))
    kept = sorted(ranked[:_MAX_SENTENCES], key=lambda r: r[1])
    text = " ".join(_resolved(s, said_at) for _, _, s in kept)
    dated = unit.metadata.get("time_source") == "expression"
    return LogEntry(
        scope=scope, priority=ranked[0][0], text=f"{who}: {text}" if who else text, observed_at=now,
        said_at=unit.mentioned_at, refers_start=unit.occurred_start if dated else None,
        refers_end=unit.occurred_end if dated else None, sources=[unit.id],
    )


def _resolved(sentence: str, said_at: datetime) -> str:
    """The sentence with the dates of its time expressions after them: "last week [2024-06-03 to 2024-06-09]"."""
    out, at = [], 0
    for span in find_time_expressions(sentence, said_at):
        found = sentence.find(span.text, at)
        if found < 0 or not span.text:
            continue
        end = found + len(span.text)
        first, last = span.start.date(), span.end.date()
        dates = first.isoformat() if first == last else f"{first.isoformat()} to {last.isoformat()}"
        out += [sentence[at:end], f" [{dates}]"]
        at = end
    return "".join([*out, sentence[at:]])
