"""The Postgres lexical index's terms and postings: per term its statistics and bounds (`lex_terms`), and its postings
in label order cut into chunks (`lex_chunks`), each chunk the bytes of a `store.postings.POSTING` array, laid out and
appended as the SQLite index's (`store.postings`: full chunks of CHUNK, small ones appended and merged).

Writes read and rewrite only the chunks they change, a statement for all the terms of a batch at a time. The caller
owns the transaction and serializes writes to one bank; a batch's terms are locked in term order all the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from hindsight.store import postings
from hindsight.store.postings import POSTING, Placement, Term, owning_chunks

if TYPE_CHECKING:
    from psycopg import Cursor


def _little_endian(column: str, size: int) -> str:
    """SQL for the first `size` bytes of a bigint in little-endian order (int8send writes big-endian)."""
    swapped = " | ".join(f"((({column} >> {8 * i}) & 255) << {8 * (7 - i)})" for i in range(8))
    return f"substring(int8send({swapped}) FROM 1 FOR {size})"


# Schema version 7: lex_postings (a row per posting) becomes lex_chunks. Every term's postings, in label order, are
# cut into chunks of 256 (CHUNK) in SQL, and its bounds computed; the last chunk, if short, is its open one.
# `data` is stored MAIN: compressed (pglz) and kept in line, so that a term's chunks are few pages to read from disk
# (uncompressed, a 4 KB chunk takes a page of its own) and no read goes through the TOAST table.
CHUNKS_MIGRATION = f"""
ALTER TABLE lex_terms
    ADD COLUMN max_text INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN max_lead INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN min_len BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN last BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN open_first BIGINT,
    ADD COLUMN open_chunks INTEGER NOT NULL DEFAULT 0;
CREATE TABLE lex_chunks (
    term_id BIGINT NOT NULL,
    first BIGINT NOT NULL,
    data BYTEA NOT NULL,
    PRIMARY KEY (term_id, first)
);
ALTER TABLE lex_chunks ALTER COLUMN data SET STORAGE MAIN;
INSERT INTO lex_chunks (term_id, first, data)
SELECT term_id, min(label), string_agg(
    {_little_endian("label", 8)} || {_little_endian("least(tf_text, 65535)::bigint", 2)}
    || {_little_endian("least(tf_lead, 65535)::bigint", 2)} || {_little_endian("doc_len::bigint", 4)},
    ''::bytea ORDER BY label)
FROM (SELECT p.*, (row_number() OVER (PARTITION BY term_id ORDER BY label) - 1) / 256 AS chunk FROM lex_postings p) s
GROUP BY term_id, chunk;
UPDATE lex_terms t SET max_text = s.max_text, max_lead = s.max_lead, min_len = s.min_len, last = s.last,
    open_first = CASE WHEN s.n % 256 = 0 THEN NULL
        ELSE (SELECT max(c.first) FROM lex_chunks c WHERE c.term_id = t.term_id) END,
    open_chunks = CASE WHEN s.n % 256 = 0 THEN 0 ELSE 1 END
FROM (SELECT term_id, max(least(tf_text, 65535)) AS max_text, max(least(tf_lead, 65535)) AS max_lead,
    min(doc_len) AS min_len, max(label) AS last, count(*) AS n FROM lex_postings GROUP BY term_id) s
WHERE t.term_id = s.term_id;
DROP TABLE lex_postings;
ALTER TABLE lex_terms ALTER COLUMN max_text DROP DEFAULT, ALTER COLUMN max_lead DROP DEFAULT,
    ALTER COLUMN min_len DROP DEFAULT, ALTER COLUMN last DROP DEFAULT, ALTER COLUMN open_chunks DROP DEFAULT;
