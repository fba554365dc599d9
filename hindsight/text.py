"""Text helpers shared by retain, recall and reflect: text made safe to store, private spans, sentences."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_PRIVATE_TAG = re.compile(r"<\s*(/?)\s*private\s*>", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# A character that shows: not whitespace, a control, a zero-width or direction mark, a BOM or a lone surrogate.
_VISIBLE = re.compile(r"[^\s\x00-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff\ud800-\udfff]")


def flat(text: str) -> str:
    """The text with each run of whitespace one space, so that a quote matches across line breaks."""
    return " ".join(text.split())


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


@dataclass(frozen=True)
class Redacted:
    """Text with its <private> spans blanked (the same length, so offsets still point into the original), and the
    (start, end) of each span that hid something."""

    text: str
    hidden: tuple[tuple[int, int], ...] = ()

    def marked(self, marker: str, start: int = 0, end: int | None = None) -> str:
        """`text[start:end]` with each hidden span that starts in it replaced by `marker` (blank without one)."""
        stop = len(self.text) if end is None else end
        if not marker:
            return self.text[start:stop]
        pieces, pos = [], start
        for a, b in self.hidden:
            if start <= a < stop:
                pieces += [self.text[pos:a], marker]
                pos = min(b, stop)
        return "".join([*pieces, self.text[pos:stop]])


def redact_private(text: str) -> Redacted:
    """Blank out <private>...</private> spans, keeping offsets stable. Spans nest (the outermost pair counts), an
    unclosed tag hides the rest, and a stray closing tag is blanked too (it hides nothing)."""
    if "<" not in text:
        return Redacted(text)
    spans: list[tuple[int, int]] = []
    hidden: list[tuple[int, int]] = []
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
                hidden.append(spans[-1])
    if depth:
        spans.append((opened, len(text)))
        hidden.append(spans[-1])
    pieces, pos = [], 0
    for start, end in spans:
        pieces += [text[pos:start], " " * (end - start)]
        pos = end
    return Redacted("".join([*pieces, text[pos:]]), tuple(hidden))


# Joins the messages of a conversation for redaction: no tag can match across it, so only spans cross messages.
_MESSAGE_GAP = "\x00"


def redact_messages(texts: list[str]) -> list[Redacted]:
    """Redact the messages of one conversation as one text: a span opened in a message hides the following messages
    up to its closing tag (one left open hides the rest of the conversation). Each message shows `marker` where its
    part of a span starts (Redacted.marked)."""
    whole = redact_private(_MESSAGE_GAP.join(texts))
    out, start = [], 0
    for text in texts:
        end = start + len(text)
        hidden = tuple((max(a, start) - start, min(b, end) - start) for a, b in whole.hidden if a < end and b > start)
        out.append(Redacted(whole.text[start:end], tuple((a, b) for a, b in hidden if b > a)))
        start = end + len(_MESSAGE_GAP)
    return out


def strip_private(text: str, marker: str = "") -> str:
    """`text` with each <private> span replaced by `marker`; without one, blanked with offsets kept stable."""
    return redact_private(text).marked(marker)


def map_strings(value: Any, change: Callable[[str], str]) -> Any:
    """A copy of parsed JSON (or any nest of lists, tuples and mappings) with `change` applied to every string in it,
    the keys of mappings included; `value` itself when no string changed. Iterative: content as deep as a parser
    reads must not exhaust the stack here."""
    if isinstance(value, str):
        return change(value)
    if not isinstance(value, Mapping | list | tuple):
        return value
    root: list[Any] = [value]
    changed = False
    stack: list[tuple[Any, Any, Any]] = [(root, 0, value)]  # (parent copy, where in it, original)
    while stack:
        parent, where, original = stack.pop()
        if isinstance(original, Mapping):
            copy: Any = {}
            for key, item in original.items():
                new_key = change(key) if isinstance(key, str) else key
                changed |= new_key != key
                copy[new_key] = None
                stack.append((copy, new_key, item))
        elif isinstance(original, list | tuple):
            copy = [None] * len(original)
            stack.extend((copy, i, item) for i, item in enumerate(original))
        else:
            copy = change(original) if isinstance(original, str) else original
            changed |= copy is not original and copy != original
        parent[where] = copy
    return root[0] if changed else value


def private_free(value: Any, marker: str = "") -> Any:
    """`value` with every <private> span of its text replaced by `marker`: a string, or the strings inside lists and
    mappings (keys included), for JSON a caller hands over whole."""
    return map_strings(value, lambda text: strip_private(text, marker) if "<" in text else text)


def has_visible(text: str) -> bool:
    """True when some character of `text` shows (zero-width, direction marks and controls alone do not)."""
    return _VISIBLE.search(text) is not None


def safe_text(text: str) -> str:
    """Text without control characters (but tabs and line breaks) or lone surrogates, which storage cannot hold."""
    return _CONTROL.sub(" ", text).encode("utf-8", "replace").decode("utf-8")


def clean_text(text: str) -> str:
    """Make text safe to store: no control characters or lone surrogates; whitespace runs collapsed."""
    return " ".join(safe_text(text).split())
