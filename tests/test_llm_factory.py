"""Choosing the LLM backend from config and environment, the not-configured error, per-bank usage counters."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hindsight import Hindsight, HindsightConfig
from hindsight.config import LLMConfig
from hindsight.embed.base import Embedder
from hindsight.errors import ConfigError, LLMNotConfiguredError
from hindsight.llm.base import ChatMessage
from hindsight.llm.factory import llm_required, make_llm, resolve_settings
from hindsight.llm.llamacpp_backend import LlamaCppLLM
from hindsight.llm.openai_backend import OpenAICompatibleLLM
from hindsight.llm.usage import MeteredLLM, UsageCounters, bank_scope
from hindsight.models import LLMUsage, Message
from tests.fake_llm import FakeScriptedLLM


def _install_marker(cache: Path, name: str = "qwen-0.5b") -> Path:
    """A stand-in cached model file with a valid verification marker (the factory never loads it)."""
    from hindsight.llm.local_models import KNOWN_MODELS

    model = KNOWN_MODELS[name]
    path = cache / model.filename
    cache.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"GGUF")
    path.with_name(path.name + ".verified.json").write_text(f'{{"sha256": "{model.sha256}", "size": 4}}')
    return path


def test_environment_fills_unset_fields() -> None:
    env = {"HINDSIGHT_LLM_BASE_URL": "http://h:1/v1", "HINDSIGHT_LLM_MODEL": "m", "OPENAI_API_KEY": "sk-1"}
    s = resolve_settings(LLMConfig(), env)
    assert (s.backend, s.base_url, s.model, s.api_key) == ("openai", "http://h:1/v1", "m", "sk-1")
    s = resolve_settings(LLMConfig(api_key="cfg", model="cfg-m"), {**env, "HINDSIGHT_LLM_API_KEY": "hk"})
    assert (s.api_key, s.model) == ("cfg", "cfg-m")  # config wins over the environment
    keys = {"HINDSIGHT_LLM_API_KEY": "hk", "OPENAI_API_KEY": "ok"}
    assert resolve_settings(LLMConfig(backend="openai"), keys).api_key == "hk"


@pytest.mark.parametrize(
    ("config", "env", "backend"),
    [
        (LLMConfig(), {}, "none"),
        (LLMConfig(), {"OPENAI_API_KEY": "sk"}, "none"),  # a key alone never sends data to a hosted API
        (LLMConfig(), {"OPENAI_API_KEY": "sk", "HINDSIGHT_LLM_MODEL": "gpt-4o-mini"}, "openai"),
        (LLMConfig(model="qwen-1.5b"), {}, "llamacpp"),
        (LLMConfig(model="/models/x.gguf"), {}, "llamacpp"),
        (LLMConfig(), {"HINDSIGHT_LLM_BACKEND": "none", "HINDSIGHT_LLM_BASE_URL": "http://h/v1"}, "none"),
        (LLMConfig(backend="openai"), {"HINDSIGHT_LLM_BACKEND": "none"}, "openai"),
    ],
)
def test_auto_detection(config: LLMConfig, env: dict[str, str], backend: str, tmp_path: Path) -> None:
    assert resolve_settings(config, env, cache_dir=tmp_path).backend == backend


def test_auto_uses_an_installed_local_model(tmp_path: Path) -> None:
    path = _install_marker(tmp_path)
    s = resolve_settings(LLMConfig(), {}, cache_dir=tmp_path)
    assert (s.backend, s.model) == ("llamacpp", "qwen-0.5b")
    llm = make_llm(LLMConfig(n_threads=2), {}, cache_dir=tmp_path)
    assert isinstance(llm, LlamaCppLLM) and llm.model_path == path and llm.n_threads == 2


def test_a_local_model_uses_every_core_the_process_may_use_unless_told(tmp_path: Path) -> None:
    _install_marker(tmp_path)
    llm = make_llm(LLMConfig(), {}, cache_dir=tmp_path)
    assert isinstance(llm, LlamaCppLLM) and llm.n_threads == len(os.sched_getaffinity(0))
    assert make_llm(LLMConfig(n_threads=1), {}, cache_dir=tmp_path).n_threads == 1  # type: ignore[union-attr]


def test_bad_backend_in_environment_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="HINDSIGHT_LLM_BACKEND"):
        resolve_settings(LLMConfig(), {"HINDSIGHT_LLM_BACKEND": "gpt"})


def test_make_llm_builds_the_openai_backend_from_config() -> None:
    cfg = HindsightConfig.from_dict(
        {
            "llm": {
                "backend": "openai",
                "base_url": "http://127.0.0.1:9/v1",
                "model": "m",
                "timeout_s": 5,
                "request_retries": 1,
                "structured_mode": "json",
            }
        }
    )
    llm = make_llm(cfg, {})
    assert isinstance(llm, OpenAICompatibleLLM)
    assert (llm.base_url, llm.model, llm.mode, llm.policy.timeout_s, llm.policy.retries) == (
        "http://127.0.0.1:9/v1",
        "m",
        "json",
        5,
        1,
    )


def test_explicit_backends_that_cannot_run_say_how_to_fix_it(tmp_path: Path) -> None:
    with pytest.raises(LLMNotConfiguredError, match=r"hindsight models install qwen-1\.5b"):
        make_llm(LLMConfig(backend="llamacpp"), {}, cache_dir=tmp_path)
    with pytest.raises(LLMNotConfiguredError, match=r"`hindsight models install qwen-1\.5b`"):
        make_llm(LLMConfig(backend="llamacpp", model="qwen-1.5b"), {}, cache_dir=tmp_path)
    with pytest.raises(LLMNotConfiguredError, match="base_url"):
        make_llm(LLMConfig(backend="openai"), {})
    assert make_llm(LLMConfig(backend="none"), {"HINDSIGHT_LLM_BASE_URL": "http://h/v1"}) is None


def test_engine_without_an_llm_retains_and_recalls(tmp_path: Path, minilm: Embedder) -> None:
    config = HindsightConfig.from_dict({"llm": {"backend": "none"}})
    with Hindsight(tmp_path / "m", config, embedder=minilm) as hs:
        assert hs.llm is None
        bank = hs.bank("b")
        bank.retain([Message(speaker="Ana", content="I adopted a cat named Miso.", timestamp="2024-01-02")])
        assert "Miso" in bank.recall("cat").hits[0].unit.text
        with pytest.raises(LLMNotConfiguredError, match=r"reflect needs an LLM.*hindsight models install qwen-1.5b"):
            hs.require_llm("reflect")
        assert bank.llm_usage() == LLMUsage()


def test_llm_required_names_both_ways_to_get_one() -> None:
    message = str(llm_required("observations"))
    assert "hindsight models install" in message and "HINDSIGHT_LLM_BASE_URL" in message


def test_metered_llm_counts_per_bank() -> None:
    counters = UsageCounters()
    fake = FakeScriptedLLM(["one", "two", '{"facts": []}'])
    llm = MeteredLLM(fake, counters)
    with bank_scope("a"):
        llm.complete([ChatMessage("user", "x" * 40)])
    with bank_scope("b"):
        llm.complete([ChatMessage("user", "y")])
    llm.complete([ChatMessage("user", "z")])
    assert counters.bank("a").calls == 1 and counters.bank("a").prompt_tokens == 11
    assert counters.bank("b").calls == 1 and counters.bank("").calls == 1
    assert counters.total.calls == 3 and counters.total == fake.total_usage
    assert llm.remaining == 0 and llm.name == "fake-scripted"  # the inner LLM's attributes read through


def test_engine_counts_llm_extraction_for_the_bank(tmp_path: Path, minilm: Embedder) -> None:
    reply = '{"facts": [{"what": "Ana adopted a cat named Miso.", "fact_type": "world", "entities": ["Ana"]}]}'
    fake = FakeScriptedLLM([reply])
    config = HindsightConfig.from_dict({"retain": {"extract": {"backend": "llm"}}})
    with Hindsight(tmp_path / "m", config, llm=fake, embedder=minilm) as hs:
        hs.bank("a").retain([Message(speaker="Ana", content="I adopted a cat named Miso.", timestamp="2024-01-02")])
        assert hs.bank("a").llm_usage() == fake.total_usage and fake.total_usage.calls == 1
        assert hs.bank("b").llm_usage().calls == 0 and hs.llm_usage.total == fake.total_usage


def test_llm_presets_load_and_choose_their_backend() -> None:
    endpoint = HindsightConfig.from_yaml("preset:llm-endpoint")
    assert resolve_settings(endpoint.llm, {}).backend == "openai" and endpoint.retain.extract.backend == "llm"
    local = HindsightConfig.from_yaml("preset:llm-local")
    assert (resolve_settings(local.llm, {}).backend, local.llm.model) == ("llamacpp", "qwen-1.5b")
