"""BM25 lexical index of one bank in `lexical.db`, with an exact top-k that reads little of a common term.

Scores are FTS5's bm25() over two columns, `text` and `lead` (weights 1.0 and `lead_weight`), with FTS5's
tokenizer (porter over unicode61, remove_diacritics 2; `hindsight.store.tokenize`). A query is its `query_terms`,
OR-ed; a term that splits into several tokens ("a_b") matches rows holding all of them, as often as the rarest.
Search is `store.maxscore`'s exact top-k over the terms' chunks in the file (`store.postings`) and in memory.

New rows are held in memory (`store.recent`) and written when the vector snapshot is saved (`save`), on close, and
before a removal; the watermark in the file is that of the last write, so the change log replays the rest.
"""

from __future__ import annotations

import functools
import logging
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hindsight.errors import StoreClosedError, StoreError
from hindsight.store import maxscore, postings
from hindsight.store.base import IndexedUnit
from hindsight.store.derived import LexicalIndex
from hindsight.store.disk import disk_error, sqlite_disk_error
from hindsight.store.recent import Recent
from hindsight.store.search import IndexHit
from hindsight.store.tokenize import query_terms, tokens

log = logging.getLogger(__name__)

_FORMAT = 4  # PRAGMA user_version of this layout; 0 was FTS5's, 2 had no small chunks, 3 no CRCs
# Rows held in memory before a write of their own: bounds a rebuild's memory.
_HOLD = 20_000


@dataclass(frozen=True)
class _Stored:
    """A word's postings in the file (read on demand from its term's chunks) and in memory."""

    conn: sqlite3.Connection
    term: postings.Term | None
    recent: np.ndarray

    def all(self) -> np.ndarray:
        return _union(postings.read_chunks(self.conn, self.term.id) if self.term else None, self.recent)

    def some(self, labels: np.ndarray) -> np.ndarray:
        """At least the postings of `labels`: from the chunks that hold them, and from memory."""
        return _union(postings.read_owners(self.conn, self.term.id, labels) if self.term else None, self.recent)


def _union(stored: np.ndarray | None, recent: np.ndarray) -> np.ndarray:
    """Postings of the file and of memory (no label in both), in label order."""
    parts = [p for p in (stored, recent) if p is not None and len(p)]
    if len(parts) < 2:
        return parts[0] if parts else np.zeros(0, dtype=postings.POSTING)
    return postings.in_label_order(parts)


