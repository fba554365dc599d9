"""The SQL both stores run: banks, the atomic write of a batch, and reads of documents and units.

It is written once, in the SQL that SQLite (3.35 or later) and PostgreSQL share, with `?` parameters; the Postgres
store adapts the few spellings that differ (store/postgres_sql.py). A backend supplies its connections, how it keeps
an embedding, and what follows a change of units: SQLite logs it for its derived index files, Postgres updates its
lexical tables in the same transaction.
"""

from __future__ import annotations

import json
import time
from abc import abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime, timezone
from typing import Any

import numpy as np

from hindsight.errors import BankNotFoundError
from hindsight.models import BankProfile, BankStats, Link, LinkType, MemoryUnit, Network, Source
from hindsight.store.base import DocumentRecord, MemoryStore, UnitText, WriteBatch
from hindsight.store.sql_context import CONTEXT_TABLES, ContextQueries
from hindsight.store.sql_graph import GraphQueries
from hindsight.store.sql_index import IndexQueries
from hindsight.store.sql_integrity import IntegrityQueries
from hindsight.store.sql_operations import OperationQueries
from hindsight.store.sql_reasoning import ReasoningQueries
from hindsight.store.sql_util import NO_LIMIT, Tx
from hindsight.store.sql_util import chunks as _chunks
from hindsight.store.sql_util import dt as _dt
from hindsight.store.sql_util import marks as _marks
from hindsight.store.sql_util import ts as _ts

# "+bank_id" keeps bank_id a filter, not an index choice: with a long IN list on the unique id or label,
# SQLite would otherwise pick a bank_id index and scan the whole bank.
_UNIT_COLUMNS = (
    "label, id, bank_id, document_id, network, text, occurred_start, occurred_end, mentioned_at, "
    "confidence, context, content_hash, entities, source, metadata, created_at, lead"
)
_PAGE = 5000  # units per read of unit_texts: bounds the memory of a whole-bank read
# Tables holding a bank's rows under a bank_id column, emptied by delete_bank.
_BANK_TABLES = ("links", "claims", "entity_keys", "units", "documents", "opinion_history", "pending_work", "llm_usage",
                "operations", *CONTEXT_TABLES)


# A change of units that search must follow: "add" (new, or a new vector and text), "del", or "text" (only the
# indexed text changed: a lead dropped by a forget); and the unit's label.
Change = tuple[str, int]


