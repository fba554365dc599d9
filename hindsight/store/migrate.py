"""Copy banks from an embedded (SQLite) memory directory into a Postgres store, row for row.

Each bank is copied in one Postgres transaction, holding the bank's lock: its profile, documents, units (with their
embeddings), entities, links, claims, opinion history, queued work and LLM usage. Unit labels are new in Postgres,
so every row that refers to a unit by label is mapped; the lexical tables are then built from the copied units. A
bank that already exists in the destination is refused, so nothing there is overwritten.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hindsight.errors import StoreError
from hindsight.store.postgres import PostgresStore
from hindsight.store.sqlite import SQLiteStore

# (table, columns copied as they are); the bank_id column comes first in every select and insert.
_PLAIN = [
    ("documents", "id, content_hash, context, updated_at"),
    ("entities", "id, name, label, first_seen, last_seen"),
    ("entity_keys", "key, entity_id"),
    ("opinion_history", "unit_id, verdict, confidence, text, evidence, reason, at"),
    ("llm_usage", "prompt_tokens, completion_tokens, calls"),
]
_UNIT = ("id, document_id, network, text, lead, embed_text, embed_hash, embedding, segment_embeddings, "
         "occurred_start, occurred_end, mentioned_at, t_mid, confidence, context, content_hash, entities, source, "
         "metadata, created_at")


@dataclass
class CopiedBank:
    """What one bank's copy wrote."""

    bank_id: str
    units: int
    entities: int
    links: int


def copy_bank(source: SQLiteStore, dest: PostgresStore, bank_id: str) -> CopiedBank:
    """Copy one bank in one transaction; StoreError when the destination already has it."""
    profile = source._query("SELECT profile, created_at FROM banks WHERE id=?", (bank_id,))
    if not profile:
        raise StoreError(f"the source has no bank {bank_id!r}")
    with dest.writing(bank_id), dest._tx() as c:
        if c.execute("SELECT 1 FROM banks WHERE id=?", (bank_id,)).fetchone() is not None:
            raise StoreError(f"bank {bank_id!r} already exists in the destination; nothing was copied")
        c.execute("INSERT INTO banks(id, profile, created_at) VALUES(?,?,?)", (bank_id, *profile[0]))
        for table, columns in _PLAIN:
            _copy(source, c, table, columns, bank_id)
        aliases = source._query(
            "SELECT a.entity_id, a.alias, a.score FROM entity_aliases a JOIN entities e ON e.id=a.entity_id "
            "WHERE e.bank_id=?", (bank_id,))
        c.executemany("INSERT INTO entity_aliases(entity_id, alias, score) VALUES(?,?,?)", aliases)
        labels: dict[int, int] = {}
        for row in source._query(f"SELECT label, {_UNIT} FROM units WHERE bank_id=? ORDER BY label", (bank_id,)):
            values = list(row[1:])
            values[7] = dest._vector(np.frombuffer(values[7], dtype=np.float32))
            new = c.execute(f"INSERT INTO units(bank_id, {_UNIT}) VALUES(?{',?' * len(values)}) RETURNING label",
                            (bank_id, *values)).fetchone()
            labels[int(row[0])] = int(new[0])
        mapped = _mapper(labels)
        rows = source._query("SELECT ue.unit_label, ue.entity_id FROM unit_entities ue JOIN units u "
                             "ON u.label=ue.unit_label WHERE u.bank_id=?", (bank_id,))
        c.executemany("INSERT INTO unit_entities(unit_label, entity_id) VALUES(?,?)",
                      [(mapped(r[0]), r[1]) for r in rows])
        links = source._query("SELECT src, dst, type, subtype, weight FROM links WHERE bank_id=?", (bank_id,))
        c.executemany("INSERT INTO links(bank_id, src, dst, type, subtype, weight) VALUES(?,?,?,?,?,?)",
                      [(bank_id, mapped(r[0]), mapped(r[1]), *r[2:]) for r in links])
        claims = source._query("SELECT subject, attribute, said, unit_label, value, ended, additional, topic "
                               "FROM claims WHERE bank_id=?", (bank_id,))
        c.executemany("INSERT INTO claims(bank_id, subject, attribute, said, unit_label, value, ended, additional, "
                      "topic) VALUES(?,?,?,?,?,?,?,?,?)", [(bank_id, *r[:3], mapped(r[3]), *r[4:]) for r in claims])
        # Claimed work was held by a process of the source directory, which is not running it here.
        pending = source._query("SELECT kind, key, queued_at, touched_at FROM pending_work WHERE bank_id=?",
                                (bank_id,))
        c.executemany("INSERT INTO pending_work(bank_id, kind, key, queued_at, touched_at) VALUES(?,?,?,?,?)",
                      [(bank_id, *r) for r in pending])
        dest._follow(c, bank_id, [("add", label) for label in labels.values()])
        entities = c.execute("SELECT count(*) FROM entities WHERE bank_id=?", (bank_id,)).fetchone()[0]
    return CopiedBank(bank_id, len(labels), int(entities), len(links))


def _copy(source: SQLiteStore, c: Any, table: str, columns: str, bank_id: str) -> None:
    rows = source._query(f"SELECT {columns} FROM {table} WHERE bank_id=?", (bank_id,))
    marks = ",?" * len(columns.split(","))
    c.executemany(f"INSERT INTO {table}(bank_id, {columns}) VALUES(?{marks})", [(bank_id, *r) for r in rows])


def _mapper(labels: dict[int, int]) -> Callable[[int], int]:
    def mapped(label: int) -> int:
        try:
            return labels[int(label)]
        except KeyError:  # a row of another bank's unit: the source is damaged, and check() would say so
            raise StoreError(f"a row refers to unit label {label}, which is not in the bank being copied") from None

    return mapped


def copy_banks(source: SQLiteStore, dest: PostgresStore, bank_ids: Sequence[str] | None = None,
               progress: Callable[[CopiedBank], None] | None = None) -> list[CopiedBank]:
    """Copy the named banks (all of the source's when None), one transaction each."""
    out = []
    for bank_id in bank_ids if bank_ids is not None else source.list_banks():
        copied = copy_bank(source, dest, bank_id)
        if progress is not None:
            progress(copied)
        out.append(copied)
    return out