"""

_TERM = "term_id, df, max_text, max_lead, min_len, last, open_first, open_chunks"


def terms(cur: Cursor[Any], bank_id: str, words: Sequence[str], lock: bool = False) -> dict[str, Term]:
    """The bank's terms among `words`; `lock` takes their rows' locks, in term order."""
    cur.execute(f"SELECT term, {_TERM} FROM lex_terms WHERE bank_id = %s AND term = ANY(%s)"
                + (" ORDER BY term FOR UPDATE" if lock else ""), (bank_id, list(words)))
    return {str(r[0]): Term(*r[1:]) for r in cur.fetchall()}


def _array(blobs: Iterable[bytes]) -> np.ndarray:
    # One buffer: concatenating many small structured arrays costs more than reading them.
    return np.frombuffer(b"".join(blobs), dtype=POSTING)


def _firsts(cur: Cursor[Any], term_ids: Sequence[int]) -> dict[int, np.ndarray]:
    """The first label of each chunk of each term, ascending."""
    cur.execute("SELECT term_id, array_agg(first ORDER BY first) FROM lex_chunks WHERE term_id = ANY(%s)"
                " GROUP BY term_id", (list(term_ids),))
    return {int(t): np.array(firsts, dtype=np.int64) for t, firsts in cur.fetchall()}


def _read(cur: Cursor[Any], keys: Sequence[tuple[int, int]], onwards: bool = False
          ) -> dict[tuple[int, int], np.ndarray]:
    """The chunks at (term id, first label) keys, by key; `onwards`: every chunk of the term from there on."""
    if not keys:
        return {}
    cur.execute("SELECT c.term_id, c.first, c.data FROM lex_chunks c JOIN unnest(%s::bigint[], %s::bigint[]) AS"
                f" u(term_id, first) ON c.term_id = u.term_id AND c.first {'>=' if onwards else '='} u.first",
                ([t for t, _ in keys], [f for _, f in keys]), binary=True)
    return {(int(t), int(f)): _array([data]) for t, f, data in cur.fetchall()}


def _owners(firsts: Mapping[int, np.ndarray], labels: Mapping[int, np.ndarray]) -> list[tuple[int, int]]:
    """The keys of the chunks that hold, or would hold, each term's labels."""
    return [(term, int(f)) for term, mine in labels.items()
            for f in firsts[term][np.unique(owning_chunks(firsts[term], mine))]]


