"""The lexical index's tables in `lexical.db`: terms, each term's postings in label order cut into chunks, and the
indexed rows; written a batch at a time, inside a transaction the caller holds."""

from __future__ import annotations

import sqlite3
import zlib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from enum import Enum

import numpy as np

from hindsight.store.maxscore import Bounds

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL);
-- Per term: how many rows hold it, and bounds over its postings (the largest frequencies, the shortest row); a
-- removal leaves the bounds as they were, which keeps them bounds. `last` is its largest label; its chunks from
-- `open_first` on (`open_chunks` of them) are small ones appended since its last full chunk.
-- A term is its UTF-8 bytes: the stemmer can cut a character in two, as FTS5's does.
CREATE TABLE IF NOT EXISTS terms(
    id INTEGER PRIMARY KEY, term BLOB NOT NULL UNIQUE, df INTEGER NOT NULL,
    max_text INTEGER NOT NULL, max_lead INTEGER NOT NULL, min_len INTEGER NOT NULL,
    last INTEGER NOT NULL, open_first INTEGER, open_chunks INTEGER NOT NULL);
-- A chunk holds a term's postings from label `first` up to the next chunk's first label. Blobs carry their CRC-32:
-- garbage in a valid page is damage SQLite cannot see.
CREATE TABLE IF NOT EXISTS chunks(
    term INTEGER NOT NULL, first INTEGER NOT NULL, data BLOB NOT NULL, crc INTEGER NOT NULL,
    PRIMARY KEY(term, first)) WITHOUT ROWID;
-- Per indexed row: its length in tokens (both columns) and its term ids (uint32), to remove it again.
CREATE TABLE IF NOT EXISTS docs(
    label INTEGER PRIMARY KEY, length INTEGER NOT NULL, terms BLOB NOT NULL, crc INTEGER NOT NULL);
"""
# A posting: the row, the term's count in its text and in its lead (at most 65,535), and the row's length.
POSTING = np.dtype([("label", "<i8"), ("text", "<u2"), ("lead", "<u2"), ("length", "<u4")])
# A full chunk: large enough that a common term is few reads.
CHUNK = 256
# Appends to a term add small chunks; this many are merged into full ones, so that an append writes only its own
# postings and a term is never many small reads.
OPEN_CHUNKS = 16
_MAX_COUNT = np.iinfo(np.uint16).max
_BATCH = 500  # bound parameters per IN (...) list


@dataclass(frozen=True)
class Doc:
    """A row to index: its label and the tokens of its two columns."""

    label: int
    text: list[str]
    lead: list[str]


@dataclass(frozen=True)
class Term:
    """A term's id, document frequency and bounds over its postings, and where its appended small chunks start."""

    id: int
    df: int
    max_text: int
    max_lead: int
    min_len: int
    last: int
    open_first: int | None
    open_chunks: int

    @property
    def bounds(self) -> Bounds:
        return Bounds(self.max_text, self.max_lead, self.min_len)

    def grown(self, new: np.ndarray, placement: Placement, written: Sequence[np.ndarray]) -> Term:
        """The term after `new` (its postings of a batch, sorted) is placed; `written`: the chunks that placing them
        wrote (NEW, MERGE)."""
        open_first, open_chunks = self.open_first, self.open_chunks
        if placement in (Placement.NEW, Placement.MERGE):  # the last chunk written stays open if it is small
            open_first, open_chunks = (int(written[-1]["label"][0]), 1) if len(written[-1]) < CHUNK else (None, 0)
        elif placement is Placement.APPEND:
            open_first, open_chunks = (int(new["label"][0]) if open_first is None else open_first), open_chunks + 1
        return Term(self.id, self.df + len(new), max(self.max_text, int(new["text"].max())),
                    max(self.max_lead, int(new["lead"].max())), min(self.min_len, int(new["length"].min())),
                    max(self.last, int(new["label"][-1])), open_first, open_chunks)


# A term not yet held, grown into a new one.
EMPTY_TERM = Term(0, 0, 0, 0, np.iinfo(np.uint32).max, np.iinfo(np.int64).min, None, 0)


class Placement(Enum):
    """Where a batch's postings of a term go."""

    NEW = "new"  # a term not yet held: chunks of its own
    REWRITE = "rewrite"  # labels among the term's (a row indexed again): the chunks that own them are rewritten
    MERGE = "merge"  # the term's small chunks and the new postings, merged into full chunks
    APPEND = "append"  # the usual append: one small chunk of its own


