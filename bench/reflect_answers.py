"""Reflect answers of a local model: how many refuse, and how many opinion candidates are kept or rejected.

    python bench/reflect_answers.py [--model qwen-1.5b] [--runs 2] [--threads 1] [--demo] [--json OUT]

A bank holds the shipped sample conversation (nlp extractor, so no LLM in retain) with the demo's profile. Its
questions are those of bench/llm_tokens_per_second.py (the demo's reflect question and two others), asked at the
demo's query time with the default reflect settings (--demo: the demo's, a 200-token answer cap and a 600-token
evidence budget). Each run starts from a copy of the same bank (the opinions of
one run do not feed the next) and loads the model with its own sampling seed (the run number). Printed and written
per answer: the answer, whether it refuses (its first sentence is a refusal or says it does not know:
`opinion_check.states_not_knowing`), the opinions kept, and the candidates rejected with their reasons. The commit is
recorded, so that runs before and after a prompt change can be set side by side. Nothing here is timed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.markup import escape

from bench.llm_tokens_per_second import REFLECT_QUESTIONS
from hindsight import Hindsight, HindsightConfig, ReflectResult
from hindsight.demo import DEMO_CONFIG, QUERY_TIME, REFLECT_BUDGET, retain_sample
from hindsight.embed.base import Embedder
from hindsight.embed.factory import make_embedder
from hindsight.llm.llamacpp_backend import LlamaCppLLM
from hindsight.llm.local_models import resolve_model_path
from hindsight.reflect.opinion_check import states_not_knowing

console = Console()
CONFIG = {"reflect": {"work": {"background": False}}}
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


def refuses(answer: str) -> bool:
    """The answer opens by refusing or by saying it does not know."""
    return states_not_knowing(_SENTENCE_END.split(answer.strip(), maxsplit=1)[0])


def build_bank(directory: Path, embedder: Embedder) -> None:
    """The sample conversation in bank "bench", with the demo's profile; no LLM is needed."""
    config = HindsightConfig.from_dict({**CONFIG, "llm": {"backend": "none"}})
    with Hindsight(directory, config, embedder=embedder) as hs:
        bank = hs.bank("bench")
        retain_sample(bank)


def record(question: str, result: ReflectResult) -> dict[str, Any]:
    return {
        "question": question,
        "answer": result.answer,
        "refuses": refuses(result.answer),
        "cited": len(result.cited),
        "opinions": [{"text": c.unit.text, "confidence": c.unit.confidence} for c in result.opinions],
        "rejected": [{"text": r.text, "reason": r.reason.value} for r in result.rejected_opinions],
        "opinion_error": result.opinion_error,
    }


def run_once(
    template: Path, work: Path, model: Path, seed: int, threads: int, embedder: Embedder, demo: bool
) -> list[dict[str, Any]]:
    """Every question once, on a fresh copy of the bank, with the model loaded at `seed` (the demo's reflect
    settings when `demo`)."""
    shutil.copytree(template, work)
    llm = LlamaCppLLM(model, n_threads=threads, n_ctx=4096, seed=seed)
    config, budget = (DEMO_CONFIG, REFLECT_BUDGET) if demo else (CONFIG, None)
    answers = []
    with Hindsight(work, HindsightConfig.from_dict(config), llm=llm, embedder=embedder) as hs:
        for question in REFLECT_QUESTIONS:
            entry = record(question, hs.bank("bench").reflect(question, budget=budget, query_time=QUERY_TIME))
            answers.append(entry | {"run": seed})
            show(entry)
    return answers


def show(entry: dict[str, Any]) -> None:
    flag = " [red](refuses)[/]" if entry["refuses"] else ""
    console.print(f"\n[bold]Q:[/] {escape(entry['question'])}{flag}\n[bold]A:[/] {escape(entry['answer'])}")
    for o in entry["opinions"]:
        console.print(f"  kept ({o['confidence']:.2f}): {escape(o['text'])}")
    for r in entry["rejected"]:
        console.print(f"  rejected ({r['reason']}): {escape(r['text'])}")
    if entry["opinion_error"]:
        console.print(f"  no opinions: {escape(entry['opinion_error'][:200])}")


def summary(answers: list[dict[str, Any]]) -> dict[str, Any]:
    reasons = Counter(r["reason"] for a in answers for r in a["rejected"])
    return {
        "answers": len(answers),
        "refusing_answers": sum(a["refuses"] for a in answers),
        "opinions_kept": sum(len(a["opinions"]) for a in answers),
        "candidates_rejected": sum(reasons.values()),
        "rejected_by_reason": dict(sorted(reasons.items())),
        "answers_with_a_kept_opinion": sum(bool(a["opinions"]) for a in answers),
        "opinion_errors": sum(a["opinion_error"] is not None for a in answers),
    }


def _commit() -> str:
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(
        ["git", "-C", str(root), "status", "--porcelain", "hindsight"], capture_output=True, text=True
    )
    return out.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")


def write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    console.print(f"wrote {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="qwen-1.5b", help="local model name or GGUF path")
    parser.add_argument("--runs", type=int, default=2, help="runs of all questions, seeds 1..runs")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--demo", action="store_true", help="the demo's reflect settings instead of the defaults")
    parser.add_argument("--json", type=Path, default=None, help="write the answers and the summary here")
    args = parser.parse_args()
    commit = _commit()  # the code that runs, before anything may change it
    model = resolve_model_path(args.model)
    embedder = make_embedder(HindsightConfig().embedder)
    answers: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-reflect-answers-") as tmp:
        template = Path(tmp) / "template"
        with console.status("retaining the sample conversation..."):
            build_bank(template, embedder)
        for seed in range(1, args.runs + 1):
            answers += run_once(template, Path(tmp) / f"run-{seed}", model, seed, args.threads, embedder, args.demo)
    result = {
        "command": " ".join(["python", "bench/reflect_answers.py", *sys.argv[1:]]),
        "commit": commit,
        "model": args.model,
        "settings": "demo" if args.demo else "default",
        "summary": summary(answers),
        "answers": answers,
    }
    console.print(result["summary"])
    if args.json:
        write_json(args.json, result)


if __name__ == "__main__":
    main()
