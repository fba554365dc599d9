"""What of a hit goes into the packed context: the person's turn whole, and of a long assistant reply the sentences
that match the query, the rest shown as an elision that says what was left out.

A unit holds a person's turn and the reply that answers it, or a long reply alone; the reply is the agent's own
output and often hundreds of tokens, while what a reader of the context needs of it is the part the query asks
about. The hit keeps its whole text (`RecallHit.text`); only the packed text is an excerpt.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from hindsight.models import ASSISTANT_ROLES
from hindsight.recall.format import TokenCounter
from hindsight.text import split_sentences

# Where a unit's reply starts: a line "assistant: ..." (nlp_extractor._line writes "who: text"; a reply is always
# the window's last turn).
REPLY = re.compile(r"^(?:" + "|".join(sorted(ASSISTANT_ROLES)) + r"): ", re.IGNORECASE | re.MULTILINE)


def _reply(text: str, agent_names: Sequence[str]) -> re.Match[str] | None:
    """The label ("assistant: ", "Ava: ") of the first line the agent wrote in `text`."""
    found = [m for m in [REPLY.search(text)] if m is not None]
    if agent_names:
        named = re.compile("^(?:" + "|".join(re.escape(n) for n in agent_names) + "): ", re.MULTILINE)
        found += [m for m in [named.search(text)] if m is not None]
    return min(found, key=lambda m: m.start(), default=None)


def reply_start(text: str, agent_names: Sequence[str] = ()) -> int | None:
    """Where the agent's reply starts in a unit's text (or an excerpt of it): the first line written under an
    assistant role, or under one of `agent_names` (Source.agent_names: a named assistant, "Ava: ..."); None when
    the text has no reply."""
    found = _reply(text, agent_names)
    return None if found is None else found.start()


_WORD = re.compile(r"[a-z0-9]+")
# Words that say nothing about what a question asks for.
_STOP = frozenset(re.findall(r"\w+", (
    "a an and are as at be been but by can could did do does for from had has have how i if in into is it its me "
    "my of on or our so than that the their them then there these they this to was we were what when where which "
    "who whom why will with would you your about any some just also more most much many often very not no yes"
)))
# A reply keeps its one sentence that adds the most query words to what the person's turn above it says: the rest
# is the agent's elaboration, in the hit's whole text (measured against three and none in docs/DECISIONS.md).
_KEEP = 1
_SAID = (r"said|mentioned|told|recommended|suggested|gave|given|provided|listed|shared|explained|described|"
         r"referred|wrote|written|proposed|advised|outlined|named|noted|came up with|talked|discussed|spoke|"
         r"chatted|went over|covered|agreed")
_SAY = (r"say|mention|tell|recommend|suggest|give|provide|list|share|explain|describe|refer|write|propose|advise|"
        r"outline|name|note|come up with|talk|discuss|cover|agree")
# The agent's own words are the evidence of what it said: "you recommended", "what did you say", "we talked
# about", "our last chat", "your advice".
_ASKS_AGENT = re.compile(
    rf"\b(?:(?:you|we)(?: \w+)? (?:{_SAID})|(?:did|do) (?:you|we)(?: \w+)? (?:{_SAY})|"
    r"our (?:\w+ )?(?:conversation|chat|discussion|talk|exchange|session)s?|"
    r"your (?:\w+ )?(?:recommendation|suggestion|advice|answer|response|reply|list|idea|tip)s?)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Excerpt:
    """A unit's text as packed, and what was left out of it."""

    text: str
    elided_tokens: int  # tokens of the reply not shown
    kept_sentences: int  # sentences of the reply shown


def _stem(word: str) -> str:
    """A word without its commonest inflection, so that "closes" matches "close" and "booked" matches "book"."""
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def query_terms(query: str) -> frozenset[str]:
    """The words of a query that can match evidence: lowercased and stemmed, without function words."""
    return frozenset(_stem(w) for w in _WORD.findall(query.lower()) if w not in _STOP and len(w) > 1)


