"""The latency bench's garbage-collection report."""

from __future__ import annotations

import gc

from bench.recall_latency import GcPauses


def test_gc_pauses_counts_collections_per_generation() -> None:
    pauses = GcPauses()
    gc.callbacks.append(pauses.callback)
    try:
        gc.collect(0)
        gc.collect(2)
    finally:
        gc.callbacks.remove(pauses.callback)
    summary = pauses.summary()
    assert summary["gen0"]["count"] >= 1 and summary["gen2"]["count"] >= 1  # type: ignore[index]
    assert summary["gen2"]["max_ms"] > 0  # type: ignore[index]
    assert summary["tracked_objects"] > 1000
