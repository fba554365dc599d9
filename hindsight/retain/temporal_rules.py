"""Rules behind `hindsight.retain.temporal`: vocabulary, regexes and one resolver per family.

Patterns run on lower-cased text without re.IGNORECASE, and only at words that can start an
expression (DISPATCH): one combined case-insensitive regex over whole texts is >10x slower.
"""

from __future__ import annotations

import math
import re
from calendar import monthrange
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta

MONTHS: dict[str, int] = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7,
    "august": 8, "september": 9, "october": 10, "november": 11, "december": 12,
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9,
    "sept": 9, "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip
# Month words that are also common English words or given names: they need a date context.
AMBIGUOUS_MONTHS = frozenset(
    {"may", "march", "april", "june", "august", "jan", "feb", "mar", "apr", "jun",
     "jul", "aug", "sep", "sept", "oct", "nov", "dec"}
)  # fmt: skip
WEEKDAYS: dict[str, int] = {
    "monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4, "saturday": 5,
    "sunday": 6,
}  # fmt: skip
# Season name -> first month; every season lasts three months (northern hemisphere).
SEASONS: dict[str, int] = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}

NUMBER_WORDS: dict[str, int] = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17,
    "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
    "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100, "dozen": 12,
    "a dozen": 12,
}  # fmt: skip
# Vague quantity word -> (fewest, most) units it can mean.
FUZZY_QUANTITIES: dict[str, tuple[int, int]] = {
    "couple": (2, 3), "few": (2, 7), "handful": (3, 6), "several": (3, 9), "many": (5, 20),
}  # fmt: skip
# A plural unit with no quantity ("years ago") means "several".
BARE_PLURAL: tuple[int, int] = (3, 9)
UNITS: dict[str, str] = {
    "minute": "minute", "min": "minute", "hour": "hour", "hr": "hour", "day": "day",
    "week": "week", "wk": "week", "fortnight": "fortnight", "month": "month",
    "year": "year", "yr": "year", "decade": "decade",
}  # fmt: skip
# Vague phrase key -> (unit, first offset, last offset) relative to the reference day.
VAGUE: dict[str, tuple[str, int, int]] = {
    "recently": ("day", -30, 0),
    "other day": ("day", -7, -1),
    "other week": ("day", -21, -7),
    "while": ("day", -180, -14),
    "long": ("year", -10, -1),
}
DECADE_WORDS: dict[str, int] = {
    "twen": 20, "thir": 30, "for": 40, "fif": 50, "six": 60, "seven": 70, "eigh": 80, "nine": 90,
}  # fmt: skip

# Words that, right before a bare month/season/year, make it a date ("in May", "since 2019").
DATE_PREPOSITIONS = frozenset(
    {"in", "during", "since", "until", "till", "til", "by", "from", "through", "throughout",
     "around", "before", "after", "of", "over", "circa", "early", "mid", "late", "all", "year"}
)  # fmt: skip
# "page 12 of 2000" is not a year; "the summer of 2019" and "the end of 2019" have their own rules.
YEAR_PREPOSITIONS = DATE_PREPOSITIONS - {"of"}
ORDINAL_DAY_PREPOSITIONS = frozenset({"on", "by", "until", "till", "since", "before", "after", "from", "to", "through"})
WEEKEND_PREPOSITIONS = frozenset({"over", "on", "at", "during", "for", "all"})
HABITUAL = frozenset({"every", "each"})
_UNIT_RANK = {"minute": 0, "hour": 1, "day": 2, "week": 3, "fortnight": 3, "month": 4, "year": 5, "decade": 6}
_DETERMINERS = frozenset({"the", "a", "his", "her", "their", "our", "my", "your", "its", "that"})
# Before "may"/"march" these make it a verb: "I may 2", "they march 5 miles".
_SUBJECTS = frozenset({"i", "you", "we", "they", "he", "she", "it", "who", "that", "which", "this", "there", "one"})

Interval = tuple[date, date, str]  # first day, last day, granularity


@dataclass(frozen=True)
class Context:
    """What handlers need: the text, its lower-cased copy and the reference."""

    text: str
    low: str
    ref: datetime
    today: date
    strict: bool


# --- regexes ------------------------------------------------------------------------------


