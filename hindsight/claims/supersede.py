"""Which claim supersedes which: on one subject and attribute, a later claim supersedes an earlier one when it
changes the value, ends it, or restores a value that had ended. A restatement of the same value supersedes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_WORD = re.compile(r"[a-z0-9]+")
# Words that do not tell two values apart ("the University of Washington" is "University of Washington").
_NEUTRAL = frozenset({"the", "a", "an", "of", "my", "our", "new", "in", "at", "and", "s"})
# Words an initialism skips ("University of Cape Town" is "UCT"; "New York City" keeps its N).
_LINKING = frozenset({"the", "a", "an", "of", "and", "at", "in", "for", "s"})
_MIN_CLIP = 3  # a clipped name keeps at least this many letters ("Obs"): "Va" names too many things


@dataclass(frozen=True)
class TimedClaim:
    """A claim of a unit as link building sees it: subject key, attribute, value, ended, and when it was said."""

    unit_id: str
    subject: str
    attribute: str
    value: str
    ended: bool
    said: float  # epoch seconds
    additional: bool = False


@dataclass(frozen=True)
class Supersession:
    """The newer unit supersedes the older one on this attribute."""

    newer: str
    older: str
    attribute: str


def _words(value: str) -> frozenset[str]:
    return frozenset(_WORD.findall(value.lower())) - _NEUTRAL


def same_value(a: str, b: str) -> bool:
    """Whether two values name the same thing: one's words contain the other's ("Seattle" and "Capitol Hill,
    Seattle"), or name it short ("Obs" and "Observatory", "UCT" and "the University of Cape Town"). An unnamed value
    is the same as none."""
    wa, wb = _words(a), _words(b)
    return bool(wa and wb) and (_shortens(wa, b) or _shortens(wb, a))


def _shortens(words: frozenset[str], value: str) -> bool:
    """Whether each of `words` is a word of `value` or its clipped start ("Obs" of "Observatory"), or they are one
    word made of the initials of `value`'s words ("UCT")."""
    full = _WORD.findall(value.lower())
    initials = "".join(w[0] for w in full if w not in _LINKING)
    if len(words) == 1 and len(initials) > 1 and next(iter(words)) == initials:
        return True
    return all(any(w == x or (len(w) >= _MIN_CLIP and w.isalpha() and x.startswith(w)) for x in full)
               for w in words)


def family(attribute: str) -> str:
    """"club" of "club:running": claims are compared within a family."""
    return attribute.partition(":")[0]


def compatible(a: str, b: str) -> bool:
    """Whether two attributes of a family can be the same one: equal, or one of them unqualified ("club" may be
    the running club; "club:running" is not the book club)."""
    return a == b or (family(a) == family(b) and (":" not in a or ":" not in b))


def supersedes(new: TimedClaim, old: TimedClaim) -> bool:
    """Whether `new` supersedes `old` (same subject assumed)."""
    if new.said <= old.said or new.unit_id == old.unit_id or not compatible(new.attribute, old.attribute):
        return False
    if new.additional and not new.ended:  # a second job, another club: beside the old value
        return False
    if old.ended:
        return not new.ended
    if not old.value and not new.ended:  # "I've been seeing someone", then "Claire and I are together": named now
        return False
    if new.ended:  # an ending names the value loosely: "quit the bowling league" ends "the Tuesday night league"
        return not new.value or bool(_words(new.value) & _words(old.value))
    return not same_value(new.value, old.value)


def supersessions(new: Iterable[TimedClaim], existing: Iterable[TimedClaim]) -> list[Supersession]:
    """The supersessions that new claims bring, among themselves and with the existing claims: `b` supersedes
    `a` when nothing said between them already did. Claims said at the same time (one session) all supersede what
    came before: their order within the session is not known. At least one of each pair is new."""
    fresh = list(new)
    fresh_units = {c.unit_id for c in fresh}
    groups: dict[tuple[str, str], list[TimedClaim]] = {}
    for claim in [*existing, *fresh]:
        groups.setdefault((claim.subject, family(claim.attribute)), []).append(claim)
    out: dict[Supersession, None] = {}
    for claims in groups.values():
        claims.sort(key=lambda c: (c.said, c.unit_id))
        for i, old in enumerate(claims):
            first: float | None = None
            for newer in claims[i + 1 :]:
                if first is not None and newer.said > first:
                    break  # later claims supersede the ones that superseded this
                if not supersedes(newer, old):
                    continue
                first = newer.said
                if old.unit_id in fresh_units or newer.unit_id in fresh_units:
                    out[Supersession(newer.unit_id, old.unit_id, old.attribute)] = None
    return list(out)
