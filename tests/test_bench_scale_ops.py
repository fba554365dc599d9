"""The big-bank operations bench on a tiny bank: every step runs, and a stopped run resumes after its last step."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

from bench.recall_latency import SessionText, fill
from bench.scale_ops import copy_of, operate, sessions_of
from hindsight import Message
from hindsight.embed.sentence_transformers import SentenceTransformerEmbedder

DAY = datetime(2024, 5, 1, 9, tzinfo=timezone.utc)


def corpus() -> list[SessionText]:
    people = ["Maya", "Bob"]
    return [SessionText([Message(speaker=people[t % 2], content=f"{people[t % 2]} cooked dish {i}-{t}.")
                         for t in range(10)], DAY + timedelta(days=i)) for i in range(4)]


def test_every_step_runs_on_a_copy_and_a_rerun_resumes(tmp_path: Path, minilm: SentenceTransformerEmbedder) -> None:
    big = tmp_path / "big"
    filled = fill(big, minilm, corpus(), 20, 0.0, 2)
    work = copy_of(big, fresh=True)
    assert work == tmp_path / "big-ops" and not (work / "fill-vectors.sqlite").exists()
    out = operate(work, minilm, sessions_of(corpus(), 2))
    assert out["open"]["units"] == filled.units
    assert out["retain"]["retains"] == 2 and out["retain"]["median_ms"] > 0
    assert out["forget_unit"]["removed"] >= 1
    assert out["forget_entity"]["removed"] >= 1 and out["forget_entity"]["mentions"] >= 1
    assert out["check"]["ok"] and out["check"]["units"] > 0
    assert out["rebuild_vectors"]["rebuilt"] == ["vectors"] and out["rebuild_lexical"]["rebuilt"] == ["lexical"]
    assert out["delete_bank"]["banks_left"] == 0
    # The original bank is untouched.
    assert fill(big, minilm, corpus(), 20, 0.0, 2).units == filled.units
    # Every step is recorded: a rerun on the same copy runs none again (the bank is deleted, so a step would fail).
    assert copy_of(big, fresh=False) == work
    assert operate(work, minilm, sessions_of(corpus(), 2)) == out
    assert set(json.loads((work / "ops.json").read_text())) == set(out)
