"""Background reasoning is durable and close is clean (scripted LLM: these pin flow, not model quality).

Retain queues its reasoning work in its own transaction; a run claims items and removes them only when they are
done; claims of a run that died or was closed go back to the queue on open; an item queued again while claimed runs
again; close stops a run between items and never closes the store under a running hook.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from hindsight import Hindsight, HindsightConfig
from hindsight.config import merged
from hindsight.embed.base import Embedder
from hindsight.errors import LLMRequestError
from hindsight.jobs import RetainEvent
from hindsight.llm.base import LLM, ChatMessage, LLMResponse
from hindsight.models import BankProfile, Network, Verdict
from hindsight.store.base import PendingItem
from hindsight.store.sqlite import SQLiteStore
from hindsight.store.sqlite_schema import SCHEMA
from tests.fake_llm import FakeScriptedLLM, reflect_reply

OBSERVED = json.dumps({"observations": [{"text": "They are busy this spring.", "sources": [1]}]})
ANSWER = "Alice works at Google [1] and Bob works at Globex [2]."
REPLY = reflect_reply(ANSWER, {"opinion": "I think Alice is thriving at Google."},
                      {"opinion": "I think Bob is thriving at Globex."})
SUPPORTS = json.dumps({"verdict": "reinforce", "reason": "more good news"})


class HookedLLM(LLM):
    """A scripted LLM that runs `before(messages)` on every call, before it answers."""

    name = "hooked"

    def __init__(self, replies: Sequence[str | BaseException], before: Callable[[Sequence[ChatMessage]], None]):
        self.fake = FakeScriptedLLM(replies)
        self.before = before

    def complete(self, messages: Sequence[ChatMessage], **options: Any) -> LLMResponse:
        self.before(messages)
        return self.fake.complete(messages, **options)


def _engine(memdir: Path, minilm: Embedder, llm: LLM | None, **reflect: object) -> Hindsight:
    base = {"work": {"background": False}, "reinforce": {"enabled": False}}
    config = HindsightConfig.from_dict({"reflect": merged(base, reflect)})
    return Hindsight(memdir, config, llm=llm, embedder=minilm)


def _retain_two_people(hs: Hindsight) -> None:
    bank = hs.bank("b")
    bank.retain("Alice met Bob at the lake.", timestamp="2024-05-01", document_id="d1")
    bank.retain("Bob called Alice about dinner.", timestamp="2024-05-03", document_id="d2")
    assert sorted(e.name for e in bank.entities()) == ["Alice", "Bob"]


def _observed_entities(hs: Hindsight) -> set[str]:
    return {o.metadata["entity_id"] for o in hs.bank("b").units(Network.OBSERVATION)}


def test_claims_finish_requeue_and_release(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "h.db")
    try:
        store.create_bank("b", BankProfile())
        store.add_pending("b", [PendingItem("observe", k) for k in ("e1", "e2", "e3")])
        assert store.claim_pending("b", "observe", "run1", 2) == ["e1", "e2"]
        assert store.claim_pending("b", "observe", "run2", 10) == ["e3"]  # claimed items are not handed out twice
        store.add_pending("b", [PendingItem("observe", "e2")])  # queued again while run1 holds it
        store.finish_pending("b", "observe", ["e1", "e2"], "run1")
        store.finish_pending("b", "observe", ["e3"], "run1")  # not run1's: nothing happens
        assert store.pending_count("b") == 2
        assert store.claim_pending("b", "observe", "run3", 10) == ["e2"]  # e2 is back, e3 is still run2's
        assert store.release_pending("run3") == 1 and store.release_pending() == 1  # run3's, then every claim
        assert sorted(store.claim_pending("b", "observe", "run4", 10)) == ["e2", "e3"]
        store.finish_pending("b", "observe", ["e2", "e3"], "run4")
        assert store.pending_count("b") == 0
    finally:
        store.close()


def test_an_old_queue_table_gains_the_claim_columns(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA)
    conn.executescript(
        "CREATE TABLE pending_work(bank_id TEXT NOT NULL, kind TEXT NOT NULL, key TEXT NOT NULL, "
        "queued_at REAL NOT NULL, touched_at REAL NOT NULL, PRIMARY KEY(bank_id, kind, key)) WITHOUT ROWID;"
        "INSERT INTO meta(key, value) VALUES('schema_version', '1');"
        "INSERT INTO pending_work VALUES('b', 'observe', 'e1', 1.0, 1.0);"
    )
    conn.commit()
    conn.close()
    store = SQLiteStore(path)
    try:
        assert store.claim_pending("b", "observe", "run", 10) == ["e1"]
    finally:
        store.close()


def test_retain_queues_its_work_in_its_own_transaction(memdir: Path, minilm: Embedder) -> None:
    with _engine(memdir, minilm, FakeScriptedLLM([]), reinforce={"enabled": True}) as hs:
        result = hs.bank("b").retain("Alice joined Google.", timestamp="2024-05-01")
        queued = dict(hs.store._query("SELECT key, kind FROM pending_work WHERE bank_id='b'"))
        assert {u.id for u in result.units} | {e.id for e in hs.bank("b").entities()} == set(queued)
        assert hs.jobs.pending == 0  # no hook: nothing but the store holds the work
        hs.bank("b").forget(result.units[0].id)
        assert hs.bank("b").pending() == 0  # work about forgotten units and entities goes with them


def test_claims_left_by_a_dead_run_are_queued_again_on_open(memdir: Path, minilm: Embedder) -> None:
    with _engine(memdir, minilm, FakeScriptedLLM([])) as hs:
        _retain_two_people(hs)
        held = hs.store.claim_pending("b", "observe", "a-run-that-dies", 100)
        assert len(held) >= 2 and hs.store.claim_pending("b", "observe", "other", 100) == []
    fake = FakeScriptedLLM([OBSERVED] * len(held))
    with _engine(memdir, minilm, fake) as hs:
        report = hs.bank("b").process_pending()
        assert not report.interrupted and report.failures == 0
        assert set(report.observations_regenerated) <= set(held) and hs.bank("b").pending() == 0


def test_an_item_queued_again_while_running_runs_again(memdir: Path, minilm: Embedder) -> None:
    engine: list[Hindsight] = []

    def retain_during_first_call(messages: Sequence[ChatMessage]) -> None:
        if len(llm.fake.prompts) == 0:  # while Alice's (or Bob's) first regeneration runs, a retain touches both
            engine[0].bank("b").retain("Alice drove Bob to Denver.", timestamp="2024-06-01", document_id="d3")

    llm = HookedLLM([OBSERVED] * 4, retain_during_first_call)
    with _engine(memdir, minilm, llm) as hs:
        engine.append(hs)
        _retain_two_people(hs)
        report = hs.bank("b").process_pending()
        assert report.failures == 0 and hs.bank("b").pending() == 0
        # Both were claimed when the retain queued them again: each runs again, seeing Denver.
        about = [p[0].content.split("Write observations about ", 1)[1].split(":", 1)[0] for p in llm.fake.prompts]
        saw_denver = ["Denver" in p[1].content for p in llm.fake.prompts]
        assert len(about) == 4 and sorted(about) == ["Alice", "Alice", "Bob", "Bob"]
        assert saw_denver == [False, True, True, True] and about[0] in about[2:]


def test_transient_llm_failure_stops_the_run_and_keeps_the_work(memdir: Path, minilm: Embedder) -> None:
    fake = FakeScriptedLLM([TimeoutError("read timed out"), LLMRequestError("connection refused")])
    with _engine(memdir, minilm, fake) as hs:
        _retain_two_people(hs)
        bank = hs.bank("b")
        queued = bank.pending()
        for _ in range(2):  # a backend's own TimeoutError, then a typed request error
            report = bank.process_pending()
            assert report.interrupted and report.failures == 1 and report.observations_regenerated == {}
            assert bank.pending() == queued and bank.units(Network.OBSERVATION) == []
        fake.replies += [OBSERVED] * queued
        assert not bank.process_pending().interrupted and bank.pending() == 0
        assert len(_observed_entities(hs)) >= 2


def test_reinforcement_never_weighs_a_fact_twice(memdir: Path, minilm: Embedder) -> None:
    """Neither a fact an opinion was formed from, nor one weighed by a run that stopped before finishing."""
    fake = FakeScriptedLLM([])
    with _engine(memdir, minilm, fake, reinforce={"enabled": True}, observations={"enabled": False}) as hs:
        bank = hs.bank("b")
        bank.retain("Alice works at Google. Bob works at Globex.", timestamp="2024-05-01", document_id="d1")
        fake.replies.append(REPLY)
        opinions = [c.unit.id for c in bank.reflect("How are Alice and Bob doing?").opinions]
        assert len(opinions) == 2
        assert bank.process_pending().reinforced == [] and fake.prompts[2:] == []  # formed from that very fact

        bank.retain("Alice and Bob both got promoted.", timestamp="2024-06-01", document_id="d2")
        fake.replies += [SUPPORTS, LLMRequestError("connection reset")]
        report = bank.process_pending()
        assert report.interrupted and len(report.reinforced) == 1 and bank.pending() == 1
        fake.replies += [SUPPORTS]
        report = bank.process_pending()
        assert len(report.reinforced) == 1 and bank.pending() == 0 and fake.remaining == 0
        for opinion in opinions:
            verdicts = [e.verdict for e in bank.opinion_history(opinion)]
            assert verdicts == [Verdict.FORMED, Verdict.REINFORCE]
            formed = bank.opinion_history(opinion)[0].confidence
            assert bank.get_unit(opinion).confidence == pytest.approx(formed + 0.1)  # one step, not two


def test_close_during_a_slow_hook_waits_for_it_and_keeps_the_rest_queued(
    memdir: Path, minilm: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    started, release = threading.Event(), threading.Event()

    def block(messages: Sequence[ChatMessage]) -> None:
        started.set()
        assert release.wait(60), "the test never released the LLM"

    llm = HookedLLM([OBSERVED] * 4, block)
    hs = _engine(memdir, minilm, llm, work={"background": True}, observations={"debounce_seconds": 0})
    _retain_two_people(hs)
    queued = hs.store.pending_count("b")
    assert queued >= 2 and started.wait(60)  # the background run is inside its first LLM call
    closing = threading.Thread(target=hs.close)
    with caplog.at_level(logging.INFO):
        closing.start()
        closing.join(0.5)
        assert closing.is_alive()  # close waits for the hook, whose store is still open
        release.set()
        closing.join(60)
    assert not closing.is_alive()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], [r.getMessage() for r in caplog.records]
    assert hs.jobs.failures == 0 and len(llm.fake.prompts) == 1  # stopped after the item in flight

    with _engine(memdir, minilm, None) as reopened:
        assert reopened.bank("b").pending() == queued - 1  # the one done is gone, nothing else is lost
        assert len(_observed_entities(reopened)) == 1
    fake = FakeScriptedLLM([OBSERVED] * queued)
    with _engine(memdir, minilm, fake) as hs2:
        assert not hs2.bank("b").process_pending().interrupted
        assert hs2.bank("b").pending() == 0 and len(_observed_entities(hs2)) == queued


def test_close_with_an_idle_or_busy_queue_returns_and_rejects_new_events(memdir: Path, minilm: Embedder) -> None:
    hs = _engine(memdir, minilm, FakeScriptedLLM([]), work={"background": True},
                 observations={"debounce_seconds": 3600})
    _retain_two_people(hs)  # the hook is waiting out the debounce: close cuts it short
    hs.close()
    hs.close()  # twice is fine
    assert hs.jobs.submit(RetainEvent(bank_id="b", document_id="d", unit_ids=["u"], entity_ids=[])) == 0
    with _engine(memdir, minilm, None) as reopened:
        assert reopened.bank("b").pending() >= 2


def test_a_fact_forgotten_while_the_llm_works_is_never_cited(memdir: Path, minilm: Embedder) -> None:
    engine: list[Hindsight] = []
    forgotten: list[str] = []

    def forget_a_fact(messages: Sequence[ChatMessage]) -> None:
        if not forgotten:  # the first regeneration has read its facts; one of them goes now
            bank = engine[0].bank("b")
            forgotten.append(bank.units()[0].id)
            bank.forget(forgotten[0])

    llm = HookedLLM([OBSERVED] * 2, forget_a_fact)
    with _engine(memdir, minilm, llm) as hs:
        engine.append(hs)
        _retain_two_people(hs)
        bank = hs.bank("b")
        report = bank.process_pending()
        assert report.failures == 0 and len(llm.fake.prompts) == 1
        assert bank.units(Network.OBSERVATION) == [] and bank.pending() == 1  # not written, still queued
        assert bank.process_pending().observations_regenerated == {} and bank.pending() == 0  # one fact left each
        assert forgotten[0] not in {u.id for u in bank.units()}
