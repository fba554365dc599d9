"""Reflect on a person's conversations, per model: does the answer cite the memories that ground it, write in its
own words, form opinions that judge, and say so when the memory does not hold the answer?

    python eval/reflect.py --data tests/fixtures/reflect --out OUT.json [--model qwen-0.5b --model qwen-1.5b]
        [--config PATH|preset:NAME] [--threads 2] [--work DIR] [--conversations N] [--summary SMALL.json]

Each conversation (eval/reflect_data.py) is retained once into a bank with the assistant's profile, in the person's
time zone, one retain per session in date order (the offline extractor: no LLM). Each model then reflects on a copy
of those banks, question by question in the file's order, at the question's `query_time`; the opinions it forms
stay in its copy, as they would for a user. `--model` names a local model (`hindsight models list`); without one,
the configured LLM answers (e.g. an OpenAI-compatible endpoint from --config or HINDSIGHT_LLM_* variables). Answers
are kept in the work folder as they are made, so a stopped run resumes where it was. Each conversation holds every
kind of question, so `--conversations N` (the first N by file name) is a shorter run with the same mix.

Per model:
- cites_evidence: judgment and two_memories answers that cite a memory holding one of the question's evidence turns;
- copies_turn: answers holding a run of 12 words of one turn of the conversation (hindsight/reflect/grounding.py);
- judgment_opinion: judgment questions that formed at least one opinion;
- restated_facts: opinion candidates that the opinion check (hindsight/reflect/opinion_check.py) rejects as a
  restated fact (a factual claim, or a copy of the evidence), over all candidates; the stored opinions are in the
  output, to read;
- declines_unanswerable: unanswerable questions whose reply says the memory does not hold it (`known` false, or in
  the answer's words); declines_answerable: the other questions answered that way;
- structured_first_try: reflects whose structured output was valid on each first attempt (no re-ask for valid JSON);
- retried: reflects whose first answer was not grounded and was asked for again; weak: those still not grounded;
- seconds p50 / p95, and the mean prompt tokens and LLM calls of a reflect.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.table import Table
from tqdm import tqdm

from eval.hindsight_system import system_config
from eval.reflect_data import KINDS, ReflectConversation, ReflectQuestion, fixture_problems, load_conversations
from eval.runner import code_version, config_overrides, console
from hindsight import Bank, BankProfile, Hindsight, HindsightConfig, Message
from hindsight.reflect.grounding import copied
from hindsight.reflect.types import ReflectResult, RejectReason

# How an answer says that the memory does not hold what was asked.
_DECLINES = re.compile(
    r"\b(?:(?:do|does|did)(?: not|n't)|can(?:not|'t)|could(?:n't| not))\s+(?:know|remember|recall|say|tell|find|"
    r"see|have)\b|\bno (?:memor(?:y|ies)|record|information|mention)\b|\b(?:never|not|wasn't|isn't) (?:been )?"
    r"(?:mentioned|said|told|shared|discussed)\b|\bnothing (?:in|about)\b|\bnot sure\b|\bunknown\b",
    re.IGNORECASE,
)
_RESTATED = {RejectReason.FACTUAL_CLAIM.value, RejectReason.COPIES_EVIDENCE.value}


def copies_turn(answer: str, turns: Sequence[str]) -> bool:
    """Whether the answer holds a run of 12 words of one of the turns, by the grounding check's own test."""
    return copied(answer, turns) is not None


def declines(answer: str) -> bool:
    return bool(_DECLINES.search(answer))


def retain_conversation(hs: Hindsight, conv: ReflectConversation) -> Bank:
    """A fresh bank holding the conversation, with the assistant's profile, one retain per session in date order."""
    if conv.name in hs.banks():
        hs.delete_bank(conv.name)
    bank = hs.bank(conv.name)
    bank.set_profile(BankProfile(name=conv.bank.name, background=conv.bank.background, timezone=conv.timezone))
    for session in conv.sessions:
        bank.retain([Message(id=t.id, speaker=t.speaker, role=t.role, content=t.text) for t in session.turns],
                    timestamp=session.date, document_id=session.id)
    hs.drain()
    return bank