class SqlStore(ContextQueries, GraphQueries, IndexQueries, IntegrityQueries, OperationQueries, ReasoningQueries,
               MemoryStore):
    """The store's SQL over a backend's connections."""

    @abstractmethod
    def _tx(self) -> AbstractContextManager[Tx]:
        """A write transaction: committed when the block ends, rolled back when it raises."""
    @abstractmethod
    def _follow(self, c: Tx, bank_id: str, changes: list[Change]) -> int:
        """Inside the write: let search follow the changed units; returns the bank's write sequence after it."""
    @abstractmethod
    def _mark_scrub(self, c: Tx, bank_id: str) -> None:
        """Inside a forget's or delete's write: record that the bank's files must be scrubbed after the commit."""
    @abstractmethod
    def _drop_bank_rows(self, c: Tx, bank_id: str) -> None:
        """Inside delete_bank: remove the backend's own rows of the bank."""

    def writing(self, bank_id: str) -> AbstractContextManager[None]:
        return nullcontext()  # SQLite: the directory's lock keeps other processes out

    # -- banks -------------------------------------------------------------------------------
    def create_bank(self, bank_id: str, profile: BankProfile) -> None:
        with self._tx() as c:
            c.execute("INSERT INTO banks(id, profile, created_at) VALUES(?,?,?) ON CONFLICT DO NOTHING",
                      (bank_id, profile.model_dump_json(), time.time()))

    def get_profile(self, bank_id: str) -> BankProfile | None:
        rows = self._query("SELECT profile FROM banks WHERE id=?", (bank_id,))
        return BankProfile.model_validate_json(rows[0][0]) if rows else None

    def set_profile(self, bank_id: str, profile: BankProfile) -> None:
        with self._tx() as c:
            c.execute("UPDATE banks SET profile=? WHERE id=?", (profile.model_dump_json(), bank_id))

    def list_banks(self) -> list[str]:
        return [r[0] for r in self._query("SELECT id FROM banks ORDER BY id")]

    def delete_bank(self, bank_id: str) -> None:
        with self._tx() as c:
            c.execute(
                "DELETE FROM unit_entities WHERE unit_label IN (SELECT label FROM units WHERE bank_id=?)", (bank_id,)
            )
            for table in _BANK_TABLES:
                c.execute(f"DELETE FROM {table} WHERE bank_id=?", (bank_id,))
            c.execute(
                "DELETE FROM entity_aliases WHERE entity_id IN (SELECT id FROM entities WHERE bank_id=?)", (bank_id,)
            )
            c.execute("DELETE FROM entities WHERE bank_id=?", (bank_id,))
            c.execute("DELETE FROM banks WHERE id=?", (bank_id,))
            self._drop_bank_rows(c, bank_id)
            self._mark_scrub(c, bank_id)

    # -- writes ------------------------------------------------------------------------------
    def apply(self, bank_id: str, batch: WriteBatch) -> int:
        # The bank's lock comes before the transaction (and its connection), so that a writer holding it is never
        # waited on by one holding the connection.
        with self.writing(bank_id), self._tx() as c:
            if c.execute("SELECT 1 FROM banks WHERE id=?", (bank_id,)).fetchone() is None:
                raise BankNotFoundError(f"no bank {bank_id!r}")  # e.g. deleted while a retain was running
            entities, documents, deleted = self._delete_units(c, bank_id, batch.delete_unit_ids)
            self._forget_history(c, bank_id, [*batch.delete_unit_ids, *batch.history_replaced])
            self._forget_pending(c, bank_id, batch.delete_unit_ids)
            self._write_entities(c, bank_id, batch)
            labels = self._insert_units(c, bank_id, batch)
            added = list(labels.values())
            self._insert_links(c, bank_id, batch.links, labels)  # adds the labels of the links' other ends
            c.executemany(
                "INSERT INTO claims(bank_id, subject, attribute, said, unit_label, value, ended, additional, "
                "topic) VALUES(?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING",
                [(bank_id, k.subject, k.attribute, _ts(k.said), labels[k.unit_id], k.value, int(k.ended),
                  int(k.additional), int(k.topic)) for k in batch.claims if k.unit_id in labels],
            )
            updated = self._update_units(c, bank_id, batch.update_units)
            self._insert_opinion_events(c, bank_id, batch.opinion_events)
            if batch.document is not None:
                d = batch.document
                c.execute(
                    "INSERT INTO documents(bank_id, id, content_hash, context, updated_at) VALUES(?,?,?,?,?) "
                    "ON CONFLICT(bank_id, id) DO UPDATE SET content_hash=excluded.content_hash, "
                    "context=excluded.context, updated_at=excluded.updated_at",
                    (bank_id, d.document_id, d.content_hash, d.context, _ts(d.updated_at)),
                )
                documents.discard(d.document_id)
            self._queue_pending(c, bank_id, batch.pending)
            if batch.scrub:
                self._mark_scrub(c, bank_id)
                self._forget_blocks(c, bank_id)
            # Only now, after the batch's new units took their entities, is it known which are orphans.
            self._drop_orphans(c, bank_id, entities, documents)
            changes = [*(("del", x) for x in deleted), *(("add", x) for x in added), *updated]
            return self._follow(c, bank_id, changes)

    def _write_entities(self, c: Tx, bank_id: str, batch: WriteBatch) -> None:
        for w in batch.entities:
            e = w.entity
            if w.is_new:
                c.execute(
                    "INSERT INTO entities(id, bank_id, name, label, first_seen, last_seen) VALUES(?,?,?,?,?,?)",
                    (e.id, bank_id, e.name, e.label, _ts(e.first_seen), _ts(e.last_seen)),
                )
            else:
                seen = _ts(e.last_seen)
                c.execute(
                    "UPDATE entities SET last_seen=CASE WHEN last_seen IS NULL OR last_seen<? THEN ? "
                    "ELSE last_seen END WHERE id=? AND bank_id=?",
                    (seen, seen, e.id, bank_id),
                )
            c.executemany(
                "INSERT INTO entity_aliases(entity_id, alias, score) VALUES(?,?,?) "
                "ON CONFLICT(entity_id, alias) DO UPDATE SET score=CASE WHEN excluded.score>entity_aliases.score "
                "THEN excluded.score ELSE entity_aliases.score END",
                [(e.id, a.alias, a.score) for a in w.new_aliases],
            )
            c.executemany(
                "INSERT INTO entity_keys(bank_id, key, entity_id) VALUES(?,?,?) ON CONFLICT DO NOTHING",
                [(bank_id, k, e.id) for k in sorted(w.keys)],
            )

    def _insert_units(self, c: Tx, bank_id: str, batch: WriteBatch) -> dict[str, int]:
        labels: dict[str, int] = {}
        mentions: list[tuple[int, str]] = []
        for nu in batch.add_units:
            u = nu.unit
            row = c.execute(
                "INSERT INTO units(id, bank_id, document_id, network, text, lead, embed_text, embed_hash, embedding, "
                "segment_embeddings, occurred_start, occurred_end, mentioned_at, t_mid, confidence, context, "
                "content_hash, entities, source, metadata, created_at) "
                "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) RETURNING label",
                (
                    u.id, bank_id, u.source.document_id, u.network.value, u.text, u.lead, nu.embed_text, nu.embed_hash,
                    self._vector(np.asarray(nu.embedding, dtype=np.float32)),
                    None if nu.segment_embeddings is None else np.asarray(nu.segment_embeddings, np.float32).tobytes(),
                    _ts(u.occurred_start), _ts(u.occurred_end), _ts(u.mentioned_at), _time_mid(u), u.confidence,
                    u.context, u.content_hash, json.dumps(u.entities), u.source.model_dump_json(),
                    json.dumps(u.metadata), _ts(u.created_at),
                ),
            ).fetchone()
            label = int(row[0])
            labels[u.id] = label
            mentions += [(label, eid) for eid in nu.entity_ids]
        c.executemany("INSERT INTO unit_entities(unit_label, entity_id) VALUES(?,?) ON CONFLICT DO NOTHING", mentions)
        return labels

    def _insert_links(self, c: Tx, bank_id: str, links: list[Link], labels: dict[str, int]) -> None:
        unknown = list({x for link in links for x in (link.src, link.dst)} - labels.keys())
        for part in _chunks(unknown):
            for uid, label in c.execute(
                f"SELECT id, label FROM units WHERE +bank_id=? AND id IN ({_marks(len(part))})", (bank_id, *part)
            ):
                labels[uid] = label
        rows = [
            (bank_id, labels[k.src], labels[k.dst], k.type.value, k.subtype, k.weight)
            for k in links
            if k.src in labels and k.dst in labels and k.src != k.dst
        ]
        c.executemany(
            "INSERT INTO links(bank_id, src, dst, type, subtype, weight) VALUES(?,?,?,?,?,?) "
            "ON CONFLICT(src, dst, type) DO UPDATE SET weight=CASE WHEN excluded.weight>links.weight "
            "THEN excluded.weight ELSE links.weight END",
            rows,
        )

    def _delete_units(self, c: Tx, bank_id: str, unit_ids: list[str]) -> tuple[set[str], set[str], list[int]]:
        """Delete units with their entity rows and links; returns the entities and documents they touched, and
        their labels."""
        if not unit_ids:
            return set(), set(), []
        labels: list[int] = []
        for part in _chunks(unit_ids):
            labels += [
                r[0]
                for r in c.execute(
                    f"SELECT label FROM units WHERE +bank_id=? AND id IN ({_marks(len(part))})", (bank_id, *part)
                )
            ]
        touched: set[str] = set()
        documents: set[str] = set()
        for part in _chunks(labels):
            marks = _marks(len(part))
            touched |= {
                r[0] for r in c.execute(f"SELECT entity_id FROM unit_entities WHERE unit_label IN ({marks})", part)
            }
            documents |= {r[0] for r in c.execute(f"SELECT document_id FROM units WHERE label IN ({marks})", part)}
            c.execute(f"DELETE FROM unit_entities WHERE unit_label IN ({marks})", part)
            c.execute(f"DELETE FROM links WHERE src IN ({marks}) OR dst IN ({marks})", (*part, *part))
            c.execute(f"DELETE FROM claims WHERE unit_label IN ({marks})", part)
            c.execute(f"DELETE FROM units WHERE label IN ({marks})", part)
        self._forget_observed(c, bank_id, unit_ids)
        self._drop_operation_results(c, bank_id)
        return touched, documents, labels

    def _drop_orphans(self, c: Tx, bank_id: str, entities: set[str], documents: set[str]) -> None:
        # An entity no unit mentions any more is forgotten with its aliases and keys.
        for eid in sorted(entities):
            if c.execute("SELECT 1 FROM unit_entities WHERE entity_id=? LIMIT 1", (eid,)).fetchone() is None:
                for table, col in (("entity_aliases", "entity_id"), ("entity_keys", "entity_id"), ("entities", "id")):
                    c.execute(f"DELETE FROM {table} WHERE {col}=?", (eid,))
                self._forget_pending(c, bank_id, [eid])
        # So is a document none of whose units is left (its row holds its context).
        for doc in sorted(documents):
            left = c.execute("SELECT 1 FROM units WHERE bank_id=? AND document_id=? LIMIT 1", (bank_id, doc))
            if left.fetchone() is None:
                c.execute("DELETE FROM documents WHERE bank_id=? AND id=?", (bank_id, doc))

    # -- documents and units -----------------------------------------------------------------
    def get_document(self, bank_id: str, document_id: str) -> DocumentRecord | None:
        rows = self._query(
            "SELECT id, content_hash, context, updated_at FROM documents WHERE bank_id=? AND id=?",
            (bank_id, document_id),
        )
        if not rows:
            return None
        r = rows[0]
        return DocumentRecord(r[0], r[1], r[2], _dt(r[3]) or datetime.now(timezone.utc))

    def _units(self, where: str, params: Sequence[Any]) -> list[MemoryUnit]:
        rows = self._query(f"SELECT {_UNIT_COLUMNS} FROM units WHERE {where}", params)
        return [_row_to_unit(r) for r in rows]

    def document_units(self, bank_id: str, document_id: str) -> list[MemoryUnit]:
        return self._units("bank_id=? AND document_id=? ORDER BY label", (bank_id, document_id))

    def documents_with_context(self, bank_id: str) -> list[DocumentRecord]:
        rows = self._query("SELECT id, content_hash, context, updated_at FROM documents "
                           "WHERE bank_id=? AND context IS NOT NULL AND context<>''", (bank_id,))
        return [DocumentRecord(r[0], r[1], r[2], _dt(r[3]) or datetime.now(timezone.utc)) for r in rows]

    def unit_texts(self, bank_id: str) -> Iterator[UnitText]:
        last = 0
        while True:
            rows = self._query("SELECT label, id, text, lead FROM units WHERE +bank_id=? AND label>? ORDER BY label "
                               "LIMIT ?", (bank_id, last, _PAGE))
            yield from (UnitText(r[1], r[2], r[3]) for r in rows)
            if len(rows) < _PAGE:
                return
            last = rows[-1][0]

    def units_before(self, bank_id: str, unit_id: str, limit: int) -> list[MemoryUnit]:
        return self._units(
            "bank_id=? AND document_id=(SELECT document_id FROM units WHERE id=? AND bank_id=?) "
            "AND label<(SELECT label FROM units WHERE id=?) ORDER BY label DESC LIMIT ?",
            (bank_id, unit_id, bank_id, unit_id, limit),
        )

    def get_units(self, bank_id: str, unit_ids: list[str]) -> list[MemoryUnit]:
        found: dict[str, MemoryUnit] = {}
        for part in _chunks(unit_ids):
            for u in self._units(f"+bank_id=? AND id IN ({_marks(len(part))})", (bank_id, *part)):
                found[u.id] = u
        return [found[i] for i in unit_ids if i in found]

    def list_units(
        self, bank_id: str, network: Network | None = None, limit: int | None = None, offset: int = 0
    ) -> list[MemoryUnit]:
        where, params = "bank_id=?", [bank_id]
        if network is not None:
            where += " AND network=?"
            params.append(network.value)
        where += " ORDER BY label LIMIT ? OFFSET ?"
        return self._units(where, (*params, NO_LIMIT if limit is None else limit, offset))

    def stats(self, bank_id: str) -> BankStats:
        units = {n.value: 0 for n in Network}
        units.update(dict(self._query("SELECT network, count(*) FROM units WHERE bank_id=? GROUP BY network",
                                      (bank_id,))))
        links = {t.value: 0 for t in LinkType}
        links.update(dict(self._query("SELECT type, count(*) FROM links WHERE bank_id=? GROUP BY type", (bank_id,))))
        entities = self._query("SELECT count(*) FROM entities WHERE bank_id=?", (bank_id,))[0][0]
        docs = self._query("SELECT count(*) FROM documents WHERE bank_id=?", (bank_id,))[0][0]
        return BankStats(bank_id=bank_id, units=units, entities=entities, links=links, documents=docs)


def _time_mid(u: MemoryUnit) -> float:
    if u.occurred_start is not None and u.occurred_end is not None:
        return (u.occurred_start.timestamp() + u.occurred_end.timestamp()) / 2
    return u.mentioned_at.timestamp()


def _row_to_unit(r: Sequence[Any]) -> MemoryUnit:
    return MemoryUnit(
        id=r[1], bank_id=r[2], network=Network(r[4]), text=r[5], occurred_start=_dt(r[6]), occurred_end=_dt(r[7]),
        mentioned_at=_dt(r[8]) or datetime.now(timezone.utc), confidence=r[9], context=r[10], content_hash=r[11],
        entities=json.loads(r[12]), source=Source.model_validate_json(r[13]), metadata=json.loads(r[14]),
        created_at=_dt(r[15]) or datetime.now(timezone.utc), lead=r[16],
    )
