"""Small helpers shared by the SQLite store modules."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from hindsight.errors import StoreCorruptError, StoreError
from hindsight.store.base import UnitFilter
from hindsight.store.disk import sqlite_disk_error

MAX_VARS = 500  # stay well under SQLite's bound-parameter limit


def ts(value: datetime | None) -> float | None:
    return value.timestamp() if value is not None else None


# datetime.max as epoch seconds is not exact in a float: it reads back as this, the first moment of year 10000.
_END_OF_TIME = 253_402_300_800.0
_MAX = datetime.max.replace(tzinfo=timezone.utc)


def dt(value: float | None) -> datetime | None:
    if value is None:
        return None
    return _MAX if value >= _END_OF_TIME else datetime.fromtimestamp(value, tz=timezone.utc)


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


def chunks(items: Sequence[Any], size: int = MAX_VARS) -> Iterator[Sequence[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def marks(n: int) -> str:
    return ",".join("?" * n)


def filter_sql(unit_filter: UnitFilter | None, column_prefix: str = "+") -> tuple[str, list[Any]]:
    """An SQL fragment (" AND ...", or "") and its parameters restricting units to the filter.

    The default "+" prefix keeps the planner from choosing an index for the filter over the caller's lookup;
    pass "+u." for a joined alias `u`, or "" to let the filter use an index.
    """
    if unit_filter is None:
        return "", []
    sql = ""
    params: list[Any] = []
    if unit_filter.networks is not None:
        nets = sorted(n.value for n in unit_filter.networks)
        sql += f" AND {column_prefix}network IN ({marks(len(nets))})" if nets else " AND 0"
        params += nets
    if unit_filter.as_of is not None:
        sql += f" AND {column_prefix}mentioned_at <= ?"
        params.append(unit_filter.as_of.timestamp())
    return sql, params
