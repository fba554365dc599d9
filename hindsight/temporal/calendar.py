"""Calendar arithmetic behind `hindsight.temporal.expressions`: the spans of calendar units, shifts
by units, and which year a bare month or season falls in."""

from __future__ import annotations

from calendar import monthrange
from datetime import date, datetime, timedelta, timezone

from hindsight.temporal.vocab import SEASONS

Interval = tuple[date, date, str]  # first day, last day, granularity


def add_months(day: date, months: int) -> date:
    """`day` moved by whole months, clamped to the last day of a shorter month."""
    year, month0 = divmod(day.year * 12 + day.month - 1 + months, 12)
    return date(year, month0 + 1, min(day.day, monthrange(year, month0 + 1)[1]))


def month_span(year: int, month: int) -> Interval:
    return date(year, month, 1), date(year, month, monthrange(year, month)[1]), "month"


def year_span(year: int) -> Interval:
    return date(year, 1, 1), date(year, 12, 31), "year"


def week_span(day: date) -> Interval:
    """The Monday..Sunday week of `day`."""
    monday = day - timedelta(days=day.weekday())
    return monday, monday + timedelta(days=6), "week"


def weekend_span(day: date) -> Interval:
    """The Saturday..Sunday at the end of `day`'s week."""
    saturday = day - timedelta(days=day.weekday()) + timedelta(days=5)
    return saturday, saturday + timedelta(days=1), "weekend"


def season_span(name: str, start_year: int) -> Interval:
    first = date(start_year, SEASONS[name], 1)
    last = add_months(first, 2)
    return first, last.replace(day=monthrange(last.year, last.month)[1]), "season"


def unit_span(day: date, unit: str) -> Interval:
    """The calendar unit that contains `day`."""
    if unit in ("week", "fortnight"):
        return week_span(day)
    if unit == "month":
        return month_span(day.year, day.month)
    if unit == "year":
        return year_span(day.year)
    if unit == "decade":
        first = day.year - day.year % 10
        return date(first, 1, 1), date(first + 9, 12, 31), "decade"
    return day, day, "day"


def shift(moment: datetime, amount: int, unit: str) -> datetime:
    """`moment` moved by `amount` units; months and longer keep the day of the month if they can. Hours and
    minutes are elapsed time, read on the moment's clock: across a DST change, "in 24 hours" is 23:00 or 01:00."""
    if unit in ("minute", "hour"):
        if moment.tzinfo is None:
            return moment + timedelta(**{unit + "s": amount})
        return (moment.astimezone(timezone.utc) + timedelta(**{unit + "s": amount})).astimezone(moment.tzinfo)
    if unit in ("day", "week", "fortnight"):
        return moment + timedelta(days=amount * {"day": 1, "week": 7, "fortnight": 14}[unit])
    months = amount * {"month": 1, "year": 12, "decade": 120}[unit]
    return datetime.combine(add_months(moment.date(), months), moment.timetz())


def relative_unit(today: date, unit: str, offset: int) -> Interval:
    """The week/weekend/month/year `offset` units from the one containing `today`."""
    if unit in ("week", "weekend"):
        day = today + timedelta(days=7 * offset)
        return week_span(day) if unit == "week" else weekend_span(day)
    if unit == "month":
        day = add_months(today.replace(day=1), offset)
        return month_span(day.year, day.month)
    return year_span(today.year + offset)


def two_digit_year(digits: str, today: date) -> int:
    """20xx unless that is more than ten years after `today`, then 19xx."""
    year = 2000 + int(digits)
    return year if year <= today.year + 10 else year - 100


def year_token(token: str, today: date) -> int:
    """The year a "2019" or "'19" token names."""
    return two_digit_year(token[1:], today) if token[0] in "'’" else int(token)


def nearest_year(month: int, today: date) -> int:
    """The year whose `month` lies nearest `today`'s month: at most 5 months ahead or 6 back."""
    delta = month - today.month
    if delta >= 6:
        return today.year - 1
    if delta < -6:
        return today.year + 1
    return today.year


def _season_instances(today: date, name: str) -> list[Interval]:
    """The seasons called `name` starting from two years before to one after `today`'s year."""
    instances = []
    for start_year in range(today.year - 2, today.year + 2):
        try:
            instances.append(season_span(name, start_year))
        except (ValueError, OverflowError):
            continue
    return instances


def relative_season(today: date, name: str, offset: int) -> Interval | None:
    """The latest season called `name` already over (offset < 0), the first not yet started
    (offset > 0), or the one whose middle is nearest `today` (0; a tie goes to the earlier)."""
    instances = _season_instances(today, name)
    if offset < 0:
        over = [s for s in instances if s[1] < today]
        return over[-1] if over else None
    if offset > 0:
        ahead = [s for s in instances if s[0] > today]
        return ahead[0] if ahead else None
    return min(instances, key=lambda s: abs((s[0] + (s[1] - s[0]) / 2 - today).days), default=None)
