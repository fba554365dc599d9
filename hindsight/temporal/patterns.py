"""Regexes behind `hindsight.temporal.expressions`: one template per phrase family, the per-word
dispatch table, the anchors that gate scanning and the context regexes the resolvers consult.

Patterns run on lower-cased text without re.IGNORECASE, and only at words that can start an
expression (DISPATCH): one combined case-insensitive regex over whole texts is >10x slower.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from hindsight.temporal.vocab import (
    DECADE_WORDS,
    MONTHS,
    NUMBER_WORDS,
    SEASONS,
    UNITS,
    WEEKDAY_ABBREVIATIONS,
    WEEKDAYS,
)


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
# One template per family, tried in this order at a word; rules.RESOLVERS resolves them.
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
_WD_PREFIX_WORDS = frozenset(WEEKDAYS) | WEEKDAY_ABBREVIATIONS
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
# A vague expression as a whole ("recently", "the other day", "a while ago"): a window by convention, not a date.
VAGUE_RE = re.compile(_ALTERNATIVES["vague"])
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
# Words allowed around a time expression for parse_interval to accept the phrase.
FILLER_RE = re.compile(r"(?:[\s,.;:!?()\"']|\b(?:in|on|at|during|from|since|by|around|over|of|the|back|sometime)\b)*")

# --- context: searched in the text around a match -------------------------------------------

# Just before a match: "early", "mid-", "the end of", "the last weekend of", "the first week in".
MODIFIER_BEFORE_RE = re.compile(
    r"(?:\b(?:the\s+)?(?:very\s+)?(?P<edge>beginning|start|end|middle)\s+of\s+(?:the\s+)?"
    r"|\b(?:the\s+)?(?P<nth>first|second|third|fourth|last|final)\s+(?P<nth_u>week|weekend)\s+(?:of|in)\s+"
    r"|\b(?:the\s+)?(?P<third>early|mid|late)(?:\s*-\s*|\s+)(?:in\s+)?)$"
)
PREV_WORD_RE = re.compile(r"\b(?P<w>[a-z]+)\s+(?:the\s+)?$")
# Just before a match: a repeat rather than a date ("every Monday", "every other Saturday").
HABITUAL_BEFORE_RE = re.compile(r"\b(?:every|each)\s+(?:(?:other|second|single)\s+)?(?:the\s+)?$")
# Right after a weekday: the word it may qualify ("Sunday brunches", "Sunday mornings").
NEXT_WORD_RE = re.compile(r"[ \t]+(?P<w>[a-z]+)\b")

# A sentence about the future: "I'll", "we will", "going to", "plan to", "I'm flying out" ("am/are ...ing" with no
# "was/were"); what it dates lies ahead of when it was said.
FUTURE_TENSE_RE = re.compile(
    r"(?:\b(?:i|you|we|they|he|she|it)['’]ll\b|\bwill\b|\bshall\b|\bgoing to\b|\bgonna\b"
    r"|\bplan(?:ning)? to\b|\babout to\b|\b(?:i['’]m|i am|we['’]re|we are|they['’]re|he['’]s"
    r"|she['’]s) (?!going\b)\w+ing\b)"
)
