"""Claims in one person's message: who (the speaker, a named person, or the speaker's relative), which attribute,
what value, and whether the statement says the value holds or has ended.

Only statements of the present count: a question, a wish, a plan, a condition or a habit of the past ("I used to
live in Boston") states no current value, so it makes no claim.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

from hindsight.claims import lexicon as lex
from hindsight.claims.kin import NAME_LIKE
from hindsight.nicknames import GIVEN_NAMES, MODIFIERS, RELATIONS, TITLES
from hindsight.text import split_sentences

SPEAKER = "speaker"
_SPEAKER_WORDS = frozenset({"i", "i'm", "i've", "i'd", "we", "we're", "we've", "my", "our", "me", "us", "myself"})
_PRONOUNS = frozenset({"he", "she", "he's", "she's", "his", "her", "him"})
_STOP_SUBJECT = frozenset({"you", "your", "you're", "you've", "they", "their", "they're", "it", "its", "it's",
                           "everyone", "someone", "somebody", "nobody", "people"})
_SUBJECT_BEFORE = frozenset({"and", "but", "so", "because", "then", "also", "my", "our", "his", "her", "their",
                             "when", "while", "that", "who", "oh", "well", "anyway", "plus"})
# Words that add a value beside the one held ("also", "on weekends"); a sentence that opens with "Also," only
# continues the talk.
_ADDITIVE = re.compile(r"\b(?:also|as\s+well|additionally|on\s+the\s+side|on\s+(?:the\s+)?weekends|"
                       r"on\s+(?:mon|tues|wednes|thurs|fri|satur|sun)days)\b", re.IGNORECASE)
_OPENING = re.compile(r"^\s*(?:oh,?\s+)?(?:and\s+)?(?:also|plus)\b,?", re.IGNORECASE)
# "Marco and I broke up", "Luis and Ana split up": a claim about each.
_COUPLE = re.compile(r"\b([A-Z][a-z]+|I|we)\s+and\s+([A-Z][a-z]+|I|me)\s*$")
# A partner not named, or named after: "seeing someone", "dating a nurse named Ana".
_UNNAMED = re.compile(r"(?:someone|somebody|a\s+(?:guy|girl|woman|man|boy)|(?:an?\s+)?[a-z]+(?:\s+[a-z]+)?\s+"
                      r"(?:named|called))\b\s*")
# Words before a name that make it an object, not the subject ("I live in Portland and work at ...").
_OBJECT_BEFORE = frozenset({"in", "at", "to", "from", "near", "with", "for", "of", "on", "into", "the", "a", "an",
                            "about", "by", "visited", "visit", "called", "told", "met", "saw", "asked"})
_CLAUSE = re.compile(r"[,;:()\"]|\s[-–—]\s|\b(?:and|but|so|because|though|although|while|whereas)\b", re.IGNORECASE)
# A question tagged onto a statement: ", right?", ", can you believe it?", ", isn't it?".
_TAG_QUESTION = re.compile(
    r",\s*(?:right|huh|eh|no|yeah|ok|okay|you\s+know|(?:can|could|would|do|did)\s+you\s+(?:believe|imagine|guess)\s+"
    r"(?:it|that)|(?:is|are|was|were|do|does|did|has|have|wo|would|ca|could)n't\s+(?:it|he|she|they|we|you|i|that))"
    r"\s*\?+$",
    re.IGNORECASE,
)
_TOKEN = re.compile(r"[A-Za-z0-9][\w'&.-]*")
_BOUNDARY = re.compile(
    r"\s*(?:[,;:!?()\"]|\.(?:\s|$)|\s[-–—]\s|\b(?:and|but|so|because|since|as|with|for|after|before|when|while|until|"
    r"last|this|next|two|three|four|a\s+few|ago|in\s+(?:19|20)\d\d|on\s+(?:mon|tues|wednes|thurs|fri|satur|sun)day|"
    r"now|anymore|any\s+more|yet|though|which|who|where|that|to|right|again|too|instead|these|starting|from|"
    r"full[- ]time|part[- ]time|by|about|over|into|if|or|soon|recently|lately|today|tonight|yesterday|tomorrow|"
    r"back|either|anyway|btw|lol|haha|nearby|downtown|in|on|at|is|was|are|were|has|have|had|will|every|each|out|up|"
    r"done|started|starts|began|begins)\b)",
    re.IGNORECASE,
)
_LEADING = frozenset({"a", "an", "the", "my", "our", "his", "her", "their", "new", "brand", "used", "local", "little",
                      "big", "same", "current", "nice", "lovely", "beautiful", "huge", "tiny", "old"})
_ARTICLES = frozenset({"a", "an", "the", "my", "our", "his", "her", "their"})
_MAX_VALUE_TOKENS = 6
# Lower-case words inside a name ("University of Washington", "Rio de Janeiro").
_NAME_LINKS = frozenset({"of", "the", "de", "del", "da", "do", "la", "le", "los", "las", "du", "di", "von", "van", "&"})
# A name that opens a sentence before a comma is whom it is said to ("Nova, I got the job"), or a place that
# answers a question ("Austin, in a little duplex"), not its subject.
_VOCATIVE = re.compile(r"^\s*(?:(?:hey|hi|oh|so|well)\s+)?[A-Z][\w'-]*,\s")
_MINE = re.compile(r"(traded\s+(?:in\s+)?)?(?:my|our)\s", re.IGNORECASE)
# After "my": words that make the thing one had not yet ("my first car", "my dream car", "my next phone").
_HAD = re.compile(r"(?!(?:[\w-]+\s+)?(?:first|next|dream|own|new|future|ideal)\b)", re.IGNORECASE)
_PAST = re.compile(r"\b(?:used\s+to|back\s+when|once\s+had)\b", re.IGNORECASE)
_MAJOR = re.compile(r"\ban?\s+((?:[a-z-]+\s+){0,2}?[a-z-]+)\s+major\b", re.IGNORECASE)


@dataclass(frozen=True)
class Claim:
    """A statement that an attribute of a subject has a value (or that the value has ended). `subject` is
    `SPEAKER`, a person's name as written, or "rel:<relation>" for the speaker's relative ("my sister")."""

    subject: str
    attribute: str
    value: str  # "" when the statement names none ("I moved into a new apartment", "we broke up")
    ended: bool
    sentence: str
    additional: bool = False  # "I'm also tutoring at the library on Saturdays": beside the value, not instead
    topic: bool = False  # only says what the sentence is about (claims/topics.py): no value, never supersedes


def claims_in(text: str, people: Sequence[str] = ()) -> list[Claim]:
    """The claims of one message, in order; `people` are the persons it names (known given names and names after
    "my sister" are found too), to read "he" and "she"."""
    people = talked_about(text, people)
    out: list[Claim] = []
    seen: set[tuple[str, str, str, bool]] = set()
    for sentence, before in statements(text):
        for claim in _sentence_claims(sentence, before, people):
            key = (claim.subject, claim.attribute, claim.value.lower(), claim.ended)
            if key not in seen:
                seen.add(key)
                out.append(claim)
    return out


def statements(text: str) -> Iterator[tuple[str, str]]:
    """Each sentence of the text that is not a question, with the text before it; a statement with a tag question
    ("He still uses a BlackBerry, can you believe it?") is the statement."""
    text = text.replace("’", "'")
    offset = 0
    for sentence in split_sentences(text):
        start = text.find(sentence, offset)
        offset = start + len(sentence)
        stated = _TAG_QUESTION.sub("", sentence.rstrip())
        if not stated.endswith("?"):
            yield stated, text[:start]


def talked_about(text: str, people: Sequence[str], given_names: bool = True) -> list[str]:
    """`people` and the persons the text names after a relation ("my sister Ana") or, with `given_names`, by a
    known given name."""
    tokens = _TOKEN.findall(text)
    return [*people, *(t.rstrip(".") for i, t in enumerate(tokens) if t[0].isupper() and (
        (given_names and t.lower() in GIVEN_NAMES) or t.lower() in NAME_LIKE
        or (i > 0 and tokens[i - 1].lower() in RELATIONS)))]


def statement_subject(sentence: str, at: int, before: str, people: Sequence[str]) -> str | None:
    """Whom the statement whose words start at `at` is about: the subject of its clause, else of the words before
    it; a fragment that names no one ("Austin, in a little duplex") is the speaker's own. None for a wish, plan,
    condition or question, or a subject that is not a person ("you", "they")."""
    left = _VOCATIVE.sub("", sentence[:at])
    clause = _stated_clause(left)
    if clause is None:
        return None
    pronoun = _last_person(before + left, people)
    known = {p.lower().rstrip(".") for p in people}
    for words in (clause, left):
        subject = _subject(words, pronoun)
        # A capitalised word counts only as a person the message names ("Austin, in a duplex" is a place).
        if subject is not None and subject != SPEAKER and not subject.startswith("rel:"):
            subject = subject.rstrip(".")
            subject = subject if subject.lower() in known else None
        if subject is not None:
            return subject
    rest = _VOCATIVE.sub("", sentence)
    words_in = {t.lower() for t in _TOKEN.findall(rest)}
    named = any(re.search(rf"(?<!\w){re.escape(p)}(?!\w)", rest) for p in people)
    return None if named or words_in & (_STOP_SUBJECT | _PRONOUNS | RELATIONS) else SPEAKER


def _last_person(before: str, people: Sequence[str]) -> str | None:
    """The person named last as a subject in the text before a pronoun, whom its "he" or "she" means: a name at
    the start of a clause or after "my sister", not one after a verb or preposition ("Hannah quit Torchy's, she's
    ...")."""
    best, at = None, -1
    for name in people:
        for m in re.finditer(rf"(?<!\w){re.escape(name)}(?!\w)", before):
            words = _TOKEN.findall(before[: m.start()][-40:])
            prev = words[-1].lower() if words and not re.search(r"[,.;:!?]\s*$", before[: m.start()]) else ""
            if m.start() > at and (not prev or prev in _SUBJECT_BEFORE or prev in RELATIONS):
                best, at = name, m.start()
    return best


def _sentence_claims(sentence: str, before: str, people: Sequence[str]) -> list[Claim]:
    """The claims of one sentence; "he" and "she" are the person named last before the predicate."""
    out: list[Claim] = []
    for rule in lex.RULES:
        for m in rule.pattern.finditer(sentence):
            out += _rule_claims(rule, sentence, m, _last_person(before + sentence[: m.start()], people))
    pronoun = _last_person(before + sentence, people)
    out += _diet_claims(sentence, pronoun)
    out += _favorite_claims(sentence, pronoun)
    out += _record_claims(sentence, pronoun)
    out += _major_claims(sentence, pronoun)
    out += _partner_named_first(sentence, pronoun)
    # "I quit my job at X" reads as a job at X and as leaving it: the ending wins.
    ended = {(c.subject, c.attribute, c.value) for c in out if c.ended}
    additional = _ADDITIVE.search(_OPENING.sub("", sentence)) is not None
    return [replace(c, additional=additional) for c in out
            if c.ended or (c.subject, c.attribute, c.value) not in ended]


def _stated_clause(left: str, owned: bool = False) -> str | None:
    """The last clause of the words before a predicate, whose subject the predicate shares ("I live in Portland and
    work at Providence"); None when they make it no statement of the present (a condition, wish or plan). A thing
    `owned` ("my Buick") is had now even in a plan ("I'll drive to Kroger in my Buick"): only a condition or the past
    says otherwise."""
    clause = next((c for c in reversed(_CLAUSE.split(left)) if _TOKEN.search(c)), "")
    if lex.CONDITIONAL.search(left) or (_PAST.search(clause) if owned else lex.HYPOTHETICAL.search(clause)):
        return None
    return clause


def _context(
    sentence: str, start: int, pronoun: str | None, subject: str | None = None, owned: bool = False
) -> tuple[str, bool] | None:
    """The subject of the predicate starting at `start` (unless given), and whether it is negated; None when the
    words before it make no statement of the present, or name no subject."""
    left = sentence[:start]
    clause = _stated_clause(left, owned)
    if clause is None:
        return None
    subject = subject or _subject(clause, pronoun) or _dropped(left)
    if subject is None:
        return None
    return subject, lex.NEGATION.search(clause) is not None


def _dropped(left: str) -> str | None:
    """The speaker, when the words before the predicate are only fillers: chat drops the "I" ("Got a 1BHK in HSR
    Layout", "So no more fish either")."""
    words = [t.lower() for t in _TOKEN.findall(_VOCATIVE.sub("", left))]
    named = any(w in _PRONOUNS or w in _STOP_SUBJECT for w in words)  # "she's" is a filler, and names someone
    return SPEAKER if not named and all(w in lex.FILLERS for w in words) else None


def _subject(clause: str, pronoun: str | None) -> str | None:
    """Scan back from the predicate to the nearest word that names who the clause is about."""
    tokens = _TOKEN.findall(clause)
    i = len(tokens) - 1
    while i >= 0:
        token = tokens[i]
        low = token.lower()
        if low in _SPEAKER_WORDS:
            return SPEAKER
        if low in _PRONOUNS:
            return pronoun
        if low in _STOP_SUBJECT:
            return None
        if low in RELATIONS and not (token[0].isupper() and low in NAME_LIKE):  # "Dad" is a name
            owner = next((t.lower() for t in reversed(tokens[:i]) if t.lower() not in MODIFIERS), "")
            return f"rel:{low}" if owner in {"my", "our"} else None
        if token[0].isupper() and low not in lex.FILLERS and low.rstrip(".") not in TITLES:
            name = [token[:-2] if low.endswith("'s") else token]
            while i > 0 and tokens[i - 1][0].isupper() and tokens[i - 1].lower() not in lex.FILLERS:
                i -= 1
                name.insert(0, tokens[i])
            if i == 0 or tokens[i - 1].lower() not in _OBJECT_BEFORE:
                return " ".join(name)
        i -= 1
    return None


def _value(rest: str, limit: int | None = _MAX_VALUE_TOKENS) -> str:
    """The value phrase at the start of `rest`: up to a clause boundary, without leading determiners; "" when
    longer than `limit` words."""
    cut = _BOUNDARY.search(rest)
    phrase = rest[: cut.start()] if cut else rest
    tokens = _TOKEN.findall(phrase)
    while tokens and tokens[0].lower() in _LEADING and not _opens_name(tokens):
        tokens.pop(0)
    if limit is not None and len(tokens) > limit:
        return ""
    return " ".join(tokens).rstrip(".'")


def _opens_name(tokens: list[str]) -> bool:
    """Whether a leading word is part of the name after it: "New York", "Old Town", "Big Sur" (not "The Cliffs")."""
    first = tokens[0]
    return first.lower() not in _ARTICLES and len(tokens) > 1 and first[0].isupper() and tokens[1][0].isupper()


def _name_run(rest: str) -> str:
    """Of words that open with a name, the name: "Kilimani" of "Kilimani gets the morning light", "University of
    Washington" of "University of Washington has a...", "Wuse 2"; `rest` as it is when it opens with no name."""
    tokens = rest.split(" ")
    end = 0
    while end < len(tokens):
        after = end
        while after < len(tokens) and tokens[after].lower() in _NAME_LINKS:  # "de los"
            after += 1
        linked = 0 < end < after < len(tokens) and tokens[after][:1].isupper()
        numbered = end > 0 and tokens[end].rstrip(",.;:!?").isdigit() and len(tokens[end]) <= 3  # "Wuse 2"
        if not (tokens[end][:1].isupper() or linked or numbered):
            break
        end += 1
    return " ".join(tokens[:end]) if end else rest


def _capitalised(value: str) -> bool:
    return any(t[0].isupper() or t[0].isdigit() for t in value.split())


def _rule_claims(rule: lex.Rule, sentence: str, m: re.Match[str], pronoun: str | None) -> list[Claim]:
    """The claim of one rule match; a couple's breaking up is a claim about each of the two."""
    # "my iPhone 12", "Robert traded in my Buick for a Honda Fit": the speaker's
    possessive = _MINE.match(m.group(0))
    mine = possessive is not None
    # "my Buick" itself, not what it was traded for, is had now even in a plan
    owned = possessive is not None and possessive.group(1) is None and _HAD.match(sentence[m.end():]) is not None
    context = _context(sentence, m.start(), pronoun, SPEAKER if mine else None, owned)
    if context is None:
        return []
    claim = _rule_claim(rule, sentence, m, context, mine)
    if claim is None:
        return []
    couple = _COUPLE.search(sentence[: m.start()]) if claim.attribute == "partner" else None
    if couple is None or not claim.ended:
        return [claim]
    a, b = (SPEAKER if w.lower() in _SPEAKER_WORDS else w for w in couple.groups())
    return [Claim(a, "partner", "" if b == SPEAKER else b, True, sentence),
            Claim(b, "partner", "" if a == SPEAKER else a, True, sentence)]


def _rule_claim(
    rule: lex.Rule, sentence: str, m: re.Match[str], context: tuple[str, bool], mine: bool
) -> Claim | None:
    subject, negated = context
    ended = rule.ended or negated
    kind = rule.value
    rest = sentence[m.end():]
    # A device is named by its brand, often after a comma: "I got a new car, a Honda Civic".
    if kind is lex.ValueKind.DEVICE:
        value = _value(rest.replace(",", " ", 1), None)
    elif kind is lex.ValueKind.PROPER:
        value = _value(_name_run(rest))
    else:
        value = _value(rest)
    attribute = _attribute(rule, value, sentence[: m.end()])
    if attribute is None:
        return None
    words = {w.lower() for w in value.split()}
    if kind is lex.ValueKind.NAME:
        unnamed = _UNNAMED.match(value)
        value = _name(value[unnamed.end():] if unnamed else value)
        if not value and not ended and unnamed is None:
            return None
    elif kind is lex.ValueKind.DEVICE:
        # "my Galaxy S21", "my old Civic": the brand right after "my", not "my neighbor got a Rivian"
        value = _device(value, 2 if mine else 6)
        if not value:
            return None
    elif kind is lex.ValueKind.MOVED:
        if not _capitalised(value):
            # "moved into my new apartment": a new home, not named
            if not re.search(r"\b(?:new|own)\b", m.group(0), re.IGNORECASE):
                return None
            value = ""
    elif kind is lex.ValueKind.CLUBBY or (kind is lex.ValueKind.JOINED and attribute.startswith("club")):
        # "joined a Striders hill session as a guest": one outing, not the club
        named = words & lex.CLUB_WORDS or _club(words) == "club:sport"
        if not (value and named) or value.split()[-1].lower() in lex.OUTINGS:
            return None
    elif kind in (lex.ValueKind.PROPER, lex.ValueKind.SCHOOLY, lex.ValueKind.JOINED):
        if not _capitalised(value):
            return None
    elif not value or value.lower() in lex.EMPTY_VALUES:
        if not ended:
            return None
        value = ""
    return Claim(subject, attribute, value, ended, sentence)


def _attribute(rule: lex.Rule, value: str, head: str) -> str | None:
    """The rule's attribute, or the one its value decides (device brands, clubs, schools, what was joined)."""
    words = {w.lower().strip(".'") for w in value.split()}
    kind = rule.value
    if kind is lex.ValueKind.DEVICE:
        if words & lex.CAR_WORDS:
            return "car"
        return "phone" if words & lex.PHONE_WORDS else None
    if kind is lex.ValueKind.SCHOOLY:
        return rule.attribute if words & lex.SCHOOL_WORDS else None
    if kind is lex.ValueKind.JOINED:
        if words & lex.CLUB_WORDS or _club(words) == "club:sport":  # "joined Oadby Shuttlers badminton"
            return _club(words | set(head.lower().split()))
        return "school" if words & lex.SCHOOL_WORDS else "workplace"
    if kind is lex.ValueKind.CLUBBY:
        return _club(words | set(head.lower().split()))
    return rule.attribute


def _club(words: set[str]) -> str:
    """"club:<activity>" when the words say which activity, else "club"."""
    for names, activity in lex.ACTIVITIES:
        if words & names:
            return f"club:{activity}"
    return "club"


def _name(value: str) -> str:
    tokens = value.split()
    name: list[str] = []
    for t in tokens:
        if not t[0].isupper() or t.lower().rstrip(".") in TITLES:
            break
        name.append(t)
    return " ".join(name[:3])


def _device(value: str, within: int | None) -> str:
    """The brand and model: the first brand or model word (among the first `within` words) and the capitalised or
    numbered words after it ("Galaxy S21", "iPhone 15 Pro", "Tesla Model 3")."""
    tokens = value.split()
    known = lex.CAR_WORDS | lex.PHONE_WORDS
    for i, t in enumerate(tokens[:within]):
        if t.lower().endswith("'s"):  # "my dad's Camry": someone else's
            return ""
        if t.lower() in known:
            model = [t]
            for nxt in tokens[i + 1 : i + 3]:
                if not (nxt[0].isupper() or any(ch.isdigit() for ch in nxt)):
                    break
                model.append(nxt)
            return " ".join(model)
    return ""


def _diet_claims(sentence: str, pronoun: str | None) -> list[Claim]:
    out: list[Claim] = []
    for m in lex.DIET_ENDED.finditer(sentence):
        context = _context(sentence, m.start(), pronoun)
        if context is not None:
            out.append(Claim(context[0], "diet", _diet(m.group(1)), True, sentence))
    for m in lex.DIETS.finditer(sentence):
        before = sentence[: m.start()]
        verb = lex.DIET_VERBS.search(before)
        if any(e.start() <= m.start() < e.end() for e in lex.DIET_ENDED.finditer(sentence)):
            continue
        after = sentence[m.end():].split()
        if verb is None or (after and after[0].lower().strip(".,!") in lex.DIET_NOT_AFTER):
            continue
        context = _context(sentence, verb.start(), pronoun)
        negated = lex.NEGATION.search(before[verb.start():]) is not None
        if context is not None:
            value = _diet(m.group(1))
            out.append(Claim(context[0], "diet", value, context[1] or negated, sentence))
    for m in lex.DIET_FOODS.finditer(sentence):
        context = _context(sentence, m.start(), pronoun)
        if context is None:
            continue
        food = " ".join(m.group(3).lower().split())
        stops = m.group(1) is not None and not re.match(r"started|began|back", m.group(1), re.IGNORECASE)
        out.append(Claim(context[0], "diet", f"no {food}" if stops else food, context[1], sentence))
    for m in lex.NAMED_DIET.finditer(sentence):
        context = _context(sentence, m.start(), pronoun)
        if context is not None:
            out.append(Claim(context[0], "diet", m.group(1).lower(), context[1], sentence))
    return out


def _diet(words: str) -> str:
    """A diet's name as one value: "gluten free" of "Gluten-free", "vegetarian" of "vegetarians"."""
    name = " ".join(words.lower().replace("-", " ").split())
    return name[:-1] if name.endswith("ans") else name


def _favorite_claims(sentence: str, pronoun: str | None) -> list[Claim]:
    out: list[Claim] = []
    for m in lex.FAVORITE.finditer(sentence):
        context = _context(sentence, m.start(), pronoun)
        value = _value(sentence[m.end():])
        if context is not None and value:
            thing = " ".join(m.group(1).lower().split())
            out.append(Claim(context[0], f"favorite:{thing}", value, context[1], sentence))
    return out


def _major_claims(sentence: str, pronoun: str | None) -> list[Claim]:
    """"a biology major": what someone studies."""
    out: list[Claim] = []
    for m in _MAJOR.finditer(sentence):
        context = _context(sentence, m.start(), pronoun)
        if context is not None:
            out.append(Claim(context[0], "major", m.group(1).lower(), context[1], sentence))
    return out


def _partner_named_first(sentence: str, pronoun: str | None) -> list[Claim]:
    """"Claire and I are dating", "Sam is my new girlfriend": the partner is named before the predicate."""
    out: list[Claim] = []
    for m in lex.PARTNER_FIRST.finditer(sentence):
        context = _context(sentence, m.start(), pronoun, SPEAKER)
        if context is not None and m.group(1).lower().rstrip(".") not in TITLES:
            out.append(Claim(SPEAKER, "partner", m.group(1), context[1], sentence))
    return out


def _record_claims(sentence: str, pronoun: str | None) -> list[Claim]:
    m = lex.RECORD.search(sentence)
    if m is None:
        return []
    context = _context(sentence, m.start(), pronoun)
    number = lex.RECORD_VALUE.search(sentence, m.end()) or lex.RECORD_VALUE.search(sentence)
    if context is None or number is None:
        return []
    event = lex.RECORD_EVENT.search(sentence)
    name = event.group(1).lower() if event else ""
    return [Claim(context[0], f"record:{name}", number.group(0).lower(), False, sentence)]
