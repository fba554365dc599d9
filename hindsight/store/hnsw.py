"""HNSW vector index (hnswlib) with checksummed, atomically replaced snapshots."""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import mmap
import os
import struct
import threading
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import hnswlib
import numpy as np

from hindsight.config import HnswConfig
from hindsight.errors import StoreClosedError
from hindsight.store.base import IndexedUnit
from hindsight.store.derived import VectorIndex
from hindsight.store.disk import disk_error
from hindsight.store.search import IndexHit

log = logging.getLogger(__name__)

_INITIAL_CAPACITY = 1024
_HEADER = 96  # bytes of hnswlib's file header; its element count and bytes per element are at offsets 16 and 24


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


def _written_crc32(path: Path) -> int:
    """The crc32 of a snapshot hnswlib just wrote, once its last link list is seen to end exactly at the file's end.
    hnswlib writes through a C++ stream that drops write errors: a full disk leaves a short file and no error."""
    size = path.stat().st_size
    if size >= _HEADER:
        with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
            count, per_element = struct.unpack_from("<QQ", data, 16)
            end = _HEADER + count * per_element
            for _ in range(count):
                if end + 4 > size:
                    break
                end += 4 + struct.unpack_from("<I", data, end)[0]
            if end == size:
                return zlib.crc32(data)
    raise OSError(errno.ENOSPC, f"hnswlib wrote a short file ({size} bytes): its write failed")


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
            index = self._live()
            if labels:
                needed = index.get_current_count() + len(labels)
                capacity = index.get_max_elements()
                if needed > capacity:
                    index.resize_index(max(needed, capacity * 2))
                index.add_items(np.asarray(vectors, dtype=np.float32), np.asarray(labels, dtype=np.int64),
                                      replace_deleted=True)
                self._alive.update(labels)
            self.watermark = max(self.watermark, watermark)

    def remove(self, labels: list[int], watermark: int) -> None:
        """Mark labels deleted, first overwriting their vectors with zeros: hnswlib keeps a deleted element's
        vector (in memory and in snapshots) until its slot is reused, and a forgotten unit's embedding must go."""
        with self.lock.write():
            index = self._live()
            gone = [label for label in labels if label in self._alive]
            if gone:
                index.add_items(np.zeros((len(gone), self.dim), np.float32), np.asarray(gone, dtype=np.int64))
                for label in gone:
                    index.mark_deleted(label)
                    self._alive.discard(label)
            self.watermark = max(self.watermark, watermark)

    def search(self, vector: np.ndarray, k: int, allowed: Callable[[int], bool] | None = None) -> list[IndexHit]:
        with self.lock.read():
            index = self._live()
            k = min(k, len(self._alive))
            if k <= 0:
                return []
            query = np.asarray(vector, dtype=np.float32).reshape(1, -1)
            while True:
                try:
                    labels, dists = index.knn_query(query, k=k, filter=allowed)
                    break
                except RuntimeError:
                    # Too few reachable live nodes for k (many deletions): ask for fewer.
                    if k == 1:
                        return []
                    k //= 2
        return [IndexHit(int(lbl), float(1.0 - d)) for lbl, d in zip(labels[0], dists[0], strict=True)]

    def save(self) -> None:
        """Write the snapshot to temporary files, check and fsync them, then rename them over the old snapshot. A
        failed write (full disk, read-only directory) raises DiskFullError or DirectoryNotWritableError and leaves
        the old snapshot as it was."""
        tmp, meta_tmp = self.path.with_suffix(".hnsw.tmp"), self.meta_path.with_suffix(".json.tmp")
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            tmp.write_bytes(b"")  # hnswlib ignores a file it cannot create; Python raises the reason
            with self.lock.read():
                index = self._live()
                index.save_index(str(tmp))
                all_ids = set(int(x) for x in index.get_ids_list())
                meta = {
                    "watermark": self.watermark, "dim": self.dim, "capacity": index.get_max_elements(),
                    "deleted": sorted(all_ids - self._alive),
                }
            meta.update(size=tmp.stat().st_size, crc32=_written_crc32(tmp))
            meta_tmp.write_text(json.dumps(meta))
            _fsync_replace(tmp, self.path)
            _fsync_replace(meta_tmp, self.meta_path)
        except OSError as exc:
            for leftover in (tmp, meta_tmp):
                # A read-only directory keeps it; the next save overwrites it, and load never reads it.
                with contextlib.suppress(OSError):
                    leftover.unlink(missing_ok=True)
            raise disk_error(exc, f"saving the vector index {self.path}") from exc

    def __len__(self) -> int:
        return len(self._alive)

    def labels(self) -> set[int]:
        with self.lock.read():
            return set(self._alive)

    def _live(self) -> Any:
        """The hnswlib index; a closed one (its bank closed or deleted) is an error, never a crash in hnswlib."""
        if self._index is None:
            raise StoreClosedError(f"vector index {self.path} is closed")
        return self._index

    def close(self) -> None:
        with self.lock.write():
            self._index = None