def _alt(words: Iterable[str]) -> str:
    """Regex alternation of `words`, longest first so prefixes never shadow full words."""
    return "(?:" + "|".join(sorted((re.escape(w) for w in words), key=len, reverse=True)) + ")"


_ABBREVIATIONS = frozenset(m for m in MONTHS if len(m) <= 4 and m not in ("may", "june", "july"))
# Building blocks substituted into the family templates below as %(NAME)s.
_TOKENS = {
    # Abbreviations may end in a period ("Dec."); after a full name it ends the sentence.
    "MONTH": _alt(m for m in MONTHS if m not in _ABBREVIATIONS) + r"\b|" + _alt(_ABBREVIATIONS) + r"\b\.?",
    "MONTH_WORD": _alt(MONTHS),
    "WD": _alt(WEEKDAYS),
    # An optional weekday before a date: "Saturday, June 8".
    "WDP": r"(?:" + _alt(WEEKDAYS) + r"|mon|tues?|wed|thu(?:rs?)?|fri|sat|sun)\b\.?,?\s+",
    "SEASON": _alt(SEASONS),
    "DAY": r"(?:[12][0-9]|3[01]|0?[1-9])(?![0-9])",
    "ORD": r"(?:st|nd|rd|th)",
    "YEAR": r"(?:[12][0-9]{3}|['’][0-9]{2})(?![0-9])",
    "QTY": r"(?:[0-9]{1,6}|a\s+couple(?:\s+of)?|couple\s+of|a\s+few|few|several|many|a\s+handful\s+of|"
    r"(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)[- ](?:one|two|three|four|five|six|seven|eight|nine)"
    r"\b|" + _alt(k for k in NUMBER_WORDS if k not in ("a", "an")) + r"|an?)",
    "UNIT": _alt(UNITS),
    "POD": r"(?:\s+(?:morning|afternoon|evening|night))?",
    # A bare day number must not be followed by a noun ("may 5 people", "on the 5th floor").
    "NO_NOUN": r"(?!\s+(?!(?:at|and|or|to|through|until|till|in|on|from|was|is|we|i|it|when|after|before|but|so"
    r"|you|he|she|they|my|our)\b)[a-z])",
}
# One template per family, tried in this order at a word; handlers in _HANDLERS resolve them.
_TEMPLATES = {
    "iso": r"(?P<iso_y>[12][0-9]{3})(?P<iso_s>[-/.])(?P<iso_m>1[0-2]|0?[1-9])(?P=iso_s)(?P<iso_d>%(DAY)s)",
    "numdate": r"(?P<nd_a>[0-9]{1,2})(?P<nd_s>[-/.])(?P<nd_b>[0-9]{1,2})(?P=nd_s)"
    r"(?P<nd_y>[12][0-9]{3}|[0-9]{2})(?![0-9]|[-/.][0-9])",
    "mdy": r"(?:%(WDP)s)?(?P<mdy_m>%(MONTH)s)\s+(?P<mdy_d>%(DAY)s)%(ORD)s?(?:,\s*|\s+)(?:of\s+)?(?P<mdy_y>%(YEAR)s)",
    "dmy": r"(?:%(WDP)s)?(?:the\s+)?(?P<dmy_d>%(DAY)s)%(ORD)s?\s+(?:of\s+)?(?P<dmy_m>%(MONTH)s)(?:,\s*|\s+)"
    r"(?P<dmy_y>%(YEAR)s)",
    "my": r"(?P<my_m>%(MONTH)s)(?:,\s*|\s+)(?:of\s+)?(?P<my_y>%(YEAR)s)",
    "md": r"(?:%(WDP)s)?(?P<md_m>%(MONTH)s)\s+(?:the\s+)?(?P<md_d>%(DAY)s)(?:%(ORD)s\b|\b(?![.:][0-9])%(NO_NOUN)s)",
    "dm": r"(?:%(WDP)s)?(?:the\s+)?(?P<dm_d>%(DAY)s)(?P<dm_o>%(ORD)s)?\s+(?P<dm_of>of\s+)?(?P<dm_m>%(MONTH)s)",
    "ordday": r"(?P<od_wd>%(WDP)s)?the\s+(?P<od_d>%(DAY)s)%(ORD)s\b%(NO_NOUN)s",
    "decade": r"(?:(?P<dec_the>the)\s+)?(?:(?P<dec_y4>[12][0-9]{2}0)['’]?s|['’]?(?P<dec_y2>[0-9]0)['’]?s"
    r"|(?P<dec_w>twen|thir|for|fif|six|seven|eigh|nine)ties)\b",
    "ago": r"(?:(?P<ag_q>%(QTY)s)\s+)?(?P<ag_u>%(UNIT)s)(?P<ag_pl>s)?"
    r"(?:(?:\s*,\s*|\s+and\s+|\s+)(?P<ag_q2>%(QTY)s)\s+(?P<ag_u2>%(UNIT)s)s?)?"
    r"\s+(?:(?P<ag_ago>ago)|from\s+(?:now|today))\b",
    "future": r"(?<!twice )(?<!once )(?<!times )in\s+(?P<in_q>%(QTY)s)\s+(?P<in_u>%(UNIT)s)s?\b(?!\s+of\b)",
    "named": r"(?:the\s+day\s+(?:before\s+yesterday|after\s+tomorrow)"
    r"|(?:the\s+)?(?P<nm_u>weekend|week|month|year)\s+(?:before\s+last|after\s+next)"
    r"|(?:yesterday|today|tomorrow)%(POD)s|tonight|last\s+night|this\s+(?:morning|afternoon|evening)"
    r"|(?:earlier|later)\s+today)\b",
    "within": r"(?P<el_k>earlier|later)\s+this\s+(?P<el_u>week|month|year)\b",
    "rel": r"(?P<rel_k>this\s+past|this\s+coming|the\s+coming|(?:the\s+)?previous|last|this|next)\s+"
    r"(?P<rel_u>weekend|week|month|year|%(WD)s|%(MONTH_WORD)s|%(SEASON)s)\b(?!\s+of\b)%(POD)s",
    "rolling": r"(?P<ro_the>the\s+)?(?P<ro_k>past|last|previous|next|coming)\s+(?:(?P<ro_q>%(QTY)s)\s+)?"
    r"(?P<ro_u>%(UNIT)s)(?P<ro_pl>s)?\b(?!\s+of\b)",
    "vague": r"(?:recently|lately|not\s+(?:so\s+)?long\s+ago|the\s+other\s+(?:day|night|week)"
    r"|a\s+(?:little\s+)?while\s+(?:ago|back)|some\s+time\s+ago|(?:a\s+)?long\s+time\s+ago|long\s+ago|ages\s+ago)\b",
    "weekend": r"the\s+weekend\b(?!\s+of\b)",
    "the_unit": r"the\s+(?P<tu_u>week|month|year)\b",
    "season": r"(?P<se_s>%(SEASON)s)\b(?:\s+(?:of\s+)?(?P<se_y>%(YEAR)s))?",
    "year": r"(?P<yr>[12][0-9]{3})\b(?![.,:/][0-9])",
    "weekday": r"(?P<wd>%(WD)s)\b%(POD)s",
    "month": r"(?P<mo>%(MONTH)s)",
}
_ALTERNATIVES = {name: template % _TOKENS for name, template in _TEMPLATES.items()}

