"""PostgreSQL (with pgvector) implementation of MemoryStore: every bank in one database that many processes share.

It runs the same SQL as the SQLite store (store/sql_store.py). What differs:
- search lives in the database, written in the same transaction as the units: pgvector's HNSW index over the
  `embedding` column, and BM25 over term statistics in `lex_*` tables (store/postgres_lexical.py);
- writes to one bank are serialized across processes by an advisory lock on the bank (`writing`, which `apply`
  takes too);
- the queue of background work is claimed with `FOR UPDATE SKIP LOCKED`, and on open only the claims of processes
  that are gone are put back;
- the schema is migrated under a lock (store/postgres_schema.py).
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np

from hindsight.config import HnswConfig
from hindsight.errors import ConfigError, StoreClosedError, StoreError
from hindsight.lifecycle import CallGate
from hindsight.models import Network
from hindsight.store import postgres_lexical as lexical
from hindsight.store.postgres_schema import migrate, vector_index
from hindsight.store.postgres_sql import PgTx, parse_vector, register_vector, vector_text
from hindsight.store.search import BankSearch, IndexHit
from hindsight.store.sql_store import SqlStore
from hindsight.store.sql_util import Tx

if TYPE_CHECKING:
    from collections.abc import Set

    from psycopg import Connection

log = logging.getLogger(__name__)

# Units indexed per step when the lexical tables follow a write: an import of a big bank in one transaction would
# otherwise hold every posting of the bank in memory at once.
_FOLLOW_BATCH = 5_000
# Tables whose rows hold a unit's text or what was derived from it: vacuumed after a forget.
_TEXT_TABLES = ("units", "documents", "entities", "entity_aliases", "entity_keys", "claims", "opinion_history",
                "pending_work", "lex_docs", "lex_terms", "lex_chunks", "observation_log", "observed_units",
                "observe_again", "working_memory", "working_memory_formats", "context_blocks")


def _bank_key(bank_id: str) -> str:
    return f"hindsight:bank:{bank_id}"


class PostgresStore(SqlStore):
    """All banks in one PostgreSQL database with the `vector` extension."""

    bank_files = None
    # An operation is owned by the writer connection that recorded it; once that connection is gone (its process
    # died), another process's start fails the operation.
    _OWNER = "pg_backend_pid()"
    _ORPHANED = "owner NOT IN (SELECT pid FROM pg_stat_activity WHERE pid IS NOT NULL)"

    def __init__(self, dsn: str, hnsw: HnswConfig | None = None) -> None:
        try:
            import psycopg  # noqa: F401  - the [postgres] extra
        except ImportError as exc:
            raise ConfigError("store.backend postgres needs psycopg: pip install 'hindsight-memory[postgres]'") from exc
        self.dsn = dsn
        self._hnsw = hnsw or HnswConfig()
        self._write_lock = threading.RLock()
        self._local = threading.local()
        self._conns: list[Connection[Any]] = []
        self._conns_lock = threading.Lock()
        self._closed = False
        self._dims: set[int] = set()
        self._ef_search: weakref.WeakKeyDictionary[Connection[Any], int] = weakref.WeakKeyDictionary()
        self._reads = CallGate(lambda: StoreClosedError("the store is closed"))
        self._writer = self._connect(migrating=True)

    # -- connections -------------------------------------------------------------------------
    def _connect(self, migrating: bool = False) -> Connection[Any]:
        import psycopg

        try:
            conn = psycopg.connect(self.dsn, autocommit=True, connect_timeout=30)
            if migrating:
                migrate(conn)
            register_vector(conn)
        except psycopg.Error as exc:
            raise StoreError(f"cannot open the Postgres store ({_where(self.dsn)}): {exc}") from exc
        with self._conns_lock:
            self._conns.append(conn)
        return conn

    def _live_writer(self) -> Connection[Any]:
        """The writer, connected again when the server dropped it (a restart, an idle timeout)."""
        if self._writer.broken or self._writer.closed:
            log.warning("the Postgres connection was lost; connecting again")
            self._writer = self._connect()
        return self._writer

    @contextmanager
    def _reading(self) -> Iterator[Connection[Any]]:
        """This thread's connection for reads; close() waits for it."""
        with self._reads.call():
            if self._closed:
                raise StoreClosedError("the store is closed")
            conn: Connection[Any] | None = getattr(self._local, "conn", None)
            if conn is None or conn.broken or conn.closed:
                conn = self._connect()
                self._local.conn = conn
            yield conn

    @contextmanager
    def _tx(self) -> Iterator[Tx]:
        import psycopg

        with self._write_lock:
            if self._closed:
                raise StoreClosedError("the store is closed")
            conn = self._live_writer()
            try:
                with conn.transaction():
                    yield PgTx(conn)
            except psycopg.Error as exc:
                raise StoreError(f"a database write (rolled back) failed: {exc}") from exc

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        import psycopg

        with self._reading() as conn:
            try:
                return PgTx(conn, binary=True).execute(sql, params).fetchall()
            except psycopg.Error as exc:
                raise StoreError(f"a database read failed: {exc}") from exc

    @contextmanager
    def _snapshot(self) -> Iterator[Tx]:
        with self._reading() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield PgTx(conn)

    # -- what SqlStore asks of a backend -----------------------------------------------------
    def _vector(self, vector: np.ndarray) -> Any:
        return vector_text(vector)

    def _array(self, value: Any) -> np.ndarray:
        return value if isinstance(value, np.ndarray) else parse_vector(value)

    def _follow(self, c: Tx, bank_id: str, changes: list[tuple[str, int]]) -> int:
        """The lexical tables follow the changed units in the same transaction; the HNSW index follows by itself."""
        assert isinstance(c, PgTx)
        with c.conn.cursor() as cur:
            gone = [label for op, label in changes if op == "del"]
            lexical.remove_units(cur, bank_id, gone)
            changed = sorted({label for op, label in changes if op != "del"} - set(gone))
            for i in range(0, len(changed), _FOLLOW_BATCH):
                cur.execute("SELECT label, embed_text, coalesce(lead, '') FROM units WHERE label = ANY(%s)",
                            (changed[i : i + _FOLLOW_BATCH],))
                lexical.index_units(cur, bank_id, [lexical.LexicalDoc(int(r[0]), r[1], r[2]) for r in cur.fetchall()])
        row = c.execute("UPDATE banks SET seq=seq+1 WHERE id=? RETURNING seq", (bank_id,)).fetchone()
        assert row is not None  # apply() found the bank in this transaction
        return int(row[0])

    def _mark_scrub(self, c: Tx, bank_id: str) -> None:
        c.execute("INSERT INTO scrubs(bank_id) VALUES(?) ON CONFLICT DO NOTHING", (bank_id,))

    def _drop_bank_rows(self, c: Tx, bank_id: str) -> None:
        assert isinstance(c, PgTx)
        with c.conn.cursor() as cur:
            lexical.drop_bank(cur, bank_id)

    def last_change(self, bank_id: str) -> int:
        rows = self._query("SELECT seq FROM banks WHERE id=?", (bank_id,))
        return int(rows[0][0]) if rows else 0

    @contextmanager
    def writing(self, bank_id: str) -> Iterator[None]:
        """Hold the bank's lock across every process sharing the database, for a read-then-write such as a retain's
        entity resolution and its apply: a session lock on this thread's connection, taken again by nothing inside."""
        held: set[str] = getattr(self._local, "writing", set())
        if bank_id in held:
            yield
            return
        with self._reading() as conn:
            conn.execute("SELECT pg_advisory_lock(hashtext(%s))", (_bank_key(bank_id),))
            self._local.writing = held | {bank_id}
            try:
                yield
            finally:
                self._local.writing = held
                conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (_bank_key(bank_id),))

    def citing_units(self, bank_id: str, unit_ids: Sequence[str]) -> dict[str, set[str]]:
        # SQLite's json_each is jsonb_array_elements_text here.
        ids = sorted(set(unit_ids))
        out: dict[str, set[str]] = {}
        for uid, cited in self._query(
            "SELECT u.id, j.value FROM units u, jsonb_array_elements_text(coalesce(u.metadata::jsonb -> "
            "'source_units', '[]'::jsonb)) j(value) WHERE u.bank_id=? AND u.network IN (?, ?) AND j.value = ANY(?) "
            "UNION SELECT h.unit_id, j.value FROM opinion_history h, jsonb_array_elements_text(h.evidence::jsonb) "
            "j(value) WHERE h.bank_id=? AND j.value = ANY(?)",
            (bank_id, Network.OPINION.value, Network.OBSERVATION.value, ids, bank_id, ids),
        ):
            out.setdefault(uid, set()).add(cited)
        return out

    # -- the shared queue ----------------------------------------------------------------------
    def claim_pending(self, bank_id: str, kind: str, claim: str, limit: int) -> list[str]:
        # SKIP LOCKED: workers of other processes claiming at the same moment take other keys instead of waiting.
        with self._tx() as c:
            rows = c.execute(
                "UPDATE pending_work SET claim=?, claimed_by=pg_backend_pid(), requeued=0 "
                "WHERE (bank_id, kind, key) IN (SELECT bank_id, kind, key FROM pending_work "
                "WHERE bank_id=? AND kind=? AND claim IS NULL ORDER BY queued_at, key LIMIT ? FOR UPDATE SKIP LOCKED) "
                "RETURNING key, queued_at",
                (claim, bank_id, kind, limit),
            ).fetchall()
        return [r[0] for r in sorted(rows, key=lambda r: (r[1], r[0]))]

    def release_pending(self, claim: str | None = None) -> int:
        """Put back the keys `claim` holds; with None, those held by connections that no longer exist (a process
        that died), never those of a live process sharing the database."""
        with self._tx() as c:
            if claim is not None:
                cur = c.execute("UPDATE pending_work SET claim=NULL, requeued=0 WHERE claim=?", (claim,))
            else:
                cur = c.execute(
                    "UPDATE pending_work SET claim=NULL, requeued=0 WHERE claim IS NOT NULL AND "
                    "claimed_by NOT IN (SELECT pid FROM pg_stat_activity WHERE pid IS NOT NULL)")
            return cur.rowcount

    # -- search, scrubbing, closing ------------------------------------------------------------
    def open_search(self, bank_id: str, dim: int) -> BankSearch:
        if dim not in self._dims:
            with self._write_lock:
                vector_index(self._live_writer(), dim, self._hnsw.m, self._hnsw.ef_construction)
            self._dims.add(dim)
        return PostgresSearch(self, bank_id, dim)

    def purge(self) -> None:
        """VACUUM the tables that held forgotten text, so no dead row or index entry keeps it (see docs/POSTGRES.md
        for what stays in write-ahead log segments and backups)."""
        with self._write_lock:
            if self._closed:
                raise StoreClosedError("the store is closed")
            conn = self._live_writer()
            for table in _TEXT_TABLES:
                conn.execute(f"VACUUM {table}")  # a fixed name

    def scrubs_pending(self) -> list[str]:
        return [r[0] for r in self._query("SELECT bank_id FROM scrubs ORDER BY bank_id")]

    def scrub_done(self, bank_id: str) -> None:
        with self._tx() as c:
            c.execute("DELETE FROM scrubs WHERE bank_id=?", (bank_id,))

    def close(self) -> None:
        """Refuse new reads and writes, wait for those in flight, then close every connection."""
        self._reads.shut()
        with self._write_lock:
            self._closed = True
            with self._conns_lock:
                for conn in self._conns:
                    conn.close()
                self._conns.clear()


