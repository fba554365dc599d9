"""A person is the authority on their own life (Situated Memory): where what they say of themselves and what the
agent inferred about them conflict, their word wins.

An opinion is the agent's inference. When new facts contradict an opinion about a person, and one of those facts is
that person speaking of themselves (their own turn, in the first person: "Alice: I actually love my team"), the
opinion is not weakened by a step of the update rule, as another's report would weaken it: it falls to confidence 0
(reflect/reinforce.py). A third party's report ("Bob: Alice hates her team") is evidence like any other.
"""

from __future__ import annotations

from collections.abc import Sequence

from hindsight.memory_context.observer import person_turn
from hindsight.models import MemoryUnit
from hindsight.names import person_forms
from hindsight.reflect.opinion_check import FIRST_PERSON


def own_word(people: Sequence[str], facts: Sequence[MemoryUnit]) -> list[MemoryUnit]:
    """The facts in which one of `people` (names; a nickname is its name: "Danny" is "Daniel") speaks of
    themselves."""
    forms = frozenset().union(*(person_forms(p) for p in people))
    out = []
    for fact in facts:
        who, said = person_turn(fact)
        if who and person_forms(who) & forms and FIRST_PERSON.search(said):
            out.append(fact)
    return out
