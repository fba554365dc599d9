"""Rerankers of the fused top candidates, chosen by `recall.rerank.backend`.

- `none`: no rerank scores; the fused (RRF) order stands.
- `blend` (offline, the default): `w_rrf * fused / max_fused + w_cos * cosine(query, unit) + w_lex * bm25 / max_bm25 +
  w_time * temporal / max_temporal + w_recency * recency`, where the cosine is taken against the unit's stored
  embeddings (the best of its text with its date and its segments), bm25 and temporal are the unit's scores in
  those channels (0 when a channel did not find it), and recency (0 for the oldest candidate .. 1 for the newest,
  by mention time) counts only when the query asks for the current state ("now", "currently", "latest", ...).
- `cross-encoder`: a sentence-transformers CrossEncoder (the paper's ms-marco-MiniLM-L-6-v2, from a path or a
  model name the local Hugging Face cache holds) scores (query, hit text) pairs.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hindsight.config import RerankConfig
from hindsight.errors import ConfigError
from hindsight.recall.ranked import Candidate
from hindsight.recall.types import Channel

log = logging.getLogger(__name__)

DEFAULT_CROSS_ENCODER = "cross-encoder/ms-marco-MiniLM-L-6-v2"

_LATEST = re.compile(
    r"\b(?:current(?:ly)?|now|nowadays|these days|latest|most recent(?:ly)?|still|any ?more|at the moment|"
    r"at present|presently)\b",
    re.IGNORECASE,
)


def asks_latest(query: str) -> bool:
    """Whether the query asks for the current state of something rather than its history."""
    return _LATEST.search(query) is not None


@dataclass
class RerankQuery:
    """What a reranker knows of the query."""

    text: str
    vector: np.ndarray | None
    latest: bool


class Reranker(ABC):
    """Scores candidates for a query; higher is better. None means: keep the fused order."""

    name: str
    needs_vectors: bool = False  # the candidates' stored embeddings
    needs_query_vector: bool = False

    @abstractmethod
    def scores(self, query: RerankQuery, candidates: Sequence[Candidate]) -> list[float] | None:
        """One score per candidate, or None to keep their order."""


class KeepOrder(Reranker):
    """No reranking: the fused order stands."""

    name = "none"

    def scores(self, query: RerankQuery, candidates: Sequence[Candidate]) -> list[float] | None:
        return None


@dataclass(frozen=True)
class BlendWeights:
    """The blend's weights. RRF keeps only ranks; the other terms bring back how strong a match is. Recency counts
    for latest-state queries only. Not tuned: every term 1, recency less."""

    rrf: float = 1.0
    cosine: float = 1.0
    lexical: float = 1.0
    temporal: float = 1.0
    recency: float = 0.3


class BlendReranker(Reranker):
    """Fused score, query-unit cosine, channel scores and (for latest-state queries) recency, weighted."""

    name = "blend"

    def __init__(self, weights: BlendWeights | None = None) -> None:
        w = weights or BlendWeights()
        self.w_rrf, self.w_cos, self.w_recency = w.rrf, w.cosine, w.recency
        self.channel_weights = [(Channel.LEXICAL, w.lexical), (Channel.TEMPORAL, w.temporal)]
        self.needs_vectors = self.needs_query_vector = self.w_cos > 0

    def scores(self, query: RerankQuery, candidates: Sequence[Candidate]) -> list[float] | None:
        if not candidates:
            return []
        top = max(c.fused.score for c in candidates) or 1.0
        out = np.array([self.w_rrf * c.fused.score / top for c in candidates])
        if self.w_cos > 0 and query.vector is not None:
            out += self.w_cos * np.array([_stored_cosine(c, query.vector) for c in candidates])
        for channel, weight in self.channel_weights:
            if weight > 0:
                found = np.array([_channel_score(c, channel) for c in candidates])
                if found.max() > 0:
                    out += weight * found / found.max()
        if self.w_recency > 0 and query.latest:
            times = np.array([c.unit.mentioned_at.timestamp() for c in candidates])
            spread = times.max() - times.min()
            if spread > 0:
                out += self.w_recency * (times - times.min()) / spread
        return [float(x) for x in out]


def _stored_cosine(candidate: Candidate, vector: np.ndarray) -> float:
    """The best cosine of the unit's embedding and its segments' (0 without a stored embedding)."""
    if candidate.vector is None:
        return 0.0
    best = float(candidate.vector @ vector)
    if candidate.segments is not None and len(candidate.segments):
        best = max(best, float((candidate.segments @ vector).max()))
    return best


def _channel_score(candidate: Candidate, channel: Channel) -> float:
    return next((max(h.score, 0.0) for h in candidate.fused.channels if h.channel is channel), 0.0)


class CrossEncoderReranker(Reranker):
    """A sentence-transformers CrossEncoder over (query, hit text) pairs."""

    name = "cross-encoder"

    def __init__(self, model: str, device: str = "cpu", batch_size: int = 16) -> None:
        # Weights come from a path or the local cache; never let the hub client try the network.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from sentence_transformers import CrossEncoder

        try:
            self._model: Any = CrossEncoder(model, device=device)
        except Exception as exc:
            raise ConfigError(
                f"cannot load cross-encoder {model!r} (set recall.rerank.model to a local model folder): {exc}"
            ) from exc
        self.batch_size = batch_size
        # A fast tokenizer fails ("Already borrowed") when two threads use it at once.
        self._lock = threading.Lock()
        log.info("loaded cross-encoder reranker %s", model)

    def scores(self, query: RerankQuery, candidates: Sequence[Candidate]) -> list[float] | None:
        if not candidates:
            return []
        pairs = [(query.text, c.text) for c in candidates]
        with self._lock:
            out = self._model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False)
        return [float(x) for x in np.asarray(out).reshape(len(candidates), -1)[:, 0]]


def make_reranker(config: RerankConfig) -> Reranker:
    """The reranker `config.backend` names."""
    if config.backend == "blend":
        return BlendReranker()
    if config.backend == "cross-encoder":
        return CrossEncoderReranker(config.model or DEFAULT_CROSS_ENCODER, config.device, config.batch_size)
    return KeepOrder()
