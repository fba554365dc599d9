"""The lexical index's tables in `lexical.db`: terms, each term's postings in label order cut into chunks, and the
indexed rows; written a batch at a time, inside a transaction the caller holds."""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL);
-- Per term: how many rows hold it, and bounds over its postings (the largest frequencies, the shortest row); a
-- removal leaves the bounds as they were, which keeps them bounds.
-- A term is its UTF-8 bytes: the stemmer can cut a character in two, as FTS5's does.
CREATE TABLE IF NOT EXISTS terms(
    id INTEGER PRIMARY KEY, term BLOB NOT NULL UNIQUE, df INTEGER NOT NULL,
    max_text INTEGER NOT NULL, max_lead INTEGER NOT NULL, min_len INTEGER NOT NULL);
-- A chunk holds a term's postings from label `first` up to the next chunk's first label.
CREATE TABLE IF NOT EXISTS chunks(
    term INTEGER NOT NULL, first INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY(term, first)) WITHOUT ROWID;
-- Per indexed row: its length in tokens (both columns) and its term ids (uint32), to remove it again.
CREATE TABLE IF NOT EXISTS docs(label INTEGER PRIMARY KEY, length INTEGER NOT NULL, terms BLOB NOT NULL);
"""
# A posting: the row, the term's count in its text and in its lead, and the row's length.
POSTING = np.dtype([("label", "<i8"), ("text", "<u2"), ("lead", "<u2"), ("length", "<u4")])
# Small enough that appending to a term rewrites little, large enough that a common term is few reads.
CHUNK = 256
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
    """A term's id, document frequency and bounds over its postings."""

    id: int
    df: int
    max_text: int
    max_lead: int
    min_len: int


@dataclass(frozen=True)
class Totals:
    """The rows indexed and their tokens, for BM25's document count and average length."""

    docs: int
    tokens: int


def _batches(items: Sequence[object]) -> Iterable[Sequence[object]]:
    for i in range(0, len(items), _BATCH):
        yield items[i : i + _BATCH]


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
            f"SELECT term, id, df, max_text, max_lead, min_len FROM terms WHERE term IN ({','.join('?' * len(part))})",
            list(part))
        found.update((bytes(r[0]).decode("utf-8", "surrogateescape"), Term(*r[1:])) for r in rows)
    return found


def read_chunks(conn: sqlite3.Connection, term: int, firsts: Sequence[int] | None = None) -> np.ndarray:
    """A term's postings in label order: all of them, or those of the chunks starting at `firsts`."""
    if firsts is None:
        rows = conn.execute("SELECT data FROM chunks WHERE term=? ORDER BY first", (term,)).fetchall()
    else:
        rows = []
        for part in _batches(list(firsts)):
            rows += conn.execute(f"SELECT data FROM chunks WHERE term=? AND first IN ({','.join('?' * len(part))}) "
                                 "ORDER BY first", (term, *part)).fetchall()
    if not rows:
        return np.zeros(0, dtype=POSTING)
    return np.concatenate([np.frombuffer(r[0], dtype=POSTING) for r in rows])


def chunk_firsts(conn: sqlite3.Connection, term: int) -> np.ndarray:
    """The first label of each of a term's chunks, ascending."""
    rows = conn.execute("SELECT first FROM chunks WHERE term=? ORDER BY first", (term,)).fetchall()
    return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))


