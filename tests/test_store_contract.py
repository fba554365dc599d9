"""The MemoryStore contract, on each backend: the same batches give the same answers from SQLite and Postgres."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from hindsight.errors import BankNotFoundError
from hindsight.models import (
    BankProfile,
    Entity,
    EntityAlias,
    Link,
    LinkType,
    LLMUsage,
    MemoryUnit,
    Network,
    OpinionEvent,
    Source,
    Verdict,
)
from hindsight.store import sql_store
from hindsight.store.base import (
    ClaimRecord,
    DocumentRecord,
    EntityWrite,
    MemoryStore,
    NewUnit,
    OperationRecord,
    PendingItem,
    UnitFilter,
    UnitUpdate,
    WriteBatch,
)
from hindsight.store.factory import open_store
from hindsight.store.postgres import PostgresStore
from tests.postgres_server import config_for

DIM = 8
T0 = datetime(2024, 5, 1, 9, tzinfo=timezone.utc)


@pytest.fixture
def db(tmp_path: Path, store: str) -> Iterator[MemoryStore]:
    opened = open_store(config_for(store).store, tmp_path)
    opened.create_bank("b", BankProfile(name="b"))
    opened.create_bank("other", BankProfile(name="other"))
    yield opened
    opened.close()


def vector(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def unit(uid: str, doc: str, day: int, text: str, network: Network = Network.WORLD, **kw: object) -> MemoryUnit:
    return MemoryUnit(id=uid, bank_id="b", text=text, network=network, occurred_start=None, occurred_end=None,
                      mentioned_at=T0 + timedelta(days=day), source=Source(document_id=doc, turn_ids=[f"{doc}:{day}"]),
                      content_hash=f"h-{uid}", created_at=T0, **kw)  # type: ignore[arg-type]


def new(u: MemoryUnit, seed: int, entities: list[str] = []) -> NewUnit:  # noqa: B006 - never mutated
    return NewUnit(u, u.text, f"e-{u.id}", vector(seed), entities)


def entity(eid: str, name: str) -> EntityWrite:
    return EntityWrite(Entity(id=eid, bank_id="b", name=name, label="PERSON", first_seen=T0, last_seen=T0), True,
                       [EntityAlias(alias=name, score=1.0)], {name.lower()})


def seeded(db: MemoryStore) -> None:
    """Two documents, two entities, links of three kinds, a claim, an opinion and queued work."""
    u1 = unit("u1", "d1", 0, "Maya moved to Denver.", lead="Where do you live?")
    u2 = unit("u2", "d1", 1, "Maya hikes at Red Rocks with Bob.")
    u3 = unit("u3", "d2", 5, "Maya moved to Boulder.")
    u4 = unit("u4", "d2", 6, "Bob adopted a beagle named Pepper.", network=Network.EXPERIENCE)
    db.apply("b", WriteBatch(
        document=DocumentRecord("d1", "c1", "chat one", T0), add_units=[new(u1, 1, ["e-maya"]),
                                                                       new(u2, 2, ["e-maya", "e-bob"])],
        entities=[entity("e-maya", "Maya"), entity("e-bob", "Bob")],
        links=[Link(src="u1", dst="u2", type=LinkType.ENTITY, weight=0.5),
               Link(src="u1", dst="u2", type=LinkType.TEMPORAL, weight=0.9)],
        claims=[ClaimRecord("u1", "e-maya", "residence", "denver", False, T0)],
        pending=[PendingItem("observe", "e-maya")],
    ))
    db.apply("b", WriteBatch(
        document=DocumentRecord("d2", "c2", None, T0), add_units=[new(u3, 3, ["e-maya"]), new(u4, 4, ["e-bob"])],
        links=[Link(src="u3", dst="u1", type=LinkType.UPDATE, weight=1.0, subtype="residence")],
        claims=[ClaimRecord("u3", "e-maya", "residence", "boulder", False, T0 + timedelta(days=5))],
        pending=[PendingItem("observe", "e-maya"), PendingItem("reinforce", "u4")],
    ))


def ids(units: list[MemoryUnit]) -> list[str]:
    return [u.id for u in units]


def test_units_documents_and_stats(db: MemoryStore) -> None:
    seeded(db)
    assert ids(db.get_units("b", ["u3", "u1", "nope"])) == ["u3", "u1"]
    assert ids(db.document_units("b", "d1")) == ["u1", "u2"]
    assert ids(db.units_before("b", "u2", 5)) == ["u1"] and db.units_before("b", "u3", 5) == []
    assert ids(db.list_units("b", limit=2, offset=1)) == ["u2", "u3"]
    assert ids(db.list_units("b", network=Network.EXPERIENCE)) == ["u4"]
    got = db.get_units("b", ["u1"])[0]
    assert (got.lead, got.mentioned_at, got.entities, got.source.turn_ids) == ("Where do you live?", T0, [], ["d1:0"])
    assert db.get_document("b", "d1") == DocumentRecord("d1", "c1", "chat one", T0)
    assert db.documents_with_context("b") == [DocumentRecord("d1", "c1", "chat one", T0)]
    stats = db.stats("b")
    assert (stats.units["world"], stats.units["experience"], stats.entities, stats.documents) == (3, 1, 2, 2)
    assert stats.links == {**stats.links, "entity": 1, "temporal": 1, "update": 1}
    assert db.get_units("other", ["u1"]) == [] and db.stats("other").documents == 0
    assert sorted(db.list_banks()) == ["b", "other"] and db.get_profile("b") == BankProfile(name="b")


def test_unit_texts_reads_every_unit_a_page_at_a_time(db: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    seeded(db)
    monkeypatch.setattr(sql_store, "_PAGE", 3)
    texts = list(db.unit_texts("b"))
    assert [t.unit_id for t in texts] == ["u1", "u2", "u3", "u4"]
    assert (texts[0].lead, texts[1].lead) == ("Where do you live?", None)
    assert texts[2].text == db.get_units("b", ["u3"])[0].text
    assert list(db.unit_texts("other")) == []


def test_embeddings_and_labels(db: MemoryStore) -> None:
    seeded(db)
    found = db.lookup_embeddings(["e-u2", "e-none"])
    assert list(found) == ["e-u2"] and np.allclose(found["e-u2"], vector(2), atol=1e-6)
    indexed = {u.unit_id: u for u in db.indexed_units("b", with_segments=True)}
    assert set(indexed) == {"u1", "u2", "u3", "u4"} and indexed["u1"].lead == "Where do you live?"
    # Bit-exact float32, however the backend carries vectors (Postgres: its binary format).
    assert indexed["u2"].embedding.dtype == np.float32
    assert np.array_equal(indexed["u2"].embedding, np.asarray(vector(2), dtype=np.float32))
    labels = {u.unit_id: u.label for u in indexed.values()}
    only = UnitFilter(networks=frozenset({Network.EXPERIENCE}))
    assert db.labels_to_ids("b", list(labels.values()), only) == {labels["u4"]: "u4"}
    assert db.filtered_labels("b", UnitFilter(as_of=T0 + timedelta(days=2))) == {labels["u1"], labels["u2"]}
    assert db.embedded_sample("b") is not None and db.embedded_sample("other") is None


def test_graph_reads(db: MemoryStore) -> None:
    seeded(db)
    labels = {u.unit_id: u.label for u in db.indexed_units("b")}
    edges = db.neighbour_links("b", [labels["u1"]])
    kinds = sorted((e.dst_id, e.type.value, e.shared_entities) for e in edges)
    assert kinds == [("u2", "entity", ("e-maya",)), ("u2", "temporal", ()), ("u3", "update", ())]
    assert [(e.dst_id, e.subtype) for e in db.update_links("b", [labels["u1"]])] == [("u3", "residence")]
    newest = db.claims_about("b", [("e-maya", "residence")], 5)
    assert [(c.unit_id, c.value) for c in newest] == [("u3", "boulder"), ("u1", "denver")]
    assert [c.value for c in db.unit_claims("b", [labels["u3"]])[labels["u3"]]] == ["boulder"]
    timed = db.units_in_time("b", T0 + timedelta(days=4), T0 + timedelta(days=7), 0, 10)
    assert sorted(t.unit_id for t in timed) == ["u3", "u4"]
    candidates = db.entity_candidates("b", {"maya", "bob"})
    assert sorted((c.id, c.name, tuple(c.aliases)) for c in candidates) == [
        ("e-bob", "Bob", ("Bob",)), ("e-maya", "Maya", ("Maya",))]
    assert db.entity_cooccurrence("b", ["e-maya", "e-bob", "e-none"], 10) == {"e-maya": {"bob"}, "e-bob": {"maya"}}
    assert db.entity_cooccurrence("b", [], 10) == {}
    assert db.entity_unit_counts("b", ["e-maya", "e-bob"]) == {"e-maya": 3, "e-bob": 2}
    assert {(r.id, r.name) for refs in db.unit_entities("b", ["u2"]).values() for r in refs} == {
        ("e-maya", "Maya"), ("e-bob", "Bob")}
    assert db.units_of_entities("b", ["e-bob"], {Network.EXPERIENCE}, 5) == ["u4"]
    assert sorted((k.src, k.dst, k.type.value) for k in db.links_of("b", "u2")) == [
        ("u1", "u2", "entity"), ("u1", "u2", "temporal")]


def test_updates_deletes_and_orphans(db: MemoryStore) -> None:
    seeded(db)
    before = db.last_change("b")
    db.apply("b", WriteBatch(update_units=[UnitUpdate("u2", text="Maya hikes at Red Rocks.", embed_text="x",
                                                         embed_hash="e-x", embedding=vector(9), drop_lead=True),
                                              UnitUpdate("u1", drop_lead=True, confidence=0.4)],
                                delete_unit_ids=["u4"]))
    assert db.last_change("b") > before
    u1, u2 = db.get_units("b", ["u1", "u2"])
    assert (u1.lead, u1.confidence, u2.text) == (None, 0.4, "Maya hikes at Red Rocks.")
    assert db.get_units("b", ["u4"]) == [] and db.pending_count("b") == 1  # u4's work went with it
    assert "e-bob" in {e.id for e in db.list_entities("b")}  # u2 still mentions Bob
    db.apply("b", WriteBatch(delete_unit_ids=["u2"]))
    assert {e.id for e in db.list_entities("b")} == {"e-maya"}  # Bob's last unit is gone, and so is Bob
    db.apply("b", WriteBatch(delete_unit_ids=["u3"]))
    assert db.get_document("b", "d2") is None  # its last unit is gone
    with pytest.raises(BankNotFoundError):
        db.apply("nobank", WriteBatch())


def test_opinions_queue_and_usage(db: MemoryStore) -> None:
    seeded(db)
    opinion = unit("o1", "_opinions", 7, "Maya likes Colorado.", network=Network.OPINION, confidence=0.6,
                   metadata={"source_units": ["u1"]})
    event = OpinionEvent(unit_id="o1", verdict=Verdict.REINFORCE, confidence=0.6, text=opinion.text, evidence=["u3"],
                         at=T0)
    db.apply("b", WriteBatch(add_units=[new(opinion, 7)], opinion_events=[event]))
    assert db.opinion_history("b", "o1") == [event]
    assert db.citing_units("b", ["u1", "u3", "u2"]) == {"o1": {"u1", "u3"}}
    first = db.claim_pending("b", "observe", "run-1", 10)
    assert first == ["e-maya"] and db.claim_pending("b", "observe", "run-2", 10) == []
    db.add_pending("b", [PendingItem("observe", "e-maya")])  # queued again while held: it runs again
    db.finish_pending("b", "observe", first, "run-1")
    assert db.claim_pending("b", "observe", "run-3", 10) == ["e-maya"]
    assert db.release_pending("run-3") == 1 and db.pending_count("b") == 2
    db.add_llm_usage("b", LLMUsage(10, 2, 1))
    db.add_llm_usage("b", LLMUsage(5, 1, 1))
    db.add_llm_usage("nobank", LLMUsage(5, 1, 1))
    assert db.llm_usage("b") == LLMUsage(15, 3, 2) and db.llm_usage("nobank") == LLMUsage()


def test_delete_bank_and_scrub_marks(db: MemoryStore) -> None:
    seeded(db)
    db.apply("other", WriteBatch(document=DocumentRecord("d1", "c1", None, T0),
                                    add_units=[new(unit("x1", "d1", 0, "Other bank.").model_copy(
                                        update={"bank_id": "other"}), 5)]))
    db.delete_bank("b")
    assert db.list_banks() == ["other"] and db.get_units("b", ["u1"]) == []
    assert db.scrubs_pending() == ["b"]
    db.purge()
    db.scrub_done("b")
    assert db.scrubs_pending() == [] and ids(db.list_units("other")) == ["x1"]
    assert db.integrity_problems("other", DIM) == [] and db.live_labels("b") == set()


def test_operations_are_recorded_finished_expired_and_dropped_by_a_forget(db: MemoryStore, tmp_path: Path) -> None:
    op = OperationRecord(id="op1", bank_id="b", kind="retain", status="pending", created_at=100.0)
    db.add_operation(op)
    assert db.get_operation("op1") == op
    # A second process on the same store, which stops with work pending.
    gone = PostgresStore(db.dsn) if isinstance(db, PostgresStore) else open_store(config_for("sqlite").store, tmp_path)
    gone.add_operation(OperationRecord(id="op2", bank_id="b", kind="retain", status="pending", created_at=101.0))
    gone.close()
    op.status, op.finished_at, op.result = "done", 102.0, '{"results": []}'
    db.finish_operation(op)
    assert db.get_operation("op1") == op
    # The next process (here, this store) fails it, once; never the work of a live process sharing the store.
    # Postgres drops a closed session a moment after the client left.
    deadline = time.monotonic() + 10
    while (interrupted_count := db.interrupt_operations()) == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert interrupted_count == 1
    interrupted = db.get_operation("op2")
    assert interrupted is not None and interrupted.status == "failed" and "stopped" in (interrupted.error or "")
    assert db.interrupt_operations() == 0
    db.apply("b", WriteBatch(document=DocumentRecord("d1", "c1", None, T0),
                             add_units=[new(unit("u1", "d1", 0, "Ann skis."), 1)]))
    db.apply("b", WriteBatch(delete_unit_ids=["u1"]))
    dropped = db.get_operation("op1")
    assert dropped is not None and dropped.result is None and dropped.result_dropped
    assert db.expire_operations(finished_before=102.5) == 2
    assert db.get_operation("op1") is None and db.get_operation("nope") is None


def test_delete_bank_removes_its_operations(db: MemoryStore) -> None:
    db.add_operation(OperationRecord(id="op-b", bank_id="b", kind="retain", status="pending", created_at=1.0))
    db.add_operation(OperationRecord(id="op-o", bank_id="other", kind="retain", status="pending", created_at=1.0))
    db.delete_bank("b")
    assert db.get_operation("op-b") is None and db.get_operation("op-o") is not None


def test_each_scope_keeps_its_last_context_block_for_every_process(db: MemoryStore, tmp_path: Path) -> None:
    def swap(store: MemoryStore, bank: str, scope: str, text: str) -> str | None:
        return store.swap_context_block(bank, scope, text, store.forget_count(bank))

    assert swap(db, "b", "bank", "first") == ""
    assert swap(db, "b", "bank", "second") == "first"
    assert swap(db, "b", "t-1", "of a thread") == ""
    assert swap(db, "other", "bank", "of another bank") == ""
    # A second process on the same store reads what this one kept, and the other way round.
    peer = PostgresStore(db.dsn) if isinstance(db, PostgresStore) else open_store(config_for("sqlite").store, tmp_path)
    assert swap(peer, "b", "bank", "third") == "second"
    assert swap(db, "b", "bank", "fourth") == "third"
    # A forget in the other process while this one builds a block: the block may quote what it removed.
    seen = db.forget_count("b")
    peer.apply("b", WriteBatch(scrub=True))
    assert db.forget_count("b") == seen + 1 and db.forget_count("other") == 0
    assert db.swap_context_block("b", "bank", "built across the forget", seen) is None
    peer.close()
    db.apply("b", WriteBatch(scrub=True))  # a forget: the blocks may quote what it removed
    assert swap(db, "b", "bank", "fifth") == "" and swap(db, "b", "t-1", "x") == ""
    assert swap(db, "other", "bank", "again") == "of another bank"
    db.delete_bank("other")
    with pytest.raises(BankNotFoundError):
        db.swap_context_block("other", "bank", "gone", 0)
    with pytest.raises(BankNotFoundError):
        db.forget_count("other")
    db.create_bank("other", BankProfile(name="other"))
    assert swap(db, "other", "bank", "new") == ""  # delete_bank took its rows
