"""The SQLite lexical index: FTS5's ranking with an exact top-k, kept through adds, replacements and removals."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from hindsight.sample import load_sample
from hindsight.store import postings
from hindsight.store.base import IndexedUnit
from hindsight.store.bm25 import Bm25Index
from tests.fts5_reference import Fts5Reference, RefDoc, assert_same_ranking

CORPUS = [
    RefDoc(1, "Ines started learning the cello this winter with a retired teacher."),
    RefDoc(2, "Marco has been training for a half marathon; his Sundays are long runs."),
    RefDoc(3, "The cello teacher says Ines can play in the spring recital.", "Ines started learning the cello"),
    RefDoc(4, "Marco finished his first half marathon yesterday, running along the river."),
    RefDoc(5, "Kilometer fifteen was hard, but the crowd kept him going.", "Marco finished his half marathon"),
    RefDoc(6, "We moved to Lisbon for my new job at the café near the river."),
    RefDoc(7, "Packing list: layers, a rain shell, broken-in boots and a first aid kit for the Alps."),
    RefDoc(8, "I don't like running in the rain; I'd rather swim."),
    RefDoc(9, "Teachers teach; teaching is what a teacher does. Runners run."),
    RefDoc(10, "", "a lead only: the recital in spring"),
    RefDoc(11, "Zürich naïve façade Ångström résumé CAFÉ"),
    RefDoc(12, "Rivers, river, RIVER and the riverside."),
]
QUERIES = [
    "cello teacher", "half marathon running", "What did Marco run along?", "river", "Rivers", "cafe",
    "Café résumé zurich", "spring recital", "rain boots", "teaching teachers", "running runs run", "don't",
    "Lisbon job", "the cello the cello", "first aid", "kilometer 15 fifteen", "naive angstrom facade",
    "half_marathon", "marco_cello",
]


def unit(doc: RefDoc) -> IndexedUnit:
    return IndexedUnit(doc.label, str(doc.label), np.zeros(1, np.float32), doc.text, doc.lead)


def index_of(path: Path, docs: list[RefDoc]) -> Bm25Index:
    index = Bm25Index(path)
    index.load()
    index.add_units([unit(d) for d in docs], 1)
    return index


@pytest.mark.parametrize("lead_weight", [1.0, 0.5, 0.0])
def test_ranking_equals_fts5(tmp_path: Path, lead_weight: float) -> None:
    index, ref = index_of(tmp_path, CORPUS), Fts5Reference(CORPUS)
    found = 0
    for query in QUERIES:
        for k in (1, 3, 20):
            expected = ref.search(query, k, lead_weight)
            assert_same_ranking(expected, index.search(query, k, lead_weight))
            found += bool(expected)
    assert found >= 3 * (len(QUERIES) - 2)


def corpus(n: int, seed: int, first_label: int = 1) -> list[RefDoc]:
    """Rows of words drawn Zipf-like from the sample conversation's vocabulary: a few words are in most rows."""
    words = sorted({w for s in load_sample() for m in s.messages for w in re.findall(r"\w+", m.content)})
    rng = np.random.default_rng(seed)
    p = 1 / np.arange(1, len(words) + 1)
    order = rng.permutation(len(words))
    docs = []
    for label in range(first_label, first_label + n):
        text = " ".join(words[order[i]] for i in rng.choice(len(words), rng.integers(1, 30), p=p / p.sum()))
        lead = " ".join(words[order[i]] for i in rng.choice(len(words), rng.integers(0, 8), p=p / p.sum()))
        docs.append(RefDoc(label, text, lead))
    return docs


def queries(n: int, seed: int) -> list[str]:
    docs = corpus(n, seed + 1000)
    return [" ".join(d.text.split()[:4]) for d in docs]


def test_top_k_is_exact_on_many_chunks_through_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(postings, "CHUNK", 8)  # common terms span hundreds of chunks
    docs = corpus(3000, 1)
    index, ref = Bm25Index(tmp_path), Fts5Reference([])
    index.load()
    for i in range(0, len(docs), 700):  # appends in batches
        index.add_units([unit(d) for d in docs[i : i + 700]], i + 1)
        ref.add(docs[i : i + 700])
    index.save()  # searched from the file: each change below rewrites chunks that earlier searches probed

    def compare() -> None:
        for q in queries(60, 7):
            for k, w in ((5, 0.5), (50, 1.0), (400, 0.5)):
                assert_same_ranking(ref.search(q, k, w), index.search(q, k, w))

    compare()
    rng = np.random.default_rng(3)
    gone = sorted(int(x) for x in rng.choice(np.arange(1, 3001), 900, replace=False))
    index.remove(gone, 3000)
    ref.remove(gone)
    compare()
    # Replacements and labels inside old chunks: rows re-indexed with new text, and removed labels back.
    again = [RefDoc(d.label, d.lead + " " + d.text, d.text[:20]) for d in corpus(300, 9)]
    again += [RefDoc(label, "back again " + str(label), "") for label in gone[:200]]
    index.add_units([unit(d) for d in again], 3001)
    ref.add(again)
    compare()
    index.close()
    reopened = Bm25Index(tmp_path)
    assert reopened.load() and reopened.watermark == 3001
    assert reopened.labels() == {int(r[0]) for r in ref.conn.execute("SELECT rowid FROM fts")}
    index = reopened
    compare()


