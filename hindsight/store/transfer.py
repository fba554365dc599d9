"""A bank as rows: read out of one SQL store (`export_rows`) and written into another as a new bank (`import_rows`).

Rows are backend-neutral JSON values: times are epoch seconds, JSON documents are text, flags are integers, and an
embedding is the base64 of its float32 bytes (read with the source's `_array`, written with the destination's
`_vector`). They come table by table in the order an import replays them: the bank's own row first, then each row
after those it refers to. A unit keeps its source label only so that the rows referring to it can be mapped to the
label it gets in the destination.

An import checks every row (table, columns, types, references, duplicates) before writing it, all in one
transaction under the bank's lock: a bad row is an InvalidInputError naming its line, and the rollback leaves no
partial bank behind.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, NoReturn

import numpy as np
from pydantic import BaseModel

from hindsight.errors import BankExistsError, BankNotFoundError, InvalidInputError
from hindsight.models import BankProfile, LinkType, Network, Source, Verdict, WorkingMemoryFormat
from hindsight.store.sql_store import SqlStore
from hindsight.store.sql_util import Tx

# An imported value, checked and converted for the insert; ValueError (with what was expected) when refused.
Check = Callable[[Any], Any]


@dataclass(frozen=True)
class BankRow:
    """One row of a bank: its table and its column values (str, int, float or None; embeddings in base64)."""

    table: str
    values: dict[str, Any]


class ImportResult(BaseModel):
    """What an import wrote: the new bank's id and how many units, entities and links it holds."""

    bank_id: str
    units: int
    entities: int
    links: int


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("expected a string of valid UTF-8 (it holds a lone surrogate)") from None
    return value


def _real(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"expected a finite number, got {value!r}")
    try:
        real = float(value)
    except OverflowError:  # an integer past the largest float
        raise ValueError("expected a finite number, got an integer too large for one") from None
    if not math.isfinite(real):
        raise ValueError(f"expected a finite number, got {value!r}")
    return real


