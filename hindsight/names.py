"""Names of entities: cleaning mentions, normalizing, matching keys and the blocking keys the store indexes."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import NamedTuple

from hindsight import nicknames as lex
from hindsight.nicknames import NICKNAMES

__all__ = [
    "NameKey", "blocking_keys", "clean_mention", "initials", "name_key", "normalize_name", "person_forms", "person_key",
]

_STOPWORDS = lex.DETERMINERS | lex.TITLES | lex.CORP_SUFFIXES | lex.PARTICLES

_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\uff07": "'"})
_TRANSLIT = str.maketrans({
    "ø": "o", "æ": "ae", "œ": "oe", "ł": "l", "đ": "d", "ð": "d", "þ": "th", "ı": "i",
    "\u2019": "'", "\u2018": "'", "\u02bc": "'",
})
_EDGE_KEEP = frozenset("#&@%*")  # meaningful at the edges of names such as "C#" or "AT&T"
_ASCII_EDGE = "".join(
    c for c in map(chr, range(128))
    if (c.isspace() or unicodedata.category(c).startswith("P")) and c not in _EDGE_KEEP
)
_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
# Combining diacritics (Latin/Greek/Cyrillic blocks, Hebrew points, Arabic harakat) and invisible
# characters (controls, zero-width and bidi marks, BOM, lone surrogates). Indic vowel signs and
# kana voicing marks are letters, not accents, and stay.
_DIACRITICS = re.compile(
    "[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
    "\u0591-\u05bd\u05bf\u05c1\u05c2\u05c4\u05c5\u05c7\u064b-\u065f\u0670"
    "\x00-\x08\x0e-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\ud800-\udfff]"
)
_NON_ALNUM = re.compile(r"[\W_]+")
_POSSESSIVE = re.compile(r"(?<=\w)['\u2019]s$")  # "children's" in "Seattle Children's Hospital" keys as "children"
_TOKEN_SPLIT = re.compile(r"[\s_\-\u2010-\u2014]+")
_FOLD_STRIP = ",;:.!?()[]{}\"“”«»"


def _is_edge(ch: str) -> bool:
    return ch.isspace() or (ch not in _EDGE_KEEP and unicodedata.category(ch)[0] in "PC")


def _strip_edges(text: str) -> str:
    """Strip whitespace, punctuation (except `_EDGE_KEEP`) and invisible characters from both ends."""
    if text.isascii():
        return text.strip(_ASCII_EDGE)
    start, end = 0, len(text)
    while start < end and _is_edge(text[start]):
        start += 1
    while end > start and _is_edge(text[end - 1]):
        end -= 1
    return text[start:end]


def normalize_name(text: str) -> str:
    """NFKC, casefold, strip diacritics, collapse whitespace, strip edge punctuation."""
    if text.isascii():
        folded = text.lower()
        if not folded.isprintable():
            folded = _ASCII_CONTROL.sub("", folded)
    else:
        folded = unicodedata.normalize("NFKC", text).casefold().translate(_TRANSLIT)
        bare = _DIACRITICS.sub("", unicodedata.normalize("NFD", folded))
        folded = unicodedata.normalize("NFC", bare)
    return _strip_edges(" ".join(folded.split()))


def _fold_word(word: str) -> str:
    folded = word.casefold()
    if not folded.isascii():
        folded = folded.translate(_APOSTROPHES)
    return folded.strip(_FOLD_STRIP)


def _is_relation(word: str) -> bool:
    """Kinship/relational noun, also compounded: "ex-wife", "great-aunt", "brother-in-law"."""
    if word in lex.RELATIONS:
        return True
    if "-" not in word:
        return False
    parts = word.split("-")
    if len(parts) > 2 and parts[-2:] == ["in", "law"]:
        parts = parts[:-2]
    return parts[-1] in lex.RELATIONS and all(p in lex.RELATION_PREFIXES for p in parts[:-1])


def _clean_once(text: str) -> str:
    tokens = _strip_edges(" ".join(text.split())).split(" ")
    n = len(tokens)
    # Leading run of determiners/possessors/modifiers/relations: "the user's best friend".
    cut = articles = 0
    first = ""
    for i, token in enumerate(tokens):
        word = _fold_word(token)
        if i == 0:
            first = word
        if _is_relation(word):
            cut = i + 1
        elif word in lex.ARTICLES:
            articles += articles == i
        elif not (
            word in lex.DETERMINERS or word in lex.MODIFIERS or word in lex.CONNECTORS
            or (len(word) > 2 and word.endswith(("'s", "s'")))
        ):
            break
    if 0 < cut < n:
        tokens = tokens[cut:]
    elif articles:
        # No name after a relation ("my brother", "Emily's mom"): keep the phrase, which still
        # identifies someone, minus leading articles ("my mom" must not become "her mom").
        tokens = tokens[min(articles, n - 1):]
    # Titles leave the display only when a full name remains: "Dr. Jane Smith" -> "Jane Smith",
    # but "Dr. Smith" stays (the matching key drops titles anyway).
    while (
        len(tokens) > 2
        and (first if len(tokens) == n else _fold_word(tokens[0])) in lex.TITLES
        and _fold_word(tokens[1]) not in lex.CONNECTORS
    ):
        tokens = tokens[1:]
    last = tokens[-1]
    if len(last) > 2 and last[-1] in "sS" and last[-2] in "'\u2019\u02bc\uff07":
        tokens[-1] = last[:-2]  # possessive: "Bob's" -> "Bob"
    return _strip_edges(" ".join(tokens))


@lru_cache(maxsize=1 << 16)
def _clean(text: str) -> str:
    current = unicodedata.normalize("NFKC", text)
    for _ in range(16):  # each pass only shortens; iterating to a fixed point keeps it idempotent
        cleaned = _clean_once(current)
        if cleaned == current:
            break
        current = cleaned
    return current


def clean_mention(text: str) -> str:
    """Surface form for display: drop determiners, relations and titles before a name.

    "my brother Bob" -> "Bob"; "the user's roommate Emily" -> "Emily"; "Dr. Jane Smith" ->
    "Jane Smith"; "The Beatles" -> "Beatles"; "my mom" and "Emily's mom" stay (no name follows).
    Known limitation: a name that starts with a relation word loses it ("Mother Teresa").
    """
    return _clean(text)


class NameKey(NamedTuple):
    tokens: tuple[str, ...]
    joined: str
    compact: str  # alphanumerics only: "jean-luc" == "jeanluc", "o'brien" == "obrien"
    gender: str | None
    legal: bool  # the name ended in a corporate suffix: a company's full name ("Acme Robotics Inc.")


@lru_cache(maxsize=1 << 16)
def name_key(text: str) -> NameKey:
    """Matching key: cleaned, normalized, split on spaces/hyphens, titles and Inc/Ltd dropped."""
    norm = normalize_name(_clean(text))
    simple = norm.isascii() and "-" not in norm and "_" not in norm
    parts = norm.split(" ") if simple else _TOKEN_SPLIT.split(norm)
    tokens = [t if t.isalnum() else _strip_edges(_POSSESSIVE.sub("", t)) for t in parts]
    tokens = [t for t in tokens if t]
    gender: str | None = None
    while len(tokens) > 1 and tokens[0] in lex.TITLES:
        gender = gender or lex.TITLE_GENDER.get(tokens.pop(0))
    legal = False
    while len(tokens) > 1 and tokens[-1] in lex.CORP_SUFFIXES:
        tokens.pop()
        legal = True
    joined = " ".join(tokens)
    compact = "".join(tokens)
    if not compact.isalnum():
        compact = _NON_ALNUM.sub("", compact)
    return NameKey(tuple(tokens), joined, compact, gender, legal)


@lru_cache(maxsize=1 << 14)
def initials(text: str) -> str:
    """The initials of a name of several words, particles left out ("University of South Florida" -> "usf"); ""
    for a name of one word."""
    tokens = [t for t in name_key(text).tokens if t not in lex.PARTICLES and t not in lex.ARTICLES]
    return "".join(t[0] for t in tokens) if len(tokens) > 1 else ""


@lru_cache(maxsize=1 << 14)
def _blocking_keys(text: str) -> frozenset[str]:
    key = name_key(text)
    if not key.joined:
        return frozenset()
    keys = {key.joined, key.compact} if key.compact else {key.joined}
    for token in key.tokens:
        if len(token) >= 2 and token not in _STOPWORDS:
            keys.add(token)
        keys.update(NICKNAMES.get(token, ()))
    if len(short := initials(text)) > 1:
        keys.add(short)  # "USF" finds "University of South Florida"
    return frozenset(keys)


def blocking_keys(text: str) -> set[str]:
    """Keys to index an entity name or alias under, and to look a mention up by.

    The normalized full name (and its alphanumeric-only form), every token of length >= 2 that
    is not a stopword, the formal names of nickname tokens, so "Bob" and "Robert Smith"
    share "robert", and the initials of a name of several words. Typos share a key only through
    another token ("Carolinne Smith" ~ "Caroline Smith" via "smith"); a lone misspelt name is
    not found.
    """
    return set(_blocking_keys(text))


def _first_word(name: str) -> str:
    tokens = normalize_name(clean_mention(name)).split()
    return tokens[0] if tokens else ""


def person_key(name: str) -> str:
    """The formal form of a person name's first word ("Danny" and "Daniel Park" give "daniel"): one key for the
    nicknames of one person ("" for a name with no word)."""
    first = _first_word(name)
    return min(NICKNAMES[first]) if first in NICKNAMES else first


def person_forms(name: str) -> frozenset[str]:
    """A person name's first word and every formal name it is a nickname of ("Allie": allie, alice, alexandra,
    ...): two names may be one person when their forms meet."""
    first = _first_word(name)
    return frozenset({first, *NICKNAMES.get(first, ())}) - {""}
