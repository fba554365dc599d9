"""The engine as a guest in the host's process: what a retain starts when a local model is merely installed, what
`bank.pending()` costs, and what the host's own output becomes while the local model loads.

    python bench/background_guest.py [--model qwen-0.5b] [--queued 100000] [--wait 5] [--json OUT]

- consent: the shipped sample conversation retained (one retain per session) with the default config while a model is
  installed and no HINDSIGHT_LLM_* variable is set; then, --wait seconds later (past the debounce): the items
  queued, the LLM calls made, job threads started, and whether the model was loaded.
- pending: `bank.pending()` on a bank with --queued items queued: median and slowest of 200 calls.
- streams: a child process prints a numbered line to stdout every millisecond from its main thread while another
  thread loads MODEL; once through llama-cpp-python's own `Llama(..., verbose=False)`, once through hindsight's
  llamacpp backend. Lines printed during the load, lines that arrived, characters the child wrote to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import machine
from hindsight import Hindsight, HindsightConfig
from hindsight.demo import retain_sample
from hindsight.llm.local_models import resolve_model_path
from hindsight.store.base import PendingItem

ROOT = Path(__file__).resolve().parents[1]
LLM_VARIABLES = ("HINDSIGHT_LLM_BACKEND", "HINDSIGHT_LLM_BASE_URL", "HINDSIGHT_LLM_MODEL", "HINDSIGHT_LLM_API_KEY")

CHILD = """
import sys, threading, time
mode, path, out = sys.argv[1:4]
if mode == "llama-cpp-python":
    from llama_cpp import Llama
    def load():
        Llama(model_path=path, n_ctx=2048, n_threads=1, verbose=False)
else:
    from hindsight.llm.llamacpp_backend import LlamaCppLLM
    load = LlamaCppLLM(path, n_ctx=2048)._load
done = threading.Event()
thread = threading.Thread(target=lambda: (load(), done.set()))
started = time.monotonic()
thread.start()
printed = 0
while not done.is_set():
    print(f"line {printed}", flush=True)
    printed += 1
    time.sleep(0.001)
thread.join()
with open(out, "w") as fh:
    fh.write(f"{printed} {time.monotonic() - started:.2f}")
"""


def consent(wait_s: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="hindsight-guest-") as tmp, Hindsight(tmp, HindsightConfig()) as hs:
        bank = hs.bank("demo")
        retain_sample(bank)
        time.sleep(wait_s)
        inner = getattr(hs.llm, "inner", None)
        return {
            "llm": repr(inner), "background_reasoning": hs.background_reasoning, "queued": bank.pending(),
            "llm_calls": sum(u.calls for u in hs.llm_usage.by_bank().values()),
            "job_threads": sum(t.name == "hindsight-jobs" for t in threading.enumerate()),
            "model_loaded": getattr(inner, "_llama", None) is not None,
        }


def pending_cost(queued: int) -> dict[str, Any]:
    config = HindsightConfig.from_dict({"llm": {"backend": "none"}})
    with tempfile.TemporaryDirectory(prefix="hindsight-pending-") as tmp, Hindsight(tmp, config) as hs:
        bank = hs.bank("b")
        half = queued // 2
        hs.store.add_pending("b", [PendingItem("reinforce", f"u{i}") for i in range(half)]
                             + [PendingItem("observe", f"e{i}") for i in range(queued - half)])
        times = []
        for _ in range(200):
            began = time.perf_counter()
            count = bank.pending()
            times.append(time.perf_counter() - began)
        return {"queued": count, "median_ms": round(statistics.median(times) * 1000, 3),
                "max_ms": round(max(times) * 1000, 3)}


def streams(model_path: Path, mode: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="hindsight-streams-") as tmp:
        out = Path(tmp) / "result"
        run = subprocess.run([sys.executable, "-c", CHILD, mode, str(model_path), str(out)], cwd=ROOT,
                             capture_output=True, text=True, timeout=600)
        if run.returncode != 0:
            raise RuntimeError(f"{mode}: {run.stderr[-2000:]}")
        printed, seconds = out.read_text().split()
    arrived = {line for line in run.stdout.splitlines() if line.startswith("line ")}
    lines = {f"line {i}" for i in range(int(printed))}
    return {"load_s": float(seconds), "printed": len(lines), "arrived": len(lines & arrived),
            "lost": len(lines - arrived), "stderr_chars": len(run.stderr)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="qwen-0.5b")
    parser.add_argument("--queued", type=int, default=100_000)
    parser.add_argument("--wait", type=float, default=5.0, help="seconds after the last retain")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    for name in LLM_VARIABLES:  # the default config and nothing else: `auto` finds the installed model
        os.environ.pop(name, None)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    result: dict[str, Any] = {"machine": machine(), "commit": commit.stdout.strip(), "model": args.model,
                              "load_average": os.getloadavg()}
    result["consent"] = consent(args.wait)
    print("consent", json.dumps(result["consent"]), flush=True)
    result["pending"] = pending_cost(args.queued)
    print("pending", json.dumps(result["pending"]), flush=True)
    path = resolve_model_path(args.model)
    result["streams"] = {mode: streams(path, mode) for mode in ("llama-cpp-python", "hindsight")}
    print("streams", json.dumps(result["streams"]), flush=True)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
