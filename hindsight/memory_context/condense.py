"""The reflector: with no LLM, a log past its limit is condensed. Condensing is the one event that changes the log's
part of a block's stable prefix, so its rules make it rare and make its result fit:

- it starts when the log passes its limit: `context.condense_tokens`, or the block's room for the log when that is
  smaller (block.log_room), so that a condensed log is shown whole, never cut to the budget;
- it ends with the log at half its limit at most (TARGET): the log must then grow by as much as it holds before the
  next condensing, whatever the log holds (hysteresis);
- what goes is what a reader needs least, each step sweeping the days oldest first and stopping as soon as the
  log is within the target: low entries (questions, talk about other things) dropped; medium entries merged, one
  per day and speaker, then dropped; high entries shortened to the sentences that made them high, then merged per
  day and speaker; and last, the oldest entries dropped, so that the log stays bounded (what must outlive it
  belongs in working memory). Entries are not merged across days: that would save a line's prefix but lose each
  part's day, and make the oldest entries too coarse to drop one at a time.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date

from hindsight.memory_context.observer import sentence_priority
from hindsight.models import LogEntry, Priority
from hindsight.text import split_sentences

TARGET = 0.5  # of the limit: a condensed log doubles before it is condensed again
_RESOLVED = re.compile(r" \[\d{4}-\d{2}-\d{2}(?: to \d{4}-\d{2}-\d{2})?\]")  # the observer's resolved dates

Step = Callable[[list[LogEntry], date], list[LogEntry]]


def condense(entries: list[LogEntry], measure: Callable[[list[LogEntry]], int], limit: int) -> list[LogEntry] | None:
    """The condensed log, within TARGET of `limit` (measured in tokens) unless its newest entry alone is over it;
    None when `entries` are within `limit`."""
    if measure(entries) <= limit:
        return None
    target = int(limit * TARGET)
    log = list(entries)
    days = sorted({e.said_at.date() for e in entries})
    for step in _STEPS:
        for day in days:
            log = step(log, day)
            if measure(log) <= target:
                return log
    return _drop_oldest(log, measure, target)


def _drop_oldest(log: list[LogEntry], measure: Callable[[list[LogEntry]], int], target: int) -> list[LogEntry]:
    """The longest end of the log within the target (a search: the measure grows with the entries), and its last
    entry at least."""
    low, high = 0, max(0, len(log) - 1)  # log[high:] is kept; find the smallest start within the target
    while low < high:
        mid = (low + high) // 2
        if measure(log[mid:]) <= target:
            high = mid
        else:
            low = mid + 1
    return log[high:]


def _dropping(priority: Priority) -> Step:
    def drop(log: list[LogEntry], day: date) -> list[LogEntry]:
        return [e for e in log if not (e.priority is priority and e.said_at.date() == day)]

    return drop


def _shortening(priority: Priority) -> Step:
    def shorten(log: list[LogEntry], day: date) -> list[LogEntry]:
        return [_shortened(e) if e.priority is priority and e.said_at.date() == day else e for e in log]

    return shorten


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


_STEPS: list[Step] = [_dropping(Priority.LOW), _merging(Priority.MEDIUM), _dropping(Priority.MEDIUM),
                      _shortening(Priority.HIGH), _merging(Priority.HIGH)]


def _speaker(entry: LogEntry) -> tuple[str, str]:
    who, sep, text = entry.text.partition(": ")
    return (who, text) if sep else ("", entry.text)


def _shortened(entry: LogEntry) -> LogEntry:
    """The entry with only its sentences of its own priority."""
    who, text = _speaker(entry)
    sentences = split_sentences(text)
    kept = [s for s in sentences if sentence_priority(_RESOLVED.sub("", s), entry.said_at) is entry.priority]
    if not kept or len(kept) == len(sentences):
        return entry
    return entry.model_copy(update={"text": _spoken(who, " ".join(kept)), "seq": None})


def _merged(group: list[LogEntry]) -> LogEntry:
    """One entry of a speaker's group of one day, its parts in order."""
    who = _speaker(group[0])[0]
    starts = [e.refers_start for e in group if e.refers_start is not None]
    ends = [e.refers_end for e in group if e.refers_end is not None]
    return group[0].model_copy(update={
        "text": _spoken(who, " ".join(_speaker(e)[1] for e in group)), "seq": None,
        "observed_at": max(e.observed_at for e in group),
        "refers_start": min(starts) if starts else None, "refers_end": max(ends) if ends else None,
        "sources": list(dict.fromkeys(s for e in group for s in e.sources)),
    })


def _spoken(who: str, text: str) -> str:
    return f"{who}: {text}" if who else text
