"""Temporal normalization: resolve time expressions against a reference datetime.

Every expression resolves to whole days: ``TimeSpan.start`` is 00:00:00 of the first day and
``TimeSpan.end`` is 23:59:59.999999 of the last day (both inclusive); times of day are ignored.
The days are calendar days where the reference was said: "tomorrow" said at 23:30 on November 19
at UTC-8 is November 20. They are written with the UTC label (November 20, 00:00 UTC to 23:59 UTC),
the form occurrence days are stored and compared in, whatever the speaker's offset. A naive
reference is taken as UTC. ``TimeSpan.text`` is the phrase as written, without a leading
"in"/"on" unless it carries meaning ("in 3 days").

Regex rules do the work (``rules`` and the modules it lists), tried only
at words near an anchor (a number or a date word) so that text without one costs a split and a
set lookup. dateparser is only asked by ``parse_interval``, about a short phrase that has an
anchor but that the rules cannot resolve whole ("June 5th at 3pm"); it is never run over free
text, and where it disagrees with the rules' reading of part of the phrase only about the year,
the rules' year wins.

Choices for ambiguous phrases (reference = the day the text was said):

=============================  ===========================================================
phrase                         resolves to
=============================  ===========================================================
"March", "in March", "March    the nearest March: of the reference year if it is at most 5
3rd", "end of March", "mid-    months after or 6 before the reference month, else of the
March" (no year)               adjacent year on the near side (6 months either way: the past
                               one). Said in March 2024, "April" is April 2024 and "September"
                               is September 2023
"last March" / "next March"    latest March strictly before / first strictly after the
                               reference month; "this March": the reference year's
"Monday", "on Monday"          latest Monday on or before the reference day (today if Monday)
"Mondays", "every Monday",     nothing: a habit, not a date. So is a weekday before a plural
"on weekends", "Sunday         noun ("our Sunday brunches"), except after "on"/"by"/"until"/
mornings"                      "since" ("on Sunday friends came"); a plural time of day
                               ("on Sunday mornings") is a habit even then
"last/next Friday"             nearest Friday strictly before / after the reference day
                               ("previous Friday", "this past Friday" = "last Friday")
"this Friday"                  Friday of the reference Monday..Sunday week
"last/this/next weekend"       Sat..Sun of the previous / current / next week
"the weekend", "over the       latest weekend that has started (current one on Sat/Sun)
weekend"
"summer", "this summer"        the summer whose middle is nearest the reference day (a tie:
(no year)                      the past one); "winter 2019" = Dec 2019..Feb 2020; "last
                               summer" = latest one already over; "next summer" = first one
                               not yet started
"on the 5th"                   5th of the reference month (nothing if it has no such day)
"N days/weeks/months/years     the day / Mon..Sun week / calendar month / calendar year that
ago", "in N ...", "N ... from  lies N units away; hours and minutes resolve to their day
now"
"a couple of" / "a few" /      2..3 / 2..7 / 3..9 / 5..20 units ("a few days ago" = ref-7d ..
"several" / "many" N ago       ref-2d); a bare plural ("weeks ago") counts as "several"
"the past/last N days",        rolling window from N units before the reference to the
"the next few weeks"           reference day (or forward)
"recently", "lately", "not     ref-30d .. ref
long ago"
"how many days ago", "how      nothing: a question about the elapsed time, not a time
long ago"
"the other day" / "the other   ref-7d .. ref-1d / ref-21d .. ref-7d
week"
"a while ago", "some time ago" ref-180d .. ref-14d
"long ago", "ages ago"         ref-10y .. ref-1y
"earlier/later this month"     start of the month .. ref / ref .. end of the month
"the end of the month/week"    as "the end of this month/week"; "the week" alone is nothing
"early/mid/late X"             first / middle / last third of X (days of a week or month,
                               months of a year or season, years of a decade)
"the beginning/end of X"       first / last sixth of X, at least one unit ("end of last year"
                               = Nov..Dec)
"the first/.../last week of    days 1-7, 8-14, 15-21, 22-28 / the last seven days of the month;
a month"                       "the Nth/last weekend of" it: its Nth / last Saturday and Sunday
"last night"                   the previous day; "tonight", "this morning": the reference day
"the 1990s", "the '90s"        1990..1999; "the 1800s" is a century, "the 2000s" a decade;
                               two-digit decades are 20xx if not after the reference year
"5/6/2023"                     US month/day unless the first number is > 12; "5.6.2023" is
                               day.month; two-digit years only with "/", pivot at ref+10y
=============================  ===========================================================

Bare years need a preposition ("in 2019"); month words that are also words or names (May,
March, April, June, August, abbreviations) need one unless a day or year is attached.
Explicit years outside 1000..2999 are ignored; results that fall outside the datetime range
are dropped.
"""

from __future__ import annotations

