"""Choose and build the configured LLM backend, from config and environment variables."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from hindsight.config import HindsightConfig, LLMConfig
from hindsight.errors import ConfigError, LLMNotConfiguredError
from hindsight.llm.base import LLM
from hindsight.llm.local_models import KNOWN_MODELS, installed_model, resolve_model_path

logger = logging.getLogger(__name__)

ENV_BACKEND = "HINDSIGHT_LLM_BACKEND"
ENV_BASE_URL = "HINDSIGHT_LLM_BASE_URL"
ENV_API_KEY = "HINDSIGHT_LLM_API_KEY"
ENV_MODEL = "HINDSIGHT_LLM_MODEL"
# auto picks the most capable installed local model.
LOCAL_PREFERENCE = ("qwen-1.5b", "qwen-0.5b")

HOW_TO_GET_AN_LLM = (
    "install a local model with `hindsight models install qwen-1.5b` (or qwen-0.5b), or point llm.base_url "
    f"(or {ENV_BASE_URL}) at an OpenAI-compatible endpoint"
)

Backend = Literal["none", "openai", "llamacpp"]


@dataclass(frozen=True)
class LLMSettings:
    """The backend chosen and the values it runs with, after environment variables and auto-detection."""

    backend: Backend
    base_url: str | None
    api_key: str | None
    model: str | None
    reason: str
    # The user named this LLM (config or HINDSIGHT_LLM_* variables); False when `auto` found an installed model.
    configured: bool = True


def llm_required(purpose: str) -> LLMNotConfiguredError:
    """The error for an operation that needs an LLM when none is configured; it says how to get one."""
    return LLMNotConfiguredError(f"{purpose} needs an LLM, and none is configured: {HOW_TO_GET_AN_LLM}")


def _is_local(model: str) -> bool:
    return model in KNOWN_MODELS or model.lower().endswith(".gguf")


def resolve_settings(
    config: LLMConfig, environ: Mapping[str, str] | None = None, cache_dir: Path | None = None
) -> LLMSettings:
    """Fill unset fields from the environment and resolve `auto` to a concrete backend (or none)."""
    env = os.environ if environ is None else environ
    base_url = config.base_url or env.get(ENV_BASE_URL) or None
    api_key = config.api_key or env.get(ENV_API_KEY) or env.get("OPENAI_API_KEY") or None
    model = config.model or env.get(ENV_MODEL) or None
    backend: str = config.backend
    if backend == "auto" and env.get(ENV_BACKEND):
        backend = env[ENV_BACKEND]
        if backend not in ("auto", "none", "openai", "llamacpp"):
            raise ConfigError(f"{ENV_BACKEND}={backend!r}: expected auto, none, openai or llamacpp")
    if backend in ("none", "openai", "llamacpp"):
        return LLMSettings(backend, base_url, api_key, model, f"llm.backend is {backend}")  # type: ignore[arg-type]
    if base_url:
        return LLMSettings("openai", base_url, api_key, model, f"an endpoint is configured ({base_url})")
    if model and _is_local(model):
        return LLMSettings("llamacpp", None, None, model, f"llm.model {model} is a local model")
    if model and api_key:
        return LLMSettings("openai", None, api_key, model, f"llm.model {model} with an API key")
    for name in LOCAL_PREFERENCE:
        if installed_model(name, cache_dir) is not None:
            return LLMSettings("llamacpp", None, None, name, f"local model {name} is installed", configured=False)
    return LLMSettings("none", None, None, None, "no endpoint, API key with model, or local model found",
                       configured=False)


def make_llm(
    config: HindsightConfig | LLMConfig, environ: Mapping[str, str] | None = None, cache_dir: Path | None = None
) -> LLM | None:
    """The configured LLM, or None when there is none. Cheap: a local model loads on its first call.

    Raises LLMNotConfiguredError when a backend is chosen explicitly but cannot run (no model, no key).
    """
    cfg = config.llm if isinstance(config, HindsightConfig) else config
    return build_llm(resolve_settings(cfg, environ, cache_dir), cfg, cache_dir)


def build_llm(settings: LLMSettings, cfg: LLMConfig, cache_dir: Path | None = None) -> LLM | None:
    """The LLM of resolved settings, or None for backend none; see make_llm."""
    logger.info("llm backend %s: %s", settings.backend, settings.reason)
    if settings.backend == "none":
        return None
    if settings.backend == "llamacpp":
        from hindsight.llm.llamacpp_backend import LlamaCppLLM

        name = settings.model or next((n for n in LOCAL_PREFERENCE if installed_model(n, cache_dir)), None)
        if name is None:
            raise llm_required("llm.backend llamacpp")
        return LlamaCppLLM(
            resolve_model_path(name, cache_dir),
            n_threads=cfg.n_threads,
            n_ctx=cfg.n_ctx,
            seed=cfg.seed,
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
        )
    from hindsight.llm.openai_backend import OpenAICompatibleLLM, RetryPolicy

    if settings.base_url is None and settings.api_key is None:
        raise LLMNotConfiguredError(
            f"llm.backend openai needs llm.base_url ({ENV_BASE_URL}) for a local server, or an API key "
            f"({ENV_API_KEY} or OPENAI_API_KEY) for OpenAI"
        )
    policy = RetryPolicy(
        timeout_s=cfg.timeout_s, retries=cfg.request_retries, backoff_s=cfg.backoff_s, backoff_max_s=cfg.backoff_max_s
    )
    return OpenAICompatibleLLM(
        base_url=settings.base_url,
        api_key=settings.api_key,
        model=settings.model,
        structured_mode=cfg.structured_mode,
        policy=policy,
        temperature=cfg.temperature,
        max_tokens=cfg.max_tokens,
    )
