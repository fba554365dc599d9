"""The many-banks bench on a tiny bank: copies get their own ids, the import resumes, and the measure runs."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from bench.many_banks import bank_name, measure, populate
from bench.recall_latency import BANK, NO_LLM, Query, SessionText, fill
from hindsight import Hindsight, Message
from hindsight.embed.sentence_transformers import SentenceTransformerEmbedder

DAY = datetime(2024, 5, 1, 9, tzinfo=timezone.utc)


def test_copies_of_one_bank_are_banks_of_their_own(tmp_path: Path, minilm: SentenceTransformerEmbedder) -> None:
    corpus = [SessionText([Message(speaker="Maya", content=f"Maya cooked dish {i} for Bob in Denver.")],
                          DAY + timedelta(days=i)) for i in range(4)]
    one, many = tmp_path / "one", tmp_path / "many"
    units = fill(one, minilm, corpus, 4, 0.0, 1).units
    assert populate(one, many, 2, minilm) == 2
    assert populate(one, many, 3, minilm) == 3  # resumed: only the third is imported
    with Hindsight(many, NO_LLM, embedder=minilm) as hs, Hindsight(one, NO_LLM, embedder=minilm) as src:
        ids = [{u.id for u in hs.bank(bank_name(n), create=False).units()} for n in range(3)]
        assert all(len(i) == units for i in ids) and not ids[0] & ids[1] and not ids[1] & ids[2]
        original = src.bank(BANK, create=False)
        copy = hs.bank(bank_name(1), create=False)
        assert sorted(u.text for u in copy.units()) == sorted(u.text for u in original.units())
        assert {e.name for e in copy.entities()} == {e.name for e in original.entities()}
        assert copy.check().ok
    run = measure(many, bank_name(1), [Query("What did Maya cook for Bob?", DAY + timedelta(days=9))] * 3,
                  unindexed=bank_name(2))
    assert run["banks"] == 3 and run["open_bank_s"] > 0 and run["recall_p50_ms"] > 0
    assert run["unindexed_open_bank_s"] > 0 and (many / "banks" / bank_name(2) / "lexical.db").exists()
