"""Resolvers for phrases counted from the reference in `hindsight.temporal.expressions`: "3 days ago",
"in two weeks", "yesterday", "last/this/next X", rolling windows, vague times and weekends.
Each takes a match of its family's template (temporal/patterns.py) and returns an Interval, or None
to reject the match."""

from __future__ import annotations

import re
from datetime import timedelta

from hindsight.temporal.calendar import (
    Interval,
    month_span,
    relative_season,
    relative_unit,
    shift,
    unit_span,
    weekend_span,
)
from hindsight.temporal.context import Context, modifier_before, prev_word
from hindsight.temporal.vocab import (
    BARE_PLURAL,
    DETERMINERS,
    FUZZY_QUANTITIES,
    MONTHS,
    NUMBER_WORDS,
    SEASONS,
    UNIT_RANK,
    UNITS,
    VAGUE,
    WEEKDAYS,
    WEEKEND_PREPOSITIONS,
)


def _quantity(word: str | None, plural: bool) -> tuple[int, int] | None:
    """(fewest, most) for a quantity phrase; None when it is not a quantity."""
    if word is None:
        return BARE_PLURAL if plural else None
    if word.isdigit():
        return int(word), int(word)
    words = word.replace("-", " ").split()
    for key, value in FUZZY_QUANTITIES.items():
        if key in words:
            return value
    joined = " ".join(words)
    if joined in NUMBER_WORDS:
        return NUMBER_WORDS[joined], NUMBER_WORDS[joined]
    total = sum(NUMBER_WORDS.get(w, 0) for w in words)
    return (total, total) if total else None


def _offset_span(c: Context, parts: list[tuple[tuple[int, int], str]], sign: int) -> Interval:
    """Span `parts` (quantity, unit) away from the reference, towards `sign`."""
    near, far = c.ref, c.ref
    for (low, high), unit in parts:
        near, far = shift(near, sign * low, unit), shift(far, sign * high, unit)
    if near == far:
        return unit_span(near.date(), min((u for _, u in parts), key=UNIT_RANK.__getitem__))
    first, last = sorted((near.date(), far.date()))
    return first, last, "range"


def ago(m: re.Match[str], c: Context) -> Interval | None:
    first = _quantity(m["ag_q"], bool(m["ag_pl"]))
    if first is None:
        return None
    parts = [(first, UNITS[m["ag_u"]])]
    if m["ag_q2"]:
        second = _quantity(m["ag_q2"], True)
        if second is None:
            return None
        parts.append((second, UNITS[m["ag_u2"]]))
    return _offset_span(c, parts, -1 if m["ag_ago"] else 1)


def future(m: re.Match[str], c: Context) -> Interval | None:
    amount = _quantity(m["in_q"], True)
    return None if amount is None else _offset_span(c, [(amount, UNITS[m["in_u"]])], 1)


def named_day(m: re.Match[str], c: Context) -> Interval | None:
    phrase = " ".join(m.group().split())
    if m["nm_u"]:
        return relative_unit(c.today, m["nm_u"], -2 if "before last" in phrase else 2)
    if "before yesterday" in phrase or "after tomorrow" in phrase:
        offset = -2 if "before" in phrase else 2
    elif phrase.startswith(("yesterday", "last night")):
        offset = -1
    else:
        offset = 1 if phrase.startswith("tomorrow") else 0
    value = c.today + timedelta(days=offset)
    return value, value, "day"


def within_unit(m: re.Match[str], c: Context) -> Interval | None:
    first, last, _ = relative_unit(c.today, m["el_u"], 0)
    return (first, c.today, "range") if m["el_k"] == "earlier" else (c.today, last, "range")


def last_this_next(m: re.Match[str], c: Context) -> Interval | None:
    keyword, unit = " ".join(m["rel_k"].split()), m["rel_u"].rstrip(".")
    offset = {"last": -1, "this past": -1, "previous": -1, "the previous": -1, "this": 0}.get(keyword, 1)
    if unit in ("week", "weekend", "month", "year"):
        return relative_unit(c.today, unit, offset)
    if unit in WEEKDAYS:
        weekday, today_wd = WEEKDAYS[unit], c.today.weekday()
        if offset == 0:
            value = c.today + timedelta(days=weekday - today_wd)
        elif offset < 0:
            value = c.today - timedelta(days=(today_wd - weekday) % 7 or 7)
        else:
            value = c.today + timedelta(days=(weekday - today_wd) % 7 or 7)
        return value, value, "day"
    if c.strict and unit in ("may", "march", "fall", "spring"):
        if prev_word(c, m.start()) in DETERMINERS:
            return None
        if unit == "may" and offset == 0 and not c.text[m.start("rel_u")].isupper():
            return None
    if unit in SEASONS:
        return relative_season(c.today, unit, offset)
    month = MONTHS[unit]
    if offset == 0:
        return month_span(c.today.year, month)
    if offset < 0:
        return month_span(c.today.year if month < c.today.month else c.today.year - 1, month)
    return month_span(c.today.year if month > c.today.month else c.today.year + 1, month)


def rolling(m: re.Match[str], c: Context) -> Interval | None:
    keyword, unit, plural = m["ro_k"], UNITS[m["ro_u"]], bool(m["ro_pl"])
    if (
        not m["ro_q"]
        and not plural
        and (unit in ("minute", "hour", "day") or (not m["ro_the"] and keyword in ("last", "next")))
    ):
        return None
    amount = _quantity(m["ro_q"], plural) or (1, 1)
    far = shift(c.ref, amount[1] * (1 if keyword in ("next", "coming") else -1), unit).date()
    first, last = sorted((c.today, far))
    return first, last, "range"


def vague(m: re.Match[str], c: Context) -> Interval | None:
    phrase = " ".join(m.group().split())
    if "other" in phrase:
        key = "other week" if phrase.endswith("week") else "other day"
    elif "while" in phrase or "some time" in phrase:
        key = "while"
    elif ("long" in phrase or "ages" in phrase) and not phrase.startswith("not"):
        key = "long"
    else:
        key = "recently"
    unit, first, last = VAGUE[key]
    return shift(c.ref, first, unit).date(), shift(c.ref, last, unit).date(), "range"


def the_weekend(m: re.Match[str], c: Context) -> Interval | None:
    if c.strict and prev_word(c, m.start()) not in WEEKEND_PREPOSITIONS:
        return None
    return weekend_span(c.today if c.today.weekday() >= 5 else c.today - timedelta(days=7))


def the_unit(m: re.Match[str], c: Context) -> Interval | None:
    # Only as "the end of the month" and the like; "the week" alone is too vague.
    return relative_unit(c.today, m["tu_u"], 0) if modifier_before(c, m.start()) else None
