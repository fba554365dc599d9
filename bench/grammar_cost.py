"""What constrained decoding costs a local model: seconds per completion token of a reflect-sized prompt, decoded
under the reflect reply's grammar (with and without its length bounds), under plain JSON's, and free; and the
seconds it takes to read the prompt; the memory the loaded model holds (the process's resident memory after the
runs, before them).

    python bench/grammar_cost.py [--model qwen-0.5b] [--threads 2] [--max-tokens 200] [--json OUT]

The prompt is reflect's own (its rules and the sample conversation as numbered memories, about 1,500 tokens). Each
mode first prefills the prompt (a max_tokens=1 call), so the timed call, which shares that prefix in llama.cpp's
cache, is decoding alone. `reflect` decodes with the grammar of `ReflectOut` (three opinions at most),
`reflect_unbounded` with the same grammar without maxLength and maxItems, `json` with the grammar of any JSON
object, `free` with none; `max_tokens` caps each.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pydantic import BaseModel
from rich.console import Console
from rich.table import Table

from bench.recall_latency import rss_mb
from hindsight.demo import REFLECT_QUESTION
from hindsight.llm.base import ChatMessage, LLMResponse
from hindsight.llm.llamacpp_backend import LlamaCppLLM
from hindsight.llm.local_models import resolve_model_path
from hindsight.llm.schema import with_max_items
from hindsight.reflect.prompts import reflect_messages
from hindsight.reflect.schemas import ReflectOut
from hindsight.sample import load_sample

console = Console(stderr=True)
MEMORY_CHARS = 4000  # about 1,000 tokens of memories: what a 4,096-token local model reads in a reflect


def reflect_prompt() -> list[ChatMessage]:
    lines, size = [], 0
    for session in load_sample():
        for m in session.messages:
            line = f"[{len(lines) + 1}] {session.date:%Y-%m-%d} {m.speaker}: {m.content}"
            if size + len(line) > MEMORY_CHARS:
                break
            lines.append(line)
            size += len(line)
    return reflect_messages("I am Ava, Maya's assistant.", REFLECT_QUESTION, "\n".join(lines),
                            datetime(2024, 7, 10, tzinfo=timezone.utc), 3)


class _Unbounded(BaseModel):
    """The reflect reply's schema without its length bounds: what the bounds cost the grammar."""

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        text = json.dumps(with_max_items(ReflectOut, "opinions", 3).model_json_schema())
        return dict(json.loads(re.sub(r'"max(?:Length|Items)": ?\d+,?', "", text).replace(",}", "}")))


MODES = ("free", "json", "reflect", "reflect_unbounded")


def decode(llm: LlamaCppLLM, messages: list[ChatMessage], mode: str, max_tokens: int) -> tuple[LLMResponse, float]:
    def call(n: int) -> LLMResponse:
        if mode == "reflect":
            return llm.complete_json(messages, with_max_items(ReflectOut, "opinions", 3), max_tokens=n)
        if mode == "reflect_unbounded":
            return llm.complete_json(messages, _Unbounded, max_tokens=n)
        return llm.complete(messages, max_tokens=n, json_mode=mode == "json")

    call(1)  # prefill: the timed call below finds the prompt in the cache
    started = time.perf_counter()
    reply = call(max_tokens)
    return reply, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="qwen-0.5b", help="a local model name or a GGUF path")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=200)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    before = rss_mb()["rss"]
    llm = LlamaCppLLM(resolve_model_path(args.model), n_threads=args.threads)
    messages = reflect_prompt()
    llm.complete([ChatMessage("user", "Hi.")], max_tokens=1)  # loads the weights
    started = time.perf_counter()
    prompt_tokens = llm.complete(messages, max_tokens=1).usage.prompt_tokens
    prefill = {"prompt_tokens": prompt_tokens, "prefill_seconds": round(time.perf_counter() - started, 2)}
    console.print(prefill)
    rows = []
    for mode in MODES:
        reply, seconds = decode(llm, messages, mode, args.max_tokens)
        tokens = reply.usage.completion_tokens
        rows.append({"mode": mode, "prompt_tokens": reply.usage.prompt_tokens, "completion_tokens": tokens,
                     "seconds": round(seconds, 2), "ms_per_token": round(1000 * seconds / max(tokens, 1), 1)})
        console.log(rows[-1])
    table = Table("mode", "prompt tokens", "completion tokens", "seconds", "ms per token")
    for r in rows:
        table.add_row(r["mode"], str(r["prompt_tokens"]), str(r["completion_tokens"]), str(r["seconds"]),
                      str(r["ms_per_token"]))
    console.print(table)
    memory = {"rss_before_mb": round(before), "rss_after_mb": round(rss_mb()["rss"])}
    console.print(memory)
    if args.json:
        out = {"model": args.model, "threads": args.threads, "max_tokens": args.max_tokens,
               "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "load": os.getloadavg()},
               "prefill": prefill, "rows": rows, **memory}
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
