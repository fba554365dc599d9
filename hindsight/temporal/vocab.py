"""Word lists behind `hindsight.temporal.expressions`: months, weekdays, numbers, units and the
context words that decide whether a bare month, weekday or year reads as a date."""

from __future__ import annotations

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
WEEKDAY_ABBREVIATIONS = frozenset({"mon", "tue", "tues", "wed", "thu", "thur", "thurs", "fri", "sat", "sun"})
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
UNIT_RANK = {"minute": 0, "hour": 1, "day": 2, "week": 3, "fortnight": 3, "month": 4, "year": 5, "decade": 6}
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
# Before a weekday these make it one day even when a plural word follows ("on Sunday friends came").
WEEKDAY_PREPOSITIONS = frozenset({"on", "by", "until", "till", "since"})
# Words ending in "s" that can follow a weekday naming one day: "Sunday works", "see you Friday guys".
NOT_PLURAL_NOUNS = frozenset(
    {"is", "was", "has", "does", "goes", "as", "this", "his", "its", "hers", "ours", "yours", "theirs",
     "us", "yes", "plus", "thus", "always", "perhaps", "afterwards", "towards", "unless", "whereas",
     "besides", "sometimes", "thanks", "works", "suits", "sounds", "looks", "seems", "means", "comes",
     "gets", "makes", "feels", "starts", "ends", "begins", "fits", "happens", "remains", "needs", "falls",
     "marks", "brings", "gives", "takes", "keeps", "matters", "counts", "turns", "stays", "plans", "guys",
     "folks", "lads", "ladies", "gents"}
)  # fmt: skip
DETERMINERS = frozenset({"the", "a", "his", "her", "their", "our", "my", "your", "its", "that"})
# Before "may"/"march" these make it a verb: "I may 2", "they march 5 miles".
SUBJECTS = frozenset({"i", "you", "we", "they", "he", "she", "it", "who", "that", "which", "this", "there", "one"})


def month_number(word: str) -> int:
    """The month a month word names, allowing an abbreviation's period ("Dec.")."""
    return MONTHS[word.rstrip(".")]
