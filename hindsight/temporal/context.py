"""What resolvers in `hindsight.temporal.expressions` read around a match: the reference, the word
before, a preceding "early"/"the end of", and signs of a habit rather than a date."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime

from hindsight.temporal.patterns import (
    FUTURE_TENSE_RE,
    HABITUAL_BEFORE_RE,
    MODIFIER_BEFORE_RE,
    NEXT_WORD_RE,
    PREV_WORD_RE,
)
from hindsight.temporal.vocab import DATE_PREPOSITIONS, NOT_PLURAL_NOUNS


@dataclass(frozen=True)
class Context:
    """What resolvers need: the text, its lower-cased copy and the reference."""

    text: str
    low: str
    ref: datetime
    today: date
    strict: bool


def prev_word(c: Context, start: int) -> str:
    """The word before `start`, skipping one "the"."""
    m = PREV_WORD_RE.search(c.low, max(0, start - 24), start)
    return m.group("w") if m else ""


def modifier_before(c: Context, start: int) -> re.Match[str] | None:
    """A preceding "early"/"mid-"/"late" or "the beginning/end/middle of"."""
    return MODIFIER_BEFORE_RE.search(c.low, max(0, start - 32), start)


def in_date_context(c: Context, start: int, prepositions: frozenset[str] = DATE_PREPOSITIONS) -> bool:
    """Whether a bare month/season/year at `start` reads as a date ("in May", "early 2019")."""
    if not c.strict:
        return True
    return prev_word(c, start) in prepositions or modifier_before(c, start) is not None


def after_every(c: Context, start: int) -> bool:
    """Whether "every"/"each" comes right before `start`: "every Monday", "every other May"."""
    return HABITUAL_BEFORE_RE.search(c.low, max(0, start - 24), start) is not None


def before_plural_noun(c: Context, end: int) -> bool:
    """Whether the word right after `end` looks like a plural noun: "brunches", "mornings"."""
    m = NEXT_WORD_RE.match(c.low, end)
    if m is None:
        return False
    word = m["w"]
    return len(word) > 3 and word[-1] == "s" and not word.endswith(("ss", "us", "is")) and word not in NOT_PLURAL_NOUNS


def in_future_tense(c: Context, start: int, end: int) -> bool:
    """Whether the sentence holding `start:end` speaks of the future ("I'll send it on Tuesday", "we're going to
    visit on Friday"), where a bare weekday means the next one rather than the last."""
    first = max(c.low.rfind(stop, 0, start) for stop in (". ", "! ", "? ", "\n")) + 1
    ends = [i for i in (c.low.find(stop, end) for stop in (". ", "! ", "? ", "\n")) if i >= 0]
    return FUTURE_TENSE_RE.search(c.low, first, min(ends, default=len(c.low))) is not None
