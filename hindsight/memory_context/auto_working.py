"""Working memory updated from what people said (`context.observer: llm` with `context.update_working_memory`): after
an observe that logged new high-priority entries, the LLM is given the scope's current working memory, its format
(template or JSON schema) and those entries, and writes the whole new working memory.

Only the log's entries are given, and the log holds only what people said: the person's statements are the
authority, and the prompt forbids writing an inference over them. The result is a new version whose note names the
observer and the units; a reply that fails, or that the schema (or the size limit) refuses, leaves the current
version in place, with a warning.
"""

from __future__ import annotations

import json
import logging
from datetime import tzinfo
from typing import Any

from pydantic import AliasChoices, ConfigDict, Field, field_validator

from hindsight.errors import InvalidInputError, LLMError
from hindsight.llm.base import LLM
from hindsight.llm.schema import ModelFacing
from hindsight.memory_context.prompts import working_messages
from hindsight.memory_context.working import WorkingMemories
from hindsight.models import LogEntry, Priority, WorkingMemory
from hindsight.text import safe_text

log = logging.getLogger(__name__)

NOTE_UNITS = 10  # unit ids named in a version's note; the rest are counted


class _Update(ModelFacing):
    # Not LenientOutput, whose cleaning collapses whitespace: markdown keeps its lines.
    model_config = ConfigDict(extra="ignore", populate_by_name=True,
                              json_schema_extra={"required": ["changed", "content"]})

    changed: bool = True

    @field_validator("content", mode="before", check_fields=False)
    @classmethod
    def _storable(cls, value: Any) -> Any:
        return safe_text(value) if isinstance(value, str) else value


class MarkdownUpdate(_Update):
    content: str = Field("", validation_alias=AliasChoices("content", "working_memory", "memory"))


class JsonUpdate(_Update):
    content: Any = Field(None, validation_alias=AliasChoices("content", "working_memory", "memory"))


class WorkingUpdater:
    """Updates a scope's working memory from new high-priority log entries. The caller holds the bank's context
    lock."""

    def __init__(self, llm: LLM, memories: WorkingMemories, max_retries: int) -> None:
        self.llm, self.memories, self.max_retries = llm, memories, max_retries

    def update(self, scope: str, entries: list[LogEntry], zone: tzinfo) -> WorkingMemory | None:
        """The new version written from the high entries of `entries` (dated on the bank's clock, `zone`); None when
        there are none, nothing changed, or the update failed (logged)."""
        high = [e for e in entries if e.priority is Priority.HIGH]
        if not high:
            return None
        current = self.memories.current(scope)
        fmt = self.memories.format()
        model: type[MarkdownUpdate] | type[JsonUpdate] = JsonUpdate if fmt.json_schema is not None else MarkdownUpdate
        try:
            reply = self.llm.structured(working_messages(current.content, fmt, high, zone), model,
                                        max_retries=self.max_retries)
        except LLMError as exc:
            log.warning("working memory of scope %r: the LLM update failed, version %d kept: %s", scope[:64],
                        current.version, exc)
            return None
        content = reply.value.content
        if not reply.value.changed or content is None or _same(content, current.content, fmt.json_schema is not None):
            return None
        if isinstance(content, str) and not content.strip():
            return None  # an empty reply is no update: clearing working memory is for its owner to do
        try:
            return self.memories.update(scope, content, _note(high))
        except InvalidInputError as exc:
            log.warning("working memory of scope %r: the LLM's update is refused, version %d kept: %s", scope[:64],
                        current.version, exc)
            return None


def _same(content: Any, current: str, is_json: bool) -> bool:
    if not is_json:
        return isinstance(content, str) and content.strip() == current.strip()
    try:
        return bool(content == json.loads(current))
    except ValueError:
        return False


def _note(entries: list[LogEntry]) -> str:
    """The note of a version the observer wrote: which units' observations it came from."""
    units = list(dict.fromkeys(s for e in entries for s in e.sources))
    more = f" and {len(units) - NOTE_UNITS} more" if len(units) > NOTE_UNITS else ""
    return f"from the observer: what people said in units {', '.join(units[:NOTE_UNITS])}{more}"
