"""Entity resolution: map a mention to an existing canonical entity, or decide it is new.

A mention m goes to the candidate e maximizing
    alpha * sim_str(m, e) + beta * sim_co(m, e) + gamma * sim_temp(m, e)
when that score reaches `EntityConfig.threshold`. The resolver is pure logic: the store fetches
candidates by `blocking_keys`, reads co-occurrence for the `plausible` ones, passes them in, and applies the returned
`Resolution`.
Store contract: index every entity under `blocking_keys(name)` and `blocking_keys(alias)` of each
alias; keep `cooccurring` and `context` as `normalize_name(clean_mention(text))`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import lru_cache

from rapidfuzz import fuzz

from hindsight.config import EntityConfig
from hindsight.models import EntityCandidate, EntityMention
from hindsight.names import NameKey, blocking_keys, clean_mention, initials, name_key, normalize_name
from hindsight.nicknames import GIVEN_NAMES, NICKNAMES
from hindsight.retain.entity_words import DESIGNATORS

__all__ = ["EntityResolver", "Resolution", "blocking_keys", "clean_mention", "naming_score", "normalize_name"]

UNKNOWN_LABEL = "ENTITY"
PREFIX_SCORE = 0.9  # whole-token prefix/subset: "Robert" ~ "Robert Smith"
SURNAME_SCORE = 0.8  # trailing tokens only: "Smith" ~ "Robert Smith"
NICK_SIBLING_SCORE = 0.9  # two nicknames of one name ("Bobby" ~ "Bob"): plausible, not exact
FUZZY_MIN_LEN = 6  # one edit in a shorter name makes another name (Tom/Tim, Anna/Hanna)
_EPS = 1e-9
_PAIR_CACHE_MAX = 1 << 16
# spaCy tags the same place GPE or LOC depending on context, and a building or a business (a hospital, a park, a
# restaurant) FAC, LOC or ORG; other labels must agree.
_LABEL_GROUP = {"GPE": "PLACE", "LOC": "PLACE"}
_COMPATIBLE_GROUPS = frozenset({frozenset({"FAC", "PLACE"}), frozenset({"FAC", "ORG"})})
# The labels of a company's name: spaCy calls a business ORG or FAC.
_BUSINESS_GROUPS = frozenset({"ORG", "FAC"})


@dataclass
class Resolution:
    """The resolver's decision for one mention.

    `entity_id` None means "create a new entity named `name`", with both scores 1.0 by convention.
    An exact match may score below the threshold (see `EntityResolver.resolve`). A mention with no
    usable name (empty or punctuation once cleaned) gets `name` == `alias` == "" and scores 0.0:
    the caller should skip it.
    """

    entity_id: str | None
    name: str
    label: str
    score: float
    string_score: float
    alias: str


_NICK_FORMALS = {nick: frozenset(formals) for nick, formals in NICKNAMES.items()}
_NO_MATCH = (0.0, False)


def _token_score(a: str, b: str, gate: float, given: bool) -> tuple[float, bool]:
    """Similarity of a mention's token `a` and a different candidate token `b`, and whether it is literal (not via
    a nickname)."""
    if given:  # nicknames only apply in the given-name position
        fa, fb = _NICK_FORMALS.get(a), _NICK_FORMALS.get(b)
        if fa is not None and b in fa:
            return 1.0, False
        if fb is not None and a in fb:
            # A candidate known by a nickname of several names ("Chris": Christopher, Christine) is not known to
            # bear the mention's formal name; one of a single name ("Bob": Robert) is.
            return (1.0, False) if len(fb) == 1 else _NO_MATCH
        if fa is not None and fb is not None and not fa.isdisjoint(fb):
            return NICK_SIBLING_SCORE, False
    # Fuzzy matching is for typos only. A changed first or last letter usually makes another
    # name (Julian/Juliana, Christian/Christina); so does one edit in a short name (Tom/Tim,
    # Anna/Hanna); two names we know are distinct (Francis/Frances, Caroline/Carolyn).
    if (
        a[0] != b[0] or a[-1] != b[-1] or len(a) < FUZZY_MIN_LEN or len(b) < FUZZY_MIN_LEN
        or (a in GIVEN_NAMES and b in GIVEN_NAMES)
    ):
        return _NO_MATCH
    ratio = fuzz.ratio(a, b) / 100.0
    # Below the gate a fuzzy score counts as 0: near-misses are rejected, not down-weighted.
    return (ratio, True) if ratio >= gate else _NO_MATCH


def _form_score(m: tuple[str, ...], f: tuple[str, ...], gate: float, legal: bool) -> tuple[float, bool]:
    """(sim_str, literal) of two keys that are not equal, `legal` when the longer is a company's full name; (0.0,
    False) when rejected."""
    low, literal = 1.0, True
    if len(m) == len(f):
        for i, a in enumerate(m):
            b = f[i]
            if a != b:
                score, lit = _token_score(a, b, gate, i == 0)
                if score <= 0.0:
                    return _NO_MATCH
                low, literal = min(low, score), literal and lit
        return low, literal
    mention_short = len(m) < len(f)
    short, long_ = (m, f) if mention_short else (f, m)
    # Greedy in-order alignment of the shorter name's tokens into the longer one.
    first = last = -1
    j = 0
    for i, token in enumerate(short):
        while j < len(long_):
            other = long_[j]
            pair = (token, other) if mention_short else (other, token)
            score, lit = (1.0, True) if token == other else _token_score(*pair, gate, i == 0 and j == 0)
            j += 1
            if score > 0.0:
                first = j - 1 if first < 0 else first
                last = j - 1
                low, literal = min(low, score), literal and lit
                break
        else:
            return 0.0, False
    if first == 0:
        if last == len(short) - 1 and _variant(short, long_, legal):
            # "Northwind" ~ "Northwind Labs": the same name, but not literally, so the labels must agree.
            return low, False
        return PREFIX_SCORE * low, literal
    if last == len(long_) - 1:
        return SURNAME_SCORE * low, literal
    return 0.0, False  # middle tokens only ("Anne" in "Jane Anne Smith") is too weak


def _variant(short: tuple[str, ...], long_: tuple[str, ...], legal: bool) -> bool:
    """Whether the longer name, which starts with the shorter, names the same thing: it adds only designators
    ("Northwind Labs"), or it is a company's full name, which people shorten to its first words ("Acme" for "Acme
    Robotics Inc."; without "Inc." "Acme Robotics" may be a part of Acme). A lone given name before such words names
    a person ("Helen Park")."""
    return (legal or all(t in DESIGNATORS for t in long_[len(short):])) and not _given_alone(short)


def _given_alone(tokens: tuple[str, ...]) -> bool:
    return len(tokens) == 1 and tokens[0] in GIVEN_NAMES


def _match(mkey: NameKey, form: str, gate: float) -> tuple[float, bool, bool]:
    """(sim_str, literal, form is a full name) of a mention key against a candidate name or alias."""
    fkey = name_key(form)
    full = len(fkey.tokens) > 1
    if not fkey.joined or (mkey.gender and fkey.gender and mkey.gender != fkey.gender):
        return 0.0, False, full  # nothing to match, or Mr. Smith vs Mrs. Smith
    if fkey.joined == mkey.joined or (mkey.compact and fkey.compact == mkey.compact):
        return 1.0, True, full
    legal = fkey.legal if len(fkey.tokens) > len(mkey.tokens) else mkey.legal
    return (*_form_score(mkey.tokens, fkey.tokens, gate, legal), full)


_ACRONYM = re.compile(r"[A-Z]{2,6}")


def _acronym(mention: str, cand: EntityCandidate) -> bool:
    """Whether an all-capitals mention spells the initials of one of the candidate's names, or the mention's
    initials spell one written in capitals ("USF" ~ "University of South Florida")."""
    text = mention.strip()
    forms = (cand.name, *cand.aliases)
    if _ACRONYM.fullmatch(text):
        return any(initials(f) == text.lower() for f in forms)
    short = initials(text)
    return len(short) > 1 and any(_ACRONYM.fullmatch(f.strip()) and f.strip().lower() == short for f in forms)


def naming_score(text: str, cand: EntityCandidate) -> float:
    """How surely words that NER passed over name a known entity: 1.0 when they are one of its names, PREFIX_SCORE
    when they are the first words of a company's full name, or the other way round ("Acme" ~ "Acme Robotics Inc."),
    else 0.0. Without a label of their own, they get no other partial match: "Chelsea" is not "Chelsea Market", nor
    "Collins" "Collins Institute"."""
    key = name_key(text)
    if not key.joined:
        return 0.0
    business = _label_group(cand.label) in _BUSINESS_GROUPS
    best = 0.0
    for form in (cand.name, *cand.aliases):
        fkey = name_key(form)
        if fkey.joined == key.joined or (key.compact and fkey.compact == key.compact):
            return 1.0
        short, long_ = (key, fkey) if len(key.tokens) < len(fkey.tokens) else (fkey, key)
        n = len(short.tokens)
        if (business and long_.legal and n < len(long_.tokens) and long_.tokens[:n] == short.tokens
                and not _given_alone(short.tokens)):
            best = PREFIX_SCORE
    return best


def _aware(value: datetime) -> datetime:
    """Naive datetimes are UTC; aware ones are kept (subtracting handles offsets, whereas
    converting extreme values such as datetime.min to UTC would overflow)."""
    return value.replace(tzinfo=timezone.utc) if value.utcoffset() is None else value


@lru_cache(maxsize=1024)
def _label_group(label: str) -> str:
    """Label folded into its compatibility group; "" stands for unknown (fits anything)."""
    norm = (label or "").strip().upper()
    return "" if norm in ("", UNKNOWN_LABEL) else _LABEL_GROUP.get(norm, norm)


def _norm_label(label: str) -> str:
    return (label or "").strip().upper() or UNKNOWN_LABEL


class EntityResolver:
    """Scores mentions against candidates with the weights of an `EntityConfig`."""

    def __init__(self, config: EntityConfig) -> None:
        self.config = config
        self._gate = config.min_string_similarity
        self._window = config.recency_days * 86400.0
        # (mention key, title gender, legal) -> {candidate form -> (sim_str, literal)}; names recur,
        # and this keeps resolve() cheap when the same candidates come back.
        self._pairs: dict[tuple[str, str | None, bool], dict[str, tuple[float, bool, bool]]] = {}
        self._pair_count = 0

    def _pair_table(self, key: NameKey) -> dict[str, tuple[float, bool, bool]]:
        table = self._pairs.get((key.joined, key.gender, key.legal))
        if table is None:
            if self._pair_count > _PAIR_CACHE_MAX:
                self._pairs.clear()
                self._pair_count = 0
            table = self._pairs[(key.joined, key.gender, key.legal)] = {}
        return table

    def _string_score(
        self, key: NameKey, cand: EntityCandidate, table: dict[str, tuple[float, bool, bool]]
    ) -> tuple[float, bool]:
        # A full-name mention is judged by the candidate's full names only when it has some:
        # "Robert Jones" must not reach "Robert Smith" through its short alias "Bob".
        full_mention = len(key.tokens) > 1
        best = best_full = 0.0
        literal = literal_full = has_full = False
        for form in (cand.name, *cand.aliases):
            hit = table.get(form)
            if hit is None:
                hit = table[form] = _match(key, form, self._gate)
                self._pair_count += 1
            score, lit, full = hit
            if score >= 1.0 and lit:
                return 1.0, True
            if full_mention and full:
                has_full = True
                if score > best_full or (score == best_full and lit):
                    best_full, literal_full = score, lit
            if score > best or (score == best and lit):
                best, literal = score, lit
        return (best_full, literal_full) if has_full else (best, literal)

    def string_similarity(self, mention: str, candidate: EntityCandidate) -> float:
        """sim_str in [0, 1]: the best match of the mention against the name and the aliases."""
        key = name_key(mention)
        return self._string_score(key, candidate, self._pair_table(key))[0] if key.joined else 0.0

    def plausible(self, mention: EntityMention, candidates: list[EntityCandidate]) -> list[EntityCandidate]:
        """The candidates `resolve` scores for this mention; the others it skips whatever their context."""
        return [m[0] for m in self._matches(mention, candidates)]

    def _matches(
        self, mention: EntityMention, candidates: list[EntityCandidate]
    ) -> Iterator[tuple[EntityCandidate, float, bool, bool]]:
        """Each plausible candidate with its string score, whether that match is literal, and label compatibility."""
        key = name_key(mention.text)
        if not key.joined:
            return
        group = _label_group(mention.label)
        table = self._pair_table(key)
        for cand in candidates:
            cgroup = _label_group(cand.label)
            # An unknown label fits anything.
            compatible = not group or not cgroup or group == cgroup or frozenset({group, cgroup}) in _COMPATIBLE_GROUPS
            string, literal = self._string_score(key, cand, table)
            if string >= 1.0 and not literal and group == "PLACE":
                continue  # a city names many things after it: "Boston" is not "Boston Airport"
            if string <= 0.0 and _acronym(mention.text, cand):
                string, literal = 1.0, False
            if string <= 0.0 or not (compatible or (literal and string >= 1.0)):
                continue
            yield cand, string, literal, compatible

    def resolve(
        self,
        mention: EntityMention,
        when: datetime,
        context: set[str],
        candidates: list[EntityCandidate],
    ) -> Resolution:
        """Pick the candidate this mention refers to, or decide it is a new entity.

        `context` holds the normalized names of the other entities of the same unit. Candidates
        with a rejected string match are skipped outright: context and recency can raise a
        plausible name match, never create one. An incompatible label (PERSON vs ORG) rejects
        every match but the literal exact one: spaCy's small model labels one name differently
        from sentence to sentence ("DuckDB" PERSON, then ORG) far more often than two different
        things share a name in one memory; among exact matches the compatible label still wins.
        An exact match (sim_str 1.0, also through a nickname: "Bob" ~ "Robert") always wins and is
        accepted even below the threshold: with the default weights a lone exact name scores 0.5 < 0.6, so applying the
        threshold literally would split "Alice" from "Alice" a month later.
        Never raises on odd text; see `Resolution` for the empty-name case.
        """
        label = _norm_label(mention.label)
        if not name_key(mention.text).joined:
            return Resolution(None, "", label, 0.0, 0.0, "")
        alpha, beta, gamma = self.config.alpha, self.config.beta, self.config.gamma
        now, window, n_context = _aware(when), self._window, len(context)
        best: EntityCandidate | None = None
        best_rank: tuple[int, bool, float, float, bool, float] = (-1, False, 0.0, 0.0, False, 0.0)
        for cand, string, literal, compatible in self._matches(mention, candidates):
            # sim_co: share of this unit's other entities already seen with the candidate.
            co = len(context & cand.cooccurring) / n_context if n_context else 0.0
            # sim_temp: linear decay over the recency window, in either direction of time, so
            # backfilled older conversations count as close too.
            recency, temp = -float("inf"), 0.0
            if cand.last_seen is not None:
                age = abs((now - _aware(cand.last_seen)).total_seconds())
                recency = -age
                if window > 0.0:
                    temp = max(0.0, 1.0 - age / window)
            score = alpha * string + beta * co + gamma * temp
            # Literal exact > nickname exact > the rest; then a compatible label, combined score,
            # string score, literal over nickname, recency; the first candidate wins a full tie.
            exact = (2 if literal else 1) if string >= 1.0 else 0
            rank = (exact, compatible, score, string, literal, recency)
            if rank > best_rank:
                best, best_rank = cand, rank
        alias = clean_mention(mention.text)
        if best is None or (best_rank[0] == 0 and best_rank[2] < self.config.threshold - _EPS):
            return Resolution(None, alias, label, 1.0, 1.0, alias)
        cand_label = _norm_label(best.label)
        return Resolution(
            entity_id=best.id,
            name=best.name,
            # An unlabelled entity takes the first specific label it is seen with.
            label=label if cand_label == UNKNOWN_LABEL else cand_label,
            score=best_rank[2],
            string_score=best_rank[3],
            alias=alias,
        )
