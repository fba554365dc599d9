"""The reflector: with no LLM, a log past its token threshold is condensed, the oldest days first: their low
entries are dropped, then their medium entries merged (one per day and speaker) and dropped, then their high
entries merged, until the log is within a share of the threshold. High entries are never dropped. This is the one
time the log's beginning changes, so it is made rare: the condensed log has room to grow again."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date

from hindsight.models import LogEntry, Priority

TARGET = 0.6  # of the threshold: a condensed log takes many turns to reach it again
Step = Callable[[list[LogEntry], date], list[LogEntry]]


def condense(entries: list[LogEntry], measure: Callable[[list[LogEntry]], int], limit: int) -> list[LogEntry] | None:
    """The condensed log; None when `entries` measure (in tokens) no more than `limit`, or when condensing cannot
    change them (high entries already merged by day), so that a log over its threshold is not rewritten at every
    observe."""
    if measure(entries) <= limit:
        return None
    target = int(limit * TARGET)
    days = sorted({e.said_at.date() for e in entries})
    log = list(entries)
    steps: list[Step] = [_dropping(Priority.LOW), _merging(Priority.MEDIUM), _dropping(Priority.MEDIUM),
                         _merging(Priority.HIGH)]
    for step in steps:
        for day in days:
            log = step(log, day)
            if measure(log) <= target:
                return log
    return log if log != entries else None


def _dropping(priority: Priority) -> Step:
    def drop(log: list[LogEntry], day: date) -> list[LogEntry]:
        return [e for e in log if not (e.priority is priority and e.said_at.date() == day)]

    return drop


def _speaker(entry: LogEntry) -> tuple[str, str]:
    who, sep, text = entry.text.partition(": ")
    return (who, text) if sep else ("", entry.text)


def _merging(priority: Priority) -> Step:
    def merge(log: list[LogEntry], day: date) -> list[LogEntry]:
        groups: dict[str, list[LogEntry]] = {}
        for e in log:
            if e.priority is priority and e.said_at.date() == day:
                groups.setdefault(_speaker(e)[0], []).append(e)
        out: list[LogEntry] = []
        for e in log:
            group = groups.get(_speaker(e)[0]) if e.priority is priority and e.said_at.date() == day else None
            if group is None or len(group) == 1:
                out.append(e)
            elif e is group[0]:
                out.append(_merged(group))
        return out

    return merge


def _merged(group: list[LogEntry]) -> LogEntry:
    who = _speaker(group[0])[0]
    text = " ".join(_speaker(e)[1] for e in group)
    starts = [e.refers_start for e in group if e.refers_start is not None]
    ends = [e.refers_end for e in group if e.refers_end is not None]
    return group[0].model_copy(update={
        "text": f"{who}: {text}" if who else text, "seq": None,
        "observed_at": max(e.observed_at for e in group),
        "refers_start": min(starts) if starts else None, "refers_end": max(ends) if ends else None,
        "sources": list(dict.fromkeys(s for e in group for s in e.sources)),
    })
