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
# A question in the past tense asks what was, not what is ("What car did I drive?").
_PAST_TENSE = re.compile(r"\b(?:did|didn't|was|wasn't|were|weren't|had|hadn't)\b", re.IGNORECASE)
# A question that asks for a value opens with a question word, or asks whether something holds of someone other
# than the one asked ("Does Kenji have a car?"); "Do you think I should go to my reunion?" asks for advice.
_ASKS_VALUE = re.compile(
    r"^\W*(?:(?:and|so|ok|okay|hey)\W+)?(?:(?:what|what's|where|where's|which|who|who's|whom|whose|how)\b|"
    r"(?:do|does|is|are|am|has|have)\s+(?!you\b|u\b)\w)",
    re.IGNORECASE,
)
_QUESTION = re.compile(r"[^.!?]*\?")
# Query words that ask about an attribute.
_ASKS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (attribute, re.compile(rf"\b(?:{words})\b", re.IGNORECASE))
    for attribute, words in (
        ("residence", r"live|lives|living|reside|resides|based|home|apartment|house|moved|move|moving|city|town|"
                      r"neighbou?rhood|relocated?"),
        ("workplace", r"work|works|working(?!\s+on\b)|job|employer|employed|company|office|hired|career|workplace"),
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
    past_tense: bool = False  # asks with "did", "was", "had", ...
    asks_value: bool = False  # its question opens with "what", "where", "who", "does Kenji", ...

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

    @property
    def asks_present(self) -> bool:
        """Whether the query asks about an attribute as it is today: with a cue of the present, or asking for its
        value in the present tense without a cue of the past ("Where does Danny live?", not "Where did Danny live?"
        nor "Should Danny move?")."""
        return bool(self.attributes) and not self.past and (self.current or (self.asks_value and not self.past_tense))


def read_query(text: str) -> QueryIntent:
    """The query's intent: attributes by the words it asks with, and its present or past cues."""
    attributes = {attribute for attribute, pattern in _ASKS if pattern.search(text)}
    attributes |= {f"favorite:{' '.join(m.group(1).lower().split())}" for m in _FAVORITE.finditer(text)}
    if _RECORD.search(text):
        attributes.add("record")
    return QueryIntent(frozenset(attributes), _CURRENT.search(text) is not None, _PAST.search(text) is not None,
                       _PAST_TENSE.search(question := _question(text)) is not None,
                       _ASKS_VALUE.search(question) is not None)


def _question(text: str) -> str:
    """The last question of the text ("I feel nostalgic. Should I go?" -> "Should I go?"), else all of it."""
    found = _QUESTION.findall(text)
    return found[-1].strip() if found else text