_THE = frozenset({"the"})
_NAMED_FIRST = frozenset(
    {"weekend", "week", "month", "year", "yesterday", "today", "tomorrow", "tonight", "last", "this",
     "earlier", "later"}
)  # fmt: skip
_WD_PREFIX_WORDS = frozenset(WEEKDAYS) | {"mon", "tue", "tues", "wed", "thu", "thur", "thurs", "fri", "sat", "sun"}
_QTY_WORDS = frozenset(NUMBER_WORDS) | {"couple", "few", "several", "many"}
_UNIT_WORDS = frozenset(UNITS) | {u + "s" for u in UNITS}
DIGIT = "#"
# The words an expression of each family can start with (DIGIT: any number).
_FIRST_WORDS: dict[str, frozenset[str]] = {
    "iso": frozenset({DIGIT}),
    "numdate": frozenset({DIGIT}),
    "mdy": frozenset(MONTHS) | _WD_PREFIX_WORDS,
    "dmy": _THE | _WD_PREFIX_WORDS | {DIGIT},
    "my": frozenset(MONTHS),
    "md": frozenset(MONTHS) | _WD_PREFIX_WORDS,
    "dm": _THE | _WD_PREFIX_WORDS | {DIGIT},
    "ordday": _THE | _WD_PREFIX_WORDS,
    "decade": _THE | {DIGIT} | {w + "ties" for w in DECADE_WORDS},
    "ago": _QTY_WORDS | _UNIT_WORDS | {DIGIT},
    "future": frozenset({"in"}),
    "named": _THE | _NAMED_FIRST,
    "within": frozenset({"earlier", "later"}),
    "rel": frozenset({"this", "the", "last", "next", "previous"}),
    "rolling": frozenset({"the", "past", "last", "previous", "next", "coming"}),
    "vague": frozenset({"recently", "lately", "not", "the", "a", "some", "long", "ages"}),
    "weekend": _THE,
    "the_unit": _THE,
    "season": frozenset(SEASONS),
    "year": frozenset({DIGIT}),
    "weekday": frozenset(WEEKDAYS),
    "month": frozenset(MONTHS),
}