def model_label(model: str | None) -> str:
    """A model's name in the report and its folder in the work dir: a local model's name, a GGUF file's stem."""
    return "configured" if model is None else Path(model).stem if model.endswith(".gguf") else model


def model_config(overrides: dict[str, Any] | None, model: str | None, threads: int) -> HindsightConfig:
    """The benchmark config (offline extractor, no background reasoning) with the LLM that reflects: the local
    `model`, or the configured one."""
    config = system_config("hindsight", "nlp", overrides)
    llm = (overrides or {}).get("llm", {})
    if model is not None:
        llm = {**llm, "backend": "llamacpp", "model": model, "n_threads": threads}
    return config.model_copy(update={"llm": config.llm.model_validate(llm)})


def score(q: ReflectQuestion, result: ReflectResult, turns: Sequence[str], seconds: float) -> dict[str, Any]:
    """One reflect's row: what the metrics read, and what to read when it fails."""
    by_id = {u.id: u for u in result.evidence}
    cited_turns = [t for i in result.cited if i in by_id for t in by_id[i].source.turn_ids]
    return {
        "id": q.id, "kind": q.kind, "question": q.question, "answer": result.answer, "reference": q.answer,
        "evidence_turns": q.evidence_turns, "cited_turns": cited_turns,
        "cites_evidence": bool(set(cited_turns) & set(q.evidence_turns)),
        "copies_turn": copies_turn(result.answer, turns), "declines": not result.known or declines(result.answer),
        "known": result.known, "weak": result.weak, "retried": result.retried,
        "opinions": [o.unit.text for o in result.opinions],
        "rejected": [{"text": r.text, "reason": r.reason.value} for r in result.rejected_opinions],
        "opinion_error": result.opinion_error,
        # One call, and one more when the answer was asked for again: any other call was a re-ask for valid output.
        "structured_first_try": result.usage.calls == 1 + result.retried,
        "seconds": round(seconds, 2), "prompt_tokens": result.usage.prompt_tokens,
        "completion_tokens": result.usage.completion_tokens, "calls": result.usage.calls,
    }


def _share(flags: Sequence[bool]) -> float | None:
    return round(sum(flags) / len(flags), 4) if flags else None


def summary(rows: Sequence[dict[str, Any]]) -> dict[str, float | None]:
    """The metrics of the module docstring over one model's rows."""
    grounded = [r for r in rows if r["kind"] != "unanswerable"]
    candidates = [*(False for r in rows for _ in r["opinions"]),
                  *(rejected["reason"] in _RESTATED for r in rows for rejected in r["rejected"])]
    seconds = sorted(r["seconds"] for r in rows)
    return {
        "questions": len(rows),
        "cites_evidence": _share([r["cites_evidence"] for r in grounded]),
        "copies_turn": _share([r["copies_turn"] for r in rows]),
        "judgment_opinion": _share([bool(r["opinions"]) for r in rows if r["kind"] == "judgment"]),
        "restated_facts": _share(candidates),
        "declines_unanswerable": _share([r["declines"] for r in rows if r["kind"] == "unanswerable"]),
        "declines_answerable": _share([r["declines"] for r in grounded]),
        "structured_first_try": _share([r["structured_first_try"] for r in rows]),
        "retried": _share([r["retried"] for r in rows]),
        "weak": _share([bool(r["weak"]) for r in rows]),
        "seconds_p50": round(statistics.median(seconds), 2) if seconds else None,
        "seconds_p95": round(seconds[min(len(seconds) - 1, round(0.95 * (len(seconds) - 1)))], 2) if seconds else None,
        "prompt_tokens_mean": round(statistics.mean(r["prompt_tokens"] for r in rows), 1) if rows else None,
        "calls_mean": round(statistics.mean(r["calls"] for r in rows), 2) if rows else None,
    }


def _done(path: Path, version: str) -> dict[str, dict[str, Any]]:
    """The rows a stopped run of the same code already made (a line cut off by a kill runs again)."""
    rows: dict[str, dict[str, Any]] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if row.get("code_version") == version:
                rows[row["id"]] = row
    return rows


