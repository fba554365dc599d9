"""Validate retain input and normalize it into a Document of turns; private spans never get past here (a marker
takes their place), and every time is aware in its speaker's offset."""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Sequence
from datetime import datetime, timezone, tzinfo
from typing import Any

from pydantic import ValidationError

from hindsight import validate
from hindsight.config import LimitsConfig
from hindsight.errors import ContentTooLargeError, InvalidInputError, ReservedDocumentIdError
from hindsight.models import Document, Message, Turn
from hindsight.temporal.values import parse_time
from hindsight.text import Redacted, clean_text, has_visible, redact_messages, redact_private, strip_private
from hindsight.units import DERIVED_DOCUMENT_PREFIX

log = logging.getLogger(__name__)

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
def _clean_name(name: str | None) -> str | None:
    return clean_text(strip_private(name or "")) or None


def validate_document_id(document_id: Any) -> str | None:
    if document_id is None:
        return None
    validate.identifier(document_id, "document_id")
    if document_id.startswith(DERIVED_DOCUMENT_PREFIX):
        raise ReservedDocumentIdError(
            f"document_id {document_id[:64]!r} is reserved: ids starting with {DERIVED_DOCUMENT_PREFIX!r} hold the "
            "memory the engine derives itself (opinions, observations)"
        )
    return str(document_id)


def _split(text: str, limit: int) -> list[tuple[int, int]]:
    """Spans of at most `limit` characters, cut at sentence ends where possible."""
    spans: list[tuple[int, int]] = []
    start = 0
    while len(text) - start > limit:
        window = text[start : start + limit]
        cuts = [m.end() for m in _SENTENCE_END.finditer(window) if m.end() > limit // 3]
        cut = cuts[-1] if cuts else (window.rfind(" ") + 1 or limit)
        spans.append((start, start + cut))
        start += cut
    spans.append((start, len(text)))
    return [(a, b) for a, b in spans if text[a:b].strip()]


def _coerce_messages(content: Sequence[Any], limits: LimitsConfig) -> list[Message]:
    messages = []
    for i, item in enumerate(content):
        try:
            m = item if isinstance(item, Message) else Message.model_validate(item)
        except ValidationError as exc:
            raise InvalidInputError(f"message {i} is invalid: {exc.errors()[0]['msg']}") from exc
        if m.id is not None:
            validate.identifier(m.id, f"message {i} id")
        validate.bounded_text(m.speaker, f"message {i} speaker", limits.max_name_chars)
        validate.bounded_text(m.role, f"message {i} role", limits.max_name_chars)
        messages.append(m)
    return messages


def _check_sizes(texts: list[str], limits: LimitsConfig) -> None:
    if len(texts) > limits.max_messages:
        raise ContentTooLargeError(f"{len(texts)} messages exceed the limit of {limits.max_messages}")
    total = 0
    for text in texts:
        if len(text) > limits.max_message_chars:
            raise ContentTooLargeError(
                f"a message of {len(text):,} characters exceeds the limit of {limits.max_message_chars:,}"
            )
        total += len(text)
    if total > limits.max_content_chars:
        raise ContentTooLargeError(f"content of {total:,} characters exceeds the limit of {limits.max_content_chars:,}")


def normalize(
    content: Any,
    *,
    timestamp: Any,
    context: Any,
    document_id: Any,
    limits: LimitsConfig,
    max_unit_chars: int,
    zone: tzinfo = timezone.utc,
    private_marker: str = "",
) -> Document:
    """Turn retain arguments into a Document, or raise InvalidInputError without side effects. Naive times are
    clock times in `zone`; a private span of the text or context becomes `private_marker` (retain.timezone and
    retain.private_marker)."""
    default_time = parse_time(timestamp, "timestamp", zone) or datetime.now(zone)
    doc_id = validate_document_id(document_id)
    validate.bounded_text(context, "context", limits.max_context_chars)
    ctx = clean_text(strip_private(context, private_marker)) or None if context else None
    if isinstance(content, str):
        _check_sizes([content], limits)
        if not has_visible(content):
            raise InvalidInputError("content is empty")
        text = redact_private(content)
        turns = [
            Turn(index=i, turn_id=f"c{i}", speaker=None, role=None, text=_chunk_text(text, a, b, private_marker),
                 timestamp=default_time, char_start=a, char_end=b)
            for i, (a, b) in enumerate(_split(text.text, max_unit_chars))
        ]
    elif isinstance(content, (list, tuple)):
        messages = _coerce_messages(content, limits)
        _check_sizes([m.content for m in messages], limits)
        if not messages or not any(has_visible(m.content) for m in messages):
            raise InvalidInputError("content has no non-empty message")
        turns = []
        # A private span may cross messages: the conversation is redacted as one text (text.redact_messages).
        for i, (m, text) in enumerate(zip(messages, redact_messages([m.content for m in messages]), strict=True)):
            when = parse_time(m.timestamp, f"message {i} timestamp", zone) or default_time
            spans = _split(text.text, max_unit_chars)
            for a, b in spans:
                # Names are cleaned like text: a private span in a speaker name is not stored either.
                turns.append(Turn(
                    index=len(turns), turn_id=m.id or f"t{i}", speaker=_clean_name(m.speaker),
                    role=_clean_name(m.role), text=_chunk_text(text, a, b, private_marker), timestamp=when,
                    char_start=a if len(spans) > 1 else None, char_end=b if len(spans) > 1 else None,
                ))
    else:
        raise InvalidInputError(f"content must be a str or a list of messages, got {type(content).__name__}")
    turns = [t for t in turns if t.text]
    if not turns:
        log.info("retain: nothing left after removing private spans")
    digest = content_hash(turns, ctx)
    return Document(document_id=doc_id or f"doc-{digest[:24]}", turns=turns, context=ctx, timestamp=default_time)


def _chunk_text(text: Redacted, start: int, end: int, marker: str) -> str:
    """The stored text of a chunk: cleaned, with its private spans marked; empty when only markers would show."""
    if not has_visible(text.text[start:end]):
        return ""
    return clean_text(text.marked(marker, start, end))


def content_hash(turns: list[Turn], context: str | None) -> str:
    """Hash of what is stored of a document; equal hashes mean re-retaining changes nothing."""
    h = hashlib.sha256((context or "").encode())
    for t in turns:
        h.update(f"\x1e{t.turn_id}\x1f{t.speaker}\x1f{t.role}\x1f{t.timestamp.isoformat()}\x1f{t.text}".encode())
    return h.hexdigest()
