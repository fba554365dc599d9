"""The context block: one text for an agent's system prompt, ordered from the most stable part to the least, so
that a provider's prompt cache keeps serving its beginning from turn to turn.

1. the bank's profile and working memory (the bank's, then the thread's): they change only when updated;
2. the observation log, oldest first, its days absolute ("2024-06-09"): it only grows at its end, and its beginning
   changes only when it is condensed (or loses a forgotten entry);
3. the volatile part: first "now", the query time's day and how long ago each of the log's days was ("3 weeks
   ago: 2024-06-09"), then the memories recalled for this turn, each dated "2024-06-09 (3 weeks ago)": what the
   person said first, then what the agent inferred (opinions and observations), marked as inferences; of a unit
   the log shows, only the agent's reply.

Nothing volatile (the time now, ages, scores, ids) comes before the "now" section. The block holds `budget` tokens
(cl100k_base) at most: working memory is taken first, the log and its "now" section get what is left but a third
(kept for the recalled memories when there is a query), the log's high entries before its medium and low ones when
it does not fit whole, and the recalled memories fill the rest. `log_room` tells the condenser that room, so that
a condensed log fits it whole.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from pydantic import BaseModel

from hindsight.memory_context.observer import PRIORITY_RANK
from hindsight.memory_context.render import day_label, log_text, now_text
from hindsight.models import BankProfile, LogEntry, Network, WorkingMemory
from hindsight.recall.excerpt import ELIDED, reply_start
from hindsight.recall.format import TokenCounter, hit_header
from hindsight.recall.types import RecallHit

_SEPARATOR = "\n\n"
_INFERRED = (Network.OPINION, Network.OBSERVATION)
RECALL_SHARE = 3  # with a query, the log leaves at least 1/RECALL_SHARE of what working memory left for recall
VOLATILE_SECTIONS = ("now", "recalled")  # the sections after the stable part, in their order


class ContextSection(BaseModel):
    """One section of a block: its name ("profile", "working_memory", "thread_working_memory", "observations",
    "now", "recalled"), its text (heading included) and its tokens."""

    name: str
    text: str
    tokens: int


class ContextBlock(BaseModel):
    """The context for one turn. `stable_prefix`: how many leading characters of `text` are the same as in the
    previous block of the same thread (0 for the first)."""

    text: str
    sections: list[ContextSection]
    tokens: int
    budget: int
    query_time: datetime
    stable_prefix: int = 0
    recalled: list[str] = []  # the units the recalled section shows, in its order (a reply's question first)
    logged: list[str] = []  # the units the observation log's shown entries were written from


@dataclass(frozen=True)
class BlockParts:
    """What a block is made of before it is fitted to the budget."""

    profile: BankProfile
    memories: list[tuple[str, WorkingMemory]]  # section name and memory, bank's first
    log: list[LogEntry]


# Recall for the block: the hits for a token budget.
Recall = Callable[[int], list[RecallHit]]


def build(parts: BlockParts, recall: Recall | None, budget: int, query_time: datetime,
          counter: TokenCounter) -> ContextBlock:
    """The block of `parts` and the recalled memories, within `budget` tokens."""
    sections = _stable_sections(parts, budget, counter)
    shown = _fit_log(parts.log, _log_room(sections, recall is not None, budget, counter), query_time, counter)
    if shown:
        _add(sections, "observations", log_text(shown, query_time), counter)
    if shown or recall is not None:
        now = now_text(shown, query_time)
        if counter.count(now) <= _room(sections, budget, counter):
            _add(sections, "now", now, counter)
    recalled: list[str] = []
    logged = {s for e in shown for s in e.sources}
    room = _room(sections, budget, counter)
    if recall is not None and room > 0:
        hits = sorted(recall(room), key=lambda h: h.unit.network in _INFERRED)  # stable: the person's first
        text, recalled = _fit_recalled(hits, logged, room, query_time, counter)
        _add(sections, "recalled", text, counter)
    text = _SEPARATOR.join(s.text for s in sections)
    while sections and counter.count(text) > budget:  # tokens merged across a separator: never seen, but a bound
        sections.pop()
        text = _SEPARATOR.join(s.text for s in sections)
    return ContextBlock(text=text, sections=sections, tokens=counter.count(text), budget=budget,
                        query_time=query_time, recalled=recalled, logged=sorted(logged))


def log_room(parts: BlockParts, budget: int, counter: TokenCounter) -> int:
    """The tokens a block of `parts` with a query leaves the log (`log_tokens`): what a condensed log must fit."""
    return _log_room(_stable_sections(parts, budget, counter), True, budget, counter)


def log_tokens(entries: list[LogEntry], query_time: datetime, counter: TokenCounter) -> int:
    """The tokens a block spends on showing `entries`: the log's section and the "now" section with their ages."""
    return counter.count(log_text(entries, query_time) + _SEPARATOR + now_text(entries, query_time))


