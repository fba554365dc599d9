"""How the judgment/claim-of-fact classifier of opinion candidates (hindsight/reflect/judgment.py) does on labels.

    python bench/opinion_claims.py [LABELS.json ...] [--json OUT]

A labelled set is {"candidates": [{"text", "label": "judgment" | "factual"}]}; by default
tests/fixtures/opinion_candidates.json (our own writing) and tests/fixtures/opinion_candidates_models.json (the
candidates qwen-0.5b and qwen-1.5b wrote in bench/reflect_opinions.py, labelled by hand). Per set: the candidates
kept as judgments, the claims of fact among them (the target is none), the judgments lost, accuracy, and the
precision and recall of the judgment class. The mistakes are listed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.reflect_answers import _commit, console, write_json
from hindsight.reflect.judgment import is_judgment

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
DEFAULT = [FIXTURES / "opinion_candidates.json", FIXTURES / "opinion_candidates_models.json"]


def score(candidates: list[dict[str, Any]]) -> dict[str, Any]:
    """The classifier's counts and rates on labelled candidates."""
    truth = [c["label"] == "judgment" for c in candidates]
    kept = [is_judgment(c["text"]) for c in candidates]
    both = sum(t and k for t, k in zip(truth, kept, strict=True))
    return {
        "candidates": len(candidates),
        "judgments": sum(truth),
        "factual": len(truth) - sum(truth),
        "kept_as_judgments": sum(kept),
        "factual_kept": sum(k and not t for t, k in zip(truth, kept, strict=True)),
        "judgments_rejected": sum(t and not k for t, k in zip(truth, kept, strict=True)),
        "accuracy": round(sum(t == k for t, k in zip(truth, kept, strict=True)) / len(candidates), 3),
        "judgment_precision": round(both / sum(kept), 3) if any(kept) else None,
        "judgment_recall": round(both / sum(truth), 3) if any(truth) else None,
        "mistakes": [{"text": c["text"], "label": c["label"]}
                     for c, t, k in zip(candidates, truth, kept, strict=True) if t != k],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("labels", type=Path, nargs="*", default=DEFAULT)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    results = {}
    for path in args.labels:
        candidates = json.loads(path.read_text(encoding="utf-8"))["candidates"]
        results[path.name] = score(candidates)
        console.print(path.name, results[path.name])
    if args.json:
        command = " ".join(["python", "bench/opinion_claims.py", *sys.argv[1:]])
        write_json(args.json, {"command": command, "commit": _commit(), "sets": results})


if __name__ == "__main__":
    main()