class Bm25Index(LexicalIndex):
    """The lexical index of one bank, in `lexical.db` beside its vectors."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.path = directory / "lexical.db"
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        self._recent = Recent()
        self.watermark = 0  # the last change the index holds, in the file or in memory
        self._written = 0  # the last change in the file

    def _open(self) -> sqlite3.Connection:
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise disk_error(exc, f"creating the index directory {self.dir}") from exc
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30.0)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA secure_delete=ON")  # a removed row's postings are overwritten, not left in free pages
        if not conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
            conn.executescript(postings.SCHEMA)
            conn.execute(f"PRAGMA user_version={_FORMAT}")
        return conn

    def load(self) -> bool:
        existed = self.path.exists()
        conn: sqlite3.Connection | None = None
        try:
            conn = self._open()
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            ours = version == _FORMAT
            # The statistics every search reads are checked page by page; the postings and rows, most of the file,
            # are checked when read (SQLite's own checks and each blob's CRC-32) and by check() (`labels`).
            damage = [r[0] for t in ("meta", "terms") for r in conn.execute(f"PRAGMA quick_check({t})")] if ours \
                else ["ok"]
            row = conn.execute("SELECT value FROM meta WHERE key='watermark'").fetchone() if ours else None
        except sqlite3.DatabaseError as exc:
            log.warning("lexical index %s is unreadable (%s); rebuilding", self.path, exc)
            if conn is not None:
                conn.close()
            return False
        if set(damage) != {"ok"}:
            log.warning("lexical index %s is damaged (%s); rebuilding", self.path, "; ".join(damage)[:200])
            conn.close()
            return False
        if version != _FORMAT:  # written by an older version (FTS5)
            log.info("lexical index %s has layout %s, not %s; rebuilding", self.path, version, _FORMAT)
            conn.close()
            return False
        with self._lock:
            self._conn = conn
            self._recent.clear()
            self.watermark = self._written = int(row[0]) if row else 0
        return existed

    def _live(self) -> sqlite3.Connection:
        """The open connection (call with the lock held). A closed index (its bank closed or deleted) is an error; one
        whose reset failed is unusable like a damaged one, and the caller rebuilds it."""
        if self._closed:
            raise StoreClosedError(f"lexical index {self.path} is closed")
        if self._conn is None:
            raise sqlite3.OperationalError(f"lexical index {self.path} is not open")
        return self._conn

    def reset(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            try:
                for suffix in ("", "-wal", "-shm"):
                    Path(f"{self.path}{suffix}").unlink(missing_ok=True)
                self._conn = self._open()
            except OSError as exc:
                raise disk_error(exc, f"creating the lexical index {self.path}") from exc
            except sqlite3.Error as exc:
                what = f"creating the lexical index {self.path}"
                raise sqlite_disk_error(exc, what, self.path) or StoreError(f"{what} failed: {exc}") from exc
            self._recent.clear()
            self.watermark = self._written = 0

    def _write(self, change: Callable[[sqlite3.Connection], None], watermark: int) -> None:
        """Write the rows held in memory, then `change`, in one transaction that records `watermark` (call with the
        lock held)."""
        conn = self._live()
        conn.execute("BEGIN IMMEDIATE")
        try:
            for i in range(0, len(self._recent.docs), _HOLD):
                postings.add(conn, self._recent.docs[i : i + _HOLD])
            change(conn)
            conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES('watermark', ?)", (watermark,))
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:  # SQLite has already rolled back after some errors (a damaged page)
                conn.execute("ROLLBACK")
            # A full disk is a typed error, and the rows stay in memory for the next write; damage stays an SQLite
            # error, on which the caller rebuilds the index.
            if isinstance(exc, sqlite3.Error) and (
                    typed := sqlite_disk_error(exc, f"writing the lexical index {self.path}", self.path)):
                raise typed from exc
            raise
        self._recent.clear()
        self._written = watermark

    def add_units(self, units: list[IndexedUnit], watermark: int) -> None:
        latest = sorted({u.label: u for u in units}.values(), key=lambda u: u.label)  # the last of a label wins
        with self._lock:
            for i in range(0, len(latest), _HOLD):
                part = latest[i : i + _HOLD]
                docs = [postings.Doc(u.label, tokens(u.text), tokens(u.lead)) for u in part]
                labels = [d.label for d in docs]
                held = self._recent.labels.intersection(labels) or postings.indexed(self._live(), labels)
                if held:  # rows indexed again: written at once, in place of the old
                    self._write(functools.partial(postings.remove, labels=sorted(held)), self.watermark)
                self._recent.add(docs)
                if len(self._recent.docs) >= _HOLD:  # the changes before this call are all in the file then
                    self._write(lambda conn: None, self.watermark)
            self.watermark = max(self.watermark, watermark)

    def remove(self, labels: list[int], watermark: int) -> None:
        with self._lock:
            self._write(lambda conn: postings.remove(conn, labels), watermark)
            self.watermark = max(self.watermark, watermark)

    def save(self) -> None:
        """Write the rows held in memory."""
        with self._lock:
            if self._behind():
                self._write(lambda conn: None, self.watermark)

    def _behind(self) -> bool:
        """Whether the file lacks rows or changes the index holds."""
        return bool(self._recent.docs) or self._written != self.watermark

    def search(self, query: str, k: int, lead_weight: float = 1.0) -> list[IndexHit]:
        phrases = [words for term in query_terms(query) if (words := tokens(term))]
        if not phrases or k <= 0:
            return []
        with self._lock:
            conn = self._live()
            stored = postings.totals(conn)
            docs, total = stored.docs + len(self._recent.docs), stored.tokens + self._recent.tokens
            if docs <= 0:
                return []
            known = postings.terms(conn, [w for p in phrases for w in p])
            avgdl = total / docs
            matched = [_phrase(conn, p, known, self._recent, docs, avgdl, lead_weight) for p in phrases]
            return maxscore.top_k([p for p in matched if p is not None], k, avgdl, lead_weight)

    def purge(self) -> None:
        """Make removed rows unrecoverable from the files: secure_delete has zeroed them in the database, and the WAL
        keeps old pages until it is truncated."""
        self.save()
        with self._lock:
            busy = self._live().execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        if busy:
            log.warning("lexical index %s: the WAL could not be truncated", self.path)

    def labels(self) -> set[int]:
        """Every label held, after reading every page of the file (an integrity check is the time to)."""
        with self._lock:
            conn = self._live()
            damage = [r[0] for r in conn.execute("PRAGMA quick_check")]
            if damage != ["ok"]:
                raise sqlite3.DatabaseError(f"lexical index {self.path} is damaged: {'; '.join(damage)[:200]}")
            return postings.labels(conn) | self._recent.labels

    def close(self) -> None:
        """Write the rows held in memory, then close; a failed write is logged (the change log replays them)."""
        with self._lock:
            try:
                if self._conn is not None and not self._closed and self._behind():
                    self._write(lambda conn: None, self.watermark)
            except (StoreError, sqlite3.Error) as exc:
                log.warning("lexical index %s: the last rows were not written (%s); the next open replays them",
                            self.path, exc)
            finally:
                self._closed = True
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None


def _phrase(conn: sqlite3.Connection, words: list[str], known: dict[str, postings.Term], recent: Recent, docs: int,
            avgdl: float, lead_weight: float) -> maxscore.Phrase | None:
    """A query term's match, or None when no row holds it."""
    sources = []
    for word in dict.fromkeys(words):
        term, mine = known.get(word), recent.postings(word)
        held = ([term.bounds] if term else []) + ([maxscore.Bounds.of(mine)] if len(mine) else [])
        if not held:
            return None
        sources.append(maxscore.Source(_Stored(conn, term, mine), (term.df if term else 0) + len(mine),
                                       functools.reduce(maxscore.Bounds.union, held)))
    return maxscore.phrase(sources, docs, avgdl, lead_weight)
