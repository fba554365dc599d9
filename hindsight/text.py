"""Text helpers shared by retain, recall and reflect: text made safe to store, private spans, sentences."""

from __future__ import annotations

import re

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_PRIVATE_TAG = re.compile(r"<\s*(/?)\s*private\s*>", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# A character that shows: not whitespace, a control, a zero-width or direction mark, a BOM or a lone surrogate.
_VISIBLE = re.compile(r"[^\s\x00-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff\ud800-\udfff]")


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


def strip_private(text: str) -> str:
    """Blank out <private>...</private> spans, keeping offsets stable. Spans nest (the outermost pair counts), an
    unclosed tag hides the rest, and a stray closing tag is blanked too."""
    if "<" not in text:
        return text
    spans: list[tuple[int, int]] = []
    depth = opened = 0
    for m in _PRIVATE_TAG.finditer(text):
        if not m.group(1):
            opened, depth = (m.start() if depth == 0 else opened), depth + 1
        elif depth == 0:
            spans.append((m.start(), m.end()))
        else:
            depth -= 1
            if depth == 0:
                spans.append((opened, m.end()))
    if depth:
        spans.append((opened, len(text)))
    pieces, pos = [], 0
    for start, end in spans:
        pieces += [text[pos:start], " " * (end - start)]
        pos = end
    return "".join([*pieces, text[pos:]])


def has_visible(text: str) -> bool:
    """True when some character of `text` shows (zero-width, direction marks and controls alone do not)."""
    return _VISIBLE.search(text) is not None


def safe_text(text: str) -> str:
    """Text without control characters (but tabs and line breaks) or lone surrogates, which storage cannot hold."""
    return _CONTROL.sub(" ", text).encode("utf-8", "replace").decode("utf-8")


def clean_text(text: str) -> str:
    """Make text safe to store: no control characters or lone surrogates; whitespace runs collapsed."""
    return " ".join(safe_text(text).split())
