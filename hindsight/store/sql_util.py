"""Helpers of the SQL both stores run (store/sql_*.py): times as epoch seconds, parameter lists, unit filters."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime, timezone
from typing import Any, Protocol

from hindsight.store.base import UnitFilter

MAX_VARS = 500  # stay well under SQLite's bound-parameter limit
NO_LIMIT = 2**62  # LIMIT for "all": SQLite refuses LIMIT NULL, Postgres LIMIT -1


class Rows(Protocol):
    """What a statement returns inside a transaction."""

    @property
    def rowcount(self) -> int: ...
    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...
    def __iter__(self) -> Iterator[Any]: ...


class Tx(Protocol):
    """A write transaction's connection, as SQLite's and the Postgres store's adapter both offer it."""

    def execute(self, sql: str, params: Sequence[Any] = (), /) -> Rows: ...
    def executemany(self, sql: str, rows: Iterable[Sequence[Any]], /) -> Any: ...


def ts(value: datetime | None) -> float | None:
    return value.timestamp() if value is not None else None


# datetime.max as epoch seconds is not exact in a float: it reads back as this, the first moment of year 10000.
_END_OF_TIME = 253_402_300_800.0
_MAX = datetime.max.replace(tzinfo=timezone.utc)


def dt(value: float | None) -> datetime | None:
    if value is None:
        return None
    return _MAX if value >= _END_OF_TIME else datetime.fromtimestamp(value, tz=timezone.utc)


def chunks(items: Sequence[Any], size: int = MAX_VARS) -> Iterator[Sequence[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def marks(n: int) -> str:
    return ",".join("?" * n)


def filter_sql(unit_filter: UnitFilter | None, column_prefix: str = "+") -> tuple[str, list[Any]]:
    """An SQL fragment (" AND ...", or "") and its parameters restricting units to the filter.

    The default "+" prefix keeps SQLite's planner from choosing an index for the filter over the caller's lookup
    (Postgres reads the SQL without it); pass "+u." for a joined alias `u`, or "" to let the filter use an index.
    """
    if unit_filter is None:
        return "", []
    sql = ""
    params: list[Any] = []
    if unit_filter.networks is not None:
        nets = sorted(n.value for n in unit_filter.networks)
        sql += f" AND {column_prefix}network IN ({marks(len(nets))})" if nets else " AND 1=0"
        params += nets
    if unit_filter.as_of is not None:
        sql += f" AND {column_prefix}mentioned_at <= ?"
        params.append(unit_filter.as_of.timestamp())
    return sql, params
