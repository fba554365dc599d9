"""BM25 lexical search kept in PostgreSQL tables, written in the same transactions as the units.

It ranks like the SQLite store's lexical index (`hindsight.store.bm25`), with the same scoring and exact top-k
(`store.maxscore`): the same query terms, OR over them, FTS5's bm25() (k1=1.2, b=0.75, IDF floored at 1e-6; a row's
term frequency summed over its columns with weights 1.0 for `text` and `lead_weight` for `lead`, and one length
normalisation: the row's tokens in both columns against the bank's average). On queries of plain words the scores equal
FTS5's (tests/test_postgres_lexical.py); a query term that FTS5 splits into a phrase ("a_b") matches rows holding all
its words, as often as the rarest. Statistics live in the database: per bank the row count and token totals
(`lex_banks`), per row its column lengths and term ids (`lex_docs`), per term its document frequency and bounds
(`lex_terms`), and its postings in chunks (`lex_chunks`, store/postgres_postings.py), so a query reads only its terms'
postings, and of a common term only the chunks holding the rows that can still make the top k.

Tokenization: Python splits and folds text as FTS5's unicode61 (remove_diacritics 2) does (`store/tokenize.py`),
and Postgres stems each word with its Snowball "porter" dictionary (`ts_lexize`), the algorithm of FTS5's porter
tokenizer. It adds no dependency; to_tsvector's own parser and the "english" stemmer (Porter2) split and stem
otherwise than FTS5.

The caller owns the transaction (nothing here commits) and serializes writes to one bank; cursors must return tuple
rows (psycopg's default row factory). The tables are made by the schema's migrations (`LEXICAL_SCHEMA`, then
`postgres_postings.CHUNKS_MIGRATION`; `create_tables` runs both on a fresh database, UTF8 encoding).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hindsight.store import maxscore, postgres_postings, postings
from hindsight.store.postgres_postings import Reads
from hindsight.store.search import IndexHit
from hindsight.store.tokenize import query_terms, words

if TYPE_CHECKING:  # psycopg is needed only where a Postgres store runs
    from psycopg import Cursor

# The lexical tables as schema version 1 made them; version 7 replaces lex_postings (postgres_postings.py).
LEXICAL_SCHEMA = """
DO $$ BEGIN
    CREATE TEXT SEARCH DICTIONARY lex_porter (TEMPLATE = snowball, LANGUAGE = porter);
