"""The latency bench: its garbage-collection report, and the same bank measured on Postgres."""

from __future__ import annotations

import gc
from datetime import datetime, timedelta, timezone
from pathlib import Path

import psycopg
import pytest

from bench.recall_latency import BANK, NO_LLM, GcPauses, Query, SessionText, disk_bytes, fill, measure, postgres_copy
from hindsight import Hindsight, Message
from hindsight.embed.sentence_transformers import SentenceTransformerEmbedder
from tests.postgres_server import fresh_database, postgres_dsn


def test_gc_pauses_counts_collections_per_generation() -> None:
    pauses = GcPauses()
    gc.callbacks.append(pauses.callback)
    try:
        gc.collect(0)
        gc.collect(2)
    finally:
        gc.callbacks.remove(pauses.callback)
    # Objects the collector tracks, made after any gc.freeze() an earlier test's model load did.
    kept = [[i] for i in range(2000)]
    summary = pauses.summary()
    assert summary["gen0"]["count"] >= 1 and summary["gen2"]["count"] >= 1  # type: ignore[index]
    assert summary["gen2"]["max_ms"] > 0  # type: ignore[index]
    assert int(summary["tracked_objects"]) >= len(kept)  # type: ignore[call-overload]


def test_the_filled_bank_is_measured_on_postgres_too(tmp_path: Path, minilm: SentenceTransformerEmbedder,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HINDSIGHT_STORE_DSN", fresh_database(postgres_dsn()))
    day = datetime(2024, 5, 1, 9, tzinfo=timezone.utc)
    sessions = [SessionText([Message(speaker="Maya", content=f"Maya cooked dish number {i} for Bob in Denver.")],
                            day + timedelta(days=i)) for i in range(6)]
    grown = fill(tmp_path, minilm, sessions, 6, 0.0, 3)
    have = grown.units
    assert grown.units_before == 0 and have >= 6 and grown.summary()["units_per_s"] > 0
    assert fill(tmp_path, minilm, sessions, 6, 0.0, 3).summary() == {  # resumed: nothing left to do
        "units_before": have, "units": have, "seconds": pytest.approx(0.0, abs=5.0), "units_per_s": 0.0}
    assert disk_bytes(tmp_path, NO_LLM) > 0  # the SQLite files, without the fill's own vector cache
    config, timings = postgres_copy(tmp_path, minilm)
    assert set(timings) == {"open_s", "copy_s", "vacuum_s", "vector_index_s"} and min(timings.values()) >= 0
    with psycopg.connect(str(config.store.dsn)) as conn:  # the index was built by the copy, not by the measured run
        assert conn.execute("SELECT count(*) FROM pg_indexes WHERE indexname = 'units_hnsw_384'").fetchone() == (1,)
    queries = [Query(f"What did Maya cook for Bob? ({i})", day + timedelta(days=9)) for i in range(8)]
    run = measure(tmp_path / "postgres-process", queries, 500, config)
    assert run["units"] == have and run["queries"] == 3
    assert float(run["open_warm_s"]) > 0 and int(run["anon_bytes_per_unit_beyond_vectors"]) >= 0  # type: ignore[arg-type]
    assert run["rss_mb"]["vectors"] == 0  # type: ignore[index]  # Postgres holds them, not the process
    assert disk_bytes(tmp_path, config) > 0
    with Hindsight(tmp_path / "check", config, embedder=minilm) as hs:
        labels = {u.id for u in hs.bank(BANK, create=False).units()}
    again, timings = postgres_copy(tmp_path, minilm)
    assert again == config and set(timings) == {"open_s", "vector_index_s"}  # the same bank: not copied again
    with Hindsight(tmp_path / "check", config, embedder=minilm) as hs:
        assert {u.id for u in hs.bank(BANK, create=False).units()} == labels
