"""Small helpers shared by the SQLite store modules."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from typing import Any

MAX_VARS = 500  # stay well under SQLite's bound-parameter limit


def ts(value: datetime | None) -> float | None:
    return value.timestamp() if value is not None else None


def dt(value: float | None) -> datetime | None:
    return datetime.fromtimestamp(value, tz=timezone.utc) if value is not None else None


def chunks(items: Sequence[Any], size: int = MAX_VARS) -> Iterator[Sequence[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def marks(n: int) -> str:
    return ",".join("?" * n)
