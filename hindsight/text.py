"""Text helpers shared by retain and reflect."""

from __future__ import annotations

import re

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def split_sentences(text: str) -> list[str]:
    """The sentences of `text`, split after '.', '!' or '?' followed by whitespace."""
    return [s for s in _SENTENCE_END.split(text.strip()) if s]


def pack_sentences(text: str, max_chars: int) -> list[str]:
    """Consecutive sentences of `text` joined into passages of at most `max_chars` (a longer sentence stays whole)."""
    out: list[str] = []
    for sentence in split_sentences(text):
        if out and len(out[-1]) + 1 + len(sentence) <= max_chars:
            out[-1] += " " + sentence
        else:
            out.append(sentence)
    return out
