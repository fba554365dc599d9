"""Compare two result files of one eval system question by question: the ranked turns and every metric.

    python -m eval.compare_runs BEFORE.json AFTER.json [--metric accuracy]

A refactor that must not change retrieval shows every question "same". Exit code 1 when any question differs, or
when the two files do not score the same questions. With --metric, only that metric is compared, and the questions
whose value rose and fell are listed (e.g. the answers a QA run got right and wrong against another).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval.runner import console


@dataclass(frozen=True)
class Comparison:
    """Questions in both files, those whose ranked turns differ, those whose metrics differ, and those in one only."""

    common: int
    ranking_differs: list[str]
    metrics_differ: list[str]
    only_in_one: list[str]

    @property
    def same(self) -> bool:
        return not (self.ranking_differs or self.metrics_differ or self.only_in_one)


def _by_id(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["id"]: row for row in report["per_question"]}


def compare(before: dict[str, Any], after: dict[str, Any], metric: str | None = None) -> Comparison:
    """Compare the per-question results of two reports of the eval runner (one metric's values only, when given)."""
    a, b = _by_id(before), _by_id(after)
    common = sorted(a.keys() & b.keys())
    ranking = [q for q in common if a[q]["detail"].get("ranked_turns") != b[q]["detail"].get("ranked_turns")]

    def values(row: dict[str, Any]) -> Any:
        return row["metrics"] if metric is None else row["metrics"].get(metric)

    metrics = [q for q in common if values(a[q]) != values(b[q])]
    return Comparison(len(common), ranking, metrics, sorted(a.keys() ^ b.keys()))


def moved(before: dict[str, Any], after: dict[str, Any], metric: str) -> tuple[list[str], list[str]]:
    """The questions of both reports whose `metric` rose, and those whose `metric` fell."""
    a, b = _by_id(before), _by_id(after)
    common = sorted(a.keys() & b.keys())
    rose = [q for q in common if b[q]["metrics"].get(metric, 0.0) > a[q]["metrics"].get(metric, 0.0)]
    fell = [q for q in common if b[q]["metrics"].get(metric, 0.0) < a[q]["metrics"].get(metric, 0.0)]
    return rose, fell


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--metric", default=None, help="compare this per-question metric only")
    args = parser.parse_args(argv)
    before, after = (json.loads(p.read_text(encoding="utf-8")) for p in (args.before, args.after))
    result = compare(before, after, args.metric)
    console.print(f"{before['system']} on {before['dataset']}: {result.common} questions in both "
                  f"(code {before.get('code_version')} against {after.get('code_version')})")
    console.print(f"ranked turns differ: {len(result.ranking_differs)} {result.ranking_differs[:10]}")
    console.print(f"metrics differ: {len(result.metrics_differ)} {result.metrics_differ[:10]}")
    console.print(f"in one file only: {len(result.only_in_one)} {result.only_in_one[:10]}")
    if args.metric is not None:
        rose, fell = moved(before, after, args.metric)
        console.print(f"{args.metric} rose: {len(rose)} {rose[:10]}; fell: {len(fell)} {fell[:10]}")
    console.print("same" if result.same else "DIFFERENT")
    return 0 if result.same else 1


if __name__ == "__main__":
    sys.exit(main())
