"""Topics of a person's statements: which attribute a sentence talks about ("we closed on a condo in the
Highlands" is about where the speaker lives), and whose, without reading a value.

A claim (claims/extract.py) needs the predicate and the value in words the lexicon knows; a topic needs only a word
of the attribute's field and a subject. Topics never supersede anything: recall uses them to put the latest statement
on a subject's attribute first when the query asks about the present (recall/updates.py).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hindsight.claims import lexicon as lex
from hindsight.claims.extract import Claim, statement_subject, statements, talked_about

# Brand and model words that are also common words or names ("golf", "Lincoln") say nothing of a car on their own.
_AMBIGUOUS = frozenset({"leaf", "golf", "bolt", "accord", "genesis", "lincoln", "beetle", "mercedes", "jaguar",
                        "vivo", "moto", "android", "galaxy"})
_BRANDS = "|".join(re.escape(w) for w in sorted((lex.CAR_WORDS | lex.PHONE_WORDS) - _AMBIGUOUS))

# The words of each attribute's field. A word here says what a sentence is about, not what value it states.
TOPICS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (attribute, re.compile(rf"\b(?:{words})\b", re.IGNORECASE))
    for attribute, words in (
        ("residence", r"(?:live|lives|living|lived)(?!\s+on\b)|moved|moving|relocated|relocating|apartments?|"
                      r"condo|house|duplex|townhouse|walk-up|(?:one|two|three|four)[- ]bedroom|bedrooms|"
                      r"neighbou?rhood|rent|renting|rented|roommates?|lease|landlord|dorms?|mortgage|closed\s+on|"
                      r"our\s+place|my\s+place|new\s+place|a\s+place\s+together|retirement\s+community|"
                      r"assisted\s+living|unit\s+\d+"),
        ("workplace", r"job|jobs|works|working|worked|hired|promoted|promotion|boss|coworkers?|co-workers?|"
                      r"colleagues?|employer|(?<!me\s)(?<!us\s)(?<!her\s)(?<!him\s)company|firm|office|position|"
                      r"shifts?|career|laid\s+off|fired|resigned|"
                      r"quit|intern|internship|salary|associate|manager|supervisor|nurse|analyst|engineer|"
                      r"barista|teacher|residency|headquarters"),
        ("school", r"school|college|university|campus|class|classes|semester|grade|program|programme|degree|major|"
                   r"majoring|student|students|studying|studies|enrolled|transferred|transfer|bootcamp|mba|phd|"
                   r"master's|masters|thesis|graduated|graduate|dorms?|tuition|elementary|preschool|pre-k|kindergarten|"
                   r"daycare|montessori|academy|homeschool(?:ed|ing)?"),
        ("partner", r"dating|on\s+a\s+date|boyfriend|girlfriend|partner|husband|wife|fianc[ée]e?|married|engaged|"
                    r"wedding|broke\s+up|breakup|break-up|divorced?|separated|single|relationship|seeing\s+someone|"
                    r"keeping\s+company|got\s+together"),
        ("diet", rf"diet|{lex.DIET_WORDS}|meat|eat|eats|eating|ate|lunch|meals?|cheese|dairy|sugar|carbs"),
        ("club", r"club|team|league|choir|chorus|gym|gyms|membership|member|members|crew|squad|band|orchestra|"
                 r"meetup|workout|crossfit|bouldering|yoga|pilates"),
        ("car", rf"car|cars|drive|drives|driving|truck|suv|minivan|van|vehicle|{_BRANDS}"),
        ("phone", rf"phone|phones|cell|smartphone|flip\s+phone|landline|galaxy|android|{_BRANDS}"),
        ("record", r"personal\s+best|personal\s+record|pb|pr|fastest"),
    )
)
_FAVORITE = re.compile(r"\bfavou?rite\b(?:\s+((?:[a-z]+\s+){0,2}?[a-z]+)\s+(?:is|has|would|right|these|at)\b)?",
                       re.IGNORECASE)


def topics_in(text: str, people: Sequence[str] = ()) -> list[Claim]:
    """The topics of one message's statements, as claims without a value (`topic=True`), one per subject and
    attribute; questions and statements of a wish, plan or condition are skipped."""
    people = talked_about(text, people, given_names=False)  # "Austin, in a duplex": a given name, and a place
    out: dict[tuple[str, str], Claim] = {}
    for sentence, before in statements(text):
        for attribute, at in _attributes(sentence):
            subject = statement_subject(sentence, at, before, people)
            if subject is not None:
                out.setdefault((subject, attribute), Claim(subject, attribute, "", False, sentence, topic=True))
    return list(out.values())


def _attributes(sentence: str) -> list[tuple[str, int]]:
    """Each attribute the sentence's words are about, with where its first word starts."""
    found: list[tuple[str, int]] = []
    for attribute, pattern in TOPICS:
        for m in pattern.finditer(sentence):
            word = m.group(0).lower()
            # a brand word names a car or a phone, not both
            if (attribute == "car" and word in lex.PHONE_WORDS) or (attribute == "phone" and word in lex.CAR_WORDS):
                continue
            found.append((attribute, m.start()))
            break
    for m in _FAVORITE.finditer(sentence):
        thing = " ".join(m.group(1).lower().split()) if m.group(1) else ""
        found.append((f"favorite:{thing}" if thing else "favorite", m.start()))
        break
    return found