def _replace(cur: Cursor[Any], gone: Sequence[tuple[int, int]], written: Sequence[tuple[int, np.ndarray]]) -> None:
    """Delete the chunks at `gone`, then write each (term id, postings) cut into chunks."""
    if gone:
        cur.execute("DELETE FROM lex_chunks c USING unnest(%s::bigint[], %s::bigint[]) AS u(term_id, first)"
                    " WHERE c.term_id = u.term_id AND c.first = u.first", ([t for t, _ in gone], [f for _, f in gone]))
    # Binary COPY: the fastest bulk load, and it carries data only, never SQL.
    with cur.copy("COPY lex_chunks (term_id, first, data) FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types(["int8", "int8", "bytea"])
        for term, rows in written:
            for piece in postings.cut(rows):
                copy.write_row((term, int(piece["label"][0]), piece.tobytes()))


def add(cur: Cursor[Any], bank_id: str, batch: postings.Batch) -> np.ndarray:
    """Add a batch's postings (of rows the bank does not hold) to the bank's terms; each word's term id."""
    known = terms(cur, bank_id, batch.words, lock=True)
    new = {w: batch.postings[batch.bounds[i] : batch.bounds[i + 1]] for i, w in enumerate(batch.words)}
    kinds = {w: postings.placement(known.get(w), rows) for w, rows in new.items()}
    opened = _read(cur, [(t.id, t.open_first) for w, t in known.items()
                         if kinds[w] is Placement.MERGE and t.open_first is not None], onwards=True)
    rewriting = {known[w].id: new[w]["label"] for w, kind in kinds.items() if kind is Placement.REWRITE}
    firsts = _firsts(cur, list(rewriting)) if rewriting else {}
    owned = _read(cur, _owners(firsts, rewriting))
    open_of: dict[int, list[np.ndarray]] = {}
    for (term, _), rows in sorted(opened.items()):
        open_of.setdefault(term, []).append(rows)
    created: dict[str, Term] = {}
    updated: list[Term] = []
    written: list[tuple[int, np.ndarray]] = []
    for word, rows in new.items():
        kind, old = kinds[word], known.get(word)
        if old is None:
            created[word] = postings.EMPTY_TERM.grown(rows, kind, postings.cut(rows))
            continue
        pieces: list[np.ndarray] = []
        if kind is Placement.REWRITE:
            owner = owning_chunks(firsts[old.id], rows["label"])
            written += [(old.id, postings.in_label_order([owned[(old.id, int(firsts[old.id][c]))], rows[owner == c]]))
                        for c in np.unique(owner)]
        elif kind is Placement.MERGE:
            merged = np.concatenate([*open_of.get(old.id, []), rows])
            pieces = postings.cut(merged)
            written.append((old.id, merged))
        else:
            written.append((old.id, rows))
        updated.append(old.grown(rows, kind, pieces))
    ids = {w: t.id for w, t in known.items()} | _write_terms(cur, bank_id, created, updated)
    written += [(ids[w], new[w]) for w in created]
    _replace(cur, [*opened, *owned], written)
    return np.array([ids[w] for w in batch.words], dtype=np.int64)


def _write_terms(cur: Cursor[Any], bank_id: str, created: Mapping[str, Term], updated: Sequence[Term]
                 ) -> dict[str, int]:
    """Insert the new terms and update the others; the new terms' ids."""
    columns = ("df", "max_text", "max_lead", "min_len", "last", "open_first", "open_chunks")
    types = ("bigint", "int", "int", "bigint", "bigint", "bigint", "int")

    def rows(key: str) -> str:
        return f"unnest(%s::{key}[], {', '.join(f'%s::{t}[]' for t in types)}) AS u(key, {', '.join(columns)})"

    if updated:
        cur.execute(f"UPDATE lex_terms t SET {', '.join(f'{c} = u.{c}' for c in columns)} FROM {rows('bigint')}"
                    " WHERE t.term_id = u.key",
                    [[t.id for t in updated], *([getattr(t, c) for t in updated] for c in columns)])
    if not created:
        return {}
    words = sorted(created)  # a fixed order of row locks
    cur.execute(f"INSERT INTO lex_terms (bank_id, term, {', '.join(columns)}) SELECT %s, u.* FROM {rows('text')}"
                " RETURNING term, term_id",
                [bank_id, words, *([getattr(created[w], c) for w in words] for c in columns)])
    return {str(w): int(i) for w, i in cur.fetchall()}


def remove(cur: Cursor[Any], dropped: Mapping[int, Sequence[int]]) -> None:
    """Remove labels from the chunks of terms that keep other rows (term id -> its labels removed)."""
    labels = {term: np.array(sorted(mine), dtype=np.int64) for term, mine in dropped.items()}
    firsts = _firsts(cur, list(labels)) if labels else {}
    owned = _read(cur, _owners(firsts, labels))
    _replace(cur, list(owned), [(term, rows[~np.isin(rows["label"], labels[term])])
                                for (term, _), rows in sorted(owned.items())])


def drop(cur: Cursor[Any], term_ids: Sequence[int]) -> None:
    """Delete every chunk of the terms."""
    cur.execute("DELETE FROM lex_chunks WHERE term_id = ANY(%s)", (list(term_ids),))


@dataclass
class Reads:
    """What a search read: the postings of the terms read whole, and of the chunks read to look up candidates."""

    whole: int = 0
    probed: int = 0


@dataclass(frozen=True)
class Chunks:
    """A term's chunks, read for a search (a `maxscore.Reader`), counting what it reads."""

    cur: Cursor[Any]
    term_id: int
    reads: Reads

    def all(self) -> np.ndarray:
        self.cur.execute("SELECT data FROM lex_chunks WHERE term_id = %s ORDER BY first", (self.term_id,),
                         binary=True)
        rows = _array(r[0] for r in self.cur.fetchall())
        self.reads.whole += len(rows)
        return rows

    def some(self, labels: np.ndarray) -> np.ndarray:
        firsts = _firsts(self.cur, [self.term_id]).get(self.term_id, np.zeros(0, dtype=np.int64))
        wanted = firsts[np.unique(owning_chunks(firsts, labels))] if len(firsts) and len(labels) else firsts[:0]
        self.cur.execute("SELECT data FROM lex_chunks WHERE term_id = %s AND first = ANY(%s) ORDER BY first",
                         (self.term_id, wanted.tolist()), binary=True)
        rows = _array(r[0] for r in self.cur.fetchall())
        self.reads.probed += len(rows)
        return rows
