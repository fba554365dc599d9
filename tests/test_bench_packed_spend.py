"""The packed-spend bench splits a packed hit's tokens into its date header, elisions, the agent's words and the
person's turn, and the parts add up to the hit's tokens."""

from __future__ import annotations

from datetime import datetime, timezone

from bench.packed_spend import spend
from hindsight.models import MemoryUnit, Network, Source
from hindsight.recall.format import TokenCounter, hit_header
from hindsight.recall.types import RecallHit

SAID = datetime(2024, 6, 9, 18, tzinfo=timezone.utc)
ASKED = datetime(2024, 6, 30, 9, tzinfo=timezone.utc)


def _hit(text: str, context: str, counter: TokenCounter) -> RecallHit:
    unit = MemoryUnit(id="u", bank_id="b", text=text, network=Network.WORLD, mentioned_at=SAID, occurred_start=None,
                      occurred_end=None,
                      source=Source(document_id="d"), content_hash="h", created_at=SAID)
    header = hit_header(unit, ASKED)
    packed = f"{header} {context}"
    return RecallHit(unit=unit, text=f"{header} {text}", context=packed, tokens=counter.count(packed), channels=[],
                     fused_score=0.1, score=0.1)


def test_spend_splits_a_packed_hit_into_its_parts() -> None:
    counter = TokenCounter()
    reply = "Try the ridge trail. It closes at dusk. Bring water."
    hit = _hit(f"user: Where should I hike?\nassistant: {reply}",
               "user: Where should I hike?\nassistant: Try the ridge trail. … [9 tokens of the assistant's reply]",
               counter)
    parts = spend(hit, ASKED, counter)
    assert parts["header"] == counter.count(hit_header(hit.unit, ASKED)) > 0
    assert parts["elision"] == counter.count("… [9 tokens of the assistant's reply]")
    assert parts["agent"] == counter.count("Try the ridge trail. ")
    # The rest is the person's turn and the role labels (token boundaries between parts may shift one token).
    assert abs(parts["person"] - counter.count(" user: Where should I hike?\nassistant: ")) <= 2


def test_spend_of_a_person_turn_alone_has_no_agent_part() -> None:
    counter = TokenCounter()
    hit = _hit("user: I moved to Denver.", "user: I moved to Denver.", counter)
    parts = spend(hit, ASKED, counter)
    assert parts["agent"] == 0 and parts["elision"] == 0 and parts["header"] > 0 and parts["person"] > 0
