"""The big-bank operations bench on a tiny bank, on SQLite and on Postgres: every step runs, and a stopped run
resumes after its last step."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import psycopg
import pytest

from bench.recall_latency import SessionText, fill
from bench.scale_ops import copy_of, operate, postgres_copy_of, sessions_of
from hindsight import Message
from hindsight.embed.sentence_transformers import SentenceTransformerEmbedder
from tests.postgres_server import fresh_database, postgres_dsn

DAY = datetime(2024, 5, 1, 9, tzinfo=timezone.utc)


def corpus() -> list[SessionText]:
    people = ["Maya", "Bob"]
    return [SessionText([Message(speaker=people[t % 2], content=f"{people[t % 2]} cooked dish {i}-{t}.")
                         for t in range(10)], DAY + timedelta(days=i)) for i in range(4)]


def test_every_step_runs_on_a_copy_and_a_rerun_resumes(tmp_path: Path, minilm: SentenceTransformerEmbedder) -> None:
    big = tmp_path / "big"
    filled = fill(big, minilm, corpus(), 20, 0.0, 2)
    copy = copy_of(big, fresh=True)
    work = copy.work
    assert work == tmp_path / "big-ops" and not (work / "fill-vectors.sqlite").exists()
    out = operate(copy, minilm, sessions_of(corpus(), 2))
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
    again = copy_of(big, fresh=False)
    assert again.work == work
    assert operate(again, minilm, sessions_of(corpus(), 2)) == out
    assert set(json.loads((work / "ops.json").read_text())) == set(out)


def test_on_postgres_the_steps_run_on_a_cloned_database(tmp_path: Path, minilm: SentenceTransformerEmbedder,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HINDSIGHT_STORE_DSN", fresh_database(postgres_dsn()))
    big = tmp_path / "big"
    filled = fill(big, minilm, corpus(), 20, 0.0, 2)
    copy = postgres_copy_of(big, fresh=True, model=minilm)
    assert copy.work == tmp_path / "big-ops-postgres" and set(copy.drops) == {"vectors"}
    out = operate(copy, minilm, sessions_of(corpus(), 2))
    assert out["open"]["units"] == filled.units
    assert out["retain"]["retains"] == 2 and out["forget_entity"]["removed"] >= 1
    assert out["check"]["ok"] and out["delete_bank"]["banks_left"] == 0
    assert out["rebuild_vectors"]["rebuild_s"] > 0
    with psycopg.connect(str(copy.config.store.dsn)) as conn:  # dropped by the step, built again by the open
        assert conn.execute("SELECT count(*) FROM pg_indexes WHERE indexname = 'units_hnsw_384'").fetchone() == (1,)
        assert conn.execute("SHOW maintenance_work_mem").fetchone() == ("8GB",)
    # The source database still holds the bank: a fresh run clones it again, and a resumed one runs no step again
    # (the clone's bank is deleted, so a step would fail).
    again = operate(postgres_copy_of(big, fresh=True, model=minilm), minilm, sessions_of(corpus(), 2))
    assert again["open"]["units"] == filled.units
    assert operate(postgres_copy_of(big, fresh=False, model=minilm), minilm, sessions_of(corpus(), 2)) == again
