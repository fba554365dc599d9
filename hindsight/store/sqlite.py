"""SQLite (WAL) implementation of MemoryStore: one database file for all banks."""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from hindsight.config import HnswConfig
from hindsight.errors import BankNotFoundError, StoreClosedError
from hindsight.lifecycle import CallGate
from hindsight.models import (
    BankProfile,
    BankStats,
    Link,
    LinkType,
    MemoryUnit,
    Network,
    Source,
)
from hindsight.store.base import (
    DocumentRecord,
    MemoryStore,
    WriteBatch,
)
from hindsight.store.search import BankSearch
from hindsight.store.sqlite_graph import GraphQueries
from hindsight.store.sqlite_index import IndexQueries
from hindsight.store.sqlite_integrity import IntegrityQueries
from hindsight.store.sqlite_reasoning import ReasoningQueries
from hindsight.store.sqlite_schema import REASONING_SCHEMA, SCHEMA, SCHEMA_VERSION, add_columns, refuse_other_schema
from hindsight.store.sqlite_search import SqliteSearch
from hindsight.store.sqlite_util import chunks as _chunks
from hindsight.store.sqlite_util import dt as _dt
from hindsight.store.sqlite_util import marks as _marks
from hindsight.store.sqlite_util import store_error
from hindsight.store.sqlite_util import ts as _ts

log = logging.getLogger(__name__)

# "+bank_id" keeps bank_id a filter, not an index choice: with a long IN list on the unique id or label,
# SQLite would otherwise pick a bank_id index and scan the whole bank.
_UNIT_COLUMNS = (
    "label, id, bank_id, document_id, network, text, occurred_start, occurred_end, mentioned_at, "
    "confidence, context, content_hash, entities, source, metadata, created_at, lead"
)


