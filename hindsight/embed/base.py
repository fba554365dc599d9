"""The embedder interface and a content-hash cache around any embedder."""

from __future__ import annotations

import gc
import hashlib
import logging
import threading
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np

from hindsight.errors import EmbeddingError, HindsightError

log = logging.getLogger(__name__)


class Embedder(ABC):
    """Maps texts to L2-normalized float32 vectors of a fixed dimension."""

    name: str
    dim: int

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return an array of shape (len(texts), dim), rows L2-normalized."""


def tokenizable(texts: Sequence[str]) -> list[str]:
    """The texts with lone surrogates (broken UTF-16 halves, which the fast tokenizers reject with a TypeError)
    replaced by U+FFFD; the replacement is logged. Other texts pass unchanged."""
    out = list(texts)
    for i, text in enumerate(out):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            out[i] = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
            log.info("embedding text %d: lone surrogates replaced by U+FFFD", i)
    return out


def freeze_collector(loaded: str) -> None:
    """Collect garbage, then move every object alive now to the collector's permanent generation (gc.freeze).

    Called once a model has loaded: torch, transformers and the model leave some 400k long-lived objects, and each
    full collection scans them all, pausing whatever runs (a recall) for about 250 ms. Frozen objects are still freed
    by reference counting; only a reference cycle among objects alive at this moment is never collected.
    """
    start = time.perf_counter()
    gc.collect()
    gc.freeze()
    log.info("after loading %s: %d objects moved out of the garbage collector's scans (%.0f ms)", loaded,
             gc.get_freeze_count(), (time.perf_counter() - start) * 1000.0)


def limited_name(name: str, max_tokens: int | None, model_limit: int | None) -> str:
    """The embedder's name under a word-piece limit: unchanged at the model's own limit, else suffixed with it."""
    return name if max_tokens is None or max_tokens == model_limit else f"{name}@{max_tokens}"


def embed_hash(model_name: str, text: str) -> str:
    """Content hash of a text under one model; equal hashes never get embedded twice."""
    return hashlib.sha256(f"{model_name}\x00{text}".encode("utf-8", "surrogatepass")).hexdigest()[:32]


class CachedEmbedder:
    """Wraps an embedder with an in-memory LRU and an optional persistent lookup by content hash."""

    def __init__(
        self,
        embedder: Embedder,
        cache_size: int = 50_000,
        persistent_lookup: Callable[[list[str]], dict[str, np.ndarray]] | None = None,
    ) -> None:
        self.embedder = embedder
        self.name = embedder.name
        self.dim = embedder.dim
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        self.persistent_lookup = persistent_lookup
        self.computed = 0
        self.cache_hits = 0

    def hash(self, text: str) -> str:
        return embed_hash(self.name, text)

    def embed(self, texts: Sequence[str]) -> tuple[np.ndarray, list[str]]:
        """Embed texts, reusing cached vectors; returns (vectors, content hashes)."""
        hashes = [self.hash(t) for t in texts]
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for h in hashes:
                vec = self._cache.get(h)
                if vec is not None:
                    self._cache.move_to_end(h)
                    found[h] = vec
        missing = [h for h in dict.fromkeys(hashes) if h not in found]
        if missing and self.persistent_lookup is not None:
            found.update(self.persistent_lookup(missing))
        todo: dict[str, str] = {}
        for h, t in zip(hashes, texts, strict=True):
            if h not in found and h not in todo:
                todo[h] = t
        if todo:
            vectors = self._computed(list(todo.values()))
            for h, vec in zip(todo, vectors, strict=True):
                found[h] = vec
            self.computed += len(todo)
        self.cache_hits += len(hashes) - len(todo)
        self._remember(found)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, h in enumerate(hashes):
            out[i] = found[h]
        return out, hashes

    def _computed(self, texts: list[str]) -> np.ndarray:
        """The model's vectors of `texts`; any failure of the model (torch raises RuntimeError, of kinds that name
        no cause a caller could act on) is an EmbeddingError, so that no untyped error leaves a public call."""
        try:
            return self.embedder.embed(texts)
        except HindsightError:
            raise
        except Exception as exc:
            log.error("the embedder %s failed on %d texts: %s", self.name, len(texts), exc)
            raise EmbeddingError(f"the embedder {self.name} failed: {type(exc).__name__}: {exc}") from exc

    def _remember(self, vectors: dict[str, np.ndarray]) -> None:
        if self._cache_size == 0:
            return
        with self._lock:
            for h, vec in vectors.items():
                self._cache[h] = vec
                self._cache.move_to_end(h)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
