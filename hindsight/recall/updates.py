"""Knowledge updates: the current fact first.

Retain links a newer unit to an older one whose state claim it supersedes: the same subject (the speaker of a
first-person statement, or a named person resolved through the entity graph) and the same attribute (where they
live, work or study, whom they date, their diet, club, car or phone, a favourite or a personal best), with a
changed or ended value (hindsight/claims/, retain/updates.py). Recall reads those links for its candidates:
- every candidate that a newer unit supersedes is marked `superseded_by`;
- when the query asks about the present ("now", "currently", "still", "anymore", or simply "Where does Danny
  live?") rather than the past ("before", "used to", "previously") or a period (a time constraint), and asks
  about that attribute (or says "now" and names none), the newest unit of each chain is placed just above the
  superseded one, loaded from the store if no channel found it (a session may update one fact twice: "I moved to
  Denver", "my apartment is in the Highlands"). The older unit stays, as history.
- when the query asks about an attribute as it is today ("now", "currently", "these days", or in the present tense
  without a cue of the past: "What car does Maya drive?"), the candidates that talk about one subject's asked
  attribute (claims/topics.py: "we closed on a condo in the Highlands" is about where the speaker lives) are put in
  order, newest first, in the places they hold: a change of value that no claim recognized still comes above what
  it changed. A relative's claims made before the speaker named them count as the named person's (claims/kin.py).
  Nothing is marked by a topic alone.
- when the query says "now", "currently", "these days" or the like, a person's later statement that announces a
  change ("she and Pieter broke up", "I cancelled PureGym and joined Ringside", "he's gluten-free now") goes above
  their best-placed earlier statement that names someone or something it names too: a change of any attribute, of
  the speaker or of anyone they speak of ("my baby brother" is the "my little brother Lwazi" of before). Nothing is
  marked by it.
- for the same queries, above each person's best-placed statement goes their latest later statement that is as
  close to it as the query is (cosine of the stored embeddings): a change said in words no claim or topic knows
  ("we pulled Mateo out of Lincoln, he's at Riverside Montessori now"); when none is, their later statement that
  announces a change and is the closest to it of those. One such move per person, and nothing is marked by it.
  In these last two, an agent's reply counts as a statement of the person whose turn it answers (`party`): an old
  session's reply that ranks first speaks of the person as they were then.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from hindsight.claims.kin import KIN, MAX_BINDINGS, bound_names, relations_said
from hindsight.claims.lexicon import CHANGE
from hindsight.claims.query import QueryIntent, read_query
from hindsight.claims.supersede import family
from hindsight.models import MemoryUnit
from hindsight.recall.excerpt import reply_start
from hindsight.recall.ranked import Candidate, Fused
from hindsight.store.base import GraphEdge, MemoryStore, UnitFilter

_MAX_CHAIN = 6  # updates followed from a superseded unit to the newest one
_WORD = re.compile(r"[^\W\d_]+")
# Names NER may miss: a capitalised word inside a sentence ("the Goodlife on Queen East"), or an acronym ("TD").
_PROPER = re.compile(r"(?<=[\w,;)] )([A-Z][^\W_]+)|\b([A-Z]{2,})\b")
# Words of names that name nothing apart: articles of names, and days and months ("training is on Mondays").
_NOT_NAMES = frozenset(re.findall(r"\w+", """
    the and for des les von van der del monday tuesday wednesday thursday friday saturday sunday mondays tuesdays
    wednesdays thursdays fridays saturdays sundays january february march april may june july august september
    october november december"""))


@dataclass
class UpdateOrder:
    """The candidates in their new order, which unit supersedes which, and which newer unit was placed above
    which older one."""

    candidates: list[Candidate]
    superseded_by: dict[str, str] = field(default_factory=dict)
    placed_above: dict[str, str] = field(default_factory=dict)


def apply_updates(
    store: MemoryStore, bank_id: str, query: str, candidates: Sequence[Candidate], asks_period: bool,
    unit_filter: UnitFilter, load: Callable[[list[Fused]], list[Candidate]], query_vector: np.ndarray | None,
) -> UpdateOrder:
    """Mark superseded candidates, and put the current fact above them when the query asks about now."""
    out = UpdateOrder(list(candidates))
    intent = read_query(query)
    _superseding(store, bank_id, out, intent, asks_period, unit_filter, load)
    if intent.asks_present and not asks_period:
        _latest_first(store, bank_id, out, intent)
    if intent.current and not intent.past and not asks_period:
        people = {c.unit.id: party(c.unit) for c in out.candidates}
        changes = {c.unit.id for c in out.candidates if people[c.unit.id] is not None and _announces(c.unit)}
        _announced_first(out, people, changes)
        if query_vector is not None:
            _restated_first(out, query_vector, people, changes)
    return out


def _superseding(
    store: MemoryStore, bank_id: str, out: UpdateOrder, intent: QueryIntent, asks_period: bool,
    unit_filter: UnitFilter, load: Callable[[list[Fused]], list[Candidate]],
) -> None:
    """Mark what the update links say is superseded, and place the newest unit of each chain above it."""
    candidates = list(out.candidates)
    edges = store.update_links(bank_id, [c.fused.label for c in candidates], unit_filter)
    if not edges:
        return
    newer_of: dict[int, list[GraphEdge]] = {}
    for edge in edges:
        newer_of.setdefault(edge.src, []).append(edge)
    rank = {c.fused.label: i for i, c in enumerate(candidates)}
    for cand in candidates:
        found = newer_of.get(cand.fused.label)
        if found:
            out.superseded_by[cand.unit.id] = _best(found, intent, rank).dst_id
    if asks_period or not intent.asks_current:
        return
    for old in list(out.candidates):
        relevant = [e for e in newer_of.get(old.fused.label, []) if _relevant(e, intent)]
        for edge in sorted(relevant, key=lambda e: _preference(e, intent, rank)):
            _place_above(out, old, _newest(store, bank_id, edge, unit_filter), load)


def _latest_first(store: MemoryStore, bank_id: str, out: UpdateOrder, intent: QueryIntent) -> None:
    """Within each group of candidates on one subject's asked attribute (by their claims and topics), the newest
    takes the best place the group holds."""
    order = out.candidates
    claims = store.unit_claims(bank_id, [c.fused.label for c in order])
    relatives = {r.subject for found in claims.values() for r in found if "/" in r.subject}
    bindings = store.claims_about(bank_id, [(s, KIN) for s in relatives], MAX_BINDINGS)
    named = bound_names((r.subject, r.value) for r in bindings)
    groups: dict[tuple[str, str], list[int]] = {}
    for i, cand in enumerate(order):
        keys = {(named.get(r.subject, r.subject), family(r.attribute))
                for r in claims.get(cand.fused.label, []) if intent.wants(r.attribute)}
        for key in keys:
            groups.setdefault(key, []).append(i)
    for places in groups.values():
        if len(places) > 1:
            newest_first = sorted((order[i] for i in places), key=lambda c: -c.unit.mentioned_at.timestamp())
            for i, cand in zip(places, newest_first, strict=True):
                order[i] = cand


def _announced_first(out: UpdateOrder, people: dict[str, str | None], changes: set[str]) -> None:
    """Above a person's best-placed earlier candidate that names someone or something their later candidate
    names too (besides themselves and the agent), that later one, when its words announce a change ("she and Pieter
    broke up", "I cancelled PureGym and joined Ringside"): a change of any attribute, said of anyone. `people` are
    the candidates' speakers, `changes` the candidates that announce a change."""
    order = out.candidates
    names = {c.unit.id: named(c.unit) for c in order if people[c.unit.id] is not None}
    movers = sorted((c for c in order if c.unit.id in changes), key=lambda c: c.unit.mentioned_at)
    for newer in movers:
        person, at = people[newer.unit.id], order.index(newer)
        older = next((c for c in order[:at] if people[c.unit.id] == person
                      and c.unit.mentioned_at < newer.unit.mentioned_at and names[newer.unit.id] & names[c.unit.id]),
                     None)
        if older is not None:
            order.remove(newer)
            order.insert(order.index(older), newer)
            out.placed_above[newer.unit.id] = older.unit.id


def _person_words(unit: MemoryUnit) -> str:
    """The person's own words in the unit, without the agent's reply."""
    return unit.text[:reply_start(unit.text, unit.source.agent_names)]


def _announces(unit: MemoryUnit) -> bool:
    """Whether the person's own words in the unit announce a change."""
    return CHANGE.search(_person_words(unit)) is not None


def named(unit: MemoryUnit) -> set[str]:
    """What the unit talks about besides its speaker and the agent: the words of its entities' names ("Bytown" of
    "Bytown Savings"), of names NER missed in the person's words, and the relatives the speaker calls theirs ("my
    baby brother": "~brother")."""
    said = _person_words(unit)
    names = [*unit.entities, *(m.group(1) or m.group(2) for m in _PROPER.finditer(said))]
    words = _name_words(names) - _name_words([speaker(unit) or "", *unit.source.agent_names])
    return words | {f"~{r}" for r in relations_said(said)}


def _name_words(names: Sequence[str]) -> set[str]:
    """The words of names that tell one from another, lowercased: not "of", "St" or "Monday"; "TD" counts."""
    words = (w for n in names for w in _WORD.findall(n))
    return {w.lower() for w in words if len(w) > 2 or w.isupper()} - _NOT_NAMES


def _restated_first(out: UpdateOrder, query_vector: np.ndarray, people: dict[str, str | None],
                    changes: set[str]) -> None:
    """Above each person's best-placed candidate, their latest later candidate that is at least as close to it as
    the query is; failing that, of their later candidates that announce a change, the closest to it. One move per
    person: letting each moved statement pull up its own restatements buried the evidence of LoCoMo questions that
    say "current" (docs/DECISIONS.md)."""
    order = out.candidates
    seen: set[str] = set()
    moves: list[tuple[Candidate, Candidate]] = []
    for i, older in enumerate(order):
        person = people[older.unit.id]
        if person is None or person in seen or older.vector is None:
            continue
        seen.add(person)
        vector = older.vector
        bar = float(vector @ query_vector)  # the embedder's vectors are L2-normalized: dot products are cosines
        after = [c for c in order[i + 1:] if c.vector is not None and c.unit.id not in out.placed_above
                 and c.unit.mentioned_at > older.unit.mentioned_at and people[c.unit.id] == person]
        later = [c for c in after if float(vector @ c.vector) >= bar]
        if later:
            moves.append((older, max(later, key=lambda c: c.unit.mentioned_at)))
        elif changed := [c for c in after if c.unit.id in changes]:
            moves.append((older, max(changed, key=lambda c: float(vector @ c.vector))))
    for older, newer in moves:
        order.remove(newer)
        order.insert(order.index(older), newer)
        out.placed_above[newer.unit.id] = older.unit.id


def _label(text: str) -> str | None:
    """The speaker label a line of text opens with ("Danny: ..."), or None."""
    label, sep, _ = text.partition(": ")
    return label if sep and "\n" not in label and len(label) <= 64 else None


def speaker(unit: MemoryUnit) -> str | None:
    """Who says the unit's first line ("Danny: ..."); None when that is the agent or the text has no label."""
    return None if reply_start(unit.text, unit.source.agent_names) == 0 else _label(unit.text)


def party(unit: MemoryUnit) -> str | None:
    """Whose state the unit tells: its speaker, or for the agent's reply, the person whose turn it answers (the
    speaker its lead quotes). An old session's reply speaks of that person as they were then."""
    if reply_start(unit.text, unit.source.agent_names) != 0:
        return _label(unit.text)
    return None if unit.lead is None else _label(unit.lead)


def _attributes(edge: GraphEdge) -> set[str]:
    """The attributes an update link says the newer unit changes."""
    return set((edge.subtype or "").split(","))


def _wanted(edge: GraphEdge, intent: QueryIntent) -> bool:
    return any(intent.wants(a) for a in _attributes(edge))


def _relevant(edge: GraphEdge, intent: QueryIntent) -> bool:
    return _wanted(edge, intent) or (intent.current and not intent.attributes)


def _preference(edge: GraphEdge, intent: QueryIntent, rank: dict[int, int]) -> tuple[bool, int, int]:
    """Of several newer units, one of an attribute the query asks about first; then the one the channels ranked
    best; then the latest written."""
    return not _wanted(edge, intent), rank.get(edge.dst, len(rank)), -edge.dst


def _best(edges: list[GraphEdge], intent: QueryIntent, rank: dict[int, int]) -> GraphEdge:
    return min(edges, key=lambda e: _preference(e, intent, rank))


def _newest(store: MemoryStore, bank_id: str, edge: GraphEdge, unit_filter: UnitFilter) -> GraphEdge:
    """The last update of the chain that starts with `edge`, on one of its attributes."""
    seen = {edge.src, edge.dst}
    for _ in range(_MAX_CHAIN):
        nxt = [e for e in store.update_links(bank_id, [edge.dst], unit_filter)
               if _attributes(e) & _attributes(edge) and e.dst not in seen]
        if not nxt:
            break
        edge = max(nxt, key=lambda e: e.dst)
        seen.add(edge.dst)
    return edge


def _place_above(out: UpdateOrder, old: Candidate, newest: GraphEdge, load: Callable[[list[Fused]], list[Candidate]],
                 ) -> None:
    """Put the newest unit just above the old one, moving it up or loading it; never down."""
    order = out.candidates
    position = {c.unit.id: i for i, c in enumerate(order)}
    at = position[old.unit.id]
    if newest.dst_id in position:
        if position[newest.dst_id] < at:
            return
        cand = order.pop(position[newest.dst_id])
    else:
        loaded = load([Fused(newest.dst, newest.dst_id, [], old.fused.score)])
        if not loaded:
            return
        cand = loaded[0]
    order.insert(at, cand)
    out.placed_above[cand.unit.id] = old.unit.id
