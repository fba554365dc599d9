"""An agent's reply is held twice: in the unit of the exchange it ends (the world network) and in a unit of the
agent's own words (experience: its actions, or what it told the person). Searched in one network, each is found on
its own. Ranked together, the two would show one reply twice and push the next memory down; the exchange, which also
holds the turn the reply answers, stands for both, in its own place."""

from __future__ import annotations

from hindsight.models import Network
from hindsight.recall.ranked import Candidate


def collapse_parts(cands: list[Candidate]) -> list[Candidate]:
    """`cands` without the experience units whose turns world candidates hold."""
    held = {(c.unit.source.document_id, t) for c in cands if c.unit.network is Network.WORLD
            for t in c.unit.source.turn_ids}
    return [c for c in cands if c.unit.network is not Network.EXPERIENCE
            or not all((c.unit.source.document_id, t) in held for t in c.unit.source.turn_ids)]
