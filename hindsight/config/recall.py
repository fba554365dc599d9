"""The config of recall: channels, spreading activation, fusion, rerank, knowledge updates, packing
(docs/ARCHITECTURE.md, Recall)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from hindsight.config.services import Section

ChannelName = Literal["semantic", "lexical", "graph", "temporal"]
ALL_CHANNELS: tuple[ChannelName, ...] = ("semantic", "lexical", "graph", "temporal")


class GraphMu(Section):
    """Per-link-type multipliers of spreading activation: entity and causal links carry meaning (> 1), semantic
    and temporal links only closeness (<= 1)."""

    entity: float = Field(1.2, gt=0)
    causal: float = Field(2.0, gt=0, description="causes / caused_by")
    causal_weak: float = Field(1.5, gt=0, description="enables / prevents")
    semantic: float = Field(1.0, gt=0, le=1)
    temporal: float = Field(0.8, gt=0, le=1, description="temporal and reply links")


class GraphConfig(Section):
    """Spreading activation `A(j) = max over edges i-j of A(i) * weight * decay * mu(type)` from the top semantic
    hits. The budgets trade recall of distant units for time; null budgets read everything (small banks)."""

    seeds: int = Field(5, ge=1, description="top semantic hits that seed the activation")
    decay: float = Field(0.8, gt=0, lt=1)
    min_activation: float = Field(0.1, ge=0, description="activation below this does not spread")
    max_hops: int = Field(3, ge=1)
    max_nodes: int = Field(200, ge=1, description="activated units, seeds included")
    max_fanout: int = Field(32, ge=1, description="strongest edges followed out of one unit")
    max_expand: int | None = Field(16, ge=1, description="most active units whose links one hop reads; null: all")
    mu: GraphMu = Field(default_factory=GraphMu)


class FusionConfig(Section):
    """Reciprocal rank fusion `sum over channels 1 / (k + rank)` of each channel's best candidates."""

    k: int = Field(60, ge=1)
    pool: int = Field(100, ge=1, description="candidates each channel contributes")


class RerankConfig(Section):
    """The reranker of the fused top candidates. `blend` needs no model; `cross-encoder` reads query and passage
    together (better, slower) when its weights are installed; `none` keeps the fused order (fastest)."""

    backend: Literal["none", "blend", "cross-encoder"] = "blend"
    model: str | None = Field(
        None, description="cross-encoder path or name, e.g. cross-encoder/ms-marco-MiniLM-L-6-v2 (not shipped)"
    )
    top_n: int = Field(50, ge=1, description="fused candidates the reranker reorders")
    device: str = "cpu"
    batch_size: int = Field(16, ge=1)


class UpdatesConfig(Section):
    """Knowledge updates: a newer unit that changes a value is ranked above the one it supersedes. Off for banks
    whose facts never go stale (a document archive), where a later mention is no update."""

    enabled: bool = True


class PackConfig(Section):
    """Greedy packing of hits into the token budget."""

    patience: int | None = Field(
        16, ge=1, description="packing stops after this many candidates in a row do not fit; null tries all"
    )


class RecallConfig(Section):
    """Recall: the channels fused by RRF, reranked, updated, packed into the budget."""

    # Which channels run (graphiti's search_methods); an ablation leaves one out.
    channels: list[ChannelName] = Field(default_factory=lambda: list(ALL_CHANNELS))
    graph: GraphConfig = Field(default_factory=GraphConfig)
    fusion: FusionConfig = Field(default_factory=FusionConfig)
    rerank: RerankConfig = Field(default_factory=RerankConfig)
    updates: UpdatesConfig = Field(default_factory=UpdatesConfig)
    pack: PackConfig = Field(default_factory=PackConfig)

    @field_validator("channels")
    @classmethod
    def _distinct(cls, value: list[ChannelName]) -> list[ChannelName]:
        if len(set(value)) != len(value):
            raise ValueError(f"channels are listed more than once: {value}")
        return value

    def uses(self, channel: ChannelName) -> bool:
        """Whether the channel runs."""
        return channel in self.channels