def _build_dispatch() -> dict[str, re.Pattern[str]]:
    """One regex per first word, holding only the families that can start with it, in order."""
    by_families: dict[tuple[str, ...], re.Pattern[str]] = {}
    dispatch: dict[str, re.Pattern[str]] = {}
    for word in set().union(*_FIRST_WORDS.values()):
        families = tuple(name for name in _ALTERNATIVES if word in _FIRST_WORDS[name])
        if families not in by_families:
            body = "|".join(f"(?P<{name}>{_ALTERNATIVES[name]})" for name in families)
            by_families[families] = re.compile(r"(?:" + body + ")")
        dispatch[word] = by_families[families]
    return dispatch


# First word (lower case, or DIGIT) -> the pattern to try at that word.
DISPATCH = _build_dispatch()
# Runs of ASCII letters and digits; a run that starts with a digit dispatches on DIGIT.
TOKEN_RE = re.compile(r"[a-z0-9]+")
# Every time expression contains a number or one of these words.
ANCHOR_WORDS = (
    frozenset(MONTHS) | frozenset(WEEKDAYS) | frozenset(SEASONS) | _UNIT_WORDS
    | {w + "ties" for w in DECADE_WORDS}
    | {"yesterday", "today", "tonight", "tomorrow", "night", "morning", "afternoon", "evening", "weekend",
       "ago", "recently", "lately", "while"}
)  # fmt: skip
NUMBER_RE = re.compile(r"[0-9]+")
# How far before its anchor an expression can start, in characters ("in a couple of weeks").
LEAD_CHARS = 48
# Searched in the text just before a match: "early", "mid-", "the end of".
MODIFIER_BEFORE_RE = re.compile(
    r"(?:\b(?:the\s+)?(?:very\s+)?(?P<edge>beginning|start|end|middle)\s+of\s+(?:the\s+)?"
    r"|\b(?:the\s+)?(?P<third>early|mid|late)(?:\s*-\s*|\s+)(?:in\s+)?)$"
)
PREV_WORD_RE = re.compile(r"\b(?P<w>[a-z]+)\s+(?:the\s+)?$")
# Words allowed around a time expression for parse_interval to accept the phrase.
FILLER_RE = re.compile(r"(?:[\s,.;:!?()\"']|\b(?:in|on|at|during|from|since|by|around|over|of|the|back|sometime)\b)*")

# --- calendar arithmetic -------------------------------------------------------------------


def _add_months(day: date, months: int) -> date:
    year, month0 = divmod(day.year * 12 + day.month - 1 + months, 12)
    return date(year, month0 + 1, min(day.day, monthrange(year, month0 + 1)[1]))


def _month(year: int, month: int) -> Interval:
    return date(year, month, 1), date(year, month, monthrange(year, month)[1]), "month"


def _year(year: int) -> Interval:
    return date(year, 1, 1), date(year, 12, 31), "year"


def _week(day: date) -> Interval:
    monday = day - timedelta(days=day.weekday())
    return monday, monday + timedelta(days=6), "week"


def _weekend(day: date) -> Interval:
    saturday = day - timedelta(days=day.weekday()) + timedelta(days=5)
    return saturday, saturday + timedelta(days=1), "weekend"


def _season(name: str, start_year: int) -> Interval:
    first = date(start_year, SEASONS[name], 1)
    last = _add_months(first, 2)
    return first, last.replace(day=monthrange(last.year, last.month)[1]), "season"


