"""Local LLM speed: tokens per second of fact extraction, reflect and plain generation, per local model.

    python bench/llm_tokens_per_second.py [--model qwen-0.5b --model qwen-1.5b] [--threads 1] [--runs 3] [--json OUT]

For each model (installed with `hindsight models install NAME`), the in-process llamacpp backend is loaded, then:
- extraction: the `llm` extractor on each session of the shipped sample conversation (schema-constrained JSON); a
  session whose extraction fails after its retries is listed, and its tokens count;
- reflect: `bank.reflect` on --runs questions over a bank holding the sample (nlp extractor, so no LLM in retain),
  with the demo's profile: an answer plus the opinion extraction (schema-constrained JSON), as in real use;
- generation: a free-text answer of up to --max-tokens tokens, --runs times.
Reported per task: completion tokens per second of wall time (prompt processing included) and prompt tokens per
second. The prompt rate replays every prompt the task sent as a max_tokens=1 call, tagged so that llama.cpp's prompt
cache cannot skip it; the task itself runs as in real use, where calls sharing a prefix (the extraction system
prompt) reuse the cache. Each rate is also given per second of this process's CPU time ("_per_cpu_s"): on shared
cores the wall-time rates fall with the other load, which is recorded as the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console

from hindsight import ExtractionError, Hindsight, HindsightConfig
from hindsight.demo import QUERY_TIME, REFLECT_QUESTION, retain_sample
from hindsight.llm.base import ChatMessage, LLMResponse
from hindsight.llm.llamacpp_backend import LlamaCppLLM
from hindsight.llm.local_models import resolve_model_path
from hindsight.models import Document, LLMUsage, Turn
from hindsight.retain.llm_extractor import LLMExtractor
from hindsight.sample import load_sample

console = Console()

QUESTION = "Explain in a short paragraph why people keep a diary, and what they gain from rereading it."
REFLECT_QUESTIONS = (
    REFLECT_QUESTION,
    "Is Priya a good running coach for Maya?",
    "Should Maya use DuckDB for the forecasting pipeline?",
)


class RecordingLlamaCpp(LlamaCppLLM):
    """The llamacpp backend, keeping the messages of every call so that their prompts can be replayed."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.prompts: list[list[ChatMessage]] = []

    def _chat(self, messages: Sequence[ChatMessage], max_tokens: int | None, temperature: float | None,
              response_format: dict[str, Any] | None) -> LLMResponse:
        self.prompts.append(list(messages))
        return super()._chat(messages, max_tokens, temperature, response_format)

    def take_prompts(self) -> list[list[ChatMessage]]:
        prompts, self.prompts = self.prompts, []
        return prompts


def _documents() -> list[Document]:
    docs = []
    for s in load_sample():
        turns = [
            Turn(index=i, turn_id=f"{s.id}-{i}", speaker=m.speaker, role=m.role, text=m.content, timestamp=s.date)
            for i, m in enumerate(s.messages)
        ]
        docs.append(Document(document_id=s.id, turns=turns, timestamp=s.date))
    return docs


class Clock:
    """Wall and CPU seconds of the blocks timed with it, summed."""

    def __init__(self) -> None:
        self.wall = self.cpu = 0.0

    def __enter__(self) -> Clock:
        self._start = (time.perf_counter(), time.process_time())
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall += time.perf_counter() - self._start[0]
        self.cpu += time.process_time() - self._start[1]


def _per(tokens: int, seconds: float) -> float | None:
    return round(tokens / seconds, 2) if seconds else None


def _prompt_rates(llm: RecordingLlamaCpp, prompts: list[list[ChatMessage]], tag: str) -> dict[str, Any]:
    """Prompt tokens per second of max_tokens=1 calls on the prompts (the tag defeats the prompt cache)."""
    clock, tokens = Clock(), 0
    for i, messages in enumerate(prompts):
        first = ChatMessage(messages[0].role, f"[{tag}-{i}] {messages[0].content}")
        with clock:
            tokens += llm.complete([first, *messages[1:]], max_tokens=1).usage.prompt_tokens
    llm.take_prompts()  # the replays are not part of any task
    return {"prompt_tokens_per_s": _per(tokens, clock.wall), "prompt_tokens_per_cpu_s": _per(tokens, clock.cpu)}