def _owning_chunks(firsts: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """For each label, the index of the chunk that holds it, or would (the first chunk for labels before it)."""
    return np.maximum(np.searchsorted(firsts, labels, side="right") - 1, 0)


def _rewrite(conn: sqlite3.Connection, term: int, old_first: int | None, postings: np.ndarray) -> None:
    """Replace one chunk (or none) by `postings`, cut into chunks of at most CHUNK."""
    if old_first is not None:
        conn.execute("DELETE FROM chunks WHERE term=? AND first=?", (term, old_first))
    conn.executemany("INSERT INTO chunks(term, first, data) VALUES(?, ?, ?)",
                     [(term, int(postings["label"][i]), postings[i : i + CHUNK].tobytes())
                      for i in range(0, len(postings), CHUNK)])


def _merge_into_chunks(conn: sqlite3.Connection, term: int, new: np.ndarray) -> None:
    """Insert postings (sorted, labels not yet in the term) into the chunks that own their labels."""
    last = conn.execute("SELECT first, data FROM chunks WHERE term=? ORDER BY first DESC LIMIT 1", (term,)).fetchone()
    if last is not None and new["label"][0] >= last[0]:  # new rows come after the old: the usual append
        tail = np.frombuffer(last[1], dtype=POSTING)
        if len(tail) >= CHUNK:
            _rewrite(conn, term, None, new)
        else:
            _rewrite(conn, term, last[0], np.concatenate([tail, new]))
        return
    firsts = chunk_firsts(conn, term)
    if not len(firsts):
        _rewrite(conn, term, None, new)
        return
    owner = _owning_chunks(firsts, new["label"])
    for chunk in np.unique(owner):
        first = int(firsts[chunk])
        (data,) = conn.execute("SELECT data FROM chunks WHERE term=? AND first=?", (term, first)).fetchone()
        merged = np.concatenate([np.frombuffer(data, dtype=POSTING), new[owner == chunk]])
        _rewrite(conn, term, first, merged[np.argsort(merged["label"], kind="stable")])


@dataclass(frozen=True)
class _Batch:
    """A batch of rows inverted: its distinct words, and their postings ordered by word, then label."""

    words: list[str]
    postings: np.ndarray  # POSTING
    bounds: np.ndarray  # the postings of words[i] are postings[bounds[i]:bounds[i + 1]]
    doc_terms: list[np.ndarray]  # per row, in label order: the indexes into `words` of the words it holds


def _invert(docs: Sequence[Doc]) -> _Batch:
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
    starts = np.concatenate([[True], pair_of_key[1:] != pair_of_key[:-1]])
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
    return _Batch(list(vocab), out, np.searchsorted(word, np.arange(len(vocab) + 1)),
                  [word[by_row[row_bounds[i]:row_bounds[i + 1]]] for i in range(n)])


def add(conn: sqlite3.Connection, docs: Sequence[Doc]) -> None:
    """Index rows whose labels the index does not hold."""
    docs = sorted(docs, key=lambda d: d.label)
    batch = _invert(docs)
    known = terms(conn, batch.words)
    ids = np.zeros(len(batch.words), dtype=np.int64)
    next_id = int(conn.execute("SELECT coalesce(max(id), 0) FROM terms").fetchone()[0]) + 1
    created, updated, chunks = [], [], []
    for i, word in enumerate(batch.words):
        new = batch.postings[batch.bounds[i] : batch.bounds[i + 1]]
        stats = (int(new["text"].max()), int(new["lead"].max()), int(new["length"].min()))
        if (old := known.get(word)) is None:
            ids[i] = next_id
            next_id += 1
            created.append((int(ids[i]), _key(word), len(new), *stats))
            chunks += [(int(ids[i]), int(new["label"][j]), new[j : j + CHUNK].tobytes())
                       for j in range(0, len(new), CHUNK)]
            continue
        ids[i] = old.id
        updated.append((old.df + len(new), max(old.max_text, stats[0]), max(old.max_lead, stats[1]),
                        min(old.min_len, stats[2]), old.id))
        _merge_into_chunks(conn, old.id, new)
    conn.executemany("INSERT INTO terms(id, term, df, max_text, max_lead, min_len) VALUES(?, ?, ?, ?, ?, ?)", created)
    conn.executemany("UPDATE terms SET df=?, max_text=?, max_lead=?, min_len=? WHERE id=?", updated)
    conn.executemany("INSERT INTO chunks(term, first, data) VALUES(?, ?, ?)", chunks)
    lengths = [len(d.text) + len(d.lead) for d in docs]
    conn.executemany("INSERT INTO docs(label, length, terms) VALUES(?, ?, ?)",
                     [(d.label, length, ids[held].astype(np.uint32).tobytes())
                      for d, length, held in zip(docs, lengths, batch.doc_terms, strict=True)])
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
        rows = conn.execute(f"SELECT label, length, terms FROM docs WHERE label IN ({','.join('?' * len(part))})",
                            list(part)).fetchall()
        for label, length, blob in rows:
            gone.append(label)
            tokens += length
            for term in np.frombuffer(blob, dtype=np.uint32).tolist():
                by_term[term].append(label)
    for term, dropped in by_term.items():
        (df,) = conn.execute("SELECT df FROM terms WHERE id=?", (term,)).fetchone()
        if df <= len(dropped):
            conn.execute("DELETE FROM terms WHERE id=?", (term,))
            conn.execute("DELETE FROM chunks WHERE term=?", (term,))
            continue
        conn.execute("UPDATE terms SET df=? WHERE id=?", (df - len(dropped), term))
        firsts = chunk_firsts(conn, term)
        drop = np.array(sorted(dropped), dtype=np.int64)
        owner = _owning_chunks(firsts, drop)
        for chunk in np.unique(owner):
            first = int(firsts[chunk])
            (data,) = conn.execute("SELECT data FROM chunks WHERE term=? AND first=?", (term, first)).fetchone()
            postings = np.frombuffer(data, dtype=POSTING)
            _rewrite(conn, term, first, postings[~np.isin(postings["label"], drop[owner == chunk])])
    for part in _batches(gone):
        conn.execute(f"DELETE FROM docs WHERE label IN ({','.join('?' * len(part))})", list(part))
    _add_totals(conn, -len(gone), -tokens)


def labels(conn: sqlite3.Connection) -> set[int]:
    return {int(r[0]) for r in conn.execute("SELECT label FROM docs")}
