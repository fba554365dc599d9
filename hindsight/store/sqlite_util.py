"""The typed error of a failed SQLite operation."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hindsight.errors import StoreCorruptError, StoreError
from hindsight.store.disk import sqlite_disk_error

# SQLite's primary result codes for a damaged file: SQLITE_CORRUPT (and its extended codes) and SQLITE_NOTADB.
_DAMAGED = {11, 26}


def store_error(path: Path, exc: sqlite3.Error, what: str) -> StoreError:
    """The typed error for a failed database operation: StoreCorruptError, saying how to recover, when the file is
    damaged; DiskFullError or DirectoryNotWritableError for a full disk or a read-only directory; else StoreError."""
    if (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF in _DAMAGED:
        return StoreCorruptError(
            f"the database {path} is damaged ({exc}) and hindsight cannot repair it. Close every program using it, "
            f"then restore {path.name} from a backup, or salvage what is readable with the sqlite3 shell "
            f"(sqlite3 {path} .recover | sqlite3 recovered.db) and put recovered.db in its place. Each bank's index "
            "files are rebuilt from it when the bank opens."
        )
    return sqlite_disk_error(exc, f"{what} ({path})", path) or StoreError(f"{what} failed ({path}): {exc}")