def _rates(llm: RecordingLlamaCpp, usage: LLMUsage, clock: Clock, tag: str) -> dict[str, Any]:
    return {
        "calls": usage.calls,
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "seconds": round(clock.wall, 2),
        "cpu_seconds": round(clock.cpu, 2),
        "completion_tokens_per_s": _per(usage.completion_tokens, clock.wall),
        "completion_tokens_per_cpu_s": _per(usage.completion_tokens, clock.cpu),
    } | _prompt_rates(llm, llm.take_prompts(), tag)


def _extraction(llm: RecordingLlamaCpp) -> dict[str, Any]:
    extractor = LLMExtractor(llm, max_retries=2)
    facts, failed = 0, []
    with Clock() as clock:
        for doc in _documents():
            try:
                facts += len(extractor.extract(doc))
            except ExtractionError as exc:  # its tokens were spent all the same: they count in the rates
                failed.append(str(exc)[:300])
    return _rates(llm, extractor.usage, clock, "extract") | {"facts": facts, "documents": len(_documents()),
                                                              "failed_documents": failed}


def _reflect(llm: RecordingLlamaCpp, runs: int) -> dict[str, Any]:
    config = HindsightConfig.from_dict({"reflect": {"work": {"background": False}}})
    with tempfile.TemporaryDirectory(prefix="bench-reflect-") as tmp, Hindsight(tmp, config, llm=llm) as hs:
        bank = hs.bank("bench")
        retain_sample(bank)
        usage, clock, opinions, errors = LLMUsage(), Clock(), 0, []
        for question in (REFLECT_QUESTIONS * runs)[:runs]:
            with clock:
                result = bank.reflect(question, query_time=QUERY_TIME)
            usage = usage + LLMUsage(result.usage.prompt_tokens, result.usage.completion_tokens, result.usage.calls)
            opinions += len(result.opinions)
            errors += [result.opinion_error[:300]] if result.opinion_error else []
        return _rates(llm, usage, clock, "reflect") | {"questions": runs, "opinions": opinions,
                                                       "opinion_errors": errors}


def _generation(llm: RecordingLlamaCpp, runs: int, max_tokens: int) -> dict[str, Any]:
    usage, clock = LLMUsage(), Clock()
    for run in range(runs):
        messages = [ChatMessage("system", f"Run {run}. Answer plainly."), ChatMessage("user", QUESTION)]
        with clock:
            usage = usage + llm.complete(messages, max_tokens=max_tokens, temperature=0.7).usage
    return _rates(llm, usage, clock, "generate")


def bench_model(name: str, threads: int, runs: int, max_tokens: int) -> dict[str, Any]:
    path = resolve_model_path(name)
    llm = RecordingLlamaCpp(path, n_threads=threads, n_ctx=4096, max_tokens=1024)
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    llm.complete([ChatMessage("user", "Hi")], max_tokens=1)  # loads the weights
    load_s = time.perf_counter() - start
    llm.take_prompts()
    result: dict[str, Any] = {"model": name, "file": path.name, "threads": threads, "load_s": round(load_s, 2)}
    for task, run in (("extraction", lambda: _extraction(llm)), ("reflect", lambda: _reflect(llm, runs)),
                      ("generation", lambda: _generation(llm, runs, max_tokens))):
        result[task] = run()
        console.print(f"{name} {task}: {result[task]}")
    result["load_average_1min"] = {"start": round(load_before, 2), "end": round(os.getloadavg()[0], 2)}
    return result


def _cpu_model() -> str:
    try:
        lines = Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines()
    except OSError:
        return platform.processor()
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", action="append", help="local model name or GGUF path (repeatable)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--runs", type=int, default=3, help="reflect questions and generations per model")
    parser.add_argument("--max-tokens", type=int, default=200)
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    args = parser.parse_args()
    import llama_cpp

    results = {
        "machine": {
            "cpus": os.cpu_count(),
            "cpu_model": _cpu_model(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "llama_cpp_python": llama_cpp.__version__,
        },
        "command": " ".join(["python", "bench/llm_tokens_per_second.py", *sys.argv[1:]]),
        "models": [bench_model(m, args.threads, args.runs, args.max_tokens) for m in args.model or ["qwen-0.5b"]],
    }
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        console.print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