def run_model(name: str, config: HindsightConfig, convs: Sequence[ReflectConversation], base: Path, work: Path,
              version: str) -> list[dict[str, Any]]:
    """One model's rows; its banks start as copies of `base` and keep what it reflects."""
    log = work / "rows.jsonl"
    done = _done(log, version)
    if not done:  # a fresh run starts from the retained banks
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(base, work / "memory")
    rows: list[dict[str, Any]] = []
    questions = [(c, q) for c in convs for q in c.questions]
    with Hindsight(work / "memory", config) as hs:
        for conv, q in tqdm(questions, desc=name, unit="question"):
            if q.id in done:
                rows.append(done[q.id])
                continue
            started = time.perf_counter()
            result = hs.bank(conv.name).reflect(q.question, query_time=q.query_time)
            row = {**score(q, result, [t.text for s in conv.sessions for t in s.turns],
                           time.perf_counter() - started), "code_version": version}
            with log.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(row) + "\n")
            rows.append(row)
    return rows


def print_table(report: dict[str, Any]) -> None:
    columns = ("questions", "cites_evidence", "copies_turn", "judgment_opinion", "restated_facts",
               "declines_unanswerable", "declines_answerable", "structured_first_try", "retried", "weak", "seconds_p50",
               "seconds_p95")
    table = Table(title=f"reflect, {report['data']}")
    for col in ("model", *columns):
        table.add_column(col.replace("_", " "), justify="right")
    for name, values in report["models"].items():
        table.add_row(name, *["-" if values["metrics"].get(c) is None else str(values["metrics"][c])
                              for c in columns])
    console.print(table)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="a reflect fixture, or a folder of them")
    parser.add_argument("--out", type=Path, required=True, help="result JSON")
    parser.add_argument("--model", action="append", default=None,
                        help="a local model or a GGUF file (repeat); default: the configured LLM")
    parser.add_argument("--config", default=None, help="YAML config sections, or preset:NAME")
    parser.add_argument("--threads", type=int, default=2, help="llama.cpp threads of a local model")
    parser.add_argument("--work", type=Path, default=None, help="banks and answers, kept to resume (default: a "
                        "temporary folder)")
    parser.add_argument("--conversations", type=int, default=None, help="only the first N conversations")
    parser.add_argument("--summary", type=Path, default=None, help="also write the metrics alone, without the "
                        "answers (small enough to commit)")
    args = parser.parse_args(argv)
    convs = load_conversations(args.data)[:args.conversations]
    if problems := fixture_problems(convs):
        raise SystemExit("invalid fixture:\n" + "\n".join(problems))
    overrides = config_overrides(args.config)
    version = code_version()
    report: dict[str, Any] = {"dataset": "reflect", "data": str(args.data), "code_version": version,
                              "config": args.config, "conversations": [c.name for c in convs], "models": {}}
    with tempfile.TemporaryDirectory(prefix="hindsight-reflect-") as tmp:
        work = args.work or Path(tmp)
        base, marker = work / "retained" / "memory", work / "retained" / version
        names = "\n".join(c.name for c in convs)
        if not marker.exists() or marker.read_text(encoding="utf-8") != names:
            for stale in ("retained", *(model_label(m) for m in args.model or [None])):
                shutil.rmtree(work / stale, ignore_errors=True)  # a model's rows hold to the banks they started from
            with Hindsight(base, system_config("hindsight", "nlp", overrides)) as hs:
                for conv in convs:
                    retain_conversation(hs, conv)
            marker.write_text(names, encoding="utf-8")
        for model in args.model or [None]:
            name = model_label(model)
            config = model_config(overrides, model, args.threads)
            rows = run_model(name, config, convs, base, work / name, version)
            report["models"][name] = {
                "llm": config.llm.model_dump(mode="json", exclude={"api_key"}), "metrics": summary(rows),
                "per_kind": {k: summary([r for r in rows if r["kind"] == k]) for k in KINDS}, "per_question": rows,
            }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1), encoding="utf-8")
    if args.summary is not None:
        small = {**report, "models": {name: {k: v for k, v in values.items() if k != "per_question"}
                                      for name, values in report["models"].items()}}
        args.summary.parent.mkdir(parents=True, exist_ok=True)
        args.summary.write_text(json.dumps(small, indent=1), encoding="utf-8")
    print_table(report)
    console.print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
