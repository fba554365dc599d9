"""The configured store: `store.backend` chooses the implementation of MemoryStore."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from hindsight.config import StoreConfig
from hindsight.errors import ConfigError
from hindsight.store.base import MemoryStore

ENV_DSN = "HINDSIGHT_STORE_DSN"


def open_store(config: StoreConfig, home: Path, environ: Mapping[str, str] | None = None) -> MemoryStore:
    """The store of the memory directory `home`, as `config` chooses: SQLite files in it, or a Postgres database
    (its DSN from `store.dsn`, else the HINDSIGHT_STORE_DSN variable)."""
    if config.backend == "postgres":
        dsn = config.dsn or (os.environ if environ is None else environ).get(ENV_DSN)
        if not dsn:
            raise ConfigError(f"store.backend postgres needs a connection string: store.dsn, or {ENV_DSN}")
        from hindsight.store.postgres import PostgresStore

        return PostgresStore(dsn, config.hnsw)
    from hindsight.store.sqlite import SQLiteStore

    return SQLiteStore(home / "hindsight.db", config.sqlite.cache_mb, config.sqlite.mmap_mb, home / "banks",
                       config.hnsw)
