"""The Postgres lexical tables of a bank as stored, decoded and checked against each other."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import psycopg

from hindsight.store.postings import CHUNK, POSTING


def table_state(cur: psycopg.Cursor[tuple[object, ...]], bank: str) -> dict[str, object]:
    """The bank's statistics as stored, by term text (term ids differ between databases)."""
    cur.execute("SELECT n_docs, text_tokens, lead_tokens FROM lex_banks WHERE bank_id = %s", (bank,))
    banks = cur.fetchall()
    cur.execute("SELECT term, df FROM lex_terms WHERE bank_id = %s ORDER BY term", (bank,))
    terms = cur.fetchall()
    cur.execute(
        "SELECT d.label, d.text_len, d.lead_len, array(SELECT t.term FROM lex_terms t WHERE t.term_id = ANY(d.term_ids)"
        " ORDER BY t.term) FROM lex_docs d WHERE d.bank_id = %s ORDER BY d.label", (bank,))
    docs = cur.fetchall()
    return {"banks": banks, "terms": terms, "docs": docs,
            "postings": [(p.term, p.label, p.text, p.lead, p.length) for p in postings_of(cur, bank)]}


@dataclass(frozen=True)
class Posting:
    term: str
    term_id: int
    label: int
    text: int
    lead: int
    length: int


def postings_of(cur: psycopg.Cursor[tuple[object, ...]], bank: str) -> list[Posting]:
    """The bank's postings, decoded from its chunks, by term then label; every chunk is checked to be well formed:
    its postings in label order from its key on, at most CHUNK of them, before the term's next chunk."""
    cur.execute("SELECT t.term, t.term_id, c.first, c.data FROM lex_chunks c JOIN lex_terms t USING (term_id)"
                " WHERE t.bank_id = %s ORDER BY t.term, c.first", (bank,), binary=True)
    out: list[Posting] = []
    for term, term_id, first, data in cur.fetchall():
        rows = np.frombuffer(data, dtype=POSTING)
        assert 0 < len(rows) <= CHUNK and rows["label"][0] == first and np.all(np.diff(rows["label"]) > 0)
        assert not out or out[-1].term != term or out[-1].label < first
        out += [Posting(term, term_id, int(r["label"]), int(r["text"]), int(r["lead"]), int(r["length"]))
                for r in rows]
    return out


def assert_consistent(cur: psycopg.Cursor[tuple[object, ...]], bank: str) -> None:
    """Every kept statistic equals its recount from the rows it summarises."""
    cur.execute(
        "SELECT count(*), coalesce(sum(text_len), 0), coalesce(sum(lead_len), 0) FROM lex_docs WHERE bank_id = %s",
        (bank,))
    recount = cur.fetchone()
    cur.execute("SELECT n_docs, text_tokens, lead_tokens FROM lex_banks WHERE bank_id = %s", (bank,))
    stored = cur.fetchone()
    assert stored == recount or (stored is None and recount == (0, 0, 0))
    held = postings_of(cur, bank)
    cur.execute("SELECT term, df, max_text, max_lead, min_len, last FROM lex_terms WHERE bank_id = %s", (bank,))
    terms = {r[0]: r[1:] for r in cur.fetchall()}
    by_term: dict[str, list[Posting]] = {}
    for posting in held:
        by_term.setdefault(posting.term, []).append(posting)
    assert set(by_term) == set(terms)
    for term, (df, max_text, max_lead, min_len, last) in terms.items():
        mine = by_term[term]
        assert df == len(mine), term
        # Bounds stay bounds: a removal may leave them loose.
        assert max_text >= max(p.text for p in mine) and max_lead >= max(p.lead for p in mine), term
        assert min_len <= min(p.length for p in mine) and last >= mine[-1].label, term
    cur.execute("SELECT label, text_len + lead_len, term_ids FROM lex_docs WHERE bank_id = %s", (bank,))
    docs = {r[0]: (r[1], set(r[2])) for r in cur.fetchall()}
    assert all(p.label in docs and p.length == docs[p.label][0] and p.term_id in docs[p.label][1] for p in held)
    assert len(held) == sum(len(ids) for _, ids in docs.values())
    cur.execute("SELECT count(*) FROM lex_terms WHERE bank_id = %s AND df <= 0", (bank,))
    assert cur.fetchone() == (0,)
