"""Working memory: what an agent must always know about its user, kept per scope (the bank, or one thread) as
markdown that starts from the bank's template, or as JSON its schema checks. Every update and every revert is a new
version, so each one can be read back and undone."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from pydantic import BaseModel

from hindsight import validate
from hindsight.errors import InvalidInputError, VersionNotFoundError, WorkingMemorySchemaError
from hindsight.memory_context.schema import MAX_DEPTH, checker
from hindsight.models import WorkingMemory, WorkingMemoryFormat
from hindsight.store.base import MemoryStore
from hindsight.text import private_free

log = logging.getLogger(__name__)

_TOO_DEEP = f"it is nested far more than {MAX_DEPTH} levels deep"
# What an update may be: markdown, or (under a schema) JSON text, a mapping or a pydantic model instance.
WorkingContent = str | Mapping[str, Any] | BaseModel


class WorkingMemories:
    """The working memories of one bank. The caller holds the bank's write lock around the writes."""

    def __init__(self, store: MemoryStore, bank_id: str, max_chars: int, private_marker: str = "") -> None:
        self.store, self.bank_id, self.max_chars = store, bank_id, max_chars
        self.private_marker = private_marker  # what a <private> span becomes: it is never stored

    def format(self) -> WorkingMemoryFormat:
        return self.store.working_memory_format(self.bank_id) or WorkingMemoryFormat()

    def current(self, scope: str) -> WorkingMemory:
        """The latest version of the scope; version 0 (the template, or "{}" under a schema) before any update."""
        found = self.store.working_memory(self.bank_id, validate.scope(scope))
        if found is not None:
            return found
        return WorkingMemory(scope=scope, version=0, content=self._blank())

    def versions(self, scope: str) -> list[WorkingMemory]:
        return self.store.working_memory_versions(self.bank_id, validate.scope(scope))

    def update(self, scope: str, content: WorkingContent, note: str | None = None) -> WorkingMemory:
        """Store `content` as the scope's next version (WorkingMemorySchemaError when the schema refuses it)."""
        scope = validate.scope(scope)
        if isinstance(content, BaseModel):
            content = content.model_dump(mode="json")
        text = self._checked(private_free(content, self.private_marker), self.format())
        return self._add(scope, text, private_free(note, self.private_marker), None)

    def revert(self, scope: str, version: int, note: str | None = None) -> WorkingMemory:
        """Make version `version` (0: the template) the content again, as a new version."""
        scope = validate.scope(scope)
        version = validate.count(version, "version")
        if version == 0:
            text = self._blank()
        else:
            found = self.store.working_memory(self.bank_id, scope, version)
            if found is None:
                raise VersionNotFoundError(f"the working memory of scope {scope[:64]!r} has no version {version}")
            text = found.content
        text = self._checked(text, self.format())  # the schema may have changed since
        return self._add(scope, text, note if note is not None else f"revert to version {version}", version)

    def set_format(self, template: str | None = None,
                   schema: type[BaseModel] | Mapping[str, Any] | None = None) -> WorkingMemoryFormat:
        """Make the bank's working memory markdown from `template`, or JSON checked by `schema` (a pydantic model
        class or a JSON schema). Refused, changing nothing, when a scope's current content does not fit it."""
        if (template is None) == (schema is None):
            raise InvalidInputError("give a working memory format either a template or a schema")
        if template is not None:
            fmt = WorkingMemoryFormat(template=private_free(self._bounded(template, "working memory template"),
                                                            self.private_marker))
        else:
            fmt = WorkingMemoryFormat(json_schema=_schema(schema, self.max_chars))
        for scope in self.store.working_memory_scopes(self.bank_id):
            current = self.current(scope)
            try:
                self._checked(current.content, fmt)
            except InvalidInputError as exc:
                raise type(exc)(f"the working memory of scope {scope[:64]!r} (version {current.version}) does not "
                                f"fit the new format: {exc}; nothing was changed") from None
        self.store.set_working_memory_format(self.bank_id, fmt)
        log.info("bank %s: working memory format set (%s)", self.bank_id,
                 "schema" if fmt.json_schema is not None else "template")
        return fmt

    def _blank(self) -> str:
        fmt = self.format()
        return "{}" if fmt.json_schema is not None else fmt.template

    def _add(self, scope: str, text: str, note: str | None, reverted_from: int | None) -> WorkingMemory:
        note = None if note is None else validate.text(note, "working memory note", 1_000)
        return self.store.add_working_memory(self.bank_id, scope, text, note, reverted_from,
                                             datetime.now(timezone.utc))

    def _bounded(self, value: Any, what: str) -> str:
        return validate.text(value, what, self.max_chars)

    def _checked(self, content: WorkingContent, fmt: WorkingMemoryFormat) -> str:
        """The content as stored: markdown as given, or canonical JSON the schema accepts."""
        if fmt.json_schema is None:
            if not isinstance(content, str):
                raise InvalidInputError("this bank's working memory is markdown: update it with a string (set a "
                                        "schema to store JSON)")
            return self._bounded(content, "working memory")
        data = _data(content)
        found = checker(fmt.json_schema).problems(data)
        if found:
            raise WorkingMemorySchemaError("the working memory does not match the bank's schema: "
                                           + "; ".join(found[:5]))
        return self._bounded(json.dumps(data, ensure_ascii=False, indent=2), "working memory")


def _data(content: WorkingContent) -> Any:
    if isinstance(content, BaseModel):
        return content.model_dump(mode="json")
    if isinstance(content, Mapping):
        try:
            return json.loads(json.dumps(content, allow_nan=False))
        except (TypeError, ValueError) as exc:
            raise WorkingMemorySchemaError(f"the working memory is not JSON data: {exc}") from None
        except RecursionError:
            raise WorkingMemorySchemaError(f"the working memory is not JSON data it can hold: {_TOO_DEEP}") from None
    if isinstance(content, str):
        try:
            return json.loads(content)
        except ValueError as exc:
            raise WorkingMemorySchemaError(f"the working memory is not valid JSON: {exc}") from None
        except RecursionError:
            raise WorkingMemorySchemaError(f"the working memory is not valid JSON it can hold: {_TOO_DEEP}") from None
    raise InvalidInputError(f"working memory must be a string, a mapping or a pydantic model, got "
                            f"{type(content).__name__}")


def _schema(schema: type[BaseModel] | Mapping[str, Any] | None, max_chars: int) -> dict[str, Any]:
    out: Mapping[str, Any]
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        out = schema.model_json_schema()
    elif isinstance(schema, Mapping):
        out = schema
    else:
        raise InvalidInputError(f"a working memory schema is a pydantic model class or a JSON schema, got "
                                f"{type(schema).__name__}")
    checked: dict[str, Any] = json.loads(checker(out, max_chars).text)  # a copy, as JSON reads it back
    return checked