def _integer(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not -(2**63) <= value < 2**63:
        raise ValueError(f"expected a 64-bit integer, got {value!r}")
    return value


def _optional(check: Check) -> Check:
    return lambda value: None if value is None else check(value)


def _one_of(values: Iterable[str]) -> Check:
    allowed = frozenset(values)

    def check(value: Any) -> str:
        if _text(value) not in allowed:
            raise ValueError(f"expected one of {sorted(allowed)}, got {value!r}")
        return str(value)

    return check


def _json(value: Any) -> str:
    try:
        json.loads(_text(value))  # a JSONDecodeError is a ValueError
    except RecursionError:
        raise ValueError("expected JSON text, got JSON nested too deeply to read") from None
    return str(value)


def _model(model: type[BaseModel]) -> Check:
    def check(value: Any) -> str:
        model.model_validate_json(_text(value))  # a ValidationError is a ValueError
        return str(value)

    return check


def _floats(value: Any) -> bytes:
    raw = base64.b64decode(_text(value), validate=True)  # a binascii.Error is a ValueError
    if len(raw) % 4 or not np.isfinite(np.frombuffer(raw, dtype=np.float32)).all():
        raise ValueError("expected the base64 of finite float32 values")
    return raw


_OPT_TEXT, _OPT_REAL = _optional(_text), _optional(_real)


@dataclass(frozen=True)
class _Table:
    """A table's rows of one bank: the columns exported (with how an imported value is checked), the FROM and WHERE
    that find the bank's rows (the bank id is their one parameter), and the columns unique within the bank (None:
    no such columns; (): the bank has one row)."""

    name: str
    columns: dict[str, Check]
    scope: str
    key: tuple[str, ...] | None
    bank_column: str | None = "bank_id"


# In replay order. Columns named unit_label, src or dst hold a unit's label, and entity_id an entity's id: both refer
# to an earlier row of the import.
_TABLES = [
    _Table("banks", {"profile": _model(BankProfile), "created_at": _real}, "FROM banks t WHERE t.id=?", (), "id"),
    _Table("documents", {"id": _text, "content_hash": _text, "context": _OPT_TEXT, "updated_at": _real},
           "FROM documents t WHERE t.bank_id=? ORDER BY t.id", ("id",)),
    _Table("entities", {"id": _text, "name": _text, "label": _text, "first_seen": _OPT_REAL, "last_seen": _OPT_REAL},
           "FROM entities t WHERE t.bank_id=? ORDER BY t.id", ("id",)),
    _Table("entity_aliases", {"entity_id": _text, "alias": _text, "score": _real},
           "FROM entity_aliases t JOIN entities e ON e.id=t.entity_id WHERE e.bank_id=? ORDER BY t.entity_id, t.alias",
           ("entity_id", "alias"), None),
    _Table("entity_keys", {"key": _text, "entity_id": _text},
           "FROM entity_keys t WHERE t.bank_id=? ORDER BY t.entity_id, t.key", ("key", "entity_id")),
    _Table("units", {
        "label": _integer, "id": _text, "document_id": _text, "network": _one_of(n.value for n in Network),
        "text": _text, "lead": _OPT_TEXT, "embed_text": _text, "embed_hash": _text, "embedding": _floats,
        "segment_embeddings": _optional(_floats), "occurred_start": _OPT_REAL, "occurred_end": _OPT_REAL,
        "mentioned_at": _real, "t_mid": _real, "confidence": _OPT_REAL, "context": _OPT_TEXT, "content_hash": _text,
        "entities": _json, "source": _model(Source), "metadata": _json, "created_at": _real,
    }, "FROM units t WHERE t.bank_id=? ORDER BY t.label", ("id",)),
    _Table("unit_entities", {"unit_label": _integer, "entity_id": _text},
           "FROM unit_entities t JOIN units u ON u.label=t.unit_label WHERE u.bank_id=? "
           "ORDER BY t.unit_label, t.entity_id", ("unit_label", "entity_id"), None),
    _Table("links", {"src": _integer, "dst": _integer, "type": _one_of(t.value for t in LinkType),
                     "subtype": _OPT_TEXT, "weight": _real},
           "FROM links t WHERE t.bank_id=? ORDER BY t.src, t.dst, t.type", ("src", "dst", "type")),
    _Table("claims", {"subject": _text, "attribute": _text, "said": _real, "unit_label": _integer, "value": _text,
                      "ended": _integer, "additional": _integer, "topic": _integer},
           "FROM claims t WHERE t.bank_id=? ORDER BY t.unit_label, t.subject, t.attribute, t.said, t.value, t.ended",
           ("subject", "attribute", "said", "unit_label", "value", "ended")),
    _Table("opinion_history", {"unit_id": _text, "verdict": _one_of(v.value for v in Verdict), "confidence": _real,
                               "text": _text, "evidence": _json, "reason": _text, "at": _real},
           "FROM opinion_history t WHERE t.bank_id=? ORDER BY t.seq", None),
    # Without its claim: claimed work was held by a process of the source, which is not running it here.
    _Table("pending_work", {"kind": _text, "key": _text, "queued_at": _real, "touched_at": _real},
           "FROM pending_work t WHERE t.bank_id=? ORDER BY t.kind, t.key", ("kind", "key")),
    _Table("llm_usage", {"prompt_tokens": _integer, "completion_tokens": _integer, "calls": _integer},
           "FROM llm_usage t WHERE t.bank_id=?", ()),
    # Working memory, every version; the observation log is not exported: the destination observes its units anew.
    _Table("working_memory_formats", {"format": _model(WorkingMemoryFormat), "updated_at": _real},
           "FROM working_memory_formats t WHERE t.bank_id=?", ()),
    _Table("working_memory", {"scope": _text, "version": _integer, "content": _text, "note": _OPT_TEXT,
                              "created_at": _real, "reverted_from": _optional(_integer)},
           "FROM working_memory t WHERE t.bank_id=? ORDER BY t.scope, t.version", ("scope", "version")),
]
_BY_NAME = {t.name: t for t in _TABLES}
_LABELS = ("unit_label", "src", "dst")
_BATCH = 500  # rows per executemany


def export_rows(store: SqlStore, bank_id: str) -> Iterator[BankRow]:
    """Every row of the bank, read in one read transaction (BankNotFoundError when there is no such bank); the rows
    are held in memory, so no transaction stays open while the caller consumes them."""
    with store._snapshot() as c:
        if c.execute("SELECT 1 FROM banks WHERE id=?", (bank_id,)).fetchone() is None:
            raise BankNotFoundError(f"no bank {bank_id!r}")
        read = [(t, c.execute(f"SELECT {', '.join('t.' + col for col in t.columns)} {t.scope}", (bank_id,)).fetchall())
                for t in _TABLES]  # table and column names are fixed
    return _rows(store, read)


def _rows(store: SqlStore, read: list[tuple[_Table, list[Any]]]) -> Iterator[BankRow]:
    for table, rows in read:
        for row in rows:
            values = dict(zip(table.columns, row, strict=True))
            if table.name == "units":
                values["embedding"] = _b64(store._array(values["embedding"]).astype(np.float32).tobytes())
                if values["segment_embeddings"] is not None:
                    values["segment_embeddings"] = _b64(bytes(values["segment_embeddings"]))
            yield BankRow(table.name, values)


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def import_rows(store: SqlStore, bank_id: str, rows: Iterable[BankRow], *, dim: int | None = None,
                first_line: int = 1) -> ImportResult:
    """Write the rows as the new bank `bank_id`, in one transaction, then let search follow its units.

    BankExistsError when the store has the bank (or, ids being unique across banks, one of its units or entities);
    InvalidInputError naming the line (`first_line` is the first row's) of a bad row; either way nothing is written.
    `dim`, when given, is the size every embedding must have (else the first one's)."""
    with store.writing(bank_id), store._tx() as c:
        if c.execute("SELECT 1 FROM banks WHERE id=?", (bank_id,)).fetchone() is not None:
            raise BankExistsError(f"bank {bank_id!r} already exists; nothing was imported")
        writer = _Writer(store, c, bank_id, dim)
        for line, row in enumerate(rows, start=first_line):
            try:
                writer.add(row)
            except ValueError as exc:
                raise InvalidInputError(f"line {line} ({row.table!r} row): {exc}; nothing was imported") from exc
        if "banks" not in writer.seen:
            raise InvalidInputError("there are no rows: the bank's row (table 'banks') comes first")
        writer.flush()
        store._follow(c, bank_id, [("add", label) for label in writer.labels.values()])
    return ImportResult(bank_id=bank_id, units=len(writer.labels), entities=len(writer.entities),
                        links=len(writer.seen.get("links", ())))


class _Writer:
    """The rows of one import as they come: checked, mapped to the destination's labels, written in batches."""

    def __init__(self, store: SqlStore, c: Tx, bank_id: str, dim: int | None) -> None:
        self.store, self.c, self.bank_id, self.dim = store, c, bank_id, dim
        self.labels: dict[int, int] = {}  # the source's unit label -> the destination's
        self.entities: set[str] = set()
        self.seen: dict[str, set[tuple[Any, ...]]] = {}  # the key values of each table's rows so far
        self.batch: list[tuple[Any, ...]] = []
        self.batch_table: _Table | None = None

    def add(self, row: BankRow) -> None:
        table = _BY_NAME.get(row.table)
        if table is None:
            raise ValueError(f"unknown table; expected one of {list(_BY_NAME)}")
        if not self.seen and table.name != "banks":
            raise ValueError("the first row must be the bank's (table 'banks')")
        if set(row.values) != set(table.columns):
            raise ValueError(f"expected the columns {list(table.columns)}, got {list(row.values)}")
        values: dict[str, Any] = {}
        for name, check in table.columns.items():
            try:
                values[name] = check(row.values[name])
            except ValueError as exc:
                raise ValueError(f"column {name!r}: {exc}") from None
        seen = self.seen.setdefault(table.name, set())
        if table.key is not None:
            key = tuple(values[col] for col in table.key)
            if key in seen:
                raise ValueError("a duplicate of an earlier row" if key else "a second row of a table with one row")
            seen.add(key)
        self._refer(values)
        if table.name == "units":
            self._unit(values)
        elif table.name == "entities":
            self._entity(values)
        else:
            self._queue(table, values)

    def _refer(self, values: dict[str, Any]) -> None:
        """Map the unit labels to the destination's; check that the entities exist."""
        for col in _LABELS:
            if col in values:
                if values[col] not in self.labels:
                    raise ValueError(f"column {col!r} refers to unit label {values[col]}, which no earlier unit has")
                values[col] = self.labels[values[col]]
        if "entity_id" in values and values["entity_id"] not in self.entities:
            raise ValueError(f"refers to entity {values['entity_id']!r}, which no earlier entity row has")

    def _unit(self, values: dict[str, Any]) -> None:
        floats = len(values["embedding"]) // 4
        self.dim = self.dim or floats
        if not floats or floats != self.dim or len(values["segment_embeddings"] or b"") % (4 * self.dim):
            raise ValueError(f"expected embeddings (and segment embeddings) of {self.dim} floats, got {floats}")
        if values["label"] in self.labels:
            raise ValueError(f"a second unit of label {values['label']}")
        label = values.pop("label")
        values["embedding"] = self.store._vector(np.frombuffer(values["embedding"], dtype=np.float32))
        new = self.c.execute(f"{_insert(_BY_NAME['units'], values)} ON CONFLICT DO NOTHING RETURNING label",
                             (self.bank_id, *values.values())).fetchone()
        if new is None:
            self._taken("units", "unit", values["id"])
        self.labels[label] = int(new[0])

    def _entity(self, values: dict[str, Any]) -> None:
        added = self.c.execute(f"{_insert(_BY_NAME['entities'], values)} ON CONFLICT DO NOTHING",
                               (self.bank_id, *values.values()))
        if added.rowcount != 1:
            self._taken("entities", "entity", values["id"])
        self.entities.add(values["id"])

    def _taken(self, table: str, what: str, row_id: str) -> NoReturn:
        # Not a duplicate of this import (the key check saw to that): another bank of the store has the id.
        owner = self.c.execute(f"SELECT bank_id FROM {table} WHERE id=?", (row_id,)).fetchone()
        raise BankExistsError(
            f"{what} {row_id!r} is already in bank {owner[0] if owner else '?'!r} of this store: unit and "
            "entity ids are unique across banks, so an export goes into a store once (import it into another store, "
            "or delete that bank first); nothing was imported")

    def _queue(self, table: _Table, values: dict[str, Any]) -> None:
        if self.batch_table is not table or len(self.batch) >= _BATCH:
            self.flush()
            self.batch_table = table
        self.batch.append((self.bank_id, *values.values()) if table.bank_column else tuple(values.values()))

    def flush(self) -> None:
        if self.batch_table is not None and self.batch:
            self.c.executemany(_insert(self.batch_table, self.batch_table.columns), self.batch)
        self.batch = []


def _insert(table: _Table, columns: Iterable[str]) -> str:
    names = [*([table.bank_column] if table.bank_column else []), *columns]
    return f"INSERT INTO {table.name}({', '.join(names)}) VALUES({', '.join('?' * len(names))})"