def placement(old: Term | None, new: np.ndarray) -> Placement:
    """Where a batch's postings of a term (sorted, labels not yet in the term) go."""
    if old is None:
        return Placement.NEW
    if int(new["label"][0]) <= old.last:
        return Placement.REWRITE
    if old.open_chunks + 1 >= OPEN_CHUNKS or len(new) >= CHUNK:
        return Placement.MERGE
    return Placement.APPEND


@dataclass(frozen=True)
class Totals:
    """The rows indexed and their tokens, for BM25's document count and average length."""

    docs: int
    tokens: int


def _batches(items: Sequence[object]) -> Iterable[Sequence[object]]:
    for i in range(0, len(items), _BATCH):
        yield items[i : i + _BATCH]


def _checked(rows: Iterable[tuple[bytes, int]], dtype: np.dtype) -> np.ndarray:
    """Stored blobs with their CRC-32, as one array; a damaged blob is an SQLite error (the index is rebuilt)."""
    blobs = []
    for blob, crc in rows:
        if zlib.crc32(blob) != crc:
            raise sqlite3.DatabaseError("the lexical index holds a damaged blob (its CRC-32 does not match)")
        blobs.append(blob)
    # One buffer: concatenating many small structured arrays costs more than reading them.
    return np.frombuffer(b"".join(blobs), dtype=dtype)


def totals(conn: sqlite3.Connection) -> Totals:
    rows = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('docs', 'tokens')").fetchall())
    return Totals(int(rows.get("docs", 0)), int(rows.get("tokens", 0)))


def _add_totals(conn: sqlite3.Connection, docs: int, tokens: int) -> None:
    now = totals(conn)
    conn.executemany("INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)",
                     [("docs", now.docs + docs), ("tokens", now.tokens + tokens)])


def _key(word: str) -> bytes:
    return word.encode("utf-8", "surrogateescape")


def terms(conn: sqlite3.Connection, words: Sequence[str]) -> dict[str, Term]:
    """The known terms among `words`."""
    found: dict[str, Term] = {}
    for part in _batches([_key(w) for w in dict.fromkeys(words)]):
        rows = conn.execute(
            "SELECT term, id, df, max_text, max_lead, min_len, last, open_first, open_chunks FROM terms "
            f"WHERE term IN ({','.join('?' * len(part))})",
            list(part))
        found.update((bytes(r[0]).decode("utf-8", "surrogateescape"), Term(*r[1:])) for r in rows)
    return found


def read_chunks(conn: sqlite3.Connection, term: int, firsts: Sequence[int] | None = None) -> np.ndarray:
    """A term's postings in label order: all of them, or those of the chunks starting at `firsts`."""
    if firsts is None:
        rows = conn.execute("SELECT data, crc FROM chunks WHERE term=? ORDER BY first", (term,)).fetchall()
    else:
        rows = []
        for part in _batches(list(firsts)):
            marks = ",".join("?" * len(part))
            rows += conn.execute(f"SELECT data, crc FROM chunks WHERE term=? AND first IN ({marks}) ORDER BY first",
                                 (term, *part)).fetchall()
    return _checked(rows, POSTING)


def chunk_firsts(conn: sqlite3.Connection, term: int) -> np.ndarray:
    """The first label of each of a term's chunks, ascending."""
    rows = conn.execute("SELECT first FROM chunks WHERE term=? ORDER BY first", (term,)).fetchall()
    return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))


