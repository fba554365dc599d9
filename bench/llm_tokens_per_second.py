"""Local LLM speed: tokens per second of fact extraction and of plain generation, per local model.

    python bench/llm_tokens_per_second.py [--model qwen-0.5b --model qwen-1.5b] [--threads 1] [--runs 3] [--json OUT]

For each model (installed with `hindsight models install NAME`), the in-process llamacpp backend is loaded, then:
- extraction: the `llm` extractor on each session of the shipped sample conversation (schema-constrained JSON);
- generation: a free-text answer of up to --max-tokens tokens, --runs times.
Reported per task: completion tokens per second of wall time (prompt processing included) and prompt tokens
per second, measured by a separate max_tokens=1 call with the same prompt, tagged so that llama.cpp's prompt cache
cannot skip it. Extraction calls share their system prompt, which the cache reuses between calls, as in real use.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console

from hindsight.llm.base import ChatMessage, LLMUsage
from hindsight.llm.llamacpp_backend import LlamaCppLLM
from hindsight.llm.local_models import resolve_model_path
from hindsight.models import Document, Turn
from hindsight.retain.llm_extractor import LLMExtractor
from hindsight.retain.llm_prompts import extraction_messages
from hindsight.sample import load_sample

console = Console()

QUESTION = "Explain in a short paragraph why people keep a diary, and what they gain from rereading it."


def _documents() -> list[Document]:
    docs = []
    for s in load_sample():
        turns = [
            Turn(index=i, turn_id=f"{s.id}-{i}", speaker=m.speaker, role=m.role, text=m.content, timestamp=s.date)
            for i, m in enumerate(s.messages)
        ]
        docs.append(Document(document_id=s.id, turns=turns, timestamp=s.date))
    return docs


def _rates(usage: LLMUsage, seconds: float, prompt_seconds: float) -> dict[str, Any]:
    return {
        "calls": usage.calls,
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "seconds": round(seconds, 2),
        "completion_tokens_per_s": round(usage.completion_tokens / seconds, 2) if seconds else None,
        "prompt_tokens_per_s": round(usage.prompt_tokens / prompt_seconds, 1) if prompt_seconds else None,
    }


def _prompt_seconds(llm: LlamaCppLLM, messages: list[ChatMessage], tag: str) -> float:
    """Time of a max_tokens=1 call on the whole prompt (the tag defeats the prompt cache) plus one token."""
    first = ChatMessage(messages[0].role, f"[{tag}] {messages[0].content}")
    start = time.perf_counter()
    llm.complete([first, *messages[1:]], max_tokens=1)
    return time.perf_counter() - start


def bench_model(name: str, threads: int, runs: int, max_tokens: int) -> dict[str, Any]:
    path = resolve_model_path(name)
    llm = LlamaCppLLM(path, n_threads=threads, n_ctx=4096, max_tokens=1024)
    start = time.perf_counter()
    llm.complete([ChatMessage("user", "Hi")], max_tokens=1)  # loads the weights
    load_s = time.perf_counter() - start

    extractor = LLMExtractor(llm, max_retries=2)
    prompt_s = 0.0
    start = time.perf_counter()
    facts = 0
    for doc in _documents():
        facts += len(extractor.extract(doc))
    extract_s = time.perf_counter() - start
    for doc in _documents():
        prompt_s += _prompt_seconds(llm, extraction_messages(doc.turns, doc.context), f"p-{doc.document_id}")
    extraction = _rates(extractor.usage, extract_s, prompt_s) | {"facts": facts}
    console.print(f"{name} extraction: {extraction}")

    usage, gen_s, prompt_s = LLMUsage(), 0.0, 0.0
    for run in range(runs):
        messages = [ChatMessage("system", f"Run {run}. Answer plainly."), ChatMessage("user", QUESTION)]
        start = time.perf_counter()
        usage = usage + llm.complete(messages, max_tokens=max_tokens, temperature=0.7).usage
        gen_s += time.perf_counter() - start
        prompt_s += _prompt_seconds(llm, messages, f"g-{run}")
    generation = _rates(usage, gen_s, prompt_s)
    console.print(f"{name} generation: {generation}")
    return {
        "model": name,
        "file": path.name,
        "threads": threads,
        "load_s": round(load_s, 2),
        "extraction": extraction,
        "generation": generation,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", action="append", help="local model name or GGUF path (repeatable)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=200)
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    args = parser.parse_args()
    import llama_cpp

    results = {
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "llama_cpp_python": llama_cpp.__version__,
        },
        "models": [bench_model(m, args.threads, args.runs, args.max_tokens) for m in args.model or ["qwen-0.5b"]],
    }
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        console.print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
