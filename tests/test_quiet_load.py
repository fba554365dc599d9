"""A library is a guest: loading the embedding model writes nothing to the host's streams and leaves the host's
transformers progress-bar setting as it found it; loading the local LLM on the job thread neither prints nor points
the process's standard streams elsewhere, so the host's own output from any thread arrives whole."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = """
from transformers.utils import logging as hf_logging
from hindsight.config import EmbedderConfig
from hindsight.embed.sentence_transformers import SentenceTransformerEmbedder
SentenceTransformerEmbedder(EmbedderConfig(freeze_gc=False))
assert hf_logging.is_progress_bar_enabled()
hf_logging.disable_progress_bar()
SentenceTransformerEmbedder(EmbedderConfig(freeze_gc=False))
assert not hf_logging.is_progress_bar_enabled()
"""


def test_loading_the_embedder_is_silent_and_restores_the_hosts_setting() -> None:
    run = subprocess.run([sys.executable, "-c", SCRIPT], env={**os.environ, "HF_HUB_OFFLINE": "1"},
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout == "" and "Loading weights" not in run.stderr, run.stderr[-2000:]


# The host prints numbered lines from its main thread while the engine's job thread loads the local model for the
# background reasoning a retain queued; every line must arrive, and llama.cpp's own output goes to `logging`.
HOST_SCRIPT = """
import logging, sys, time
from hindsight import Hindsight, HindsightConfig

memdir, model, log_path = sys.argv[1:4]
logging.basicConfig(filename=log_path, level=logging.DEBUG)
config = HindsightConfig.from_dict({
    "llm": {"backend": "llamacpp", "model": model, "max_retries": 0},
    "reflect": {"reinforce": {"enabled": False},
                "observations": {"min_facts": 1, "debounce_seconds": 0, "max_tokens": 24}},
})
hs = Hindsight(memdir, config)
local = hs.llm.inner
hs.bank("b").retain("Alice met Bob at the lake in Oslo.", timestamp="2024-05-01")
n = during_load = 0
loaded_at = None
started = time.monotonic()
while time.monotonic() - started < 120 and (loaded_at is None or n < loaded_at + 20):
    loading = local._llama is None and local._lock.locked()
    print(f"out {n}", flush=True)
    print(f"err {n}", file=sys.stderr, flush=True)
    n += 1
    during_load += loading
    if loaded_at is None and local._llama is not None:
        loaded_at = n
    time.sleep(0.002)
hs.close()
print(f"printed {n} during_load {during_load} loaded {loaded_at is not None}", flush=True)
"""


@pytest.mark.slow
def test_the_host_loses_no_line_while_the_job_thread_loads_the_local_model(tmp_path: Path, qwen_small: Path) -> None:
    log_path = tmp_path / "host.log"
    run = subprocess.run([sys.executable, "-c", HOST_SCRIPT, str(tmp_path / "mem"), str(qwen_small), str(log_path)],
                         env={**os.environ, "HF_HUB_OFFLINE": "1"}, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    *lines, summary = run.stdout.splitlines()
    printed, during_load, loaded = summary.split()[1::2]
    assert loaded == "True" and int(during_load) > 0, summary  # the host printed while the model loaded
    assert lines == [f"out {i}" for i in range(int(printed))]
    assert run.stderr.splitlines() == [f"err {i}" for i in range(int(printed))]
    log = log_path.read_text()
    assert "llama_model_loader" in log and "loaded" in log  # llama.cpp's own messages went through logging


def test_no_module_redirects_the_process_streams() -> None:
    """The one place that touches llama-cpp-python's redirect turns it off; nothing else points the streams away."""
    redirecting = re.compile(r"\bdup2\(|redirect_std(out|err)\(|\bsys\.(stdout|stderr)\s*=[^=]")
    found = [f"{path.relative_to(ROOT)}:{n}" for path in sorted((ROOT / "hindsight").rglob("*.py"))
             for n, line in enumerate(path.read_text().splitlines(), 1) if redirecting.search(line)]
    assert found == []


def test_llama_cpp_messages_become_whole_log_records_a_level_lower(caplog: pytest.LogCaptureFixture) -> None:
    from hindsight.llm.llamacpp_quiet import _lines as lines
    from hindsight.llm.llamacpp_quiet import native_log

    with caplog.at_level(logging.DEBUG, logger=native_log.name):
        lines.add(2, b"load_tensors: loading")
        lines.add(5, b"....")
        lines.add(5, b" done\n")
        lines.add(3, b"load: a quirk of the model file\n")
        lines.add(4, b"llama_model_load: error loading model\n")
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.DEBUG, "load_tensors: loading.... done"),
        (logging.INFO, "load: a quirk of the model file"),
        (logging.ERROR, "llama_model_load: error loading model"),
    ]
