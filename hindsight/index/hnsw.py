"""HNSW vector index (hnswlib) with checksummed, atomically replaced snapshots."""

from __future__ import annotations

import json
import logging
import os
import threading
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import hnswlib
import numpy as np

from hindsight.config import HnswConfig
from hindsight.index.base import IndexHit, VectorIndex
from hindsight.store.base import IndexedUnit

log = logging.getLogger(__name__)

_INITIAL_CAPACITY = 1024


class RWLock:
    """Many readers or one writer: hnswlib is unsafe when searches and inserts overlap."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writer = False

    @contextmanager
    def read(self) -> Iterator[None]:
        with self._cond:
            while self._writer:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                self._cond.notify_all()

    @contextmanager
    def write(self) -> Iterator[None]:
        with self._cond:
            while self._writer or self._readers:
                self._cond.wait()
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()


def _crc32(path: Path) -> int:
    crc = 0
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            crc = zlib.crc32(chunk, crc)
    return crc


def _fsync_replace(tmp: Path, final: Path) -> None:
    with tmp.open("rb+") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, final)


class HnswIndex(VectorIndex):
    """Cosine HNSW over labels. Files: vectors.hnsw plus vectors.json (watermark, size, crc32)."""

    def __init__(self, directory: Path, dim: int, config: HnswConfig) -> None:
        self.dir = directory
        self.dim = dim
        self.config = config
        self.path = directory / "vectors.hnsw"
        self.meta_path = directory / "vectors.json"
        self.lock = RWLock()
        self.watermark = 0
        self._alive: set[int] = set()
        self._index: Any = None
        self.reset()

    def _new(self, capacity: int) -> Any:
        index = hnswlib.Index(space="ip", dim=self.dim)
        index.init_index(
            max_elements=capacity, ef_construction=self.config.ef_construction, M=self.config.m,
            allow_replace_deleted=True,
        )
        index.set_ef(self.config.ef_search)
        index.set_num_threads(1)
        return index

    def reset(self) -> None:
        with self.lock.write():
            self._index = self._new(_INITIAL_CAPACITY)
            self._alive = set()
            self.watermark = 0

    def load(self) -> bool:
        if not self.path.exists() or not self.meta_path.exists():
            return False
        try:
            meta = json.loads(self.meta_path.read_text())
            if meta["dim"] != self.dim or meta["size"] != self.path.stat().st_size or meta["crc32"] != _crc32(
                self.path
            ):
                log.warning("vector index %s does not match its checksum; rebuilding", self.path)
                return False
            index = hnswlib.Index(space="ip", dim=self.dim)
            index.load_index(str(self.path), max_elements=int(meta["capacity"]), allow_replace_deleted=True)
            index.set_ef(self.config.ef_search)
            index.set_num_threads(1)
            labels = set(int(x) for x in index.get_ids_list()) - set(int(x) for x in meta["deleted"])
        except (OSError, ValueError, KeyError, TypeError, RuntimeError) as exc:
            log.warning("vector index %s is unreadable (%s); rebuilding", self.path, exc)
            return False
        with self.lock.write():
            self._index, self._alive, self.watermark = index, labels, int(meta["watermark"])
        return True

    def add_units(self, units: list[IndexedUnit], watermark: int) -> None:
        labels = [u.label for u in units]
        vectors = np.stack([u.embedding for u in units]) if units else np.zeros((0, self.dim), np.float32)
        with self.lock.write():
            if labels:
                needed = self._index.get_current_count() + len(labels)
                capacity = self._index.get_max_elements()
                if needed > capacity:
                    self._index.resize_index(max(needed, capacity * 2))
                self._index.add_items(np.asarray(vectors, dtype=np.float32), np.asarray(labels, dtype=np.int64),
                                      replace_deleted=True)
                self._alive.update(labels)
            self.watermark = max(self.watermark, watermark)

    def remove(self, labels: list[int], watermark: int) -> None:
        """Mark labels deleted, first overwriting their vectors with zeros: hnswlib keeps a deleted element's
        vector (in memory and in snapshots) until its slot is reused, and a forgotten unit's embedding must go."""
        with self.lock.write():
            gone = [label for label in labels if label in self._alive]
            if gone:
                self._index.add_items(np.zeros((len(gone), self.dim), np.float32), np.asarray(gone, dtype=np.int64))
                for label in gone:
                    self._index.mark_deleted(label)
                    self._alive.discard(label)
            self.watermark = max(self.watermark, watermark)

    def search(self, vector: np.ndarray, k: int, allowed: Callable[[int], bool] | None = None) -> list[IndexHit]:
        with self.lock.read():
            k = min(k, len(self._alive))
            if k <= 0:
                return []
            query = np.asarray(vector, dtype=np.float32).reshape(1, -1)
            while True:
                try:
                    labels, dists = self._index.knn_query(query, k=k, filter=allowed)
                    break
                except RuntimeError:
                    # Too few reachable live nodes for k (many deletions): ask for fewer.
                    if k == 1:
                        return []
                    k //= 2
        return [IndexHit(int(lbl), float(1.0 - d)) for lbl, d in zip(labels[0], dists[0], strict=True)]

    def save(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp, meta_tmp = self.path.with_suffix(".hnsw.tmp"), self.meta_path.with_suffix(".json.tmp")
        with self.lock.read():
            self._index.save_index(str(tmp))
            all_ids = set(int(x) for x in self._index.get_ids_list())
            meta = {
                "watermark": self.watermark, "dim": self.dim, "capacity": self._index.get_max_elements(),
                "deleted": sorted(all_ids - self._alive),
            }
        meta.update(size=tmp.stat().st_size, crc32=_crc32(tmp))
        meta_tmp.write_text(json.dumps(meta))
        _fsync_replace(tmp, self.path)
        _fsync_replace(meta_tmp, self.meta_path)

    def __len__(self) -> int:
        return len(self._alive)

    def labels(self) -> set[int]:
        with self.lock.read():
            return set(self._alive)

    def close(self) -> None:
        self._index = None
