"""Rules that turn spaCy's entity spans in a text into the mentions a person would recognize.

- Junk: a span loses the words that open its sentence without naming anything ("Mostly Python" -> "Python") and
  trailing function words ("Python and" -> "Python"); a span with no capital letter, only function words
  (pronouns) or only digits is dropped.
- Patterns spaCy's small model misses: an honorific or kinship title and a name ("Ms. Sato", "Aunt Ro"),
  kinship words used as names ("Mom", "Dad"), a name after a pet noun ("our dog Biscuit"), and, where spaCy found
  nothing, capitalized words ending in an organisation or place word ("to Alder Grove Park").
- Labels from context: a name after an honorific, a kinship title or a relation ("my boss Amira") is a PERSON;
  after a pet noun ("my cat Pepper", "a husky named Storm") or before one ("Biscuit, our dog") a PET; a PERSON
  span ending in an organisation word ("Seattle Humane") or used as a possessive place ("try Primanti's?") an
  ORG; one ending in a place word, or in a park word after a word that is not a given name, or one that is not a
  given name after "the", "at", "in" or "near" ("dinner at Canlis", "the Gunks"), a FAC; a given name that spaCy
  called ORG, NORP, PRODUCT, ... a PERSON.
- Alias statements: "Margaret, we all call her Meg", "Kevin, he goes by KJ", "Alexander, aka Sasha", "Josefina,
  Jo for short", "We nicknamed him Bach": the alias span records the span it is another name of, the nearest
  name before the statement in its sentence, else in the sentence (or the turn) before; with no such name,
  "everyone calls him Skip" still makes Skip a PERSON.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from spacy.lang.en.stop_words import STOP_WORDS

from hindsight.nicknames import GIVEN_NAMES, RELATIONS
from hindsight.retain.entity_words import (
    CALENDAR,
    HONORIFICS,
    KIN_NAMES,
    KIN_TITLES,
    OPENERS,
    ORG_END_WORDS,
    PARK_WORDS,
    PET_NOUNS,
    PLACE_END_WORDS,
)

PET = "PET"
PERSON = "PERSON"
EDGES = " \t\n'\"’“”.,!?;:"  # stripped from the ends of a mention
# spaCy labels that a lone given name ("Meg", "Sandra") often gets instead of PERSON; places are left alone
# (Madison, Austin and Florence are places as often as people).
_NAME_MISLABELS = frozenset({"ORG", "NORP", "PRODUCT", "WORK_OF_ART", "EVENT", "LANGUAGE"})
_LEADING_JUNK = (OPENERS | STOP_WORDS) - GIVEN_NAMES
_NOT_A_NAME = OPENERS | STOP_WORDS | CALENDAR

_ALNUM = re.compile(r"[^\W_]")
_WORD = re.compile(r"\S+")
_CAP_WORD = r"[A-Z][\w'’-]*"
_NAME = rf"{_CAP_WORD}(?:[ \t]+{_CAP_WORD})?"  # one or two capitalized words
_CAP_RUN = re.compile(rf"{_CAP_WORD}(?:[ \t]+{_CAP_WORD})+")
_HONORIFIC = "|".join(sorted(HONORIFICS))
_TITLED = re.compile(rf"\b(?:{_HONORIFIC})\.?[ \t]+{_NAME}")
_KIN_TITLED = re.compile(rf"\b(?:{'|'.join(sorted(KIN_TITLES))})[ \t]+{_CAP_WORD}")
_KIN_ALONE = re.compile(rf"\b(?:{'|'.join(sorted(KIN_NAMES))})\b(?![ \t]+[A-Z])")
_OWNER = r"(?:my|our|his|her|their|your|\w+['’]s)"  # "our dog", "the neighbor's beagle", "Kim's sister"
_RELATION = "|".join(sorted(RELATIONS - PET_NOUNS - {"pet", "client", "customer"}, key=len, reverse=True))
# "my aunt Penelope", "our boss, Amira": a relation noun names the person after it.
_RELATION_BEFORE = re.compile(
    rf"(?i:\b{_OWNER}\s+(?:[a-z-]+\s+){{0,2}}?(?:(?:ex|step|half|great|grand)-)*(?:{_RELATION})(?:-in-law)?)"
    r"(?:\s*,\s*|\s+)$")
_PLACE_BEFORE = re.compile(r"(?:\b(?:at|in|near)\s+(?:the\s+)?|\bthe\s+)$", re.IGNORECASE)
# A possessive that ends its noun phrase names a shop or a restaurant: "try Primanti's?", "lunch at Zingerman's".
_BUSINESS_POSSESSIVE = re.compile(
    r"['’]s(?=\s*(?:[.!?,;:)]|$)|\s+(?:on|in|at|near|for|with|and|or|tonight|today|tomorrow|again)\b)")
_TITLE_BEFORE = re.compile(rf"\b(?:{_HONORIFIC}|{'|'.join(sorted(KIN_TITLES))})\.?[ \t]+$")
_PETS = "|".join(sorted((p.replace(" ", r"\s+") for p in PET_NOUNS), key=len, reverse=True))
# Up to two words before the pet noun, which describe it: a verb ends the noun phrase ("the trails are dog
# friendly" names no dog).
_PET_NOUN = rf"(?:(?!(?:is|are|was|were|be|been|has|have|had)\s)[a-z-]+\s+){{0,2}}?(?:{_PETS})s?(?:\s+mix)?"
_OWNED_PET = rf"(?i:\b{_OWNER}\s+{_PET_NOUN})"
# "our dog Biscuit", "the puppy, Mochi", "a husky named Storm"; "the fish Sam caught" names no pet.
_PET_BEFORE = re.compile(
    rf"(?:{_OWNED_PET}(?:\s*,\s*|\s+(?:named|called)\s+|\s+)|(?i:\b(?:the|a|an)\s+{_PET_NOUN})"
    rf"(?:\s*,\s*|\s+(?:named|called)\s+))(?P<name>{_CAP_WORD})"
)
_PET_AFTER = re.compile(rf"(?:\s*,\s*|\s+(?:is|was)\s+)(?:{_OWNED_PET}|(?i:the\s+{_PET_NOUN}))\b(?!['’])")
# "we all call her X", "everyone calls him X", "goes by X" name a person; "aka X", "also known as X",
# "nicknamed X", "X for short" anything; "people call me X", "I go by X" name the speaker.
_ALIAS_CUE = re.compile(
    r"(?i:(?P<self>\bcall(?:s|ed)?\s+me\s+|\bI\s+(?:go|went)\s+by\s+)"
    r"|\b(?:call(?:s|ed)?|nicknamed|dubbed)\s+(?:(?P<person>her|him|them|us)|it)\s+"
    r"|\b(?P<goes>goes|go|went|going)\s+by\s+(?:the\s+name\s+(?:of\s+)?)?"
    r"|\b(?:a\.?k\.?a\.?|(?:also\s+|better\s+)?known\s+as|nicknamed)\s+)"
    rf"[\"“'‘]?(?P<alias>{_NAME})"
)
_FOR_SHORT = re.compile(rf"[,(]\s*(?P<alias>{_CAP_WORD})\s+for\s+short\b")


@dataclass
class Span:
    """A candidate mention: character offsets into its text, a label, and the span it is another name of."""

    start: int
    end: int
    label: str
    alias_of: Span | None = None
    name: str = ""  # the mention's text, set by `read_spans`


def _bare(word: str) -> str:
    """A word in lower case without edge punctuation or a possessive ending."""
    return re.sub(r"['’]s$", "", word.strip(".,;:!?\"'“”‘’()[]")).lower()


def _sentence_start(text: str, floor: int, at: int) -> bool:
    """Whether nothing but punctuation precedes `at` in the sentence that begins at `floor`."""
    return not _ALNUM.search(text, floor, at)


def trim(text: str, span: Span, floor: int) -> Span | None:
    """The span without junk words at its edges, or None when nothing worth a mention is left."""
    words = [(m.start() + span.start, m.end() + span.start) for m in _WORD.finditer(text[span.start:span.end])]
    if words and _sentence_start(text, floor, words[0][0]):
        while words and _bare(text[slice(*words[0])]) in _LEADING_JUNK:
            words.pop(0)
    while words and (((w := text[slice(*words[-1])]) == w.lower() and _bare(w) in STOP_WORDS)
                     or not _ALNUM.search(w)):
        words.pop()
    if not words:
        return None
    start, end = words[0][0], words[-1][1]
    piece = text[start:end]
    tokens = [_bare(w) for w in piece.split()]
    if (
        not any(c.isupper() for c in piece)
        or all(t in STOP_WORDS and t not in GIVEN_NAMES for t in tokens)
        or not any(c.isalpha() for c in piece)
    ):
        return None
    return Span(start, end, span.label)


def _patterns(text: str, floor: int, end: int) -> list[Span]:
    """Mentions that patterns find in one sentence, whether or not spaCy did."""
    found = [Span(m.start(), m.end(), PERSON) for m in _TITLED.finditer(text, floor, end)]
    found += [Span(m.start(), m.end(), PERSON) for m in _KIN_TITLED.finditer(text, floor, end)]
    found += [Span(m.start(), m.end(), PERSON) for m in _KIN_ALONE.finditer(text, floor, end)]
    for m in _PET_BEFORE.finditer(text, floor, end):
        if _bare(m.group("name")) not in _NOT_A_NAME:
            found.append(Span(m.start("name"), m.end("name"), PET))
    return found


def _named_by_end(text: str, floor: int, end: int, spans: list[Span]) -> list[Span]:
    """Runs of capitalized words that spaCy passed over and that end in an organisation word (ORG) or a place word
    (FAC): "Bring the dogs to Alder Grove Park". A given name first makes a person's name ("Helen Park")."""
    found = []
    for m in _CAP_RUN.finditer(text, floor, end):
        span = trim(text, Span(m.start(), m.end(), "FAC"), floor)
        if span is None or any(s.start < span.end and span.start < s.end for s in spans):
            continue
        words = [_bare(w) for w in text[span.start:span.end].split()]
        if len(words) < 2 or words[0] in GIVEN_NAMES:
            continue
        if words[-1] in ORG_END_WORDS:
            found.append(Span(span.start, span.end, "ORG"))
        elif words[-1] in PLACE_END_WORDS | PARK_WORDS:
            found.append(span)
    return found


