"""The opinions a local model forms in reflect: how many are stored, how many candidates are rejected as claims of fact
or for citing nothing, and the confidences stored.

    python bench/reflect_opinions.py [--model qwen-1.5b] [--seed 1] [--threads 1] [--json OUT]

The conversations are bench/data/opinion_conversations.json (our own writing): three multi-session conversations with
four questions each (judgments, a fact and a judgment asked together, a plain fact). Each conversation is retained
with the nlp extractor (no LLM) under its bank profile. Each question is asked at the conversation's query time with
the default reflect settings, on a fresh copy of the conversation's bank, so an opinion formed for one question does
not feed the next. The model is loaded once, with the given sampling seed.

Per answer: the answer, the candidates kept (text, confidence, cited memories) and rejected (text, reason). The
summary: opinions stored, candidates rejected by reason (`factual_claim`, `uncited`, `unsupported`, ...), stored
opinions without evidence (the rule says none), and the distribution of the stored confidences. Every candidate is
listed with the classifier's verdict, for labelling by hand.

Resumable: with --json, the answers already in the file (same model, seed and code) are kept and only the rest asked;
the file is rewritten after each answer. --summarize FILE prints a file's summary as this script computes it now.
Nothing here is timed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import resumed
from bench.reflect_answers import _commit, console, refuses, show, write_json
from hindsight import BankProfile, Hindsight, HindsightConfig, ReflectResult
from hindsight.embed.base import Embedder
from hindsight.embed.factory import make_embedder
from hindsight.llm.llamacpp_backend import LlamaCppLLM
from hindsight.llm.local_models import resolve_model_path
from hindsight.reflect.judgment import is_judgment
from hindsight.sample import parse_sessions

CONVERSATIONS = Path(__file__).parent / "data" / "opinion_conversations.json"
CONFIG = {"reflect": {"work": {"background": False}}}


def load_conversations(path: Path = CONVERSATIONS) -> list[dict[str, Any]]:
    conversations: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))["conversations"]
    return conversations


def build_bank(directory: Path, conversation: dict[str, Any], embedder: Embedder) -> None:
    """The conversation in bank "bench", with its profile; no LLM is needed."""
    config = HindsightConfig.from_dict({**CONFIG, "llm": {"backend": "none"}})
    with Hindsight(directory, config, embedder=embedder) as hs:
        bank = hs.bank("bench")
        bank.set_profile(BankProfile(**conversation["profile"]))
        for session in parse_sessions(conversation["sessions"]):
            bank.retain(session.messages, timestamp=session.date, document_id=session.id)


def record(conversation: str, question: str, result: ReflectResult) -> dict[str, Any]:
    return {
        "conversation": conversation,
        "question": question,
        "answer": result.answer,
        "refuses": refuses(result.answer),
        "cited": len(result.cited),
        "opinions": [{"text": c.unit.text, "confidence": c.unit.confidence, "evidence": len(c.event.evidence)}
                     for c in result.opinions],
        "rejected": [{"text": r.text, "reason": r.reason.value} for r in result.rejected_opinions],
        "opinion_error": result.opinion_error,
        "prompt_tokens": result.usage.prompt_tokens,
        "completion_tokens": result.usage.completion_tokens,
    }


def summary(answers: list[dict[str, Any]]) -> dict[str, Any]:
    stored = [o for a in answers for o in a["opinions"]]
    reasons = Counter(r["reason"] for a in answers for r in a["rejected"])
    candidates = [*({"text": o["text"], "kept": True} for o in stored),
                  *({"text": r["text"], "kept": False, "reason": r["reason"]} for a in answers for r in a["rejected"])]
    return {
        "answers": len(answers),
        "candidates": len(candidates),
        "opinions_stored": len(stored),
        "factual_claims_rejected": reasons.get("factual_claim", 0),
        "uncited_rejected": reasons.get("uncited", 0),
        "unsupported_rejected": reasons.get("unsupported", 0),  # cited memories that do not bear on it
        "stored_without_evidence": sum(o["evidence"] == 0 for o in stored),
        "rejected_by_reason": dict(sorted(reasons.items())),
        "confidence_distribution": {f"{c:.2f}": n for c, n in sorted(Counter(o["confidence"] for o in stored).items())},
        "opinion_errors": sum(a["opinion_error"] is not None for a in answers),
        "prompt_tokens_per_answer": round(sum(a["prompt_tokens"] for a in answers) / max(len(answers), 1)),
        "refusing_answers": sum(a["refuses"] for a in answers),
        "candidate_texts": [c | {"judgment": is_judgment(c["text"])} for c in candidates],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="qwen-1.5b", help="local model name or GGUF path")
    parser.add_argument("--seed", type=int, default=1, help="sampling seed of the model")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", type=Path, default=None, help="write the answers and the summary here (resumable)")
    parser.add_argument("--summarize", type=Path, default=None, help="print the summary of such a file, asking nothing")
    args = parser.parse_args()
    if args.summarize:
        answers = json.loads(args.summarize.read_text(encoding="utf-8"))["answers"]
        console.print({k: v for k, v in summary(answers).items() if k != "candidate_texts"})
        return
    header = {"commit": _commit(), "model": args.model, "seed": args.seed}
    answers = resumed(args.json, header, "answers")
    done = {(a["conversation"], a["question"]) for a in answers}
    embedder = make_embedder(HindsightConfig().embedder)
    llm = LlamaCppLLM(resolve_model_path(args.model), n_threads=args.threads, n_ctx=4096, seed=args.seed)
    with tempfile.TemporaryDirectory(prefix="bench-reflect-opinions-") as tmp:
        for conversation in load_conversations():
            todo = [q for q in conversation["questions"] if (conversation["id"], q) not in done]
            if not todo:
                continue
            template = Path(tmp) / conversation["id"]
            with console.status(f"retaining conversation {conversation['id']}..."):
                build_bank(template, conversation, embedder)
            for n, question in enumerate(todo):
                work = Path(tmp) / f"{conversation['id']}-{n}"
                shutil.copytree(template, work)
                with Hindsight(work, HindsightConfig.from_dict(CONFIG), llm=llm, embedder=embedder) as hs:
                    result = hs.bank("bench").reflect(question, query_time=conversation["query_time"])
                entry = record(conversation["id"], question, result)
                answers.append(entry)
                show(entry)
                if args.json:
                    write_json(args.json, _result(header, answers))
    result = _result(header, answers)
    console.print({k: v for k, v in result["summary"].items() if k != "candidate_texts"})
    if args.json:
        write_json(args.json, result)


def _result(header: dict[str, Any], answers: list[dict[str, Any]]) -> dict[str, Any]:
    command = " ".join(["python", "bench/reflect_opinions.py", *sys.argv[1:]])
    return {"command": command, **header, "summary": summary(answers), "answers": answers}


if __name__ == "__main__":
    main()
