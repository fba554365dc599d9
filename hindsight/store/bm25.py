"""BM25 lexical index of one bank in `lexical.db`, with an exact top-k that reads little of a common term.

Scores are FTS5's bm25() over two columns, `text` and `lead` (weights 1.0 and `lead_weight`), with FTS5's
tokenizer (porter over unicode61, remove_diacritics 2; `hindsight.store.tokenize`): k1=1.2, b=0.75, IDF floored at
1e-6, a row's length being its tokens in both columns. A query is its `query_terms`, OR-ed; a term that splits into
several tokens ("a_b") matches rows holding all of them, as often as the rarest (FTS5 matches it as a phrase).

Search is MaxScore: query terms are taken by their upper bound, highest first, and each one's postings are scored in
full until the k-th best partial score exceeds what the remaining terms could add to a row; from then on only the
candidates already found are looked up in the remaining terms' chunks. The top k is the same as scoring every row.
"""

from __future__ import annotations

import logging
import math
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hindsight.errors import StoreClosedError, StoreError
from hindsight.store import postings
from hindsight.store.base import IndexedUnit
from hindsight.store.derived import LexicalIndex
from hindsight.store.disk import disk_error, sqlite_disk_error
from hindsight.store.search import IndexHit
from hindsight.store.tokenize import query_terms, tokens

log = logging.getLogger(__name__)

K1 = 1.2
B = 0.75
_IDF_FLOOR = 1e-6
_FORMAT = 2  # PRAGMA user_version of this layout; 0 was FTS5's
_WRITE_BATCH = 20_000  # rows per postings.add call: bounds a rebuild's memory


def _weight(f: np.ndarray, length: np.ndarray, avgdl: float) -> np.ndarray:
    """BM25's saturating term-frequency part."""
    return f * (K1 + 1) / (f + K1 * (1 - B + B * length / avgdl))


@dataclass
class _Phrase:
    """One query term as matched: its postings (all of them, or read on demand from its term's chunks), its IDF and
    an upper bound on what it adds to any row's score."""

    idf: float
    bound: float
    term: postings.Term | None = None  # one token: postings read from its chunks
    known: np.ndarray | None = None  # several tokens: the rows holding all of them, computed up front

    def all(self, conn: sqlite3.Connection) -> np.ndarray:
        return self.known if self.known is not None else postings.read_chunks(conn, self._id)

    def some(self, conn: sqlite3.Connection, labels: np.ndarray) -> np.ndarray:
        """The postings of `labels`, from the chunks that hold them."""
        if self.known is not None:
            return self.known
        firsts = postings.chunk_firsts(conn, self._id)
        owners = np.unique(np.maximum(np.searchsorted(firsts, labels, side="right") - 1, 0))
        return postings.read_chunks(conn, self._id, firsts[owners].tolist())

    @property
    def _id(self) -> int:
        assert self.term is not None
        return self.term.id


class Bm25Index(LexicalIndex):
    """The lexical index of one bank, in `lexical.db` beside its vectors."""

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
            # Reading the meta table alone misses damaged pages elsewhere; quick_check reads every page once.
            damage = [r[0] for r in conn.execute("PRAGMA quick_check")]
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            ours = version == _FORMAT
            row = conn.execute("SELECT value FROM meta WHERE key='watermark'").fetchone() if ours else None
        except sqlite3.DatabaseError as exc:
            log.warning("lexical index %s is unreadable (%s); rebuilding", self.path, exc)
            if conn is not None:
                conn.close()
            return False
        if damage != ["ok"]:
            log.warning("lexical index %s is damaged (%s); rebuilding", self.path, "; ".join(damage)[:200])
            conn.close()
            return False
        if version != _FORMAT:  # written by an older version (FTS5)
            log.info("lexical index %s has layout %s, not %s; rebuilding", self.path, version, _FORMAT)
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

    def _write(self, change: Callable[[sqlite3.Connection], None], watermark: int) -> None:
        with self._lock:
            conn = self._live()
            conn.execute("BEGIN IMMEDIATE")
            try:
                change(conn)
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
        latest = {u.label: u for u in units}  # the last of repeated labels wins

        def change(conn: sqlite3.Connection) -> None:
            postings.remove(conn, sorted(postings.indexed(conn, list(latest))))  # replaced rows
            rows = sorted(latest.values(), key=lambda u: u.label)
            for i in range(0, len(rows), _WRITE_BATCH):
                postings.add(conn, [postings.Doc(u.label, tokens(u.text), tokens(u.lead))
                                    for u in rows[i : i + _WRITE_BATCH]])

        self._write(change, watermark)

    def remove(self, labels: list[int], watermark: int) -> None:
        self._write(lambda conn: postings.remove(conn, labels), watermark)

    def search(self, query: str, k: int, lead_weight: float = 1.0) -> list[IndexHit]:
        phrases = [words for term in query_terms(query) if (words := tokens(term))]
        if not phrases or k <= 0:
            return []
        with self._lock:
            conn = self._live()
            totals = postings.totals(conn)
            if totals.docs <= 0:
                return []
            known = postings.terms(conn, [w for p in phrases for w in p])
            avgdl = totals.tokens / totals.docs
            matched = [_phrase(conn, p, known, totals.docs, avgdl, lead_weight) for p in phrases]
            return _top_k(conn, [p for p in matched if p is not None], k, avgdl, lead_weight)

    def purge(self) -> None:
        """Make removed rows unrecoverable from the files: secure_delete has zeroed them in the database, and the WAL
        keeps old pages until it is truncated."""
        with self._lock:
            busy = self._live().execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        if busy:
            log.warning("lexical index %s: the WAL could not be truncated", self.path)

    def labels(self) -> set[int]:
        with self._lock:
            return postings.labels(self._live())

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _idf(df: int, docs: int) -> float:
    idf = math.log((docs - df + 0.5) / (df + 0.5))
    return idf if idf > 0 else _IDF_FLOOR