def _merge(spans: list[Span], found: list[Span]) -> list[Span]:
    """Add pattern spans: one that covers spaCy spans replaces them, one inside a spaCy span lends it its label."""
    for p in found:
        overlapping = [s for s in spans if s.start < p.end and p.start < s.end]
        if not overlapping:
            spans.append(p)
        elif all(p.start <= s.start and s.end <= p.end for s in overlapping):
            spans = [s for s in spans if all(s is not o for o in overlapping)] + [p]
        else:
            for s in overlapping:
                s.label = p.label
    return sorted(spans, key=lambda s: s.start)


def _relabel(text: str, span: Span) -> None:
    """Set the span's label from its sentence where that says more than spaCy's guess (see the module docstring)."""
    piece = text[span.start:span.end]
    words = piece.split()
    last = _bare(words[-1])
    if span.label == PET:
        return
    if (
        _TITLE_BEFORE.search(text, 0, span.start) or _bare(words[0]).capitalize() in HONORIFICS | KIN_TITLES
        or _RELATION_BEFORE.search(text, 0, span.start)
    ):
        span.label = PERSON
    elif _PET_AFTER.match(text, span.end):
        span.label = PET
    elif span.label == PERSON and (
        (len(words) > 1 and last in ORG_END_WORDS)
        or (_BUSINESS_POSSESSIVE.match(text, span.end) and _bare(words[0]) not in GIVEN_NAMES)
    ):
        span.label = "ORG"
    elif span.label == PERSON and (
        (len(words) > 1 and (last in PLACE_END_WORDS or (last in PARK_WORDS and _bare(words[0]) not in GIVEN_NAMES)))
        or (_PLACE_BEFORE.search(text, 0, span.start) and _bare(words[0]) not in GIVEN_NAMES
        and not re.search(r"['’]s$", piece))
    ):
        span.label = "FAC"
    elif (
        span.label in _NAME_MISLABELS and len(words) <= 3 and _bare(words[0]) in GIVEN_NAMES
        and all(w[0].isupper() and not re.search(r"['’]s$", w) for w in words)
        and last not in ORG_END_WORDS | PLACE_END_WORDS and "&" not in piece
    ):
        span.label = PERSON


