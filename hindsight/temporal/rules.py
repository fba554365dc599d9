"""Rules behind `hindsight.temporal.expressions`: which resolver handles each phrase family, and the
"early"/"mid"/"late" and "the beginning/end of" modifiers that narrow a resolved span.

The rules are split by concern: vocab (word lists), patterns (regexes and the
per-word dispatch), calendar (calendar arithmetic), context (what is read
around a match), dates and relative (one resolver per phrase family).
"""

from __future__ import annotations

import math
import re
from calendar import monthrange
from collections.abc import Callable
from datetime import date, timedelta

from hindsight.temporal import dates, relative
from hindsight.temporal.calendar import Interval, add_months
from hindsight.temporal.context import Context, modifier_before

Resolver = Callable[[re.Match[str], Context], Interval | None]

# Family (a template name in patterns) -> its resolver; None from a resolver rejects the match.
RESOLVERS: dict[str, Resolver] = {
    "iso": dates.iso_date, "numdate": dates.numeric_date, "mdy": dates.full_date, "dmy": dates.full_date,
    "my": dates.month_year, "md": dates.month_day, "dm": dates.month_day, "ordday": dates.ordinal_day,
    "decade": dates.decade, "ago": relative.ago, "future": relative.future, "named": relative.named_day,
    "within": relative.within_unit, "rel": relative.last_this_next, "rolling": relative.rolling,
    "vague": relative.vague, "weekend": relative.the_weekend, "the_unit": relative.the_unit,
    "season": dates.season, "year": dates.year, "weekday": dates.weekday, "month": dates.month,
}  # fmt: skip

# Granularity a modifier can narrow -> the unit it counts in.
_MODIFIABLE = {"year": "month", "season": "month", "decade": "year", "century": "year",
               "month": "day", "week": "day", "weekend": "day"}  # fmt: skip


def _apply_modifier(interval: Interval, kind: str) -> Interval:
    """Narrow `interval` to its early/mid/late third or its beginning/end sixth."""
    first, last, gran = interval
    unit = _MODIFIABLE[gran]
    if unit == "day":
        count = (last - first).days + 1
    elif unit == "month":
        count = (last.year - first.year) * 12 + last.month - first.month + 1
    else:
        count = last.year - first.year + 1
    third, edge = max(1, count // 3), max(1, math.ceil(count / 6))
    lo, hi = {
        "early": (0, third), "late": (count - third, count), "begin": (0, edge),
        "end": (count - edge, count),
    }.get(kind, (third, count - third) if count > 2 * third else (0, count))  # fmt: skip
    if unit == "day":
        return first + timedelta(days=lo), first + timedelta(days=hi - 1), "range"
    if unit == "month":
        end = add_months(first, hi - 1)
        return add_months(first, lo), end.replace(day=monthrange(end.year, end.month)[1]), "range"
    return date(first.year + lo, 1, 1), date(first.year + hi - 1, 12, 31), "range"


_ORDINALS = {"first": 0, "second": 1, "third": 2, "fourth": 3}


def _nth_of_month(first: date, nth: str, unit: str) -> Interval:
    """The first..fourth or last week (days 1-7, 8-14, ..., the last seven) or weekend (the month's Nth or last
    Saturday, and the Sunday after it) of `first`'s month."""
    days = monthrange(first.year, first.month)[1]
    if unit == "week":
        lo = days - 7 if nth in ("last", "final") else 7 * _ORDINALS[nth]
        return first + timedelta(days=lo), first + timedelta(days=lo + 6), "range"
    saturday = first + timedelta(days=(5 - first.weekday()) % 7)
    if nth in ("last", "final"):
        saturday += timedelta(days=7 * ((days - saturday.day) // 7))
    else:
        saturday += timedelta(days=7 * _ORDINALS[nth])
    return saturday, saturday + timedelta(days=1), "weekend"


def resolve(m: re.Match[str], c: Context, floor: int) -> tuple[int, Interval] | None:
    """(span start, interval) for one match, absorbing a preceding "early"/"the end of" after `floor`."""
    family = m.lastgroup
    interval = RESOLVERS[family](m, c) if family else None
    start = m.start()
    if interval is None or interval[0] > interval[1]:
        return None
    if interval[2] in _MODIFIABLE and (mod := modifier_before(c, start)) and mod.start() >= floor:
        if mod["nth"]:
            if interval[2] != "month":
                return start, interval
            return mod.start(), _nth_of_month(interval[0], mod["nth"], mod["nth_u"])
        edge = mod["edge"]
        kind = {"beginning": "begin", "start": "begin", "middle": "mid"}.get(edge, edge) if edge else mod["third"]
        interval, start = _apply_modifier(interval, kind), mod.start()
    return start, interval