def _phrase(conn: sqlite3.Connection, words: list[str], known: dict[str, postings.Term], docs: int, avgdl: float,
            lead_weight: float) -> _Phrase | None:
    """A query term's match, or None when no row holds it."""
    if any(w not in known for w in words):
        return None
    if len(words) == 1:
        term = known[words[0]]
        idf = _idf(term.df, docs)
        f = np.array([term.max_text + lead_weight * term.max_lead])
        return _Phrase(idf, idf * float(_weight(f, np.array([term.min_len]), avgdl)[0]), term=term)
    parts = [postings.read_chunks(conn, known[w].id) for w in dict.fromkeys(words)]
    common = parts[0]
    for other in parts[1:]:
        common = common[np.isin(common["label"], other["label"])]
    if not len(common):
        return None
    rows = common.copy()
    for other in parts[1:]:
        mine = other[np.isin(other["label"], rows["label"])]
        rows["text"] = np.minimum(rows["text"], mine["text"])
        rows["lead"] = np.minimum(rows["lead"], mine["lead"])
    rows = rows[(rows["text"] > 0) | (rows["lead"] > 0)]
    idf = _idf(len(rows), docs)
    scores = _scores(rows, idf, avgdl, lead_weight)
    return _Phrase(idf, float(scores.max()) if len(scores) else 0.0, known=rows)


def _scores(rows: np.ndarray, idf: float, avgdl: float, lead_weight: float) -> np.ndarray:
    f = rows["text"].astype(np.float64) + lead_weight * rows["lead"].astype(np.float64)
    return idf * _weight(f, rows["length"].astype(np.float64), avgdl)


def _top_k(conn: sqlite3.Connection, phrases: list[_Phrase], k: int, avgdl: float,
           lead_weight: float) -> list[IndexHit]:
    phrases.sort(key=lambda p: -p.bound)
    rest = np.cumsum([p.bound for p in reversed(phrases)])[::-1]  # rest[i]: the most phrases i.. add to a row
    labels, scores = np.zeros(0, dtype=np.int64), np.zeros(0)
    probing = False
    for i, phrase in enumerate(phrases):
        if len(labels) >= k:
            theta = float(np.partition(scores, len(scores) - k)[len(scores) - k])  # the k-th best so far
            if rest[i] < theta:  # a row not yet seen can no longer reach the top k
                probing = True
                keep = scores + rest[i] >= theta
                labels, scores = labels[keep], scores[keep]
        if probing:
            rows = phrase.some(conn, labels)
            at = np.minimum(np.searchsorted(rows["label"], labels), max(len(rows) - 1, 0))
            hit = rows["label"][at] == labels if len(rows) else np.zeros(len(labels), dtype=bool)
            add = np.zeros(len(labels))
            add[hit] = _scores(rows[at[hit]], phrase.idf, avgdl, lead_weight)
            scores = scores + add
        else:
            rows = phrase.all(conn)
            labels, scores = _merge(labels, scores, rows["label"], _scores(rows, phrase.idf, avgdl, lead_weight))
    order = np.lexsort((labels, -scores))[:k]
    return [IndexHit(int(labels[j]), float(scores[j])) for j in order]


def _merge(labels: np.ndarray, scores: np.ndarray, more: np.ndarray, more_scores: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray]:
    """Two sorted label sets with their scores, summed where they meet; sorted by label."""
    if not len(labels):
        return more, more_scores
    at = np.minimum(np.searchsorted(labels, more), len(labels) - 1)
    seen = labels[at] == more
    scores = scores.copy()
    scores[at[seen]] += more_scores[seen]
    labels = np.concatenate([labels, more[~seen]])
    scores = np.concatenate([scores, more_scores[~seen]])
    order = np.argsort(labels, kind="stable")
    return labels[order], scores[order]

