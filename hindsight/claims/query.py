"""What a query asks of the attributes claims hold: which attributes, and whether about now or about the past."""

from __future__ import annotations

import re
from dataclasses import dataclass

from hindsight.claims.lexicon import DIET_WORDS

_CURRENT = re.compile(
    r"\b(?:now|currently|current|still|any\s?more|these\s+days|nowadays|at\s+the\s+moment|at\s+present|presently|"
    r"latest|most\s+recent|today)\b",
    re.IGNORECASE,
)
_PAST = re.compile(
    r"\b(?:before|used\s+to|previous|previously|former|formerly|originally|at\s+first|first|earlier|old|back\s+when|"
    r"back\s+then|in\s+the\s+past|prior|ex|initially|once)\b",
    re.IGNORECASE,
)
# Query words that ask about an attribute.
_ASKS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (attribute, re.compile(rf"\b(?:{words})\b", re.IGNORECASE))
    for attribute, words in (
        ("residence", r"live|lives|living|reside|resides|based|home|apartment|house|moved|move|moving|city|town|"
                      r"neighbou?rhood|relocated?"),
        ("workplace", r"work|works|working|job|employer|employed|company|office|hired|career|workplace"),
        ("school", r"school|university|college|enrolled|student|attend|attends|studies|study|studying"),
        ("major", r"major|majoring|degree|studying|study|studies"),
        ("partner", r"dating|date|dates|girlfriend|boyfriend|partner|married|wife|husband|seeing|relationship|"
                    r"fianc[ée]e?|single"),
        ("diet", rf"diet|eat|eats|eating|meat|{DIET_WORDS}"),
        ("club", r"club|clubs|team|league|group|member|join|joined|crew|gym|runs?\s+with|plays?\s+for"),
        ("car", r"car|cars|drive|drives|driving|vehicle"),
        ("phone", r"phone|smartphone|iphone|pixel|android|cell"),
    )
)
_FAVORITE = re.compile(r"\bfavou?rite\s+((?:[a-z]+\s+){0,2}?[a-z]+)\b", re.IGNORECASE)
_RECORD = re.compile(r"\b(?:personal\s+best|personal\s+record|pb|pr|fastest|best\s+time)\b", re.IGNORECASE)


@dataclass(frozen=True)
class QueryIntent:
    """The attributes a query asks about, and whether it asks for the current value or a past one."""

    attributes: frozenset[str]
    current: bool  # says "now", "currently", "still", "anymore", ...
    past: bool  # says "before", "used to", "previously", "former", ...

    def wants(self, attribute: str) -> bool:
        """Whether a claim of this attribute answers the query ("club:running" answers a question on clubs)."""
        if attribute in self.attributes:
            return True
        family, _, _ = attribute.partition(":")
        if family == "favorite":
            return any(attribute.startswith(a) or a.startswith(attribute) for a in self.attributes)
        return family in self.attributes

    @property
    def asks_current(self) -> bool:
        """Whether the newest claim should come first: the query asks about the present, not about the past."""
        return not self.past and (self.current or bool(self.attributes))


def read_query(text: str) -> QueryIntent:
    """The query's intent: attributes by the words it asks with, and its present or past cues."""
    attributes = {attribute for attribute, pattern in _ASKS if pattern.search(text)}
    attributes |= {f"favorite:{' '.join(m.group(1).lower().split())}" for m in _FAVORITE.finditer(text)}
    if _RECORD.search(text):
        attributes.add("record")
    return QueryIntent(frozenset(attributes), _CURRENT.search(text) is not None, _PAST.search(text) is not None)