import logging
import re
import string
from dataclasses import dataclass
from datetime import datetime, time, timedelta, timezone

from hindsight.temporal import patterns
from hindsight.temporal.calendar import Interval, unit_span
from hindsight.temporal.context import Context
from hindsight.temporal.rules import resolve
from hindsight.temporal.values import in_zone

logger = logging.getLogger(__name__)

_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
_SPACER = str.maketrans(dict.fromkeys(string.punctuation + "‘’“”–—…", " "))
_MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August",
                "September", "October", "November", "December")  # fmt: skip
# "How many weeks ago", "how long ago": the phrase asks how much time has passed; it names no time.
_HOW = re.compile(r"(?:^|\W)how\s+$")
_HOW_CHARS = 16  # room for a space, "how" and the spaces after it
_HOW_WORDS = ("many", "much", "long")
_DAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


@dataclass(frozen=True)
class TimeSpan:
    """A resolved time expression: whole days from `start` to `end`, both inclusive."""

    start: datetime
    end: datetime
    text: str

    @property
    def mid(self) -> datetime:
        """The midpoint of the span."""
        return self.start + (self.end - self.start) / 2


def _aware(value: datetime) -> datetime:
    """`value` with its own offset; a naive value is UTC."""
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None or value.utcoffset() is None else value


def in_zone_of(value: datetime, reference: datetime) -> datetime:
    """`value` on the clock of `reference`'s zone (naive values are UTC); as it is where that would overflow."""
    return in_zone(value, _aware(reference).tzinfo or timezone.utc)


def _anchor_ranges(low: str) -> list[tuple[int, int]]:
    """Character ranges that may hold an expression: each anchor and the LEAD_CHARS before it."""
    first_digit = patterns.NUMBER_RE.search(low)
    anchors = [m.span() for m in patterns.NUMBER_RE.finditer(low, first_digit.start())] if first_digit else []
    for word in patterns.ANCHOR_WORDS.intersection(low.translate(_SPACER).split()):
        at = low.find(word)
        while at >= 0:
            anchors.append((at, at + len(word)))
            at = low.find(word, at + 1)
    ranges: list[tuple[int, int]] = []
    for start, end in sorted(anchors):
        start = max(0, start - patterns.LEAD_CHARS)
        if ranges and start <= ranges[-1][1]:
            ranges[-1] = (ranges[-1][0], max(end, ranges[-1][1]))
        else:
            ranges.append((start, end))
    return ranges


def _scan(text: str, ref: datetime, strict: bool) -> list[tuple[int, int, Interval]]:
    """All (start, end, interval) expressions in `text`, in order and without overlaps."""
    low = text.lower()
    if len(low) != len(text):  # some characters lower-case to several; keep offsets aligned
        low = text.translate(_ASCII_LOWER)
    ranges = _anchor_ranges(low)
    if not ranges:
        return []
    c = Context(text, low, ref, ref.date(), strict)
    found: list[tuple[int, int, Interval]] = []
    floor = 0
    for range_start, range_end in ranges:
        for token in patterns.TOKEN_RE.finditer(low, max(floor, range_start), range_end):
            pos, word = token.start(), token.group()
            pattern = patterns.DISPATCH.get(patterns.DIGIT if word[0] <= "9" else word)
            if pos < floor or pattern is None or (pos and low[pos - 1].isalnum()):
                continue
            if pos >= 2 and low[pos - 1] in ".,:/-" and low[pos - 2].isdigit():
                continue  # the tail of a number such as "1.5" or "10:30"
            m = pattern.match(low, pos)
            if m is None:
                continue
            try:
                resolved = resolve(m, c, floor)
            except (ValueError, OverflowError):
                continue  # an impossible date, or one outside the datetime range
            if resolved is not None:
                if not _asks_elapsed(low, resolved[0]):
                    found.append((resolved[0], m.end(), resolved[1]))
                floor = m.end()
    return found


def _asks_elapsed(low: str, start: int) -> bool:
    """Whether the expression at `start` is the object of "how many/much/long" ("remember how two weeks ago ..."
    still names a time)."""
    return low.startswith(_HOW_WORDS, start) and _HOW.search(low, max(0, start - _HOW_CHARS), start) is not None


def _to_span(interval: Interval, text: str) -> TimeSpan:
    first, last, _ = interval
    return TimeSpan(
        datetime.combine(first, time.min, tzinfo=timezone.utc),
        datetime.combine(last, time.max, tzinfo=timezone.utc),
        text,
    )


def find_time_expressions(text: str, reference: datetime) -> list[TimeSpan]:
    """All time expressions found in free text, in order of appearance. Never raises on any input."""
    try:
        ref = _aware(reference)
        return [_to_span(iv, text[s:e]) for s, e, iv in _scan(text, ref, strict=True)]
    except Exception:  # the contract is to never raise on user text
        logger.warning("time expression scan failed", exc_info=True)
        return []


