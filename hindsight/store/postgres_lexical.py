"""BM25 lexical search kept in PostgreSQL tables, written in the same transactions as the units.

It ranks like the SQLite store's lexical index (`hindsight.store.bm25`): the same query terms, OR over them, and FTS5's
bm25() as fts5_aux.c computes it (k1=1.2, b=0.75, IDF floored at 1e-6; a row's term frequency summed over its columns
with weights 1.0 for `text` and `lead_weight` for `lead`, and one length normalisation: the row's tokens in both
columns against the bank's average). On queries of plain words the scores equal FTS5's
(tests/test_postgres_lexical.py); a query term that FTS5 splits into a phrase ("a_b") is approximated (see
`_SEARCH`). Statistics live in the database: per bank the row count and token totals (`lex_banks`), per term its
document frequency (`lex_terms`), per row its column lengths and term ids (`lex_docs`), and postings carrying the
row's length (`lex_postings`), so a query reads only its terms' postings.

Tokenization: Python splits and folds text as FTS5's unicode61 (remove_diacritics 2) does (`store/tokenize.py`),
and Postgres stems each word with its Snowball "porter" dictionary (`ts_lexize`), the algorithm of FTS5's porter
tokenizer. It adds no dependency; to_tsvector's own parser and the "english" stemmer (Porter2) split and stem
otherwise than FTS5.

The caller owns the transaction (nothing here commits) and serializes writes to one bank; cursors must return tuple
rows (psycopg's default row factory). Run `LEXICAL_SCHEMA` once per database (UTF8 encoding).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hindsight.store.search import IndexHit
from hindsight.store.tokenize import query_terms, words

if TYPE_CHECKING:  # psycopg is needed only where a Postgres store runs
    from psycopg import Cursor

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

K1 = 1.2
B = 0.75
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


def index_units(cur: Cursor[Any], bank_id: str, docs: Sequence[LexicalDoc]) -> None:
    """Index docs in the bank; a label already indexed is replaced."""
    latest = {d.label: d for d in docs}  # the last of repeated labels wins, as with INSERT OR REPLACE
    if not latest:
        return
    remove_units(cur, bank_id, list(latest))
    split = {label: (_words(d.text), _words(d.lead)) for label, d in latest.items()}
    stem = _stems(cur, sorted({w for text, lead in split.values() for w in (*text, *lead)}))
    counts = {label: (Counter(stem[w] for w in text), Counter(stem[w] for w in lead))
              for label, (text, lead) in split.items()}
    df = Counter(term for text, lead in counts.values() for term in text.keys() | lead.keys())
    term_ids: dict[str, int] = {}
    if df:
        terms = sorted(df)  # a fixed order of row locks
        cur.execute(
            "INSERT INTO lex_terms (bank_id, term, df) SELECT %s, t, n FROM unnest(%s::text[], %s::bigint[]) AS u(t, n)"
            " ON CONFLICT (bank_id, term) DO UPDATE SET df = lex_terms.df + excluded.df RETURNING term, term_id",
            (bank_id, terms, [df[t] for t in terms]),
        )
        term_ids = {str(t): int(i) for t, i in cur.fetchall()}
    postings: list[tuple[int, int, int, int, int]] = []
    doc_rows = []
    for label, (text, lead) in counts.items():
        text_len, lead_len = (len(ws) for ws in split[label])
        terms = sorted(text.keys() | lead.keys())
        postings += [(term_ids[t], label, text[t], lead[t], text_len + lead_len) for t in terms]
        doc_rows.append((bank_id, label, text_len, lead_len, [term_ids[t] for t in terms]))
    # COPY: the fastest bulk load, and it carries data only, never SQL.
    with cur.copy("COPY lex_docs (bank_id, label, text_len, lead_len, term_ids) FROM STDIN") as copy:
        for doc_row in doc_rows:
            copy.write_row(doc_row)
    with cur.copy("COPY lex_postings (term_id, label, tf_text, tf_lead, doc_len) FROM STDIN") as copy:
        for posting in postings:
            copy.write_row(posting)
    cur.execute(
        "INSERT INTO lex_banks (bank_id, n_docs, text_tokens, lead_tokens) VALUES (%s, %s, %s, %s)"
        " ON CONFLICT (bank_id) DO UPDATE SET n_docs = lex_banks.n_docs + excluded.n_docs,"
        " text_tokens = lex_banks.text_tokens + excluded.text_tokens,"
        " lead_tokens = lex_banks.lead_tokens + excluded.lead_tokens",
        (bank_id, len(doc_rows), sum(r[2] for r in doc_rows), sum(r[3] for r in doc_rows)),
    )


# One statement: every sub-statement sees the rows as they were before it, and each touches rows no other touches.
_REMOVE = """
WITH gone AS (
    DELETE FROM lex_docs WHERE bank_id = %(bank)s AND label = ANY(%(labels)s::bigint[])
    RETURNING label, term_ids, text_len, lead_len
), pairs AS (
    SELECT label, unnest(term_ids) AS term_id FROM gone
), postings AS (
    DELETE FROM lex_postings p USING pairs WHERE p.term_id = pairs.term_id AND p.label = pairs.label
), counts AS (
    SELECT term_id, count(*) AS n FROM pairs GROUP BY term_id
), emptied AS (
    DELETE FROM lex_terms t USING counts c WHERE t.bank_id = %(bank)s AND t.term_id = c.term_id AND t.df <= c.n
), kept AS (
    UPDATE lex_terms t SET df = t.df - c.n FROM counts c
    WHERE t.bank_id = %(bank)s AND t.term_id = c.term_id AND t.df > c.n
)
UPDATE lex_banks SET
    n_docs = n_docs - (SELECT count(*) FROM gone),
    text_tokens = text_tokens - (SELECT coalesce(sum(text_len), 0) FROM gone),
    lead_tokens = lead_tokens - (SELECT coalesce(sum(lead_len), 0) FROM gone)