def unit_span(day: date, unit: str) -> Interval:
    """The calendar unit that contains `day`."""
    if unit in ("week", "fortnight"):
        return _week(day)
    if unit == "month":
        return _month(day.year, day.month)
    if unit == "year":
        return _year(day.year)
    if unit == "decade":
        first = day.year - day.year % 10
        return date(first, 1, 1), date(first + 9, 12, 31), "decade"
    return day, day, "day"


def _shift(moment: datetime, amount: int, unit: str) -> datetime:
    if unit in ("minute", "hour"):
        return moment + timedelta(**{unit + "s": amount})
    if unit in ("day", "week", "fortnight"):
        return moment + timedelta(days=amount * {"day": 1, "week": 7, "fortnight": 14}[unit])
    months = amount * {"month": 1, "year": 12, "decade": 120}[unit]
    return datetime.combine(_add_months(moment.date(), months), moment.timetz())


def _relative_unit(c: Context, unit: str, offset: int) -> Interval:
    """The week/weekend/month/year `offset` units from the reference one."""
    if unit in ("week", "weekend"):
        day = c.today + timedelta(days=7 * offset)
        return _week(day) if unit == "week" else _weekend(day)
    if unit == "month":
        day = _add_months(c.today.replace(day=1), offset)
        return _month(day.year, day.month)
    return _year(c.today.year + offset)


def _two_digit_year(digits: str, today: date) -> int:
    year = 2000 + int(digits)
    return year if year <= today.year + 10 else year - 100


def _year_token(token: str, today: date) -> int:
    return _two_digit_year(token[1:], today) if token[0] in "'’" else int(token)


def _past_year_for(month: int, today: date) -> int:
    return today.year if month <= today.month else today.year - 1


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
        near, far = _shift(near, sign * low, unit), _shift(far, sign * high, unit)
    if near == far:
        return unit_span(near.date(), min((u for _, u in parts), key=_UNIT_RANK.__getitem__))
    first, last = sorted((near.date(), far.date()))
    return first, last, "range"


# --- context -------------------------------------------------------------------------------


def _prev_word(c: Context, start: int) -> str:
    """The word before `start`, skipping one "the"."""
    m = PREV_WORD_RE.search(c.low, max(0, start - 24), start)
    return m.group("w") if m else ""


def _modifier(c: Context, start: int) -> re.Match[str] | None:
    return MODIFIER_BEFORE_RE.search(c.low, max(0, start - 32), start)


def _in_date_context(c: Context, start: int, prepositions: frozenset[str] = DATE_PREPOSITIONS) -> bool:
    """Whether a bare month/season/year at `start` reads as a date ("in May", "early 2019")."""
    if not c.strict:
        return True
    return _prev_word(c, start) in prepositions or _modifier(c, start) is not None


def _month_number(word: str) -> int:
    return MONTHS[word.rstrip(".")]


# --- handlers: one per family in temporal_rules; None rejects the match --------------------

_Handler = Callable[[re.Match[str], Context], Interval | None]


def _h_iso(m: re.Match[str], c: Context) -> Interval | None:
    day = date(int(m["iso_y"]), int(m["iso_m"]), int(m["iso_d"]))
    return day, day, "day"


def _h_numdate(m: re.Match[str], c: Context) -> Interval | None:
    a, b, sep, year_text = int(m["nd_a"]), int(m["nd_b"]), m["nd_s"], m["nd_y"]
    if len(year_text) == 2 and sep != "/":
        return None
    year = _two_digit_year(year_text, c.today) if len(year_text) == 2 else int(year_text)
    month, day = (b, a) if sep == "." or (a > 12 >= b) else (a, b)
    value = date(year, month, day)
    return value, value, "day"


def _h_full_date(m: re.Match[str], c: Context) -> Interval | None:
    prefix = f"{m.lastgroup}_"
    year = _year_token(m[prefix + "y"], c.today)
    value = date(year, _month_number(m[prefix + "m"]), int(m[prefix + "d"]))
    return value, value, "day"


def _h_month_year(m: re.Match[str], c: Context) -> Interval | None:
    return _month(_year_token(m["my_y"], c.today), _month_number(m["my_m"]))