def asks_agent(query: str) -> bool:
    """Whether a query asks what the agent said (so a reply's matching sentences are evidence, not elaboration)."""
    return _ASKS_AGENT.search(query) is not None


def _pieces(reply: str) -> list[str]:
    """A reply's sentences, lines (list items, headings) counting as sentence ends."""
    return [s for line in reply.split("\n") for s in split_sentences(line)]


@lru_cache(maxsize=64)
def _finder(terms: frozenset[str]) -> re.Pattern[str]:
    """The words (runs of _WORD) that start with one of `terms`: a word's stem is a prefix of it, so only these can
    stem to a term. Scanning for them runs in C, where stemming every word of a reply did not."""
    alternatives = "|".join(re.escape(t) for t in sorted(terms, key=len, reverse=True))
    return re.compile(rf"(?<![a-z0-9])(?:{alternatives})[a-z0-9]*")


def _found(text: str, terms: frozenset[str], finder: re.Pattern[str]) -> set[str]:
    """The `terms` the text holds as a word's stem (`finder`: the _finder of a superset of the terms)."""
    return {s for w in finder.findall(text.lower()) if (s := _stem(w)) in terms}


def _matches(piece: str, terms: frozenset[str], finder: re.Pattern[str]) -> int:
    return len(_found(piece, terms, finder))


_ELISION = "… [{} tokens of the assistant's reply]"
# An elision in packed text, as elision() writes it.
ELIDED = re.compile(re.escape(_ELISION).replace(r"\{\}", r"\d+"))


def elision(tokens: int) -> str:
    return _ELISION.format(tokens)


def excerpt(text: str, terms: frozenset[str], counter: TokenCounter, above: str | None = "",
            agent_names: Sequence[str] = ()) -> Excerpt:
    """The unit text with its reply cut to the sentence that matches the most query terms not in `above` (the
    person's turn packed above the reply; the unit's own turn before its reply always counts) and the sentences
    matching at least half as many (at most _KEEP, the earlier first among equals), in their order. With `above`
    None, when the query asks what the agent said (asks_agent), every term counts. Each run of left-out sentences
    becomes one elision, unless the run is no longer than its elision; a reply adding no term is elided whole, but
    for its first sentence when the unit is the reply alone. The
    reply starts at its first line under an assistant role or one of `agent_names` (reply_start)."""
    found = _reply(text, agent_names)
    if found is None:
        return Excerpt(text, 0, 0)
    head, reply = text[: found.end()], text[found.end():]
    finder = _finder(terms) if terms else None
    need = 1
    if above is not None and finder is not None:
        terms = terms - _found(f"{above} {head}", terms, finder)
        need = max(1, (len(terms) + 1) // 2)  # a sentence that answers the query, not one that shares a word
    pieces = _pieces(reply)
    scores = [_matches(p, terms, finder) for p in pieces] if terms and finder else [0] * len(pieces)
    best = max(scores, default=0)
    if best < need:
        best = 0
    ranked = sorted((i for i, s in enumerate(scores) if best and 2 * s >= best), key=lambda i: -scores[i])
    kept = set(ranked[:_KEEP])
    if not kept and not text[: found.start()].strip():
        kept = {0}  # a reply alone shows its first sentence: an elision alone would say nothing of it
    parts: list[str] = []
    run: list[str] = []
    elided = 0

    def close_run() -> None:
        nonlocal elided
        if not run:
            return
        n = counter.count(" ".join(run))
        if n > counter.count(elision(n)):
            parts.append(elision(n))
            elided += n
        else:
            parts.extend(run)
        run.clear()

    for i, piece in enumerate(pieces):
        if i in kept:
            close_run()
            parts.append(piece)
        else:
            run.append(piece)
    close_run()
    if not elided:
        return Excerpt(text, 0, len(pieces))
    return Excerpt(head + " ".join(parts), elided, len(kept))
