"""The recall-memory bench on a tiny bank: the series and the second half's growth."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from bench.recall_latency import Query, SessionText, fill
from bench.recall_memory import resident_mb, run
from hindsight import Message
from hindsight.embed.sentence_transformers import SentenceTransformerEmbedder

DAY = datetime(2024, 5, 1, 9, tzinfo=timezone.utc)


def test_memory_is_sampled_every_n_recalls(tmp_path: Path, minilm: SentenceTransformerEmbedder) -> None:
    corpus = [SessionText([Message(speaker="Maya", content=f"Maya cooked dish {i} for Bob.")], DAY + timedelta(days=i))
              for i in range(3)]
    fill(tmp_path, minilm, corpus, 3, 0.0, 3)
    out = run(tmp_path, [Query("What did Maya cook?", DAY + timedelta(days=5))], 8, 2, minilm)
    assert [s["recalls"] for s in out["series"]] == [2, 4, 6, 8]
    assert all(0 < s["anon"] <= s["rss"] and s["python_blocks"] > 0 for s in out["series"])
    assert out["second_half_python_blocks"] == out["series"][-1]["python_blocks"] - out["series"][2]["python_blocks"]
    assert out["second_half_growth_mb"]["rss"] == pytest.approx(out["series"][-1]["rss"] - out["series"][2]["rss"])
    assert resident_mb()["rss"] > 100  # this process holds the model
