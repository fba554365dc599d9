"""Builds the embedder that config selects; each backend's libraries are imported only when it is chosen."""

from __future__ import annotations

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
