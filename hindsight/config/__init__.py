"""One configuration object, nested by stage, loadable from YAML or from a named preset (docs/configuration.md)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import Field, ValidationError, model_validator

from hindsight.config.context import ContextConfig
from hindsight.config.moved import moved_keys
from hindsight.config.recall import (
    ALL_CHANNELS,
    ChannelName,
    FusionConfig,
    GraphConfig,
    GraphMu,
    PackConfig,
    RecallConfig,
    RerankConfig,
    UpdatesConfig,
)
from hindsight.config.reflect import (
    AnswerConfig,
    ObservationsConfig,
    OpinionsConfig,
    ProfileConfig,
    ReflectConfig,
    ReinforceConfig,
    WorkConfig,
)
from hindsight.config.retain import EntityConfig, ExtractConfig, LinkConfig, RetainConfig
from hindsight.config.server import ApiKey, McpConfig, ServerConfig
from hindsight.config.services import (
    MAX_EMBED_TOKENS,
    MIN_EMBED_TOKENS,
    EmbedderConfig,
    HnswConfig,
    LimitsConfig,
    LLMConfig,
    Section,
    SqliteConfig,
    StoreConfig,
)
from hindsight.errors import ConfigError

PRESET_PREFIX = "preset:"

__all__ = [
    "ALL_CHANNELS", "MAX_EMBED_TOKENS", "MIN_EMBED_TOKENS", "PRESET_PREFIX", "AnswerConfig", "ApiKey", "ChannelName",
    "ContextConfig",
    "EmbedderConfig", "EntityConfig", "ExtractConfig", "FusionConfig", "GraphConfig", "GraphMu", "HindsightConfig",
    "HnswConfig", "LLMConfig", "LimitsConfig", "LinkConfig", "McpConfig", "ObservationsConfig", "OpinionsConfig",
    "PackConfig", "ProfileConfig", "RecallConfig", "ReflectConfig", "ReinforceConfig", "RerankConfig", "RetainConfig",
    "ServerConfig", "SqliteConfig", "StoreConfig", "UpdatesConfig", "WorkConfig", "config_data", "merged", "presets",
]


class HindsightConfig(Section):
    """Everything configurable, by stage; every key is optional."""

    embedder: EmbedderConfig = Field(default_factory=EmbedderConfig)
    llm: LLMConfig = Field(default_factory=LLMConfig)
    store: StoreConfig = Field(default_factory=StoreConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    retain: RetainConfig = Field(default_factory=RetainConfig)
    recall: RecallConfig = Field(default_factory=RecallConfig)
    reflect: ReflectConfig = Field(default_factory=ReflectConfig)
    context: ContextConfig = Field(default_factory=ContextConfig)
    server: ServerConfig = Field(default_factory=ServerConfig)

    @model_validator(mode="before")
    @classmethod
    def _no_old_keys(cls, data: Any) -> Any:
        # model_validate and the constructor get the same hint as from_dict, inside their ValidationError.
        if isinstance(data, Mapping) and (moved := moved_keys(data)):
            raise ValueError("configuration keys of an earlier version: " + "; ".join(moved))
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HindsightConfig:
        """Validate a config mapping; old keys and invalid values are a ConfigError that names them."""
        moved = moved_keys(data)
        if moved:
            raise ConfigError("configuration keys of an earlier version: " + "; ".join(moved))
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(f"invalid configuration: {exc}") from exc

    @classmethod
    def from_yaml(cls, path: str | os.PathLike[str]) -> HindsightConfig:
        """Load a YAML file, or a named preset as "preset:NAME"; missing keys take their defaults."""
        return cls.from_dict(config_data(path))

    def updated(self, data: Mapping[str, Any]) -> HindsightConfig:
        """A copy with `data` (sections, as in YAML) merged in, key by key at every depth."""
        return HindsightConfig.from_dict(merged(self.model_dump(mode="json"), data))

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.model_dump(mode="json"), sort_keys=False)


def merged(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """`base` with `over` merged in: mappings key by key, any other value replaced."""
    out = dict(base)
    for key, value in over.items():
        old = out.get(key)
        out[key] = merged(old, value) if isinstance(old, Mapping) and isinstance(value, Mapping) else value
    return out


def presets() -> list[str]:
    """The names of the presets shipped with the package."""
    folder = resources.files("hindsight.config") / "presets"
    return sorted(p.name.removesuffix(".yaml") for p in folder.iterdir() if p.name.endswith(".yaml"))


def config_data(spec: str | os.PathLike[str]) -> dict[str, Any]:
    """The sections of a YAML config file, or of the preset "preset:NAME", unvalidated."""
    name = str(spec)
    if name.startswith(PRESET_PREFIX):
        preset = name.removeprefix(PRESET_PREFIX)
        if preset not in presets():
            raise ConfigError(f"unknown preset {preset!r}; the presets are {', '.join(presets())}")
        text = (resources.files("hindsight.config") / "presets" / f"{preset}.yaml").read_text(encoding="utf-8")
    else:
        try:
            text = Path(spec).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read config {spec}: {exc}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"malformed YAML in {spec}: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config {spec} must be a mapping, got {type(data).__name__}")
    return data
