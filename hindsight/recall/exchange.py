"""A reply is packed below the person's turn it answers.

A long assistant reply is a unit of its own (retain/nlp_extractor.py), and it often ranks on the words it shares
with a query. Packed alone, its excerpt is one sentence of the agent's elaboration; what the reader needs is what the
person said or asked, which is the unit just before it in the same document. So a packed reply-only hit carries that
turn above its excerpt (`RecallHit.question`), under one date header, and the turn is not packed a second time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hindsight.models import MemoryUnit
from hindsight.recall.excerpt import reply_start
from hindsight.recall.types import RecallHit
from hindsight.store.base import MemoryStore, UnitFilter
from hindsight.text import flat

# Units searched before a reply for its question: the reply's other chunks and the agent's actions come first.
LOOK_BACK = 6
_FIRST_LOOK = 2  # units read first: nearly always enough, and each read unit is a whole row


def is_reply(text: str, agent_names: Sequence[str] = ()) -> bool:
    """Whether a unit's text opens with the agent's turn, under an assistant role or one of `agent_names` (it then
    holds nothing else: a window's reply follows its person's turn)."""
    return reply_start(text, agent_names) == 0


def _quoted(lead: str) -> str:
    """The words a lead ("user: ...end of the turn") quotes from the turn."""
    _, _, quote = lead.partition(": ")
    return flat(quote.removeprefix("..."))


def question_of(unit: MemoryUnit, before: Sequence[MemoryUnit], unit_filter: UnitFilter | None) -> MemoryUnit | None:
    """The unit holding the person's turn that a reply-only `unit` (is_reply) answers, from the units retained before it
    (nearest first): the nearest that holds other turns, when it is a person's turn without a reply, quotes what the
    reply's lead says the turn before ended with, and passes the filter. None otherwise."""
    turns = set(unit.source.turn_ids)
    lead = unit.lead
    for other in before:
        if turns & set(other.source.turn_ids):
            lead = lead or other.lead  # the first chunk of a split reply carries the lead
            continue
        answered = reply_start(other.text, other.source.agent_names) is not None
        if lead is None or answered or _quoted(lead) not in flat(other.text):
            return None
        if unit_filter is not None and not unit_filter.admits(other):
            return None
        return other
    return None


def _says_nothing(hit: RecallHit) -> bool:
    """Whether the hit's packed text is its header and an elision only: a reply with no sentence kept, alone."""
    return (hit.question is None and hit.trim is not None and hit.trim.kept_sentences == 0
            and is_reply(hit.unit.text, hit.unit.source.agent_names))


class Exchanges:
    """The forms in which packing may take a hit, and which units the packed context already shows."""

    def __init__(self, store: MemoryStore, bank_id: str, unit_filter: UnitFilter | None,
                 answered: Callable[[RecallHit, MemoryUnit], tuple[RecallHit, RecallHit]]) -> None:
        self.store = store
        self.bank_id = bank_id
        self.unit_filter = unit_filter
        # A reply's hit cut against the turn it answers: with the turn above it, and alone.
        self.answered = answered
        self.shown: set[str] = set()

    def options(self, hit: RecallHit) -> list[RecallHit]:
        """The forms to try, best first: a reply below the turn it answers (unless that is shown already), then
        alone; never a form that says nothing, and nothing for a unit the context already shows."""
        if hit.unit.id in self.shown:
            return []
        question = None
        if is_reply(hit.unit.text, hit.unit.source.agent_names):
            question = question_of(hit.unit, self._before(hit.unit), self.unit_filter)
        forms = [hit]
        if question is not None:
            attached, alone = self.answered(hit, question)
            forms = [alone] if question.id in self.shown else [attached, alone]
        return [f for f in forms if not _says_nothing(f)]

    def _before(self, unit: MemoryUnit) -> list[MemoryUnit]:
        """The units retained before a reply, nearest first, as far as question_of reads them: the nearest that holds
        none of the reply's turns decides, and that is nearly always the one just before it."""
        near = self.store.units_before(self.bank_id, unit.id, _FIRST_LOOK)
        turns = set(unit.source.turn_ids)
        if len(near) < _FIRST_LOOK or any(turns.isdisjoint(u.source.turn_ids) for u in near):
            return near
        return self.store.units_before(self.bank_id, unit.id, LOOK_BACK)

    def packed(self, hit: RecallHit) -> None:
        self.shown.add(hit.unit.id)
        if hit.question is not None:
            self.shown.add(hit.question.id)
