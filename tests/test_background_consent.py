"""Background reasoning runs only with consent, `pending()` is a count that waits for nothing, and
`process_pending()` reports its progress.

An installed local model is found by `llm.backend: auto` and used when asked (reflect, process_pending); it never
starts LLM work on the job thread by itself. The LLM here is a stand-in model file (never loaded) or a scripted
fake named as such: these pin the flow, not model quality.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from hindsight import Hindsight, HindsightConfig, PendingProgress
from hindsight.cli import main
from hindsight.embed.base import Embedder
from hindsight.llm.base import ChatMessage
from hindsight.llm.llamacpp_backend import LlamaCppLLM
from hindsight.models import Network
from tests.fake_llm import FakeScriptedLLM
from tests.http_stub import completion, stub_server
from tests.test_background_work import OBSERVED, HookedLLM, _retain_two_people
from tests.test_llm_factory import _install_marker

FAST = {"observations": {"debounce_seconds": 0}}


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """qwen-0.5b "installed" in a fresh model cache (a stand-in file: loading it would fail), and no LLM
    configured in the environment."""
    for name in ("HINDSIGHT_LLM_BACKEND", "HINDSIGHT_LLM_BASE_URL", "HINDSIGHT_LLM_MODEL", "HINDSIGHT_LLM_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    cache = tmp_path / "models"
    monkeypatch.setenv("HINDSIGHT_MODELS_DIR", str(cache))
    return _install_marker(cache)


def _job_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "hindsight-jobs"]


@pytest.mark.usefixtures("installed")
def test_an_installed_model_alone_runs_nothing_after_retain(memdir: Path, minilm: Embedder) -> None:
    before = _job_threads()
    with Hindsight(memdir, HindsightConfig.from_dict({"reflect": FAST}), embedder=minilm) as hs:
        assert isinstance(hs.llm.inner, LlamaCppLLM) and not hs.background_reasoning  # type: ignore[union-attr]
        _retain_two_people(hs)
        time.sleep(0.3)  # a background run, if one had been started, would be under way by now
        assert _job_threads() == before and hs.llm.inner._llama is None  # type: ignore[union-attr]
        assert hs.bank("b").pending() >= 2  # recorded for a later process_pending()
        assert hs.llm_usage.by_bank() == {}


@pytest.mark.usefixtures("installed")
@pytest.mark.parametrize(
    ("config", "env", "background"),
    [
        ({}, {}, False),  # found installed: not consent
        ({"reflect": {"work": {"background": True}}}, {}, True),
        ({"llm": {"backend": "llamacpp"}}, {}, True),
        ({"llm": {"model": "qwen-0.5b"}}, {}, True),
        ({}, {"HINDSIGHT_LLM_MODEL": "qwen-0.5b"}, True),
        ({}, {"HINDSIGHT_LLM_BACKEND": "llamacpp"}, True),
        ({"llm": {"base_url": "http://127.0.0.1:9/v1"}}, {}, True),
        ({"llm": {"backend": "llamacpp"}, "reflect": {"work": {"background": False}}}, {}, False),
        ({"llm": {"backend": "none"}, "reflect": {"work": {"background": True}}}, {}, False),  # no LLM
        ({"llm": {"backend": "llamacpp"}, "reflect": {"reinforce": {"enabled": False},
                                                      "observations": {"enabled": False}}}, {}, False),
    ],
)
def test_background_reasoning_needs_the_config_to_ask_for_it(
    memdir: Path, minilm: Embedder, monkeypatch: pytest.MonkeyPatch, config: dict[str, Any], env: dict[str, str],
    background: bool,
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with Hindsight(memdir, HindsightConfig.from_dict(config), embedder=minilm) as hs:
        assert hs.background_reasoning is background
        assert bool(hs.jobs.hooks) is background


def test_an_llm_passed_in_is_configured_and_its_work_runs_after_retain(memdir: Path, minilm: Embedder) -> None:
    fake = FakeScriptedLLM([OBSERVED] * 4)
    with Hindsight(memdir, HindsightConfig.from_dict({"reflect": FAST}), llm=fake, embedder=minilm) as hs:
        assert hs.background_reasoning
        _retain_two_people(hs)
        hs.drain()
        assert hs.bank("b").pending() == 0 and len(hs.bank("b").units(Network.OBSERVATION)) >= 2


def test_pending_is_a_count_that_waits_for_no_llm_call(memdir: Path, minilm: Embedder) -> None:
    started, release = threading.Event(), threading.Event()
    calls: list[int] = []

    def block(messages: Sequence[ChatMessage]) -> None:
        calls.append(1)
        started.set()
        assert release.wait(60), "the test never released the LLM"

    llm = HookedLLM([OBSERVED] * 4, block)
    releaser = threading.Timer(20, release.set)  # a pending() that waits would wait this long, not forever
    releaser.start()
    try:
        with Hindsight(memdir, HindsightConfig.from_dict({"reflect": FAST}), llm=llm, embedder=minilm) as hs:
            _retain_two_people(hs)
            assert started.wait(60)  # the job thread is inside its first LLM call
            began = time.monotonic()
            count = hs.bank("b").pending()
            took = time.monotonic() - began
            assert took < 2 and not release.is_set(), f"pending() took {took:.1f}s"
            assert count == hs.store.pending_count("b") >= 2 and len(calls) == 1
            release.set()
    finally:
        releaser.cancel()


def test_process_pending_reports_progress_up_to_the_total(memdir: Path, minilm: Embedder) -> None:
    fake = FakeScriptedLLM([OBSERVED] * 4)
    config = HindsightConfig.from_dict({"reflect": {"work": {"background": False}}})
    with Hindsight(memdir, config, llm=fake, embedder=minilm) as hs:
        _retain_two_people(hs)
        bank = hs.bank("b")
        queued = bank.pending()
        seen: list[PendingProgress] = []
        report = bank.process_pending(progress=seen.append)
        assert not report.interrupted and bank.pending() == 0
        assert seen[0] == PendingProgress(done=0, total=queued) and seen[-1] == PendingProgress(done=queued,
                                                                                               total=queued)
        assert [p.done for p in seen] == sorted(p.done for p in seen) and all(p.total == queued for p in seen)


@pytest.mark.usefixtures("minilm")
def test_cli_counts_the_queue_and_works_it_off_with_progress(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = str(tmp_path / "mem")
    assert main(["--dir", d, "retain", "b", "--text", "Alice met Bob at the lake."]) == 0
    assert main(["--dir", d, "process-pending", "b"]) == 2  # the conftest's environment configures no LLM
    assert "process-pending needs an LLM" in " ".join(capsys.readouterr().out.split())
    with stub_server(lambda body: completion(OBSERVED)) as (url, stub):
        config = tmp_path / "endpoint.yaml"
        config.write_text(f"llm: {{backend: openai, base_url: '{url}', model: stub}}\n"
                          "reflect: {work: {background: false}}\n")
        cli = ["--dir", d, "--config", str(config)]
        assert main([*cli, "retain", "b", "--text", "Bob called Alice about dinner."]) == 0
        assert main([*cli, "pending", "b"]) == 0
        queued = int(capsys.readouterr().out.split("\n")[-2].split()[0])
        assert queued >= 2 and stub.requests == []  # counting calls no LLM
        assert main([*cli, "process-pending", "b"]) == 0
        out = " ".join(capsys.readouterr().out.split())
        assert f"{queued}/{queued}" in out and "0 failures" in out and "0 items left" in out, out
        assert "entities observed" in out and len(stub.requests) >= 2