def test_small_appends_gather_and_merge_into_full_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(postings, "CHUNK", 8)
    monkeypatch.setattr(postings, "OPEN_CHUNKS", 3)
    docs = corpus(600, 5)
    index, ref = Bm25Index(tmp_path), Fts5Reference(docs)
    index.load()
    for i in range(0, len(docs), 4):  # a retain's few rows at a time, each written
        index.add_units([unit(d) for d in docs[i : i + 4]], i + 1)
        index.save()
    for q in queries(40, 11):
        for k, w in ((5, 0.5), (60, 1.0)):
            assert_same_ranking(ref.search(q, k, w), index.search(q, k, w))
    conn = sqlite3.connect(tmp_path / "lexical.db")
    # A common term: its chunks are full but for the small ones since its last merge.
    term, df, open_chunks = conn.execute("SELECT id, df, open_chunks FROM terms ORDER BY df DESC LIMIT 1").fetchone()
    sizes = [len(r[0]) // postings.POSTING.itemsize for r in
             conn.execute("SELECT data FROM chunks WHERE term=? ORDER BY first", (term,))]
    assert sum(sizes) == df and open_chunks < 3
    assert all(n == 8 for n in sizes[: len(sizes) - open_chunks])


def test_rows_held_in_memory_are_searched_and_written_on_save_or_close(tmp_path: Path) -> None:
    docs = corpus(400, 21)
    index, ref = Bm25Index(tmp_path), Fts5Reference(docs)
    index.load()
    index.add_units([unit(d) for d in docs[:200]], 1)
    index.save()
    index.add_units([unit(d) for d in docs[200:]], 2)  # held in memory
    for q in queries(30, 4):
        assert_same_ranking(ref.search(q, 20, 0.5), index.search(q, 20, 0.5))
    assert index.labels() == {d.label for d in docs}
    stopped = Bm25Index(tmp_path)  # another reader of the file sees the last write: what a crash would leave
    assert stopped.load() and stopped.watermark == 1 and len(stopped.labels()) == 200
    stopped.close()
    index.remove([docs[0].label, docs[300].label], 3)  # one row in the file, one in memory: both written first
    ref.remove([docs[0].label, docs[300].label])
    index.add_units([unit(RefDoc(docs[5].label, "indexed again with new words"))], 4)
    ref.add([RefDoc(docs[5].label, "indexed again with new words")])
    index.close()
    reopened = Bm25Index(tmp_path)
    assert reopened.load() and reopened.watermark == 4 and len(reopened.labels()) == 398
    for q in [*queries(30, 4), "indexed again"]:
        assert_same_ranking(ref.search(q, 20, 0.5), reopened.search(q, 20, 0.5))


def test_removed_terms_leave_no_rows(tmp_path: Path) -> None:
    index = index_of(tmp_path, CORPUS)
    index.remove([d.label for d in CORPUS], 2)
    conn = sqlite3.connect(tmp_path / "lexical.db")
    assert [conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("terms", "chunks", "docs")] == [0, 0, 0]
    assert dict(conn.execute("SELECT key, value FROM meta WHERE key != 'watermark'")) == {"docs": 0, "tokens": 0}
    assert index.search("cello", 5) == []


@pytest.mark.parametrize(
    "query",
    ['"', 'NEAR(a b)', "*", "OR", "-", "a AND", "col:value", "'; DROP TABLE fts; --", "^start", "(((",
     "\x00", "\ud800", "", "   ", "the and of", "_", "a_", "x" * 5000],
)
def test_hostile_queries_never_raise(tmp_path: Path, query: str) -> None:
    index = index_of(tmp_path, [RefDoc(1, "NEAR OR AND start value table")])
    assert all(h.label == 1 for h in index.search(query, 5))


def test_unreadable_or_fts5_files_are_reported_for_rebuild(tmp_path: Path) -> None:
    (tmp_path / "lexical.db").write_bytes(b"this is not a database" * 100)
    index = Bm25Index(tmp_path)
    assert index.load() is False
    index.reset()
    index.add_units([unit(RefDoc(1, "fresh start"))], 1)
    assert index.search("fresh", 1)[0].label == 1
    older = tmp_path / "older"
    older.mkdir()
    conn = sqlite3.connect(older / "lexical.db")  # the FTS5 layout of earlier versions
    conn.execute("CREATE VIRTUAL TABLE fts USING fts5(text, lead)")
    conn.execute("CREATE TABLE meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL)")
    conn.execute("INSERT INTO meta VALUES('watermark', 7)")
    conn.commit()
    conn.close()
    assert Bm25Index(older).load() is False


def test_a_stem_that_cuts_a_character_is_indexed_and_found(tmp_path: Path) -> None:
    docs = [RefDoc(1, "aぁing and more"), RefDoc(2, "plain words"), RefDoc(3, "aぁing aぁing")]
    index, ref = index_of(tmp_path, docs), Fts5Reference(docs)
    assert_same_ranking(ref.search("aぁing", 5), index.search("aぁing", 5))
    assert [h.label for h in index.search("aぁing", 5)] == [3, 1]
