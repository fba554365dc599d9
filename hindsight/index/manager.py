"""Keeps a bank's derived indexes in step with the store by replaying its change log."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np

from hindsight.config import HnswConfig
from hindsight.errors import StoreError
from hindsight.index.base import DerivedIndex, IndexHit
from hindsight.index.fts import Fts5Index
from hindsight.index.hnsw import HnswIndex
from hindsight.store.base import Change, MemoryStore

log = logging.getLogger(__name__)


class BankIndexes:
    """The vector and lexical index of one bank, brought up to date on open and after every write."""

    def __init__(self, store: MemoryStore, bank_id: str, directory: Path, dim: int, config: HnswConfig) -> None:
        self.store = store
        self.bank_id = bank_id
        self.dir = directory
        self.config = config
        self.vectors = HnswIndex(directory, dim, config)
        self.lexical = Fts5Index(directory)
        self._sync_lock = threading.Lock()
        self._saved_watermark = 0
        self.rebuilt: list[str] = []
        self._open()

    def _open(self) -> None:
        last = self.store.last_change(self.bank_id)
        for name, index in (("vectors", self.vectors), ("lexical", self.lexical)):
            if not index.load() or index.watermark > last:
                # Missing, corrupt, or ahead of the store (e.g. a restored database): rebuild from SQLite.
                log.info("rebuilding %s index of bank %s from the store", name, self.bank_id)
                index.reset()
                self._rebuild(index)
                self.rebuilt.append(name)
        self._saved_watermark = self.vectors.watermark
        self.sync()
        if self.vectors.watermark != self._saved_watermark:
            self._save_or_log()

    def _rebuild(self, index: DerivedIndex) -> None:
        index.add_units(self.store.indexed_units(self.bank_id), self.store.last_change(self.bank_id))
        if index is self.vectors:
            self._save_or_log()

    def _save_or_log(self) -> None:
        """Save the vector snapshot; a failure (full disk, read-only directory) is logged, not raised: the write
        that called for it has committed, and an old snapshot catches up from the change log on the next open."""
        try:
            self.vectors.save()
            self._saved_watermark = self.vectors.watermark
        except StoreError as exc:
            log.warning("bank %s: %s; the index stays in memory and catches up on the next open", self.bank_id, exc)

    def sync(self) -> None:
        """Apply every change after each index's watermark."""
        with self._sync_lock:
            low = min(self.vectors.watermark, self.lexical.watermark)
            changes = self.store.changes_since(self.bank_id, low)
            if not changes:
                return
            self._replay(self.vectors, [c for c in changes if c.seq > self.vectors.watermark])
            self._replay(self.lexical, [c for c in changes if c.seq > self.lexical.watermark])
            if self.vectors.watermark - self._saved_watermark >= self.config.save_every:
                self._save_or_log()

    def _replay(self, index: DerivedIndex, changes: list[Change]) -> None:
        if not changes:
            return
        top = changes[-1].seq
        # Net effect per label: the last operation wins (a unit added then deleted is just absent).
        final: dict[int, str] = {}
        for c in changes:
            final[c.label] = c.op
        dels = [label for label, op in final.items() if op == "del"]
        adds = [label for label, op in final.items() if op == "add"]
        units = self.store.indexed_units(self.bank_id, adds) if adds else []
        if dels:
            # The watermark moves only with the additions: a crash between the two writes replays both.
            index.remove(dels, index.watermark)
        index.add_units(units, top)

    def purge(self) -> None:
        """After a forget: leave nothing of removed units in the index files (snapshot saved, lexical compacted)."""
        with self._sync_lock:
            self.lexical.purge()
            try:
                self.vectors.save()
            except StoreError as exc:
                raise type(exc)(f"the forget is committed, but {exc}. Until a save succeeds (close saves again), "
                                "the old snapshot file still holds the removed vectors") from exc
            self._saved_watermark = self.vectors.watermark

    def search_vectors(
        self, vector: np.ndarray, k: int, allowed: Callable[[int], bool] | None = None
    ) -> list[IndexHit]:
        return self.vectors.search(vector, k, allowed)

    def search_lexical(self, query: str, k: int, lead_weight: float = 1.0) -> list[IndexHit]:
        """BM25 hits, best first (see LexicalIndex.search)."""
        return self.lexical.search(query, k, lead_weight)

    def close(self) -> None:
        """Save the vector snapshot if it is behind, then close both indexes, even when the save fails."""
        with self._sync_lock:
            try:
                if self.vectors.watermark != self._saved_watermark:
                    self.vectors.save()
            finally:
                self.vectors.close()
                self.lexical.close()
