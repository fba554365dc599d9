"""Dated lines of the context block: "2024-06-09 (3 weeks ago)", the absolute day and how long before the query
time it was, on the query time's clock. The relative part changes only when the query time's day does."""

from __future__ import annotations

from datetime import datetime

from hindsight.models import LogEntry, Priority
from hindsight.temporal.expressions import format_relative, in_zone_of

_MARK = {Priority.HIGH: "[high]", Priority.MEDIUM: "[medium]", Priority.LOW: "[low]"}


def day_label(value: datetime, query_time: datetime) -> str:
    """The day of `value` on the query time's clock and how long ago it was: "2024-06-09 (3 weeks ago)"."""
    local = in_zone_of(value, query_time)
    return f"{local.date().isoformat()} ({format_relative(local, query_time, ago=True)})"


def log_lines(entries: list[LogEntry], query_time: datetime) -> list[str]:
    """The log in its order: a line with the day each time the day said changes, then a line per entry."""
    lines: list[str] = []
    day = None
    for e in entries:
        said = in_zone_of(e.said_at, query_time).date()
        if said != day:
            lines.append(day_label(e.said_at, query_time))
            day = said
        lines.append(f"- {_MARK[e.priority]} {e.text}")
    return lines