WHERE bank_id = %(bank)s
"""


def remove_units(cur: Cursor[Any], bank_id: str, labels: Sequence[int]) -> None:
    """Remove labels from the bank's index, with their postings and any term no other row holds."""
    if labels:
        cur.execute(_REMOVE, {"bank": bank_id, "labels": sorted(set(labels))})


_SEARCH = f"""
WITH q AS (
    SELECT u.phrase, {_STEM} AS term, count(*) OVER (PARTITION BY u.phrase) AS n_words
    FROM unnest(%(words)s::text[], %(phrases)s::int[]) AS u(w, phrase)
), bank AS (
    SELECT n_docs::float8 AS n, nullif(text_tokens + lead_tokens, 0)::float8 / n_docs AS avgdl
    FROM lex_banks WHERE bank_id = %(bank)s AND n_docs > 0
), hits AS (
    -- Each query term's frequency in each row holding it, its columns weighted. FTS5 matches a term that splits into
    -- several words ("a_b") as a phrase; here it matches rows holding all of them, as often as the rarest.
    SELECT q.phrase, p.label, max(q.n_words) AS n_words, min(t.df) AS df, min(p.doc_len) AS doc_len,
        min(p.tf_text) + %(lead_weight)s * min(p.tf_lead) AS f
    FROM q JOIN lex_terms t ON t.bank_id = %(bank)s AND t.term = q.term JOIN lex_postings p ON p.term_id = t.term_id
    GROUP BY q.phrase, p.label
    HAVING count(*) = max(q.n_words) AND (min(p.tf_text) > 0 OR min(p.tf_lead) > 0)
), phrase_df AS (
    SELECT phrase, count(*) AS df FROM hits WHERE n_words > 1 GROUP BY phrase
)
-- Summed per query term, not per distinct term: a term repeated after stemming counts twice, as in FTS5.
SELECT h.label,
    sum(idf.v * h.f * (%(k1)s + 1) / (h.f + %(k1)s * (1 - %(b)s + %(b)s * h.doc_len / bank.avgdl))) AS score
FROM hits h CROSS JOIN bank LEFT JOIN phrase_df d ON d.phrase = h.phrase,
    LATERAL (SELECT coalesce(d.df, h.df)::float8 AS df) n,
    LATERAL (SELECT ln((bank.n - n.df + 0.5) / (n.df + 0.5)) AS raw) r,
    LATERAL (SELECT CASE WHEN r.raw <= 0 THEN 1e-6 ELSE r.raw END AS v) idf
GROUP BY h.label ORDER BY score DESC, h.label LIMIT %(k)s
"""


def search_statement(bank_id: str, query: str, k: int, lead_weight: float = 1.0
                     ) -> tuple[str, dict[str, object]] | None:
    """The SQL and parameters of a search for free text, or None when there is nothing to search."""
    query_words, phrases = [], []
    for phrase, term in enumerate(query_terms(query)):
        for word in _words(term):
            query_words.append(word)
            phrases.append(phrase)
    if not query_words or k <= 0:
        return None
    return _SEARCH, {"bank": bank_id, "words": query_words, "phrases": phrases, "k": k,
                     "lead_weight": float(lead_weight), "k1": K1, "b": B}


def search(cur: Cursor[Any], bank_id: str, query: str, k: int, lead_weight: float = 1.0) -> list[IndexHit]:
    """The bank's k best labels for free text by BM25, best first."""
    statement = search_statement(bank_id, query, k, lead_weight)
    if statement is None:
        return []
    cur.execute(*statement)
    return [IndexHit(int(label), float(score)) for label, score in cur.fetchall()]


def lexical_labels(cur: Cursor[Any], bank_id: str) -> set[int]:
    """Every label the bank's lexical index holds."""
    cur.execute("SELECT label FROM lex_docs WHERE bank_id = %s", (bank_id,))
    return {int(r[0]) for r in cur.fetchall()}


def drop_bank(cur: Cursor[Any], bank_id: str) -> None:
    """Delete every lex_ row of the bank."""
    cur.execute(
        "DELETE FROM lex_postings p USING lex_terms t WHERE t.bank_id = %s AND p.term_id = t.term_id", (bank_id,)
    )
    for table in ("lex_terms", "lex_docs", "lex_banks"):
        cur.execute(f"DELETE FROM {table} WHERE bank_id = %s", (bank_id,))
