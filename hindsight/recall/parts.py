"""An agent's reply is held twice: in the unit of the exchange it ends (the world network) and in a unit of the
agent's own words (experience: its actions, or what it told the person). Searched in one network, each is found on
its own. Ranked together, the two would show one reply twice and push the next memory down; the exchange, which also
holds the turn the reply answers, stands for both, in its own place. A world fact that only names the reply's turn
(an LLM extractor's narrative fact) does not quote it, and stands for nothing."""

from __future__ import annotations

from hindsight.models import MemoryUnit, Network
from hindsight.recall.ranked import Candidate
from hindsight.text import flat, split_sentences


def collapse_parts(cands: list[Candidate]) -> list[Candidate]:
    """`cands` without the experience units that a world candidate of the same turns quotes word for word."""
    world = [(c.unit, flat(c.unit.text)) for c in cands if c.unit.network is Network.WORLD]
    if not world:
        return cands
    return [c for c in cands if c.unit.network is not Network.EXPERIENCE
            or not any(_quotes(w, said, c.unit) for w, said in world)]


def _quotes(exchange: MemoryUnit, said: str, part: MemoryUnit) -> bool:
    """Whether the exchange (whose flattened text is `said`) holds the part's turns and quotes each of its
    sentences."""
    if exchange.source.document_id != part.source.document_id or not part.source.turn_ids:
        return False
    if not set(part.source.turn_ids) <= set(exchange.source.turn_ids):
        return False
    return all(flat(s) in said for s in split_sentences(part.text.split(": ", 1)[-1]))
