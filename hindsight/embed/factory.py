"""Builds the embedder that config selects; each backend's libraries are imported only when it is chosen."""

from __future__ import annotations

import threading

from hindsight.config import EmbedderConfig
from hindsight.embed.base import Embedder
from hindsight.errors import ConfigError


def make_embedder(config: EmbedderConfig) -> Embedder:
    """Build the configured embedder."""
    if config.backend == "sentence-transformers":
        from hindsight.embed.sentence_transformers import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(config)
    if config.backend == "onnx-int8":
        from hindsight.embed.onnx_int8 import OnnxInt8Embedder

        return OnnxInt8Embedder(config)
    raise ConfigError(f"unknown embedder backend {config.backend!r}")


_shared: dict[str, Embedder] = {}
_shared_lock = threading.Lock()


def shared_embedder(config: EmbedderConfig) -> Embedder:
    """The embedder `config` selects, loaded once per process and shared by every engine that asks for it. A model
    is some 100 MB, and the gc.freeze after a load would keep each engine's copy alive after its engine closed."""
    key = config.model_dump_json()
    with _shared_lock:
        if key not in _shared:
            _shared[key] = make_embedder(config)
        return _shared[key]
