"""SQLite (WAL) implementation of MemoryStore: one database file for all banks."""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from hindsight.config import HnswConfig
from hindsight.errors import StoreClosedError
from hindsight.lifecycle import CallGate
from hindsight.store.base import Change
from hindsight.store.search import BankSearch
from hindsight.store.sql_store import SqlStore
from hindsight.store.sql_util import Tx
from hindsight.store.sqlite_schema import (
    CONTEXT_SCHEMA,
    REASONING_SCHEMA,
    SCHEMA,
    SCHEMA_VERSION,
    add_columns,
    refuse_other_schema,
)
from hindsight.store.sqlite_search import SqliteSearch
from hindsight.store.sqlite_util import store_error

log = logging.getLogger(__name__)


class SQLiteStore(SqlStore):
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
                self._writer.executescript(SCHEMA + REASONING_SCHEMA + CONTEXT_SCHEMA)
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
    def _tx(self) -> Iterator[Tx]:
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

    @contextmanager
    def _snapshot(self) -> Iterator[Tx]:
        with self._reading() as conn:
            try:
                conn.execute("BEGIN")
                try:
                    yield conn
                finally:
                    conn.execute("COMMIT")
            except sqlite3.Error as exc:
                raise store_error(self.path, exc, "integrity read") from exc

    # -- what SqlStore asks of a backend -----------------------------------------------------
    def _vector(self, vector: np.ndarray) -> Any:
        return vector.tobytes()

    def _array(self, value: Any) -> np.ndarray:
        return np.frombuffer(value, dtype=np.float32)

    def _follow(self, c: Tx, bank_id: str, changes: list[tuple[str, int]]) -> int:
        """The changes go to the change log, which each derived index file replays (store/sqlite_search.py)."""
        c.executemany("INSERT INTO changes(bank_id, op, label) VALUES(?, ?, ?)",
                      [(bank_id, op, label) for op, label in changes])
        return int(c.execute("SELECT max(seq) FROM changes WHERE bank_id=?", (bank_id,)).fetchone()[0] or 0)

    def _mark_scrub(self, c: Tx, bank_id: str) -> None:
        c.execute("INSERT OR REPLACE INTO meta(key, value) VALUES(?, '1')", (_SCRUB + bank_id,))

    def _drop_bank_rows(self, c: Tx, bank_id: str) -> None:
        c.execute("DELETE FROM changes WHERE bank_id=?", (bank_id,))

    def last_change(self, bank_id: str) -> int:
        return int(self._query("SELECT max(seq) FROM changes WHERE bank_id=?", (bank_id,))[0][0] or 0)

    def changes_since(self, bank_id: str, seq: int) -> list[Change]:
        """The change log after `seq`, oldest first, which the derived index files replay."""
        rows = self._query("SELECT seq, op, label FROM changes WHERE bank_id=? AND seq>? ORDER BY seq", (bank_id, seq))
        return [Change(r[0], r[1], r[2]) for r in rows]

    def open_search(self, bank_id: str, dim: int) -> BankSearch:
        return SqliteSearch(self, bank_id, self._files / bank_id, dim, self._hnsw)

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