def _h_month_day(m: re.Match[str], c: Context) -> Interval | None:
    prefix = f"{m.lastgroup}_"
    word = m[prefix + "m"].rstrip(".")
    # "2 may go" is not a date; "2 May", "2nd may" and "2 of may" are.
    bare = prefix == "dm_" and not (m["dm_o"] or m["dm_of"] or c.text[m.start("dm_m")].isupper())
    if bare and c.strict and word in AMBIGUOUS_MONTHS:
        return None
    if c.strict and word in ("may", "march") and _prev_word(c, m.start()) in _SUBJECTS:
        return None
    month = MONTHS[word]
    value = date(_past_year_for(month, c.today), month, int(m[prefix + "d"]))
    return value, value, "day"


def _h_ordinal_day(m: re.Match[str], c: Context) -> Interval | None:
    if c.strict and not m["od_wd"] and _prev_word(c, m.start()) not in ORDINAL_DAY_PREPOSITIONS:
        return None
    value = c.today.replace(day=int(m["od_d"]))
    return value, value, "day"


def _h_decade(m: re.Match[str], c: Context) -> Interval | None:
    if m["dec_y4"]:
        first = int(m["dec_y4"])
        if first % 100 == 0 and first < 2000:
            return date(first, 1, 1), date(first + 99, 12, 31), "century"
    else:
        if c.strict and not m["dec_the"] and _modifier(c, m.start()) is None:
            return None
        tens = int(m["dec_y2"]) if m["dec_y2"] else DECADE_WORDS[m["dec_w"]]
        first = 2000 + tens if 2000 + tens <= c.today.year else 1900 + tens
    return date(first, 1, 1), date(first + 9, 12, 31), "decade"


def _h_ago(m: re.Match[str], c: Context) -> Interval | None:
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


def _h_future(m: re.Match[str], c: Context) -> Interval | None:
    amount = _quantity(m["in_q"], True)
    return None if amount is None else _offset_span(c, [(amount, UNITS[m["in_u"]])], 1)


def _h_named(m: re.Match[str], c: Context) -> Interval | None:
    phrase = " ".join(m.group().split())
    if m["nm_u"]:
        return _relative_unit(c, m["nm_u"], -2 if "before last" in phrase else 2)
    if "before yesterday" in phrase or "after tomorrow" in phrase:
        offset = -2 if "before" in phrase else 2
    elif phrase.startswith(("yesterday", "last night")):
        offset = -1
    else:
        offset = 1 if phrase.startswith("tomorrow") else 0
    value = c.today + timedelta(days=offset)
    return value, value, "day"


def _h_within(m: re.Match[str], c: Context) -> Interval | None:
    first, last, _ = _relative_unit(c, m["el_u"], 0)
    return (first, c.today, "range") if m["el_k"] == "earlier" else (c.today, last, "range")


def _h_relative(m: re.Match[str], c: Context) -> Interval | None:
    keyword, unit = " ".join(m["rel_k"].split()), m["rel_u"].rstrip(".")
    offset = {"last": -1, "this past": -1, "previous": -1, "the previous": -1, "this": 0}.get(keyword, 1)
    if unit in ("week", "weekend", "month", "year"):
        return _relative_unit(c, unit, offset)
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
        if _prev_word(c, m.start()) in _DETERMINERS:
            return None
        if unit == "may" and offset == 0 and not c.text[m.start("rel_u")].isupper():
            return None
    if unit in SEASONS:
        return _relative_season(c, unit, offset)
    month = MONTHS[unit]
    if offset == 0:
        return _month(c.today.year, month)
    if offset < 0:
        return _month(c.today.year if month < c.today.month else c.today.year - 1, month)
    return _month(c.today.year if month > c.today.month else c.today.year + 1, month)


def _season_instances(c: Context, name: str) -> list[Interval]:
    """The seasons called `name` starting from two years before to one after the reference."""
    instances = []
    for start_year in range(c.today.year - 2, c.today.year + 2):
        try:
            instances.append(_season(name, start_year))
        except (ValueError, OverflowError):
            continue
    return instances


def _relative_season(c: Context, name: str, offset: int) -> Interval | None:
    instances = _season_instances(c, name)
    if offset < 0:
        over = [s for s in instances if s[1] < c.today]
        return over[-1] if over else None
    if offset > 0:
        ahead = [s for s in instances if s[0] > c.today]
        return ahead[0] if ahead else None
    return min(instances, key=lambda s: abs((s[0] + (s[1] - s[0]) / 2 - c.today).days), default=None)