def parse_interval(phrase: str, reference: datetime) -> TimeSpan | None:
    """Resolve a phrase that is entirely a time expression ("last March") or None."""
    try:
        ref = _aware(reference)
        text = phrase.strip()
        if not text or len(text) > 200:
            return None
        found = _scan(text, ref, strict=False)
        if len(found) > 1:
            return None
        if found:
            start, end, interval = found[0]
            rest = (text[:start] + " " + text[end:]).lower()
            if patterns.FILLER_RE.fullmatch(rest):
                return _to_span(interval, text[start:end])
        if len(text) <= 64 and _anchor_ranges(text.lower()):
            fallback = _dateparser_interval(text, ref, found[0][2] if found else None)
            return None if fallback is None else _to_span(fallback, text)
        return None
    except Exception:  # the contract is to never raise on user text
        logger.warning("time phrase parse failed", exc_info=True)
        return None


def _dateparser_interval(phrase: str, ref: datetime, partial: Interval | None) -> Interval | None:
    """Ask dateparser about a short phrase the rules could not resolve whole.

    `partial` is what the rules made of part of the phrase ("June 5th" in "June 5th at 3pm"):
    dateparser prefers past dates, so where it disagrees only about the year, the rules' year wins.
    """
    try:
        from dateparser.date import DateDataParser

        settings = {"RELATIVE_BASE": ref.replace(tzinfo=None), "PREFER_DATES_FROM": "past",
                    "RETURN_AS_TIMEZONE_AWARE": False}  # fmt: skip
        data = DateDataParser(languages=["en"], settings=settings).get_date_data(phrase)
    except Exception:  # dateparser raises assorted errors on odd input
        logger.debug("dateparser failed on %r", phrase, exc_info=True)
        return None
    if data.date_obj is None or not 1000 <= data.date_obj.year <= 2999:
        return None
    day = data.date_obj.date()  # naive: the reference's own clock
    if partial is not None and partial[0].year == partial[1].year != day.year:
        try:
            moved = day.replace(year=partial[0].year)
        except ValueError:  # February 29
            moved = day
        if partial[0] <= moved <= partial[1]:
            day = moved
    return unit_span(day, data.period or "day")


# --- formatting ----------------------------------------------------------------------------


def format_date(value: datetime) -> str:
    """The long English date of `value`'s own calendar day: "Saturday, June 9, 2024"."""
    day = value.date()
    return f"{_DAY_NAMES[day.weekday()]}, {_MONTH_NAMES[day.month - 1]} {day.day}, {day.year}"


def format_span(start: datetime, end: datetime | None) -> str:
    """The shortest English name of the calendar days from `start` to `end` (inclusive; None: one day), as each
    holds them: one day long ("Saturday, June 9, 2024"), whole months or years by name ("June 2024", "May to July
    2024", "2024"), other ranges without weekdays ("June 9 to 12, 2024", "May 30 to June 2, 2024")."""
    first = start.date()
    last = first if end is None else max(first, end.date())
    if first == last:
        return format_date(start)
    month, last_month = _MONTH_NAMES[first.month - 1], _MONTH_NAMES[last.month - 1]
    if first.day == 1 and (last + timedelta(days=1)).day == 1:  # whole months
        if (first.month, last.month) == (1, 12):
            return str(first.year) if first.year == last.year else f"{first.year} to {last.year}"
        if first.year != last.year:
            return f"{month} {first.year} to {last_month} {last.year}"
        return f"{month} {first.year}" if first.month == last.month else f"{month} to {last_month} {first.year}"
    if first.year != last.year:
        return f"{month} {first.day}, {first.year} to {last_month} {last.day}, {last.year}"
    if first.month != last.month:
        return f"{month} {first.day} to {last_month} {last.day}, {first.year}"
    return f"{month} {first.day} to {last.day}, {first.year}"


def format_relative(value: datetime, reference: datetime, ago: bool = False) -> str:
    """How far `value` is from `reference` in calendar days of `reference`'s zone: "5 days before", "the same
    day"; with `ago`, as seen from `reference`: "5 days ago", "in 2 weeks", "today"."""
    days = (in_zone_of(value, reference).date() - _aware(reference).date()).days
    if days == 0:
        return "today" if ago else "the same day"
    span = abs(days)
    if span < 14:
        count, unit = span, "day"
    elif span < 60:
        count, unit = round(span / 7), "week"
    elif span < 335:
        count, unit = round(span / 30.44), "month"
    else:
        count, unit = max(1, round(span / 365.25)), "year"
    amount = f"{count} {unit}{'' if count == 1 else 's'}"
    if ago:
        return f"{amount} ago" if days < 0 else f"in {amount}"
    return f"{amount} {'before' if days < 0 else 'after'}"
