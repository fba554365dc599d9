"""Natural questions on a person's own conversation: a named period ranks what happened in it first, the agent's own
words are recallable in the experience network, and an exchange is not shown twice."""

from __future__ import annotations

from datetime import datetime, timezone

from hindsight import Hindsight, MemoryUnit, Message, Network, Source
from hindsight.recall.parts import collapse_parts
from hindsight.recall.ranked import Candidate, Fused
from hindsight.recall.temporal import inside_first
from hindsight.recall.types import Channel, ChannelHit

MAYA, AVA = "Maya", "Ava"


def chat(hs: Hindsight, said: str, reply: str, when: str, document_id: str) -> None:
    hs.bank("maya").retain([Message(speaker=MAYA, role="user", content=said, id=f"{document_id}-u"),
                            Message(speaker=AVA, role="assistant", content=reply, id=f"{document_id}-a")],
                           timestamp=when, document_id=document_id)


def _candidate(unit_id: str, network: Network, turns: list[str], channels: dict[Channel, float],
               text: str = "") -> Candidate:
    when = datetime(2024, 5, 1, tzinfo=timezone.utc)
    unit = MemoryUnit(id=unit_id, bank_id="b", text=text or unit_id, network=network, occurred_start=when,
                      occurred_end=when, mentioned_at=when, source=Source(document_id="d", turn_ids=turns),
                      content_hash=unit_id, created_at=when)
    hits = [ChannelHit(channel=c, rank=1, score=score) for c, score in channels.items()]
    return Candidate(Fused(0, unit_id, hits, 0.0), unit, "")


def test_what_happened_in_the_named_period_and_matches_the_query_goes_first() -> None:
    out = _candidate("outside", Network.WORLD, ["t1"], {Channel.SEMANTIC: 0.9, Channel.TEMPORAL: 0.0})
    only_dated = _candidate("only-dated", Network.WORLD, ["t2"], {Channel.TEMPORAL: 0.8})
    inside = _candidate("inside", Network.WORLD, ["t3"], {Channel.LEXICAL: 2.0, Channel.TEMPORAL: 0.1})
    assert [c.unit.id for c in inside_first([out, only_dated, inside])] == ["inside", "outside", "only-dated"]


def test_an_exchange_stands_for_the_agents_words_it_quotes() -> None:
    reply = "Ava: Try cetirizine.\nThen rinse with saline in the evening. Does that help?"
    told = _candidate("told", Network.EXPERIENCE, ["t2"], {Channel.SEMANTIC: 0.9},
                      "Ava: Try cetirizine. Then rinse with saline in the evening.")
    other = _candidate("other", Network.WORLD, ["t0"], {Channel.SEMANTIC: 0.8}, "Maya: I moved.")
    exchange = _candidate("exchange", Network.WORLD, ["t1", "t2"], {Channel.SEMANTIC: 0.7},
                          f"Maya: My hay fever is back.\n{reply}")
    elsewhere = _candidate("elsewhere", Network.EXPERIENCE, ["t9"], {Channel.SEMANTIC: 0.6}, "Ava: Try cetirizine.")
    kept = collapse_parts([told, other, exchange, elsewhere])
    assert [c.unit.id for c in kept] == ["other", "exchange", "elsewhere"]
    # A narrative fact of the same turns that does not quote the reply (an LLM extractor's) stands for nothing.
    fact = _candidate("fact", Network.WORLD, ["t1", "t2"], {Channel.SEMANTIC: 0.7}, "Maya has hay fever.")
    assert [c.unit.id for c in collapse_parts([told, fact])] == ["told", "fact"]


def test_what_the_agent_told_the_person_is_in_the_experience_network(hs: Hindsight) -> None:
    chat(hs, "My hay fever is back, hazel pollen again. Any ideas?",
         "Start a daily non-drowsy antihistamine like cetirizine now, rinse with saline in the evening, and shower "
         "before bed so the pollen stays off your pillow.", "2024-02-01T09:00:00", "pollen")
    bank = hs.bank("maya")
    told = bank.recall("What did you recommend for my hay fever?", networks=["experience"],
                       query_time="2024-02-10T09:00:00").hits
    assert told and told[0].unit.source.turn_ids == ["pollen-a"] and "cetirizine" in told[0].context
    every = bank.recall("What did you recommend for my hay fever?", query_time="2024-02-10T09:00:00").hits
    shown = [t for h in every for t in h.unit.source.turn_ids]
    assert shown.count("pollen-a") == 1  # the exchange stands for the reply: it is not shown twice