def _h_rolling(m: re.Match[str], c: Context) -> Interval | None:
    keyword, unit, plural = m["ro_k"], UNITS[m["ro_u"]], bool(m["ro_pl"])
    if (
        not m["ro_q"]
        and not plural
        and (unit in ("minute", "hour", "day") or (not m["ro_the"] and keyword in ("last", "next")))
    ):
        return None
    amount = _quantity(m["ro_q"], plural) or (1, 1)
    far = _shift(c.ref, amount[1] * (1 if keyword in ("next", "coming") else -1), unit).date()
    first, last = sorted((c.today, far))
    return first, last, "range"


def _h_vague(m: re.Match[str], c: Context) -> Interval | None:
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
    return _shift(c.ref, first, unit).date(), _shift(c.ref, last, unit).date(), "range"


def _h_weekend(m: re.Match[str], c: Context) -> Interval | None:
    if c.strict and _prev_word(c, m.start()) not in WEEKEND_PREPOSITIONS:
        return None
    return _weekend(c.today if c.today.weekday() >= 5 else c.today - timedelta(days=7))


def _h_the_unit(m: re.Match[str], c: Context) -> Interval | None:
    # Only as "the end of the month" and the like; "the week" alone is too vague.
    return _relative_unit(c, m["tu_u"], 0) if _modifier(c, m.start()) else None


def _h_season(m: re.Match[str], c: Context) -> Interval | None:
    name = m["se_s"]
    if m["se_y"]:
        return _season(name, _year_token(m["se_y"], c.today))
    # "the summer" is a time; "the spring" and "the fall" may be water and a tumble.
    after_the = name not in ("spring", "fall") and c.low.endswith("the ", 0, m.start())
    if not (after_the or _in_date_context(c, m.start())) or c.low.startswith(" of", m.end()):
        return None
    started = [s for s in _season_instances(c, name) if s[0] <= c.today]
    return started[-1] if started else None


def _h_year(m: re.Match[str], c: Context) -> Interval | None:
    return _year(int(m["yr"])) if _in_date_context(c, m.start(), YEAR_PREPOSITIONS) else None


def _h_weekday(m: re.Match[str], c: Context) -> Interval | None:
    if _prev_word(c, m.start()) in HABITUAL:
        return None
    value = c.today - timedelta(days=(c.today.weekday() - WEEKDAYS[m["wd"]]) % 7)
    return value, value, "day"


def _h_month(m: re.Match[str], c: Context) -> Interval | None:
    word = m["mo"].rstrip(".")
    if c.strict:
        if _prev_word(c, m.start()) in HABITUAL:
            return None
        if word in AMBIGUOUS_MONTHS and not _in_date_context(c, m.start()):
            return None
    month = MONTHS[word]
    return _month(_past_year_for(month, c.today), month)


_HANDLERS: dict[str, _Handler] = {
    "iso": _h_iso, "numdate": _h_numdate, "mdy": _h_full_date, "dmy": _h_full_date, "my": _h_month_year,
    "md": _h_month_day, "dm": _h_month_day, "ordday": _h_ordinal_day, "decade": _h_decade, "ago": _h_ago,
    "future": _h_future, "named": _h_named, "within": _h_within, "rel": _h_relative, "rolling": _h_rolling,
    "vague": _h_vague, "weekend": _h_weekend, "the_unit": _h_the_unit, "season": _h_season, "year": _h_year,
    "weekday": _h_weekday, "month": _h_month,
}  # fmt: skip


# --- modifiers ---------------------------------------------------------------------------

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
        end = _add_months(first, hi - 1)
        return _add_months(first, lo), end.replace(day=monthrange(end.year, end.month)[1]), "range"
    return date(first.year + lo, 1, 1), date(first.year + hi - 1, 12, 31), "range"


def resolve(m: re.Match[str], c: Context, floor: int) -> tuple[int, Interval] | None:
    """(span start, interval) for one match, absorbing a preceding "early"/"the end of" after `floor`."""
    family = m.lastgroup
    interval = _HANDLERS[family](m, c) if family else None
    start = m.start()
    if interval is None or interval[0] > interval[1]:
        return None
    if interval[2] in _MODIFIABLE and (mod := _modifier(c, start)) and mod.start() >= floor:
        edge = mod["edge"]
        kind = {"beginning": "begin", "start": "begin", "middle": "mid"}.get(edge, edge) if edge else mod["third"]
        interval, start = _apply_modifier(interval, kind), mod.start()
    return start, interval
