"""The rows of an import with their <private> spans taken out as retain takes them out, so that an import stores,
indexes and embeds no private text either.

Memory text (units' text, lead, embedded text and context; claims; opinion history; documents' context) has each span
replaced by `retain.private_marker`; names (entities, their aliases and keys, the entity names of units, the agent
names of units' sources) lose their spans, as speaker names do; working memory, its notes and its template, and the
bank's profile, have each span replaced by the marker with their layout kept, JSON string by JSON string where they
are JSON. A unit whose embedded text changes is embedded again, and its segments' embeddings, made from text that
held the span, are dropped. Ids are left as they are: they name rows, they are not memory.

A value of the wrong type, or JSON that does not parse, is left as it is for the import's checks to refuse.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hindsight.store.transfer import BankRow
from hindsight.text import clean_text, map_strings, redact_private, strip_private

# CachedEmbedder.embed: the vectors of the texts, and their content hashes.
Embed = Callable[[Sequence[str]], tuple[np.ndarray, list[str]]]
Scrub = Callable[[str], str]


@dataclass(frozen=True)
class _Rules:
    """How each kind of text loses its private spans, for one marker."""

    marker: str

    def memory(self, text: str) -> str:
        return clean_text(strip_private(text, self.marker)) if _has_tag(text) else text

    def name(self, text: str) -> str:
        return clean_text(strip_private(text)) if _has_tag(text) else text

    def layout(self, text: str) -> str:
        return strip_private(text, self.marker) if _has_tag(text) else text


def _has_tag(text: str) -> bool:
    return redact_private(text).text != text


def _parsed(text: str) -> Any:
    """The JSON of `text`, or None when it does not parse (the import's checks say so)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _dumped(value: Any, **options: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, **options)
    except RecursionError:
        raise ValueError("JSON nested too deeply to store") from None


class _RowScrubber:
    def __init__(self, marker: str) -> None:
        self.rules = _Rules(marker)
        rules = self.rules
        # Per table, per column: how the column's value loses its private spans.
        self.columns: dict[str, dict[str, Scrub]] = {
            "banks": {"profile": self._json(rules.layout)},
            "documents": {"context": rules.memory},
            "entities": {"name": rules.name},
            "entity_aliases": {"alias": rules.name},
            "entity_keys": {"key": rules.name},
            "units": {"text": rules.memory, "lead": rules.memory, "embed_text": rules.memory,
                      "context": rules.memory, "entities": self._json(rules.name), "source": self._agent_names,
                      "metadata": self._json(rules.memory)},
            "claims": {"subject": rules.memory, "attribute": rules.memory, "value": rules.memory},
            "opinion_history": {"text": rules.memory, "reason": rules.memory},
            "working_memory_formats": {"format": self._template},
            "working_memory": {"content": self._working, "note": rules.layout},
        }

    def row(self, row: BankRow) -> BankRow:
        """The row as it is when it holds no span, else a new one (the rows are held twice only where they differ)."""
        changed = {}
        for name, scrub in self.columns.get(row.table, {}).items():
            value = row.values.get(name)
            if isinstance(value, str) and (new := scrub(value)) != value:
                changed[name] = new
        return BankRow(row.table, {**row.values, **changed}) if changed else row

    def _json(self, scrub: Scrub) -> Scrub:
        def each(text: str) -> str:
            data = _parsed(text)
            if not isinstance(data, dict | list) or (new := map_strings(data, scrub)) is data:
                return text
            return _dumped(new)

        return each

    def _agent_names(self, text: str) -> str:
        data = _parsed(text)
        if not isinstance(data, dict) or not isinstance(data.get("agent_names"), list):
            return text
        names = map_strings(data["agent_names"], self.rules.name)
        if names is data["agent_names"]:
            return text
        return _dumped({**data, "agent_names": names})

    def _template(self, text: str) -> str:
        data = _parsed(text)
        if not isinstance(data, dict) or not isinstance(data.get("template"), str):
            return text
        template = self.rules.layout(data["template"])
        if template == data["template"]:
            return text
        return _dumped({**data, "template": template})

    def _working(self, text: str) -> str:
        data = _parsed(text)
        if not isinstance(data, dict | list):  # markdown
            return self.rules.layout(text)
        if (new := map_strings(data, self.rules.layout)) is data:
            return text
        return _dumped(new, indent=2)  # as working memory stores JSON


def scrub_rows(rows: list[BankRow], marker: str, embed: Embed, first_line: int) -> list[BankRow]:
    """The rows with their private spans taken out; units whose embedded text changed are embedded again (by
    `embed`). ValueError, naming the line (`first_line` is the first row's), for a value that cannot be rewritten."""
    scrubber = _RowScrubber(marker)
    out: list[BankRow] = []
    for line, row in enumerate(rows, start=first_line):
        try:
            out.append(scrubber.row(row))
        except ValueError as exc:
            raise ValueError(f"line {line} ({row.table!r} row): {exc}") from None
    _embed_again(rows, out, embed)
    return out


def _embed_again(before: list[BankRow], after: list[BankRow], embed: Embed) -> None:
    """Give each unit whose text or embedded text lost a span the embedding of its new embedded text, in place."""
    changed = [new for old, new in zip(before, after, strict=True)
               if new.table == "units" and isinstance(new.values.get("embed_text"), str)
               and any(old.values.get(k) != new.values.get(k) for k in ("text", "embed_text"))]
    if not changed:
        return
    vectors, hashes = embed([row.values["embed_text"] for row in changed])
    for row, vector, digest in zip(changed, vectors, hashes, strict=True):
        row.values.update(embedding=base64.b64encode(np.asarray(vector, dtype=np.float32).tobytes()).decode("ascii"),
                          embed_hash=digest, segment_embeddings=None)
