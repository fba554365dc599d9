"""Dated lines of the context block. The log's day lines show the absolute day alone ("2024-06-09"), so that the
log reads the same whatever the query time; how long ago each day was ("3 weeks ago") is said after the stable
part, in the section that opens the volatile one ("now"). A recalled memory, already past the stable part, shows
both on its line: "2024-06-09 (3 weeks ago)". Days are on the query time's clock."""

from __future__ import annotations

from datetime import date, datetime

from hindsight.models import LogEntry, Priority
from hindsight.temporal.expressions import format_relative, in_zone_of

_MARK = {Priority.HIGH: "[high]", Priority.MEDIUM: "[medium]", Priority.LOW: "[low]"}
LOG_HEADING = "## Observations (what was said, oldest first; [high] matters most)"
NOW_HEADING = "## Now"


def day_label(value: datetime, query_time: datetime) -> str:
    """The day of `value` on the query time's clock and how long ago it was: "2024-06-09 (3 weeks ago)"."""
    local = in_zone_of(value, query_time)
    return f"{local.date().isoformat()} ({format_relative(local, query_time, ago=True)})"


def said_day(entry: LogEntry, query_time: datetime) -> date:
    return in_zone_of(entry.said_at, query_time).date()


def log_text(entries: list[LogEntry], query_time: datetime) -> str:
    """The log's section: its heading, then in the log's order a line with the day each time the day said changes
    and a line per entry. Nothing in it depends on the query time but its time zone."""
    lines = [LOG_HEADING]
    day = None
    for e in entries:
        said = said_day(e, query_time)
        if said != day:
            lines.append(said.isoformat())
            day = said
        lines.append(f"- {_MARK[e.priority]} {e.text}")
    return "\n".join(lines)


def now_text(entries: list[LogEntry], query_time: datetime) -> str:
    """The section that opens the volatile part: the query time's day, then how long ago each of the log's days
    was, oldest first, the days that share an age as one range:

        ## Now: Sunday, 2024-06-30
        - 2024-06-07 to 2024-06-11: 3 weeks ago
    """
    today = in_zone_of(query_time, query_time)
    ages: dict[str, list[date]] = {}
    for day in sorted({said_day(e, query_time) for e in entries}):
        noon = datetime(day.year, day.month, day.day, 12, tzinfo=today.tzinfo)
        ages.setdefault(format_relative(noon, today, ago=True), []).append(day)
    lines = [f"{NOW_HEADING}: {today.strftime('%A')}, {today.date().isoformat()}"]
    for age, days in ages.items():
        span = days[0].isoformat() if len(days) == 1 else f"{days[0].isoformat()} to {days[-1].isoformat()}"
        lines.append(f"- {span}: {age}")
    return "\n".join(lines)