def _name_before(spans: list[Span], personal: bool, in_sentence: bool) -> Span | None:
    """The last of `spans` that an alias can belong to. A statement about a person is about the last PERSON; in its
    own sentence, failing that, about the name just before it, whatever spaCy called it ("Beatriz, who goes by
    Bia": the statement says Beatriz is a person)."""
    free = [s for s in spans if s.alias_of is None]
    if not personal:
        return free[-1] if free else None
    for s in reversed(free):
        if s.label == PERSON:
            return s
    if in_sentence and free:
        free[-1].label = PERSON
        return free[-1]
    return None


def _aliases(text: str, floor: int, end: int, spans: list[Span], before: list[Span], speaker: str | None
             ) -> list[Span]:
    """Link the aliases that statements in this sentence introduce to their names (in the sentence, else in the
    sentence before, or the speaker's for "call me X"); adds the alias spans spaCy missed."""
    statements = [(m, bool(m.group("person") or m.group("goes"))) for m in _ALIAS_CUE.finditer(text, floor, end)]
    statements += [(m, False) for m in _FOR_SHORT.finditer(text, floor, end)]
    for m, personal in statements:
        start, stop = m.start("alias"), m.end("alias")
        if _bare(text[start:stop].split()[0]) in _NOT_A_NAME:
            continue
        alias = next((s for s in spans if s.start <= start < s.end or start <= s.start < stop), None)
        # A name in the statement's sentence is what it is about; only a sentence without one looks back.
        preceding = [s for s in spans if s.end <= m.start()]
        if m.groupdict().get("self"):
            name = Span(-1, -1, PERSON, name=speaker) if speaker else None
        else:
            name = _name_before(preceding, personal, True) if preceding else _name_before(before, personal, False)
        if alias is None and (name is not None or personal):
            alias = Span(start, stop, name.label if name is not None else PERSON, name=text[start:stop].strip(EDGES))
            spans.append(alias)
        if alias is not None and name is not None and alias.name.lower() != name.name.lower():
            alias.label, alias.alias_of = name.label, name
    return sorted(spans, key=lambda s: s.start)


def read_spans(text: str, sentences: list[tuple[int, int, list[Span]]], before: list[Span] | None = None,
               speaker: str | None = None) -> list[Span]:
    """The mentions of a text from spaCy's spans per sentence ((start, end, spans), offsets into `text`). `before`
    holds the names of the last sentence of the turn before (spans of that turn, with `name` set), which a first
    alias statement may refer to; `speaker` is who says the text, whom "call me X" names."""
    out: list[Span] = []
    last = list(before or [])
    for floor, end, raw in sentences:
        spans = [t for s in raw if (t := trim(text, s, floor)) is not None]
        spans = _merge(spans, _patterns(text, floor, end))
        spans = sorted(spans + _named_by_end(text, floor, end, spans), key=lambda s: s.start)
        for s in spans:
            _relabel(text, s)
            s.name = text[s.start:s.end].strip(EDGES)
        spans = _aliases(text, floor, end, spans, last, speaker)
        out += spans
        last = spans or last
    return out
