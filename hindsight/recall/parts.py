"""An agent's reply is held twice: in the unit of the exchange it ends (the world network) and in a unit of the
agent's own words (experience: its actions, or what it told the person). Searched in one network, each is found on
its own. Ranked together, the two would show one reply twice and push the next memory down; the exchange, which also
holds the turn the reply answers, stands for both, at the better of their ranks."""

from __future__ import annotations

from hindsight.models import Network
from hindsight.recall.ranked import Candidate


def collapse_parts(cands: list[Candidate]) -> list[Candidate]:
    """`cands` (best first) with each experience unit whose turns one world candidate holds replaced by that
    candidate, which moves up to the better of the two places."""
    holder: dict[tuple[str | None, str], int] = {}
    for i, c in enumerate(cands):
        if c.unit.network is Network.WORLD:
            for turn in c.unit.source.turn_ids:
                holder.setdefault((c.unit.source.document_id, turn), i)
    out: list[Candidate] = []
    taken: set[int] = set()
    for i, c in enumerate(cands):
        if c.unit.network is Network.EXPERIENCE:
            holders = {holder.get((c.unit.source.document_id, t)) for t in c.unit.source.turn_ids}
            whole = holders.pop() if len(holders) == 1 else None
            if whole is not None:
                if whole not in taken:
                    out.append(cands[whole])
                    taken.add(whole)
                continue
        if i not in taken:
            out.append(c)
            taken.add(i)
    return out