class SQLiteStore(GraphQueries, IndexQueries, IntegrityQueries, ReasoningQueries, MemoryStore):
    """All banks in one SQLite file, WAL mode, synchronous=FULL so a returned write survives power loss."""

    def __init__(self, path: str | Path, cache_mb: int = 64, mmap_mb: int = 256, bank_files: Path | None = None,
                 hnsw: HnswConfig | None = None) -> None:
        self.path = Path(path)
        self._files = bank_files if bank_files is not None else self.path.parent / "banks"
        self.bank_files = self._files
        self._hnsw = hnsw or HnswConfig()
        self._cache_mb = cache_mb
        self._mmap_mb = mmap_mb
        self._write_lock = threading.RLock()
        self._local = threading.local()
        self._conns: list[sqlite3.Connection] = []
        self._conns_lock = threading.Lock()
        self._closed = False
        refuse_other_schema(self.path)
        # Reads on per-thread connections pass through it, so close() never closes a connection under a query.
        self._reads = CallGate(lambda: StoreClosedError("the store is closed"))
        self._writer = self._connect()
        try:
            self._set_up()
        except BaseException:
            self.close()
            raise

    def _set_up(self) -> None:
        """Create or upgrade the schema; a failed write (a full disk) is a typed error."""
        with self._write_lock:
            try:
                self._writer.executescript(SCHEMA + REASONING_SCHEMA)
                add_columns(self._writer)
                self._writer.execute("INSERT OR IGNORE INTO meta(key, value) VALUES('schema_version', ?)",
                                     (SCHEMA_VERSION,))
            except sqlite3.Error as exc:
                raise store_error(self.path, exc, "setting up the database") from exc

    # -- connections -------------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30.0)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute("PRAGMA foreign_keys=OFF")
            # Deleted rows are overwritten with zeros, so forgotten text does not linger in free pages.
            conn.execute("PRAGMA secure_delete=ON")
            # The default 2 MiB page cache misses on every B-tree insert once a bank has ~10k units.
            conn.execute(f"PRAGMA cache_size=-{self._cache_mb * 1024}")
            conn.execute(f"PRAGMA mmap_size={self._mmap_mb * 1024 * 1024}")
        except sqlite3.Error as exc:
            raise store_error(self.path, exc, "opening the database") from exc
        with self._conns_lock:
            self._conns.append(conn)
        return conn

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection for reads, so readers never wait for the writer (WAL); close() waits for it."""
        with self._reads.call():
            if self._closed:
                raise StoreClosedError("the store is closed")
            conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
            if conn is None:
                conn = self._connect()
                self._local.conn = conn
            yield conn

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._write_lock:
            if self._closed:  # checked under the lock close() takes, so the writer is open
                raise StoreClosedError("the store is closed")
            conn = self._writer
            try:
                conn.execute("BEGIN IMMEDIATE")
                yield conn
                conn.execute("COMMIT")
            except BaseException as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise store_error(self.path, exc, "a database write (rolled back)") from exc
                raise

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._reading() as conn:
            try:
                return conn.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise store_error(self.path, exc, "a database read") from exc

    # -- banks -------------------------------------------------------------------------------
    def create_bank(self, bank_id: str, profile: BankProfile) -> None:
        with self._tx() as c:
            c.execute(
                "INSERT OR IGNORE INTO banks(id, profile, created_at) VALUES(?,?,?)",
                (bank_id, profile.model_dump_json(), time.time()),
            )

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
            for table in ("links", "claims", "entity_keys", "changes", "units", "documents", "opinion_history",
                          "pending_work", "llm_usage"):
                c.execute(f"DELETE FROM {table} WHERE bank_id=?", (bank_id,))
            c.execute(
                "DELETE FROM entity_aliases WHERE entity_id IN (SELECT id FROM entities WHERE bank_id=?)", (bank_id,)
            )
            c.execute("DELETE FROM entities WHERE bank_id=?", (bank_id,))
            c.execute("DELETE FROM banks WHERE id=?", (bank_id,))
            _mark_scrub(c, bank_id)

    # -- writes ------------------------------------------------------------------------------
    def apply(self, bank_id: str, batch: WriteBatch) -> int:
        with self._tx() as c:
            if c.execute("SELECT 1 FROM banks WHERE id=?", (bank_id,)).fetchone() is None:
                raise BankNotFoundError(f"no bank {bank_id!r}")  # e.g. deleted while a retain was running
            entities, documents = self._delete_units(c, bank_id, batch.delete_unit_ids)
            self._forget_history(c, bank_id, [*batch.delete_unit_ids, *batch.history_replaced])
            self._forget_pending(c, bank_id, batch.delete_unit_ids)
            self._write_entities(c, bank_id, batch)
            labels = self._insert_units(c, bank_id, batch)
            self._insert_links(c, bank_id, batch.links, labels)
            c.executemany(
                "INSERT OR IGNORE INTO claims(bank_id, subject, attribute, said, unit_label, value, ended, additional, "
                "topic) VALUES(?,?,?,?,?,?,?,?,?)",
                [(bank_id, k.subject, k.attribute, _ts(k.said), labels[k.unit_id], k.value, int(k.ended),
                  int(k.additional), int(k.topic)) for k in batch.claims if k.unit_id in labels],
            )
            self._update_units(c, bank_id, batch.update_units)
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
                _mark_scrub(c, bank_id)
            # Only now, after the batch's new units took their entities, is it known which are orphans.
            self._drop_orphans(c, bank_id, entities, documents)
            row = c.execute("SELECT max(seq) FROM changes WHERE bank_id=?", (bank_id,)).fetchone()
            return int(row[0] or 0)

    def _write_entities(self, c: sqlite3.Connection, bank_id: str, batch: WriteBatch) -> None:
        for w in batch.entities:
            e = w.entity
            if w.is_new:
                c.execute(
                    "INSERT INTO entities(id, bank_id, name, label, first_seen, last_seen) VALUES(?,?,?,?,?,?)",
                    (e.id, bank_id, e.name, e.label, _ts(e.first_seen), _ts(e.last_seen)),
                )
            else:
                c.execute(
                    "UPDATE entities SET last_seen=max(coalesce(last_seen, 0), ?) WHERE id=? AND bank_id=?",
                    (_ts(e.last_seen), e.id, bank_id),
                )
            c.executemany(
                "INSERT INTO entity_aliases(entity_id, alias, score) VALUES(?,?,?) "
                "ON CONFLICT(entity_id, alias) DO UPDATE SET score=max(score, excluded.score)",
                [(e.id, a.alias, a.score) for a in w.new_aliases],
            )
            c.executemany(
                "INSERT OR IGNORE INTO entity_keys(bank_id, key, entity_id) VALUES(?,?,?)",
                [(bank_id, k, e.id) for k in sorted(w.keys)],
            )

    def _insert_units(self, c: sqlite3.Connection, bank_id: str, batch: WriteBatch) -> dict[str, int]:
        labels: dict[str, int] = {}
        for nu in batch.add_units:
            u = nu.unit
            mid = _time_mid(u)
            cur = c.execute(
                "INSERT INTO units(id, bank_id, document_id, network, text, lead, embed_text, embed_hash, embedding, "
                "segment_embeddings, occurred_start, occurred_end, mentioned_at, t_mid, confidence, context, "
                "content_hash, entities, source, metadata, created_at) "
                "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    u.id, bank_id, u.source.document_id, u.network.value, u.text, u.lead, nu.embed_text, nu.embed_hash,
                    np.asarray(nu.embedding, dtype=np.float32).tobytes(),
                    None if nu.segment_embeddings is None else np.asarray(nu.segment_embeddings, np.float32).tobytes(),
                    _ts(u.occurred_start),
                    _ts(u.occurred_end), _ts(u.mentioned_at), mid, u.confidence, u.context, u.content_hash,
                    json.dumps(u.entities), u.source.model_dump_json(), json.dumps(u.metadata),
                    _ts(u.created_at),
                ),
            )
            label = int(cur.lastrowid or 0)
            labels[u.id] = label
            c.executemany(
                "INSERT OR IGNORE INTO unit_entities(unit_label, entity_id) VALUES(?,?)",
                [(label, eid) for eid in nu.entity_ids],
            )
            c.execute("INSERT INTO changes(bank_id, op, label) VALUES(?, 'add', ?)", (bank_id, label))
        return labels

    def _insert_links(self, c: sqlite3.Connection, bank_id: str, links: list[Link], labels: dict[str, int]) -> None:
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
            "ON CONFLICT(src, dst, type) DO UPDATE SET weight=max(weight, excluded.weight)",
            rows,
        )

    def _delete_units(self, c: sqlite3.Connection, bank_id: str, unit_ids: list[str]) -> tuple[set[str], set[str]]:
        """Delete units with their entity rows and links; returns the entities and documents they touched."""
        if not unit_ids:
            return set(), set()
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
        c.executemany("INSERT INTO changes(bank_id, op, label) VALUES(?, 'del', ?)", [(bank_id, x) for x in labels])
        return touched, documents

    def _drop_orphans(self, c: sqlite3.Connection, bank_id: str, entities: set[str], documents: set[str]) -> None:
        # An entity no unit mentions any more is forgotten with its aliases and keys.
        for eid in entities:
            if c.execute("SELECT 1 FROM unit_entities WHERE entity_id=? LIMIT 1", (eid,)).fetchone() is None:
                for table, col in (("entity_aliases", "entity_id"), ("entity_keys", "entity_id"), ("entities", "id")):
                    c.execute(f"DELETE FROM {table} WHERE {col}=?", (eid,))
                self._forget_pending(c, bank_id, [eid])
        # So is a document none of whose units is left (its row holds its context).
        for doc in documents:
            left = c.execute("SELECT 1 FROM units WHERE bank_id=? AND document_id=? LIMIT 1", (bank_id, doc))
            if left.fetchone() is None:
                c.execute("DELETE FROM documents WHERE bank_id=? AND id=?", (bank_id, doc))

    # -- documents and units -----------------------------------------------------------------
    def open_search(self, bank_id: str, dim: int) -> BankSearch:
        return SqliteSearch(self, bank_id, self._files / bank_id, dim, self._hnsw)

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

    def units_before(self, bank_id: str, unit_id: str, limit: int) -> list[MemoryUnit]:
        return self._units(
            "bank_id=?1 AND document_id=(SELECT document_id FROM units WHERE id=?2 AND bank_id=?1) "
            "AND label<(SELECT label FROM units WHERE id=?2) ORDER BY label DESC LIMIT ?3",
            (bank_id, unit_id, limit),
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
        return self._units(where, (*params, -1 if limit is None else limit, offset))

    def purge(self) -> None:
        """Checkpoint and truncate the write-ahead log, whose old frames still hold deleted rows."""
        with self._write_lock:
            if self._closed:
                raise StoreClosedError("the store is closed")
            busy = self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        if busy:
            log.warning("%s: a reader kept the WAL from being truncated; deleted rows stay in it until the next "
                        "checkpoint", self.path)

    def scrubs_pending(self) -> list[str]:
        return [r[0][len(_SCRUB):] for r in self._query("SELECT key FROM meta WHERE key LIKE ?", (_SCRUB + "%",))]

    def scrub_done(self, bank_id: str) -> None:
        with self._tx() as c:
            c.execute("DELETE FROM meta WHERE key=?", (_SCRUB + bank_id,))

    def stats(self, bank_id: str) -> BankStats:
        units = {n.value: 0 for n in Network}
        units.update(dict(self._query("SELECT network, count(*) FROM units WHERE bank_id=? GROUP BY network",
                                      (bank_id,))))
        links = {t.value: 0 for t in LinkType}
        links.update(dict(self._query("SELECT type, count(*) FROM links WHERE bank_id=? GROUP BY type", (bank_id,))))
        entities = self._query("SELECT count(*) FROM entities WHERE bank_id=?", (bank_id,))[0][0]
        docs = self._query("SELECT count(*) FROM documents WHERE bank_id=?", (bank_id,))[0][0]
        return BankStats(bank_id=bank_id, units=units, entities=entities, links=links, documents=docs)

    def close(self) -> None:
        """Refuse new reads and writes, wait for those in flight, then close every connection."""
        self._reads.shut()
        with self._write_lock:
            self._closed = True
            with self._conns_lock:
                for conn in self._conns:
                    try:
                        conn.close()
                    except sqlite3.Error:  # pragma: no cover - closing is best effort
                        log.warning("error closing a database connection", exc_info=True)
                self._conns.clear()


# The meta key that says a bank's files still need scrubbing; set in the forget's (or delete's) own transaction, so
# that a kill after the commit leaves the obligation for the next open (hindsight/scrub.py).
_SCRUB = "scrub:"


def _mark_scrub(c: sqlite3.Connection, bank_id: str) -> None:
    c.execute("INSERT OR REPLACE INTO meta(key, value) VALUES(?, '1')", (_SCRUB + bank_id,))


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
