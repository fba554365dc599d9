"""Excerpts: a hit longer than `recall.hit_max_tokens` is cut, so that a budget holds more memories, not a few long
replies.

A unit's text is one line per turn, its first turn first (a person's message, then the reply that joins it), so an
excerpt keeps the leading lines that fit whole. When not even the first line fits, that line is cut at a word
boundary. An excerpt ends in an ellipsis and says which source turns it still carries whole: the turns of the kept
lines when the unit has one line per source turn, else none.
"""

from __future__ import annotations

from dataclasses import dataclass

from hindsight.recall.format import TokenCounter

ELLIPSIS = " …"


@dataclass(frozen=True)
class Excerpt:
    """The text handed on for a hit, its tokens, the source turns it carries whole, and whether it was cut."""

    text: str
    tokens: int
    whole_turns: list[str]
    cut: bool


def excerpt(header: str, text: str, turn_ids: list[str], max_tokens: int | None, counter: TokenCounter) -> Excerpt:
    """The hit f"{header} {text}", cut to at most max_tokens tokens (None: never cut) as the module says."""
    tokens = counter.count_hit(header, text)
    if max_tokens is None or tokens <= max_tokens:
        return Excerpt(f"{header} {text}", tokens, list(turn_ids), False)
    lines = text.split("\n")
    kept = 0
    while kept < len(lines) and counter.count(_joined(header, lines[: kept + 1])) <= max_tokens:
        kept += 1
    if kept:
        out = _joined(header, lines[:kept])
        whole = list(turn_ids[:kept]) if len(lines) == len(turn_ids) else []
    else:
        out, whole = counter.cut(f"{header} {lines[0]}", max_tokens, ELLIPSIS), []
    return Excerpt(out, counter.count(out), whole, True)


def _joined(header: str, lines: list[str]) -> str:
    body = "\n".join(lines)
    return f"{header} {body}{ELLIPSIS}"
