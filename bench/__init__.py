"""Benchmarks: each script runs on its own (`python bench/NAME.py`); shared bits live here."""

import argparse
import json
import os
import platform
import statistics
from pathlib import Path
from typing import Any


def machine() -> str:
    """The CPU and core count, as every bench output records it."""
    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores"


def corpus_parser(doc: str | None) -> argparse.ArgumentParser:
    """A bench's parser with the dev files its fill and questions come from, and --json for its output."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locomo", type=Path, required=True)
    parser.add_argument("--longmemeval", type=Path, required=True)
    parser.add_argument("--json", type=Path, default=None)
    return parser


def percentiles(values: list[float]) -> dict[str, float]:
    """p50 (the median), p95 and p99 (nearest rank) in ms, rounded to 0.01."""
    ordered = sorted(values)
    return {"p50_ms": round(statistics.median(ordered), 2),
            "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))], 2),
            "p99_ms": round(ordered[int(0.99 * (len(ordered) - 1))], 2)}


def resumed(path: Path | None, header: dict[str, Any], key: str) -> list[Any]:
    """The rows under `key` of an earlier run in `path` with the same header (settings, code), if any."""
    if path is None or not path.exists():
        return []
    earlier = json.loads(path.read_text(encoding="utf-8"))
    if {k: earlier.get(k) for k in header} != header:
        raise SystemExit(f"{path} holds a run of other settings or code; pick another file")
    rows: list[Any] = earlier[key]
    return rows
