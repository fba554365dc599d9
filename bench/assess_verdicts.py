"""Opinion reinforcement verdicts of a local model on hand-written cases: does it tell agreement from doubt,
disagreement and irrelevance?

    python bench/assess_verdicts.py [--model qwen-1.5b] [--threads 1] [--json OUT]

Each case is an opinion, one new fact and the answer a careful reader gives. The model gets exactly what
reinforcement sends (`assess_messages` with the `AssessmentOut` schema, temperature 0). Reported per model: the
answers, how many match, and the confusion counts. The cases are our own writing, no benchmark data.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console

from hindsight.llm.llamacpp_backend import LlamaCppLLM
from hindsight.llm.local_models import resolve_model_path
from hindsight.models import MemoryUnit, Network, Source
from hindsight.reflect.prompts import assess_messages
from hindsight.reflect.schemas import AssessmentOut

console = Console()
WHEN = datetime(2024, 10, 1, tzinfo=UTC)
# (opinion, new fact, expected answer)
CASES = (
    ("I think Alice loves hiking.", "Alice hiked in Yosemite again this weekend and said it was the best part of her "
     "week.", "agrees"),
    ("I think Alice loves hiking.", "Alice said she hates hiking now and sold all her hiking gear.", "disagrees"),
    ("I think Alice loves hiking.", "Bob bought a new espresso machine for his kitchen.", "unrelated"),
    ("I think Alice loves hiking.", "Alice skipped the last two group hikes and said she was tired.", "doubts"),
    ("I believe Priya is a good running coach for Maya.", "Maya ran her first marathon in 3:52 following Priya's "
     "plan.", "agrees"),
    ("I think Maya should stay in Boston.", "Maya accepted the job in Denver and loves her new team.", "disagrees"),
    ("I think the new restaurant on Elm Street is excellent.", "Three friends said their meals there were cold and "
     "bland.", "doubts"),
    ("I think Tom is reliable at work.", "Tom's manager praised him for never missing a deadline this year.",
     "agrees"),
    ("I think Tom is reliable at work.", "Tom adopted a cat named Miso last week.", "unrelated"),
    ("I believe DuckDB suits Maya's analytics pipeline.", "Maya's team moved the pipeline to DuckDB and queries run "
     "ten times faster.", "agrees"),
    ("I think Sam enjoys living in the city.", "Sam moved to a farm because the city noise made him miserable.",
     "disagrees"),
    ("I think Lena is a careful driver.", "Lena got a speeding ticket last month.", "doubts"),
)


def _unit(text: str, network: Network, confidence: float | None = None) -> MemoryUnit:
    return MemoryUnit(id="u", bank_id="bench", text=text, network=network, occurred_start=WHEN, occurred_end=WHEN,
                      mentioned_at=WHEN, source=Source(document_id="bench"), content_hash=text, created_at=WHEN,
                      confidence=confidence)


def bench_model(name: str, threads: int) -> dict[str, Any]:
    llm = LlamaCppLLM(resolve_model_path(name), n_threads=threads, n_ctx=2048, max_tokens=200)
    rows = []
    for opinion, fact, expected in CASES:
        messages = assess_messages(_unit(opinion, Network.OPINION, 0.6), [_unit(fact, Network.WORLD)])
        reply = llm.structured(messages, AssessmentOut, max_tokens=200, temperature=0.0)
        answer = reply.value.answer.value
        rows.append({"opinion": opinion, "fact": fact, "expected": expected, "answer": answer,
                     "reason": reply.value.reason})
        console.print(f"{name}: expected {expected:9} got {answer:9} | {fact[:70]}")
    correct = sum(r["expected"] == r["answer"] for r in rows)
    confusion = Counter(f"{r['expected']}->{r['answer']}" for r in rows)
    return {"model": name, "threads": threads, "cases": len(rows), "correct": correct,
            "confusion": dict(sorted(confusion.items())), "answers": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", action="append", help="local model name or GGUF path (repeatable)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    results = {"command": " ".join(["python", "bench/assess_verdicts.py", *sys.argv[1:]]),
               "models": [bench_model(m, args.threads) for m in args.model or ["qwen-1.5b"]]}
    for m in results["models"]:
        console.print(f"{m['model']}: {m['correct']} of {m['cases']} right; {m['confusion']}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
