"""Isolation: two banks with overlapping content (same documents, same names, same ids where a caller chooses
them) never see each other, whatever the query."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hindsight import Hindsight, Message, UnitNotFoundError
from hindsight.embed.base import Embedder
from tests.bank_state import bank_state, seed
from tests.postgres_server import config_for

SECRETS = {"alice": "Alice keeps her locker code AQ-1111 in alicesecret notes.",
           "bob": "Bob keeps his locker code BQ-2222 in bobsecret notes."}  # fmt: skip


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, minilm: Embedder, store: str) -> Iterator[Hindsight]:
    with Hindsight(tmp_path_factory.mktemp("isolation") / "m", config_for(store), embedder=minilm) as hs:
        for bank_id, secret in SECRETS.items():
            bank = hs.bank(bank_id)
            seed(bank)  # identical documents, document ids and entity names in both banks
            bank.retain([Message(speaker="Maya", content=secret)], timestamp="2024-05-07", document_id="secret")
        hs.bank("Alice").retain("Alice (capitalised bank) likes capitalsecret jazz.", timestamp="2024-05-07")
        yield hs


ADVERSARIAL = [
    SECRETS["bob"],
    "bobsecret",
    "BQ-2222 locker code",
    "bob",
    "Bob's locker",
    "bank_id = 'bob'",
    "' OR bank_id='bob' --",
    '"bobsecret" OR "alicesecret"',
    "capitalsecret jazz",
    "Maya Bob Pepper Denver",
    "What happened on May 7, 2024?",
    "locker code notes " * 50,
]


@pytest.mark.parametrize("query", ADVERSARIAL)
def test_recall_only_returns_the_banks_own_units(engine: Hindsight, query: str) -> None:
    for bank_id in ("alice", "bob", "Alice"):
        bank = engine.bank(bank_id)
        own = {u.id for u in bank.units()}
        for kwargs in ({}, {"networks": ["world"]}, {"as_of": "2024-12-31"}):
            hits = bank.recall(query, budget=1_000_000, **kwargs).hits
            assert all(h.unit.bank_id == bank_id and h.unit.id in own for h in hits)
            foreign = [s for b, s in SECRETS.items() if b != bank_id]
            assert not any(s in h.unit.text for h in hits for s in foreign)


def test_entities_graph_and_lookups_stay_in_their_bank(engine: Hindsight) -> None:
    alice, bob = engine.bank("alice"), engine.bank("bob")
    a_entities, b_entities = alice.entities(), bob.entities()
    assert {e.name for e in a_entities} >= {"Bob", "Maya", "Pepper"} and {e.name for e in b_entities} >= {"Bob"}
    assert {e.id for e in a_entities}.isdisjoint(e.id for e in b_entities)
    assert all(e.bank_id == "alice" for e in a_entities)
    a_units, b_units = alice.units(), bob.units()
    for e in a_entities:  # mention counts come from the bank's own units only
        assert e.mention_count == sum(e.name in u.entities for u in a_units)
    graph = alice.to_networkx()
    assert set(graph.nodes) <= {u.id for u in a_units} | {e.id for e in a_entities}
    assert not any("bobsecret" in str(d.get("text", "")) for _, d in graph.nodes(data=True))
    b_secret = next(u for u in b_units if "bobsecret" in u.text)
    assert alice.links(b_secret.id) == []
    with pytest.raises(UnitNotFoundError):
        alice.get_unit(b_secret.id)
    with pytest.raises(UnitNotFoundError):
        alice.forget(b_secret.id)
    assert all(k.src in {u.id for u in a_units} for k in engine.store.all_links("alice"))


def test_writes_to_one_bank_leave_the_other_alone(engine: Hindsight) -> None:
    alice, bob = engine.bank("alice"), engine.bank("bob")
    before = bank_state(bob)
    alice.retain([Message(speaker="Maya", content="Bob moved to Kyoto.")], timestamp="2024-06-01", document_id="d1")
    alice.forget(entity="Pepper")
    assert bank_state(bob) == before
    assert alice.check().ok and bob.check().ok and engine.bank("Alice").check().ok
