"""Text helpers shared by retain and reflect."""

from __future__ import annotations

import re

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def split_sentences(text: str) -> list[str]:
    """The sentences of `text`, split after '.', '!' or '?' followed by whitespace."""
    return [s for s in _SENTENCE_END.split(text.strip()) if s]
