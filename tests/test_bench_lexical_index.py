"""The lexical index bench on a tiny filled bank: both indexes built from its units, and they agree."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from bench.lexical_index import read_units, run_size, same_top
from bench.recall_latency import SessionText, fill
from hindsight import Message
from hindsight.embed.sentence_transformers import SentenceTransformerEmbedder
from hindsight.store.search import IndexHit


def test_a_filled_bank_is_indexed_both_ways_and_compared(tmp_path: Path, minilm: SentenceTransformerEmbedder) -> None:
    day = datetime(2024, 5, 1, 9, tzinfo=timezone.utc)
    sessions = [SessionText([Message(speaker="Maya", content=f"Maya cooked dish number {i} for Bob in Denver."),
                             Message(speaker="Bob", content=f"Bob liked dish {i} and the Denver rain.")],
                            day + timedelta(days=i)) for i in range(8)]
    fill(tmp_path, minilm, sessions, 12, 0.0, 4)
    docs = read_units(tmp_path, 10)
    assert len(docs) == 10 and all(d.text for d in docs)
    work = tmp_path / "work"
    run = run_size(docs, ["What did Maya cook?", "Denver rain", "dish 3"], 5, work)
    assert run["units"] == 10 and run["differing"] == 0
    assert run["ours"]["bytes_per_unit"] > 0 and run["fts5"]["bytes_per_unit"] > 0


def test_only_rows_tied_at_the_cut_may_differ() -> None:
    a = [IndexHit(1, 3.0), IndexHit(2, 2.0), IndexHit(3, 1.0)]
    assert same_top(a, [IndexHit(1, 3.0), IndexHit(2, 2.0), IndexHit(9, 1.0)])
    assert not same_top(a, [IndexHit(2, 3.0), IndexHit(1, 2.0), IndexHit(3, 1.0)])
    assert not same_top(a, [IndexHit(1, 3.0), IndexHit(2, 2.5), IndexHit(3, 1.0)])
    assert not same_top(a, a[:2])
