"""A speaker's relatives by name: "my mom Yuko" binds the speaker's mother to Yuko, so that "my mom moved to Kyoto"
in a later session and "Yuko lives in Osaka" are claims about one person.

Only relations a person usually has one of at a time are bound (a mother, a husband, a boss), and a relation that
two names were given for binds neither: "my friend" or "my sister" of two sisters stays the relation alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

KIN = "kin"  # the attribute of a binding row: subject is one side, value the other
MAX_BINDINGS = 32  # binding rows read per key

_CANONICAL = {
    "mom": "mother", "mum": "mother", "mommy": "mother", "mummy": "mother", "mama": "mother", "mother": "mother",
    "dad": "father", "daddy": "father", "papa": "father", "father": "father",
    "stepmom": "stepmother", "stepmother": "stepmother", "stepdad": "stepfather", "stepfather": "stepfather",
    "wife": "wife", "wifey": "wife", "husband": "husband", "hubby": "husband", "spouse": "spouse",
    "partner": "partner", "boyfriend": "boyfriend", "bf": "boyfriend", "girlfriend": "girlfriend", "gf": "girlfriend",
    "fiance": "fiance", "fiancee": "fiance", "fiancé": "fiance", "fiancée": "fiance",
    "sister": "sister", "sis": "sister", "brother": "brother", "bro": "brother",
    "son": "son", "daughter": "daughter", "twin": "twin",
    "boss": "boss", "manager": "boss", "supervisor": "boss", "landlord": "landlord", "landlady": "landlord",
    "roommate": "roommate", "roomie": "roommate", "flatmate": "roommate", "housemate": "roommate",
}
# Relations a person calls by as a name: "Dad finally gave up the BlackBerry".
NAME_LIKE = frozenset({"mom", "mum", "mommy", "mummy", "mama", "dad", "daddy", "papa"})
_RELATION = "|".join(sorted(_CANONICAL, key=len, reverse=True))
# "my mom Yuko", "our landlord, Mr. Park,": the name right after the relation.
_NAME = r"(?:(?:Mr|Mrs|Ms|Dr)\.?\s+)?[A-Z][a-z'’-]+(?:\s+[A-Z][a-z'’-]+)?"
_NAMED = re.compile(rf"\b(?i:my|our)\s+((?i:{_RELATION}))\s*,?\s+({_NAME})\b")


def relation(word: str) -> str:
    """The relation a word names, one form for its synonyms ("mom", "mum" -> "mother")."""
    low = word.lower()
    return _CANONICAL.get(low, low)


def named_relatives(text: str) -> list[tuple[str, str]]:
    """The (relation, name) pairs a message states: "my mom Yuko" -> ("mother", "Yuko")."""
    out: list[tuple[str, str]] = []
    for m in _NAMED.finditer(text):
        out.append((relation(m.group(1)), m.group(2)))
    return list(dict.fromkeys(out))


def bound_names(bindings: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Relation key -> person key, for each relation key bound to exactly one person, from (relation key, person
    key) pairs."""
    names: dict[str, set[str]] = {}
    for rel_key, person in bindings:
        names.setdefault(rel_key, set()).add(person)
    return {rel_key: next(iter(people)) for rel_key, people in names.items() if len(people) == 1}


# "my baby brother", "our mum": a relation the speaker speaks of as their own.
_MY = re.compile(rf"\b(?i:my|our)\s+(?:(?i:little|baby|big|older|younger|elder|kid|eldest|youngest)\s+)?"
                 rf"((?i:{_RELATION}))\b")


def relations_said(text: str) -> set[str]:
    """The relations a message speaks of as the speaker's own: "my baby brother passed" -> {"brother"}."""
    return {relation(m.group(1)) for m in _MY.finditer(text)}