def _stable_sections(parts: BlockParts, budget: int, counter: TokenCounter) -> list[ContextSection]:
    """The profile and working memory sections, each cut to what is left of the budget."""
    sections: list[ContextSection] = []
    stable = [("profile", "## Profile", _profile_lines(parts.profile))]
    stable += [(name, _MEMORY_HEADINGS[name], m.content.strip().splitlines()) for name, m in parts.memories]
    for name, heading, lines in stable:
        if lines:
            _add(sections, name, _fit_lines(heading, lines, _room(sections, budget, counter), counter), counter)
    return sections


def _room(sections: list[ContextSection], budget: int, counter: TokenCounter) -> int:
    """What the budget leaves after the sections and a separator before the next one."""
    return budget - sum(s.tokens for s in sections) - counter.count(_SEPARATOR) * len(sections)


def _log_room(sections: list[ContextSection], recalls: bool, budget: int, counter: TokenCounter) -> int:
    """The log's share of what the stable sections leave: all of it, or with a query, all but a third."""
    left = _room(sections, budget, counter)
    return left - (left // RECALL_SHARE if recalls else 0)


_MEMORY_HEADINGS = {"working_memory": "## Working memory", "thread_working_memory": "## Working memory of this thread"}
_RECALL_HEADING = "## Recalled for this turn"


def _add(sections: list[ContextSection], name: str, text: str | None, counter: TokenCounter) -> None:
    if text:
        sections.append(ContextSection(name=name, text=text, tokens=counter.count(text)))


def _profile_lines(profile: BankProfile) -> list[str]:
    lines = [f"Name: {profile.name.strip()}"] if profile.name.strip() else []
    return lines + profile.background.strip().splitlines()


def _fit_lines(heading: str, lines: list[str], room: int, counter: TokenCounter) -> str | None:
    """The heading and as many of the lines as fit, with a line saying how many were left out."""
    for keep in range(len(lines), 0, -1):
        left = len(lines) - keep
        tail = [f"… [{left} more lines left out: the budget is too small]"] if left else []
        text = "\n".join([heading, *lines[:keep], *tail])
        if counter.count(text) <= room:
            return text
    return None


def _fit_log(log: list[LogEntry], room: int, query_time: datetime, counter: TokenCounter) -> list[LogEntry]:
    """The whole log if it fits `room` (`log_tokens`); else its high entries, then medium, then low, newest first,
    as many as fit, shown in the log's order."""
    if not log or log_tokens(log, query_time, counter) <= room:
        return log
    order = sorted(range(len(log)), key=lambda i: (PRIORITY_RANK[log[i].priority], -i))
    chosen: set[int] = set()
    for i in order:
        trial = [log[j] for j in sorted(chosen | {i})]
        if log_tokens(trial, query_time, counter) <= room:
            chosen.add(i)
    return [log[j] for j in sorted(chosen)]


def _hit_line(hit: RecallHit, logged: set[str], query_time: datetime) -> str | None:
    """A recalled unit as a dated item; of a unit the log shows, only the agent's reply (None when it has none)."""
    unit = hit.unit
    body = hit.context.removeprefix(hit_header(unit, query_time) + " ") if hit.context else unit.text
    if unit.id in logged:
        reply = reply_start(body, unit.source.agent_names)
        if reply is None:
            return None
        body = body[reply:]
    # A turn shown as its speaker and the elided length of its reply says nothing: it is left out, and a unit with
    # nothing else is no line at all, so that its room goes to the next hit.
    body = "\n".join(line for line in body.strip().split("\n")
                     if not ELIDED.fullmatch(line.split(": ", 1)[-1].strip()))
    if not body:
        return None
    mark = ""
    if unit.network in _INFERRED:
        confidence = f", confidence {unit.confidence:.2f}" if unit.confidence is not None else ""
        mark = f" [inferred by the agent{confidence}]"
    body = body.replace("\n", "\n  ")  # a unit's lines, one per turn, stay inside its item
    return f"- {day_label(unit.mentioned_at, query_time)}{mark}: {body}"


def _fit_recalled(hits: list[RecallHit], logged: set[str], room: int, query_time: datetime,
                  counter: TokenCounter) -> tuple[str | None, list[str]]:
    lines: list[str] = []
    ids: list[str] = []
    for hit in hits:
        line = _hit_line(hit, logged, query_time)
        if line is not None and counter.count("\n".join([_RECALL_HEADING, *lines, line])) <= room:
            lines.append(line)
            ids += [*([hit.question.id] if hit.question is not None else []), hit.unit.id]
    return ("\n".join([_RECALL_HEADING, *lines]), ids) if lines else (None, [])


def stable_prefix(previous: str, text: str) -> int:
    """How many leading characters `text` shares with `previous`."""
    return len(os.path.commonprefix([previous, text]))  # noqa: RUF071 - characters wanted, not path parts
