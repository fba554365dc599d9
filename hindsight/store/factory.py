"""The configured store: `store.backend` chooses the implementation of MemoryStore."""

from __future__ import annotations

from pathlib import Path

from hindsight.config import StoreConfig
from hindsight.store.base import MemoryStore
from hindsight.store.sqlite import SQLiteStore


def open_store(config: StoreConfig, home: Path) -> MemoryStore:
    """The store of the memory directory `home`, as `config` chooses."""
    return SQLiteStore(home / "hindsight.db", config.sqlite.cache_mb, config.sqlite.mmap_mb, home / "banks",
                       config.hnsw)