def owning_chunks(firsts: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """For each label, the index of the chunk that holds it, or would (the first chunk for labels before it)."""
    return np.maximum(np.searchsorted(firsts, labels, side="right") - 1, 0)


def read_owners(conn: sqlite3.Connection, term: int, labels: np.ndarray) -> np.ndarray:
    """A term's postings in the chunks that would hold `labels` (so at least theirs), in label order."""
    firsts = chunk_firsts(conn, term)
    return read_chunks(conn, term, firsts[np.unique(owning_chunks(firsts, labels))].tolist())


def in_label_order(parts: Sequence[np.ndarray]) -> np.ndarray:
    """Postings of disjoint label sets, joined in label order."""
    merged = np.concatenate(parts)
    return merged[np.argsort(merged["label"], kind="stable")]


def cut(postings: np.ndarray) -> list[np.ndarray]:
    """Postings (sorted by label) cut into chunks of at most CHUNK."""
    return [postings[i : i + CHUNK] for i in range(0, len(postings), CHUNK)]


def _pieces(term: int, postings: np.ndarray) -> list[tuple[int, int, bytes, int]]:
    """Chunk rows for postings (sorted by label), cut at CHUNK."""
    return [_chunk(term, piece) for piece in cut(postings)]


def _chunk(term: int, postings: np.ndarray) -> tuple[int, int, bytes, int]:
    data = postings.tobytes()
    return term, int(postings["label"][0]), data, zlib.crc32(data)


def _rewrite(conn: sqlite3.Connection, term: int, old_first: int | None, postings: np.ndarray) -> None:
    """Replace one chunk (or none) by `postings`, cut into chunks of at most CHUNK."""
    if old_first is not None:
        conn.execute("DELETE FROM chunks WHERE term=? AND first=?", (term, old_first))
    conn.executemany("INSERT INTO chunks(term, first, data, crc) VALUES(?, ?, ?, ?)", _pieces(term, postings))


def _merge_open(conn: sqlite3.Connection, term: Term, new: np.ndarray) -> list[np.ndarray]:
    """Merge a term's small chunks and `new` (after them) into full chunks; the chunks written."""
    old = []
    if term.open_first is not None:
        old = [_checked(conn.execute("SELECT data, crc FROM chunks WHERE term=? AND first>=? ORDER BY first",
                                     (term.id, term.open_first)), POSTING)]
        conn.execute("DELETE FROM chunks WHERE term=? AND first>=?", (term.id, term.open_first))
    pieces = cut(np.concatenate([*old, new]))
    conn.executemany("INSERT INTO chunks(term, first, data, crc) VALUES(?, ?, ?, ?)",
                     [_chunk(term.id, piece) for piece in pieces])
    return pieces


def _merge_into_chunks(conn: sqlite3.Connection, term: int, new: np.ndarray) -> None:
    """Insert postings (sorted, labels not yet in the term) into the chunks that own their labels."""
    firsts = chunk_firsts(conn, term)
    owner = owning_chunks(firsts, new["label"])
    for chunk in np.unique(owner):
        first = int(firsts[chunk])
        stored = _checked(conn.execute("SELECT data, crc FROM chunks WHERE term=? AND first=?", (term, first)), POSTING)
        _rewrite(conn, term, first, in_label_order([stored, new[owner == chunk]]))


@dataclass(frozen=True)
class Batch:
    """A batch of rows inverted: its distinct words, and their postings ordered by word, then label."""

    words: list[str]
    postings: np.ndarray  # POSTING
    bounds: np.ndarray  # the postings of words[i] are postings[bounds[i]:bounds[i + 1]]
    doc_terms: list[np.ndarray]  # per row, in label order: the indexes into `words` of the words it holds


def invert(docs: Sequence[Doc]) -> Batch:
    """Rows as postings by word (they hold no label twice)."""
    columns = [words for doc in docs for words in (doc.text, doc.lead)]
    flat = [w for words in columns for w in words]
    vocab = {w: i for i, w in enumerate(dict.fromkeys(flat))}
    ids = np.fromiter(map(vocab.__getitem__, flat), dtype=np.int64, count=len(flat))
    # Per token: 2 * its row's position + its column.
    owner = np.repeat(np.arange(len(columns), dtype=np.int64), [len(words) for words in columns])
    n = len(docs)
    # One key per (word, row, column), so that unique() counts each word in each column of each row.
    keys, counts = np.unique(ids * 2 * n + owner, return_counts=True)
    pair_of_key = keys // 2  # sorted, as keys are
    starts = np.ones(len(pair_of_key), dtype=bool)
    starts[1:] = pair_of_key[1:] != pair_of_key[:-1]
    pairs = pair_of_key[starts]
    slot = np.cumsum(starts) - 1  # each key's (word, row) pair
    word, row = pairs // n, pairs % n
    out = np.zeros(len(pairs), dtype=POSTING)
    out["label"] = np.array([d.label for d in docs], dtype=np.int64)[row]
    out["length"] = np.bincount(owner // 2, minlength=n)[row]
    for column, field in ((0, "text"), (1, "lead")):
        mine = keys % 2 == column
        out[field][slot[mine]] = np.minimum(counts[mine], _MAX_COUNT)
    by_row = np.lexsort((word, row))
    row_bounds = np.searchsorted(row[by_row], np.arange(n + 1))
    return Batch(list(vocab), out, np.searchsorted(word, np.arange(len(vocab) + 1)),
                  [word[by_row[row_bounds[i]:row_bounds[i + 1]]] for i in range(n)])


def add(conn: sqlite3.Connection, docs: Sequence[Doc]) -> None:
    """Index rows whose labels the index does not hold."""
    docs = sorted(docs, key=lambda d: d.label)
    batch = invert(docs)
    known = terms(conn, batch.words)
    ids = np.zeros(len(batch.words), dtype=np.int64)
    next_id = int(conn.execute("SELECT coalesce(max(id), 0) FROM terms").fetchone()[0]) + 1
    created, updated, chunks = [], [], []
    for i, word in enumerate(batch.words):
        new = batch.postings[batch.bounds[i] : batch.bounds[i + 1]]
        old = known.get(word)
        kind = placement(old, new)
        written: list[np.ndarray] = []
        if old is None:
            ids[i] = next_id
            next_id += 1
            written = cut(new)
            chunks += [_chunk(int(ids[i]), piece) for piece in written]
            term = replace(EMPTY_TERM, id=int(ids[i])).grown(new, kind, written)
            created.append((term.id, _key(word), term.df, term.max_text, term.max_lead, term.min_len, term.last,
                            term.open_first, term.open_chunks))
            continue
        ids[i] = old.id
        if kind is Placement.REWRITE:
            _merge_into_chunks(conn, old.id, new)
        elif kind is Placement.MERGE:
            written = _merge_open(conn, old, new)
        else:
            chunks.append(_chunk(old.id, new))
        term = old.grown(new, kind, written)
        updated.append((term.df, term.max_text, term.max_lead, term.min_len, term.last, term.open_first,
                        term.open_chunks, term.id))
    conn.executemany("INSERT INTO terms(id, term, df, max_text, max_lead, min_len, last, open_first, open_chunks) "
                     "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)", created)
    conn.executemany("UPDATE terms SET df=?, max_text=?, max_lead=?, min_len=?, last=?, open_first=?, open_chunks=? "
                     "WHERE id=?", updated)
    conn.executemany("INSERT INTO chunks(term, first, data, crc) VALUES(?, ?, ?, ?)", chunks)
    lengths = [len(d.text) + len(d.lead) for d in docs]
    held = [ids[words].astype(np.uint32).tobytes() for words in batch.doc_terms]
    conn.executemany("INSERT INTO docs(label, length, terms, crc) VALUES(?, ?, ?, ?)",
                     [(d.label, length, blob, zlib.crc32(blob))
                      for d, length, blob in zip(docs, lengths, held, strict=True)])
    _add_totals(conn, len(docs), sum(lengths))


def indexed(conn: sqlite3.Connection, labels: Sequence[int]) -> set[int]:
    """Which of `labels` the index holds."""
    found: set[int] = set()
    for part in _batches(list(labels)):
        found.update(r[0] for r in conn.execute(
            f"SELECT label FROM docs WHERE label IN ({','.join('?' * len(part))})", list(part)))
    return found


def remove(conn: sqlite3.Connection, labels: Sequence[int]) -> None:
    """Remove rows and their postings; a term no row holds any more goes too. Labels not held are ignored."""
    by_term: dict[int, list[int]] = defaultdict(list)
    gone, tokens = [], 0
    for part in _batches(list(labels)):
        rows = conn.execute(f"SELECT label, length, terms, crc FROM docs WHERE label IN ({','.join('?' * len(part))})",
                            list(part)).fetchall()
        for label, length, blob, crc in rows:
            gone.append(label)
            tokens += length
            for term in _checked([(blob, crc)], np.dtype(np.uint32)).tolist():
                by_term[term].append(label)
    for term, dropped in by_term.items():
        row = conn.execute("SELECT df FROM terms WHERE id=?", (term,)).fetchone()
        if row is None:
            raise sqlite3.DatabaseError(f"the lexical index lacks term {term} that a row holds")
        df = row[0]
        if df <= len(dropped):
            conn.execute("DELETE FROM terms WHERE id=?", (term,))
            conn.execute("DELETE FROM chunks WHERE term=?", (term,))
            continue
        conn.execute("UPDATE terms SET df=? WHERE id=?", (df - len(dropped), term))
        firsts = chunk_firsts(conn, term)
        drop = np.array(sorted(dropped), dtype=np.int64)
        owner = owning_chunks(firsts, drop)
        for chunk in np.unique(owner):
            first = int(firsts[chunk])
            postings = _checked(conn.execute("SELECT data, crc FROM chunks WHERE term=? AND first=?", (term, first)),
                                POSTING)
            _rewrite(conn, term, first, postings[~np.isin(postings["label"], drop[owner == chunk])])
    for part in _batches(gone):
        conn.execute(f"DELETE FROM docs WHERE label IN ({','.join('?' * len(part))})", list(part))
    _add_totals(conn, -len(gone), -tokens)


def labels(conn: sqlite3.Connection) -> set[int]:
    return {int(r[0]) for r in conn.execute("SELECT label FROM docs")}
