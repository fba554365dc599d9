"""Durability of background reasoning under kill -9: queued work is never lost and never done twice.

A worker process (tests/crash_reasoner.py) retains a conversation, which queues its facts for opinion reinforcement
and its entities for observation, then works the queue off with a slow scripted LLM. It is killed with SIGKILL at
random moments. After every kill the bank is reopened (no LLM) and must pass `check()`, hold no claim of the dead
run, and every fact retained after the opinions were formed must be queued or weighed by an opinion (none older
than the opinion may be), every entity with enough facts queued or observed, and no opinion may have weighed a fact
twice. HINDSIGHT_FULL_RELIABILITY=1 runs 20 kills; the default is 3.
"""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path

from hindsight import Hindsight, HindsightConfig, Message
from hindsight.embed.base import Embedder
from hindsight.models import Network
from hindsight.reflect.reinforce import FACT_NETWORKS
from tests.crash_harness import Zygote, wait_for_first_line
from tests.crash_reasoner import RoutingLLM, conversation
from tests.fake_llm import FakeScriptedLLM, reflect_reply

FULL = os.environ.get("HINDSIGHT_FULL_RELIABILITY") == "1"
ROUNDS = 20 if FULL else 3
REPLY = reflect_reply("I think Alice is busy [1].", {"opinion": "I think Alice is doing well."},
                      {"opinion": "I think Alice's friends are good for her."})
CONFIG = {"reflect": {"work": {"background": False, "batch_size": 2}, "observations": {"min_facts": 2}}}


def prepare(memdir: Path, minilm: Embedder, rng: random.Random) -> None:
    """A bank with Alice's conversations (their work queued) and two opinions about Alice."""
    fake = FakeScriptedLLM([REPLY])
    with Hindsight(memdir, HindsightConfig.from_dict(CONFIG), llm=fake, embedder=minilm) as hs:
        bank = hs.bank("crash")
        for n in range(4):
            messages = [Message(**m) for m in conversation(rng)]
            bank.retain(messages, timestamp=f"2024-05-{n + 1:02d}", document_id=f"prep-{n}")
        assert len(bank.reflect("How is Alice?").opinions) == 2


def verify(memdir: Path, minilm: Embedder, llm: RoutingLLM | None = None) -> int:
    """Check the invariants (after working the queue off, when `llm` is given); returns the items still queued."""
    config = HindsightConfig.from_dict(CONFIG)
    with Hindsight(memdir, config, llm=llm, embedder=minilm) as hs:
        bank, store = hs.bank("crash"), hs.store
        assert store._query("SELECT count(*) FROM pending_work WHERE claim IS NOT NULL")[0][0] == 0
        if llm is not None:
            report = bank.process_pending()
            assert not report.interrupted and report.failures == 0 and bank.pending() == 0
        report = bank.check()
        assert report.ok, str(report)
        queued = set(store._query("SELECT kind, key FROM pending_work WHERE bank_id='crash'"))
        opinions = bank.units(Network.OPINION)
        assert len(opinions) == 2
        facts = {u.id: u for u in bank.units() if u.network in FACT_NETWORKS}
        weighed: set[str] = set()
        for opinion in opinions:
            formed, *changes = bank.opinion_history(opinion.id)
            seen: list[str] = [i for e in [formed, *changes] for i in e.evidence]
            assert len(seen) == len(set(seen)), f"opinion {opinion.id} weighed a fact twice"
            later = [i for e in changes for i in e.evidence]
            assert all(facts[i].created_at > opinion.created_at for i in later), "weighed a fact older than it"
            weighed |= set(later)
        # The prepared facts were retained before the opinions were formed: they are no new evidence for them.
        newer = [f for f in facts.values() if f.created_at > min(o.created_at for o in opinions)]
        lost = [f.text for f in newer if ("reinforce", f.id) not in queued and f.id not in weighed]
        assert not lost, f"facts neither queued nor weighed: {lost}"
        observed = {o.metadata["entity_id"] for o in bank.units(Network.OBSERVATION)}
        for entity in bank.entities():
            enough = len(store.units_of_entities("crash", [entity.id], FACT_NETWORKS, 2)) >= 2
            assert not enough or ("observe", entity.id) in queued or entity.id in observed, entity.name
        return len(queued)


def test_kill_9_during_background_reasoning_loses_no_work(tmp_path: Path, minilm: Embedder, zygote: Zygote) -> None:
    memdir = tmp_path / "memdir"
    rng = random.Random(int(os.environ.get("HINDSIGHT_RELIABILITY_SEED", "20240507")))
    prepare(memdir, minilm, rng)
    landed: dict[str, int] = {}
    for n in range(ROUNDS):
        log = tmp_path / f"round-{n}.log"
        pid = zygote.start_round("reasoner", memdir, log, n, rng.randrange(2**31))
        wait_for_first_line(log)
        time.sleep(rng.uniform(0.0, 2.0))  # a round's work takes about 2-4 s
        assert zygote.kill(pid)
        entries = [json.loads(line) for line in log.read_text().splitlines() if line.endswith("}")]
        assert not [e for e in entries if "error" in e], entries
        last = entries[-1]
        where = f"{'begin' if 'begin' in last else 'done'} {last.get('begin') or last.get('done')}"
        landed[where] = landed.get(where, 0) + 1
        verify(memdir, minilm)
    assert verify(memdir, minilm, RoutingLLM()) == 0
    print(f"{ROUNDS} kills, after: {landed}")