class PostgresSearch(BankSearch):
    """A bank's search, by SQL: pgvector's HNSW index (cosine) and the lexical tables."""

    def __init__(self, store: PostgresStore, bank_id: str, dim: int) -> None:
        self.store = store
        self.bank_id = bank_id
        self.dim = dim
        # The expression and predicate of the HNSW index of this embedding size, spelled with the size itself: a
        # parameter would leave a prepared statement's generic plan unable to use the partial index.
        self._distance = f"embedding::vector({dim}) <=> %(q)s::vector({dim})"

    def sync(self) -> None:
        """Nothing: search is written in the same transactions as the units."""

    def search_vectors(self, vector: np.ndarray, k: int, allowed: Set[int] | None = None) -> list[IndexHit]:
        if k <= 0 or (allowed is not None and not allowed):
            return []
        where = "" if allowed is None else " AND label = ANY(%(allowed)s)"
        params: dict[str, Any] = {"q": vector_text(vector), "bank": self.bank_id, "k": k,
                                  "ef": max(self.store._hnsw.ef_search, k)}
        if allowed is not None:
            params["allowed"] = sorted(allowed)
        with self.store._reading() as conn:
            if self.store._ef_search.get(conn) != params["ef"]:
                # Session settings, sent only when they change: a search is then one round trip. An iterative scan
                # goes on past the first ef_search candidates until k rows of this bank pass.
                conn.execute("SELECT set_config('hnsw.ef_search', %(ef)s::text, false), "
                             "set_config('hnsw.iterative_scan', 'relaxed_order', false)", params)
                self.store._ef_search[conn] = params["ef"]
            rows = conn.execute(  # SQL built from fixed parts and an int
                f"SELECT label, {self._distance} AS d FROM units WHERE bank_id = %(bank)s AND dim = {self.dim}{where} "
                f"ORDER BY d LIMIT %(k)s", params).fetchall()
        # relaxed_order may return rows slightly out of order
        return [IndexHit(int(label), 1.0 - float(d)) for label, d in sorted(rows, key=lambda r: (r[1], r[0]))]

    def search_lexical(self, query: str, k: int, lead_weight: float = 1.0) -> list[IndexHit]:
        # One snapshot: the search reads a term's statistics and then its chunks in several statements, and a write
        # committed between them (a merge of chunks) would otherwise show it a term half before and half after.
        with self.store._snapshot() as c:
            assert isinstance(c, PgTx)
            with c.conn.cursor() as cur:
                return lexical.search(cur, self.bank_id, query, k, lead_weight)

    def vector_count(self) -> int:
        """The bank's row count kept with the lexical statistics: a count(*) would scan the bank on every recall."""
        rows = self.store._query("SELECT n_docs FROM lex_banks WHERE bank_id=?", (self.bank_id,))
        return int(rows[0][0]) if rows else 0

    def vector_labels(self) -> set[int]:
        return {int(r[0]) for r in self.store._query(
            "SELECT label FROM units WHERE bank_id=? AND dim=?", (self.bank_id, self.dim))}

    def lexical_labels(self) -> set[int]:
        with self.store._reading() as conn, conn.cursor() as cur:
            return lexical.lexical_labels(cur, self.bank_id)

    def purge(self) -> None:
        """Nothing beyond the store's: the lexical tables are vacuumed with the others."""

    def close(self) -> None:
        """Nothing: the store's connections serve every bank."""


def _where(dsn: str) -> str:
    """Where the DSN points, without its password, for messages."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        parts = conninfo_to_dict(dsn)
    except Exception:  # an unparsable DSN: say nothing of it
        return "an unreadable DSN"
    return " ".join(f"{k}={parts[k]}" for k in ("host", "port", "dbname", "user") if parts.get(k))