EXCEPTION WHEN duplicate_object THEN NULL;
END $$;
CREATE TABLE IF NOT EXISTS lex_banks (
    bank_id TEXT PRIMARY KEY,
    n_docs BIGINT NOT NULL,
    text_tokens BIGINT NOT NULL,
    lead_tokens BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS lex_docs (
    bank_id TEXT NOT NULL,
    label BIGINT NOT NULL,
    text_len INTEGER NOT NULL,
    lead_len INTEGER NOT NULL,
    term_ids BIGINT[] NOT NULL,
    PRIMARY KEY (bank_id, label)
);
CREATE TABLE IF NOT EXISTS lex_terms (
    term_id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    bank_id TEXT NOT NULL,
    term TEXT NOT NULL,
    df BIGINT NOT NULL,
    UNIQUE (bank_id, term)
);
CREATE TABLE IF NOT EXISTS lex_postings (
    term_id BIGINT NOT NULL,
    label BIGINT NOT NULL,
    tf_text INTEGER NOT NULL,
    tf_lead INTEGER NOT NULL,
    doc_len INTEGER NOT NULL,
    -- Covering: a query reads a term's postings from the index alone, in one range.
    PRIMARY KEY (term_id, label) INCLUDE (tf_text, tf_lead, doc_len)
);
"""

_MAX_TERM_CHARS = 128  # keeps every term well inside a B-tree entry (at most 512 bytes of UTF-8)

# FTS5's porter stems tokens of 3 to 64 bytes; a word without a stem is kept as it is.
_STEM = "CASE WHEN octet_length(w) BETWEEN 3 AND 64 THEN coalesce((ts_lexize('lex_porter', w))[1], w) ELSE w END"


@dataclass(frozen=True)
class LexicalDoc:
    """A unit as the lexical index needs it."""

    label: int  # the unit's key, unique across banks
    text: str
    lead: str  # text quoted from before the unit; may be ""


def _words(text: str) -> list[str]:
    """The words of text, each cut to `_MAX_TERM_CHARS`."""
    return [w[:_MAX_TERM_CHARS] for w in words(text)]


def _stems(cur: Cursor[Any], distinct_words: Sequence[str]) -> dict[str, str]:
    """Each word's stem, as the search query stems it (the same `_STEM` expression)."""
    if not distinct_words:
        return {}
    cur.execute(f"SELECT w, {_STEM} FROM unnest(%s::text[]) AS w", (list(distinct_words),))
    return {str(w): str(s) for w, s in cur.fetchall()}


def create_tables(cur: Cursor[Any]) -> None:
    """Make the lexical tables, as the latest schema has them, in a database without them."""
    cur.execute(LEXICAL_SCHEMA)
    cur.execute(postgres_postings.CHUNKS_MIGRATION)


def index_units(cur: Cursor[Any], bank_id: str, docs: Sequence[LexicalDoc]) -> None:
    """Index docs in the bank; a label already indexed is replaced."""
    latest = {d.label: d for d in docs}  # the last of repeated labels wins, as with INSERT OR REPLACE
    if not latest:
        return
    remove_units(cur, bank_id, list(latest))
    split = {label: (_words(d.text), _words(d.lead)) for label, d in sorted(latest.items())}
    stem = _stems(cur, sorted({w for text, lead in split.values() for w in (*text, *lead)}))
    batch = postings.invert([postings.Doc(label, [stem[w] for w in text], [stem[w] for w in lead])
                             for label, (text, lead) in split.items()])
    term_ids = postgres_postings.add(cur, bank_id, batch)
    doc_rows = [(bank_id, label, len(text), len(lead), term_ids[held].tolist())
                for (label, (text, lead)), held in zip(split.items(), batch.doc_terms, strict=True)]
    # COPY: the fastest bulk load, and it carries data only, never SQL.
    with cur.copy("COPY lex_docs (bank_id, label, text_len, lead_len, term_ids) FROM STDIN") as copy:
        for doc_row in doc_rows:
            copy.write_row(doc_row)
    cur.execute(
        "INSERT INTO lex_banks (bank_id, n_docs, text_tokens, lead_tokens) VALUES (%s, %s, %s, %s)"
        " ON CONFLICT (bank_id) DO UPDATE SET n_docs = lex_banks.n_docs + excluded.n_docs,"
        " text_tokens = lex_banks.text_tokens + excluded.text_tokens,"
        " lead_tokens = lex_banks.lead_tokens + excluded.lead_tokens",
        (bank_id, len(doc_rows), sum(r[2] for r in doc_rows), sum(r[3] for r in doc_rows)),
    )


# One statement: each sub-statement touches rows no other touches. Returns each term's id and whether it is gone.
_FORGET_TERMS = """
WITH counts AS (
    SELECT * FROM unnest(%(terms)s::bigint[], %(counts)s::bigint[]) AS c(term_id, n)
), emptied AS (
    DELETE FROM lex_terms t USING counts c WHERE t.bank_id = %(bank)s AND t.term_id = c.term_id AND t.df <= c.n
    RETURNING t.term_id
), kept AS (
    UPDATE lex_terms t SET df = t.df - c.n FROM counts c
    WHERE t.bank_id = %(bank)s AND t.term_id = c.term_id AND t.df > c.n
    RETURNING t.term_id
)
SELECT term_id, true FROM emptied UNION ALL SELECT term_id, false FROM kept
"""


def remove_units(cur: Cursor[Any], bank_id: str, labels: Sequence[int]) -> None:
    """Remove labels from the bank's index, with their postings and any term no other row holds."""
    if not labels:
        return
    cur.execute("DELETE FROM lex_docs WHERE bank_id = %s AND label = ANY(%s::bigint[])"
                " RETURNING label, term_ids, text_len, lead_len", (bank_id, sorted(set(labels))))
    gone = cur.fetchall()
    if not gone:
        return
    by_term: dict[int, list[int]] = defaultdict(list)
    for label, term_ids, _, _ in gone:
        for term in term_ids:
            by_term[int(term)].append(int(label))
    terms = sorted(by_term)
    cur.execute(_FORGET_TERMS, {"bank": bank_id, "terms": terms, "counts": [len(by_term[t]) for t in terms]})
    emptied = {int(t): bool(e) for t, e in cur.fetchall()}
    postgres_postings.drop(cur, [t for t, e in emptied.items() if e])
    postgres_postings.remove(cur, {t: by_term[t] for t, e in emptied.items() if not e})
    cur.execute("UPDATE lex_banks SET n_docs = n_docs - %s, text_tokens = text_tokens - %s,"
                " lead_tokens = lead_tokens - %s WHERE bank_id = %s",
                (len(gone), sum(r[2] for r in gone), sum(r[3] for r in gone), bank_id))


def search(cur: Cursor[Any], bank_id: str, query: str, k: int, lead_weight: float = 1.0,
           reads: Reads | None = None) -> list[IndexHit]:
    """The bank's k best labels for free text by BM25, best first (ties by label); `reads` counts the postings
    read. It reads in several statements: run it in one snapshot (REPEATABLE READ) where others write the bank."""
    phrases = [ws for term in query_terms(query) if (ws := _words(term))]
    if not phrases or k <= 0:
        return []
    cur.execute("SELECT n_docs, text_tokens + lead_tokens FROM lex_banks WHERE bank_id = %s", (bank_id,))
    bank = cur.fetchone()
    if bank is None or bank[0] <= 0 or bank[1] <= 0:
        return []
    docs, avgdl = int(bank[0]), int(bank[1]) / int(bank[0])
    stem = _stems(cur, sorted({w for phrase in phrases for w in phrase}))
    known = postgres_postings.terms(cur, bank_id, sorted(set(stem.values())))
    counted = Reads() if reads is None else reads
    matched = []
    for phrase in phrases:
        held = [known.get(stem[w]) for w in phrase]
        if all(held):
            distinct = {t.id: t for t in held if t}.values()
            matched.append(maxscore.phrase([maxscore.Source(postgres_postings.Chunks(cur, t.id, counted), t.df,
                                                            t.bounds) for t in distinct], docs, avgdl, lead_weight))
    return maxscore.top_k([m for m in matched if m is not None], k, avgdl, lead_weight)


def lexical_labels(cur: Cursor[Any], bank_id: str) -> set[int]:
    """Every label the bank's lexical index holds."""
    cur.execute("SELECT label FROM lex_docs WHERE bank_id = %s", (bank_id,))
    return {int(r[0]) for r in cur.fetchall()}


def drop_bank(cur: Cursor[Any], bank_id: str) -> None:
    """Delete every lex_ row of the bank."""
    cur.execute("DELETE FROM lex_chunks c USING lex_terms t WHERE t.bank_id = %s AND c.term_id = t.term_id", (bank_id,))
    for table in ("lex_terms", "lex_docs", "lex_banks"):
        cur.execute(f"DELETE FROM {table} WHERE bank_id = %s", (bank_id,))
