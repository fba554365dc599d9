"""Resolvers for phrases that name a date in `hindsight.temporal.expressions`: numeric and written
dates, years, decades, and bare months, seasons and weekdays. Each takes a match of its family's
template (temporal/patterns.py) and returns an Interval, or None to reject the match."""

from __future__ import annotations

import re
from datetime import date, timedelta

from hindsight.temporal.calendar import (
    Interval,
    add_months,
    month_span,
    nearest_year,
    relative_season,
    season_span,
    two_digit_year,
    year_span,
    year_token,
)
from hindsight.temporal.context import (
    Context,
    after_every,
    before_plural_noun,
    in_date_context,
    in_future_tense,
    modifier_before,
    prev_word,
)
from hindsight.temporal.vocab import (
    AMBIGUOUS_MONTHS,
    DECADE_WORDS,
    MONTHS,
    ORDINAL_DAY_PREPOSITIONS,
    SUBJECTS,
    WEEKDAY_PREPOSITIONS,
    WEEKDAYS,
    YEAR_PREPOSITIONS,
    month_number,
)


def iso_date(m: re.Match[str], c: Context) -> Interval | None:
    day = date(int(m["iso_y"]), int(m["iso_m"]), int(m["iso_d"]))
    return day, day, "day"


def numeric_date(m: re.Match[str], c: Context) -> Interval | None:
    a, b, sep, year_text = int(m["nd_a"]), int(m["nd_b"]), m["nd_s"], m["nd_y"]
    if len(year_text) == 2 and sep != "/":
        return None
    year = two_digit_year(year_text, c.today) if len(year_text) == 2 else int(year_text)
    month, day = (b, a) if sep == "." or (a > 12 >= b) else (a, b)
    value = date(year, month, day)
    return value, value, "day"


def full_date(m: re.Match[str], c: Context) -> Interval | None:
    prefix = f"{m.lastgroup}_"
    year = year_token(m[prefix + "y"], c.today)
    value = date(year, month_number(m[prefix + "m"]), int(m[prefix + "d"]))
    return value, value, "day"


def month_year(m: re.Match[str], c: Context) -> Interval | None:
    return month_span(year_token(m["my_y"], c.today), month_number(m["my_m"]))


def month_day(m: re.Match[str], c: Context) -> Interval | None:
    prefix = f"{m.lastgroup}_"
    word = m[prefix + "m"].rstrip(".")
    # "2 may go" is not a date; "2 May", "2nd may" and "2 of may" are.
    bare = prefix == "dm_" and not (m["dm_o"] or m["dm_of"] or c.text[m.start("dm_m")].isupper())
    if bare and c.strict and word in AMBIGUOUS_MONTHS:
        return None
    if c.strict and word in ("may", "march") and prev_word(c, m.start()) in SUBJECTS:
        return None
    month = MONTHS[word]
    value = date(nearest_year(month, c.today), month, int(m[prefix + "d"]))
    return value, value, "day"


def ordinal_day(m: re.Match[str], c: Context) -> Interval | None:
    if c.strict and not m["od_wd"] and prev_word(c, m.start()) not in ORDINAL_DAY_PREPOSITIONS:
        return None
    value = c.today.replace(day=int(m["od_d"]))
    if value < c.today and in_future_tense(c, m.start(), m.end()):
        value = add_months(c.today.replace(day=1), 1).replace(day=value.day)  # "I'll pay on the 3rd": next month's
    return value, value, "day"


def decade(m: re.Match[str], c: Context) -> Interval | None:
    if m["dec_y4"]:
        first = int(m["dec_y4"])
        if first % 100 == 0 and first < 2000:
            return date(first, 1, 1), date(first + 99, 12, 31), "century"
    else:
        if c.strict and not m["dec_the"] and modifier_before(c, m.start()) is None:
            return None
        tens = int(m["dec_y2"]) if m["dec_y2"] else DECADE_WORDS[m["dec_w"]]
        first = 2000 + tens if 2000 + tens <= c.today.year else 1900 + tens
    return date(first, 1, 1), date(first + 9, 12, 31), "decade"


def season(m: re.Match[str], c: Context) -> Interval | None:
    name = m["se_s"]
    if m["se_y"]:
        return season_span(name, year_token(m["se_y"], c.today))
    # "the summer" is a time; "the spring" and "the fall" may be water and a tumble.
    after_the = name not in ("spring", "fall") and c.low.endswith("the ", 0, m.start())
    if not (after_the or in_date_context(c, m.start())) or c.low.startswith(" of", m.end()):
        return None
    return relative_season(c.today, name, 0)  # a bare season is "this" season: the nearest


def year(m: re.Match[str], c: Context) -> Interval | None:
    return year_span(int(m["yr"])) if in_date_context(c, m.start(), YEAR_PREPOSITIONS) else None


def weekday(m: re.Match[str], c: Context) -> Interval | None:
    # A habit, not a day: "every Saturday", "our Sunday brunches", "Sunday mornings". After "on"
    # only a plural time of day makes a habit: "on Sunday mornings", but "on Sunday friends came".
    if after_every(c, m.start()):
        return None
    if before_plural_noun(c, m.end("wd")) and (
        m.end() > m.end("wd") or prev_word(c, m.start()) not in WEEKDAY_PREPOSITIONS
    ):
        return None
    if prev_word(c, m.start()) != "since" and in_future_tense(c, m.start(), m.end()):
        value = c.today + timedelta(days=(WEEKDAYS[m["wd"]] - c.today.weekday()) % 7 or 7)
    else:
        value = c.today - timedelta(days=(c.today.weekday() - WEEKDAYS[m["wd"]]) % 7)
    return value, value, "day"


def month(m: re.Match[str], c: Context) -> Interval | None:
    word = m["mo"].rstrip(".")
    if c.strict:
        if after_every(c, m.start()):
            return None
        if word in AMBIGUOUS_MONTHS and not in_date_context(c, m.start()):
            return None
    number = MONTHS[word]
    return month_span(nearest_year(number, c.today), number)
