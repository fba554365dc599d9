"""BM25 lexical index in an SQLite FTS5 file of its own; the watermark commits with the rows."""

from __future__ import annotations

import logging
import re
import sqlite3
import threading
from pathlib import Path

from hindsight.errors import StoreClosedError, StoreError
from hindsight.store.base import IndexedUnit
from hindsight.store.derived import LexicalIndex
from hindsight.store.disk import disk_error, sqlite_disk_error
from hindsight.store.search import IndexHit

log = logging.getLogger(__name__)

_WORD = re.compile(r"\w+", re.UNICODE)
# Function words carry no topical signal and make OR-queries match everything.
_STOPWORDS = frozenset(
    [
    'a', 'about', 'above', 'after', 'again', 'against', 'all', 'am', 'an', 'and', 'any', 'are', 'as', 'at',
    'be', 'because', 'been', 'before', 'being', 'below', 'between', 'both', 'but', 'by', 'can', 'could', 'did',
    'do', 'does', 'doing', 'down', 'during', 'each', 'few', 'for', 'from', 'further', 'had', 'has', 'have',
    'having', 'he', 'her', 'here', 'hers', 'herself', 'him', 'himself', 'his', 'how', 'i', 'if', 'in', 'into',
    'is', 'it', 'its', 'itself', 'just', 'me', 'more', 'most', 'my', 'myself', 'no', 'nor', 'not', 'now', 'of',
    'off', 'on', 'once', 'only', 'or', 'other', 'our', 'ours', 'ourselves', 'out', 'over', 'own', 'same', 'she',
    'should', 'so', 'some', 'such', 'than', 'that', 'the', 'their', 'theirs', 'them', 'themselves', 'then',
    'there', 'these', 'they', 'this', 'those', 'through', 'to', 'too', 'under', 'until', 'up', 'very', 'was',
    'we', 'were', 'what', 'when', 'where', 'which', 'while', 'who', 'whom', 'why', 'will', 'with', 'would',
    'you', 'your', 'yours', 'yourself', 'yourselves',
    # What the tokenizer leaves of contractions ("I've" -> "i", "ve"). "don" and "won" stay: they are also words.
    'ain', 'aren', 'couldn', 'didn', 'doesn', 'hadn', 'hasn', 'haven', 'isn', 'll', 'mightn', 'mustn', 'needn',
    're', 'shan', 'shouldn', 've', 'wasn', 'weren', 'wouldn',
]
)
_MAX_QUERY_TERMS = 32
# A unit's own text, and its lead: text it quotes from before it, searchable at a lower weight.
_COLUMNS = ("text", "lead")


def query_terms(text: str) -> list[str]:
    """The searchable terms of free text: lower-cased words minus stopwords, deduplicated, in order."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(text.lower()):
        # A lone letter is mostly a clitic split off by the tokenizer ("Maya's" -> "maya", "s").
        if (len(word) > 1 or word.isdigit()) and word not in _STOPWORDS and word not in seen:
            seen[word] = None
    return list(seen)[:_MAX_QUERY_TERMS]


class Fts5Index(LexicalIndex):
    """One FTS5 table keyed by unit label, in `lexical.db`."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.path = directory / "lexical.db"
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        self.watermark = 0

    def _open(self) -> sqlite3.Connection:
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise disk_error(exc, f"creating the index directory {self.dir}") from exc
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30.0)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA secure_delete=ON")
        conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5({', '.join(_COLUMNS)}, "
            "tokenize='porter unicode61 remove_diacritics 2')"
        )
        conn.execute("CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL)")
        return conn

    def load(self) -> bool:
        existed = self.path.exists()
        conn: sqlite3.Connection | None = None
        try:
            conn = self._open()
            # Reading the meta table alone misses damaged pages elsewhere; quick_check reads every page once.
            damage = [r[0] for r in conn.execute("PRAGMA quick_check")]
            row = conn.execute("SELECT value FROM meta WHERE key='watermark'").fetchone()
            columns = tuple(d[0] for d in conn.execute("SELECT * FROM fts LIMIT 0").description)
        except sqlite3.DatabaseError as exc:
            log.warning("lexical index %s is unreadable (%s); rebuilding", self.path, exc)
            if conn is not None:
                conn.close()
            return False
        if damage != ["ok"]:
            log.warning("lexical index %s is damaged (%s); rebuilding", self.path, "; ".join(damage)[:200])
            conn.close()
            return False
        if columns != _COLUMNS:  # written by an older version: one column, no lead
            log.info("lexical index %s has columns %s, not %s; rebuilding", self.path, columns, _COLUMNS)
            conn.close()
            return False
        with self._lock:
            self._conn = conn
            self.watermark = int(row[0]) if row else 0
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
            self.watermark = 0

    def _write(self, sql: str, rows: list[tuple[object, ...]], watermark: int) -> None:
        with self._lock:
            conn = self._live()
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany(sql, rows)
                conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES('watermark', ?)", (watermark,))
                conn.execute("COMMIT")
            except BaseException as exc:
                if conn.in_transaction:  # SQLite has already rolled back after some errors (a damaged page)
                    conn.execute("ROLLBACK")
                # A full disk is a typed error, and the watermark stays for the next sync to retry; damage stays an
                # SQLite error, on which the caller rebuilds the index.
                if isinstance(exc, sqlite3.Error) and (
                        typed := sqlite_disk_error(exc, f"writing the lexical index {self.path}", self.path)):
                    raise typed from exc
                raise
            self.watermark = max(self.watermark, watermark)

    def add_units(self, units: list[IndexedUnit], watermark: int) -> None:
        rows: list[tuple[object, ...]] = [(u.label, u.text, u.lead) for u in units]
        self._write("INSERT OR REPLACE INTO fts(rowid, text, lead) VALUES(?, ?, ?)", rows, watermark)

    def remove(self, labels: list[int], watermark: int) -> None:
        self._write("DELETE FROM fts WHERE rowid=?", [(x,) for x in labels], watermark)

    def search(self, query: str, k: int, lead_weight: float = 1.0) -> list[IndexHit]:
        # Every term is quoted, so user text is never parsed as FTS5 syntax.
        terms = ['"' + t.replace('"', '""') + '"' for t in query_terms(query)]
        if not terms or k <= 0:
            return []
        with self._lock:
            conn = self._live()
            match = " OR ".join(terms)
            rows = conn.execute(
                "SELECT rowid, bm25(fts, 1.0, ?) AS rank FROM fts WHERE fts MATCH ? ORDER BY rank LIMIT ?",
                (float(lead_weight), match, k),
            ).fetchall()
        return [IndexHit(int(r[0]), float(-r[1])) for r in rows]

    def purge(self) -> None:
        """Make removed rows unrecoverable from the files: FTS5 keeps deleted terms in old segments until they
        merge, and the WAL keeps old pages until it is truncated."""
        with self._lock:
            conn = self._live()
            conn.execute("INSERT INTO fts(fts) VALUES('optimize')")
            busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        if busy:
            log.warning("lexical index %s: the WAL could not be truncated", self.path)

    def labels(self) -> set[int]:
        with self._lock:
            return {int(r[0]) for r in self._live().execute("SELECT rowid FROM fts")}

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._conn is not None:
                self._conn.close()
                self._conn = None
