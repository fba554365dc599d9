"""The SQLite store's search: a bank's derived index files, kept in step with the database by replaying its change
log."""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Set
from pathlib import Path
from typing import Protocol, TypeVar

import numpy as np

from hindsight.config import HnswConfig
from hindsight.errors import IndexDamagedError, StoreError
from hindsight.store.base import Change, IndexedUnit
from hindsight.store.bm25 import Bm25Index
from hindsight.store.derived import DerivedIndex
from hindsight.store.hnsw import HnswIndex
from hindsight.store.search import BankSearch, IndexHit

log = logging.getLogger(__name__)

T = TypeVar("T")


class ChangeLog(Protocol):
    """What the derived indexes read from the SQLite store."""

    def last_change(self, bank_id: str) -> int: ...
    def changes_since(self, bank_id: str, seq: int) -> list[Change]: ...
    def indexed_units(self, bank_id: str, labels: list[int] | None = None,
                      with_segments: bool = False) -> list[IndexedUnit]: ...


class SqliteSearch(BankSearch):
    """The vector and lexical index files of one bank, brought up to date on open and after every write."""

    def __init__(self, store: ChangeLog, bank_id: str, directory: Path, dim: int, config: HnswConfig) -> None:
        self.store = store
        self.bank_id = bank_id
        self.dir = directory
        self.config = config
        self.vectors = HnswIndex(directory, dim, config)
        self.lexical = Bm25Index(directory)
        self._sync_lock = threading.RLock()
        self._saved_watermark = 0
        self.rebuilt: list[str] = []
        self._open()

    def _open(self) -> None:
        last = self.store.last_change(self.bank_id)
        for name, index in (("vectors", self.vectors), ("lexical", self.lexical)):
            if not index.load() or index.watermark > last:
                # Missing, corrupt, or ahead of the store (e.g. a restored database): rebuild from SQLite.
                self._rebuild(name, index, "missing, damaged or ahead of the store")
        self._saved_watermark = self.vectors.watermark
        self.sync()
        if self.vectors.watermark != self._saved_watermark:
            self._save_or_log()

    def _rebuild(self, name: str, index: DerivedIndex, reason: str) -> None:
        """Rebuild an index from the store; IndexDamagedError when its files cannot be written."""
        with self._sync_lock:
            # A damaged file was logged as a warning where it was found; a new bank has no index files yet.
            log.info("rebuilding the %s index of bank %s from the store: %s", name, self.bank_id, reason)
            try:
                index.reset()
                index.add_units(self.store.indexed_units(self.bank_id), self.store.last_change(self.bank_id))
                if index is self.lexical:
                    index.save()
            except (sqlite3.DatabaseError, OSError) as exc:
                raise IndexDamagedError(
                    f"the {name} index of bank {self.bank_id} in {self.dir} could not be rebuilt ({exc}); the "
                    f"memories are safe in the database. Free disk space, or delete {self.dir}, and reopen."
                ) from exc
            if index is self.vectors:
                self._save_or_log()
            self.rebuilt.append(name)

    def _lexical(self, op: Callable[[], T]) -> T:
        """Run `op` on the lexical index. Its file can be damaged while open (an SQLite error in use): then it is
        rebuilt from the store and `op` runs again."""
        try:
            return op()
        except sqlite3.DatabaseError as exc:
            log.warning("the lexical index of bank %s failed in use (%s); rebuilding it", self.bank_id, exc)
            self._rebuild("lexical", self.lexical, f"it failed in use ({exc})")
        try:
            return op()
        except sqlite3.DatabaseError as exc:
            raise IndexDamagedError(f"the lexical index of bank {self.bank_id} failed after a rebuild: {exc}") from exc

    def _save_or_log(self) -> None:
        """Save the vector snapshot and write the lexical rows held in memory; a failure (full disk, read-only
        directory) is logged, not raised: the write that called for it has committed, and the files catch up from
        the change log on the next open."""
        try:
            self.vectors.save()
            self._saved_watermark = self.vectors.watermark
            self._lexical(self.lexical.save)
        except StoreError as exc:
            log.warning("bank %s: %s; the index stays in memory and catches up on the next open", self.bank_id, exc)

    def sync(self) -> None:
        """Apply every change after each index's watermark. The store has committed them, so a lexical index that
        cannot be rebuilt now is logged and stays behind: the next sync or search rebuilds it."""
        with self._sync_lock:
            low = min(self.vectors.watermark, self.lexical.watermark)
            changes = self.store.changes_since(self.bank_id, low)
            if not changes:
                return
            self._replay(self.vectors, [c for c in changes if c.seq > self.vectors.watermark])
            def replay_lexical() -> None:  # after a rebuild the index holds every change, and this replays none
                self._replay(self.lexical, [c for c in changes if c.seq > self.lexical.watermark])

            try:
                self._lexical(replay_lexical)
            except IndexDamagedError as exc:
                log.error("%s", exc)
            if self.vectors.watermark - self._saved_watermark >= self.config.save_every:
                self._save_or_log()

    def _replay(self, index: DerivedIndex, changes: list[Change]) -> None:
        if not changes:
            return
        top = changes[-1].seq
        # Net effect per label: the last operation wins (a unit added then deleted is just absent). A change of the
        # indexed text alone leaves the vector index as it is.
        ops = ("add", "del", "text") if index is self.lexical else ("add", "del")
        final: dict[int, str] = {}
        for c in changes:
            if c.op in ops:
                final[c.label] = c.op
        dels = [label for label, op in final.items() if op == "del"]
        adds = [label for label, op in final.items() if op in ("add", "text")]
        units = self.store.indexed_units(self.bank_id, adds) if adds else []
        if dels:
            # The watermark moves only with the additions: a crash between the two writes replays both.
            index.remove(dels, index.watermark)
        index.add_units(units, top)

    def purge(self) -> None:
        """After a forget: leave nothing of removed units in the index files (snapshot saved, lexical compacted)."""
        with self._sync_lock:
            self._lexical(self.lexical.purge)
            try:
                self.vectors.save()
            except StoreError as exc:
                raise type(exc)(f"the forget is committed, but {exc}. Until a save succeeds (close saves again), "
                                "the old snapshot file still holds the removed vectors") from exc
            self._saved_watermark = self.vectors.watermark

    def search_vectors(self, vector: np.ndarray, k: int, allowed: Set[int] | None = None) -> list[IndexHit]:
        return self.vectors.search(vector, k, None if allowed is None else allowed.__contains__)

    def search_lexical(self, query: str, k: int, lead_weight: float = 1.0) -> list[IndexHit]:
        return self._lexical(lambda: self.lexical.search(query, k, lead_weight))

    def vector_count(self) -> int:
        return len(self.vectors)

    def vector_labels(self) -> set[int]:
        return self.vectors.labels()

    def lexical_labels(self) -> set[int]:
        return self._lexical(self.lexical.labels)

    def close(self) -> None:
        """Save the vector snapshot if it is behind, then close both indexes, even when the save fails."""
        with self._sync_lock:
            try:
                if self.vectors.watermark != self._saved_watermark:
                    self.vectors.save()
            finally:
                self.vectors.close()
                self.lexical.close()
