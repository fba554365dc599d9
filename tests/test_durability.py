"""Durability under kill -9: every retain that returned survives, and no document is ever half retained.

A writer process (tests/crash_writer.py, forked by tests/crash_zygote.py) retains, updates, batch-retains and
forgets in a loop, logging each operation before it starts and after it returns (fsync'ed). It is killed with
SIGKILL at random moments, during start-up, index replay, commits and index snapshots. After every kill the bank is
reopened and must pass `check()`, hold exactly the documents that returned (with their links), and hold the
operation in flight either completely or not at all. HINDSIGHT_FULL_RELIABILITY=1 runs 50 kills; the default is a few.
"""

from __future__ import annotations

import json
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from hindsight import Hindsight, Message
from hindsight.bank import Bank
from hindsight.embed.base import Embedder
from tests.crash_harness import Zygote, wait_for_first_line, wait_until

FULL = os.environ.get("HINDSIGHT_FULL_RELIABILITY") == "1"
ROUNDS = 50 if FULL else 5


@dataclass
class Expected:
    """What must be in the bank: each document's unit ids, and links that existed when a retain returned."""

    docs: dict[str, set[str]] = field(default_factory=dict)
    links: set[tuple[str, str, str]] = field(default_factory=set)
    settled_in_flight: int = 0  # interrupted operations that had committed before the kill
    kills: dict[str, int] = field(default_factory=dict)  # where the kills landed

    def done(self, entry: dict[str, Any]) -> None:
        if entry["done"] == "forget":
            self.drop_unit(entry["unit"])
            return
        for doc, ids in entry["units"].items():
            self.docs[doc] = set(ids)
        self.links |= {(s, d, t) for s, d, t in entry["links"]}

    def drop_unit(self, unit_id: str) -> None:
        for doc, ids in list(self.docs.items()):
            ids.discard(unit_id)
            if not ids:
                del self.docs[doc]


def doc_units(bank: Bank) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for u in bank.units():
        out.setdefault(u.source.document_id, set()).add(u.id)
    return out


def read_log(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.endswith("}")]  # a torn last line was never fsync'ed


def wait_for_a_retain(log: Path, timeout: float = 120.0) -> None:
    wait_until(lambda: any(e.get("done") == "retain" for e in read_log(log)), "the writer returned no retain", timeout)


def unit_texts(hs: Hindsight, bank_id: str, ids: set[str]) -> list[str]:
    return sorted(u.text for u in hs.store.get_units(bank_id, sorted(ids)))


def settle(hs: Hindsight, pending: dict[str, Any], actual: dict[str, set[str]], expected: Expected) -> None:
    """The operation the kill interrupted: it must be fully applied or not at all; adopt whichever it was."""
    if pending["begin"] == "forget":
        if not any(pending["unit"] in ids for ids in actual.values()):
            expected.drop_unit(pending["unit"])
        return
    for d in pending["docs"]:
        doc, now, before = d["doc"], actual.get(d["doc"], set()), expected.docs.get(d["doc"], set())
        texts = unit_texts(hs, "crash", now)
        if now and all(d["tag"] in t for t in texts):
            # Committed: it must hold every unit the same content makes in an empty bank.
            ref = hs.bank("reference")
            result = ref.retain([Message(**m) for m in d["messages"]], timestamp=d["timestamp"], document_id=doc)
            assert texts == sorted(u.text for u in result.units), f"document {doc} is incomplete"
            hs.delete_bank("reference")
            expected.docs[doc] = now
            expected.settled_in_flight += 1
        else:
            assert now == before, f"document {doc} is half retained: {texts}"


def verify(memdir: Path, entries: list[dict[str, Any]], expected: Expected, minilm: Embedder) -> None:
    errors = [e["error"] for e in entries if "error" in e]
    assert not errors, errors
    pending = None
    for entry in entries:
        if "begin" in entry:
            pending = entry
        else:
            expected.done(entry)
            pending = None
    where = "start-up" if not entries else "between operations" if pending is None else pending["begin"]
    expected.kills[where] = expected.kills.get(where, 0) + 1
    with Hindsight(memdir, embedder=minilm) as hs:
        bank = hs.bank("crash")
        report = bank.check()
        assert report.ok, str(report)
        actual = doc_units(bank)
        if pending is not None:
            settle(hs, pending, actual, expected)
        assert actual == expected.docs
        assert bank.stats().documents == len(actual)
        live = {uid for ids in actual.values() for uid in ids}
        expected.links = {k for k in expected.links if k[0] in live and k[1] in live}
        assert expected.links <= {(k.src, k.dst, k.type.value) for k in hs.store.all_links("crash")}
        last = next((e for e in reversed(entries) if e.get("done") == "retain"), None)
        if last is not None:
            ((doc, ids),) = last["units"].items()
            kept = set(ids) & actual.get(doc, set())  # not updated or forgotten since
            if kept:  # its index entries answer a recall for its tag
                query = unit_texts(hs, "crash", kept)[0].split("[", 1)[1].split("]", 1)[0]
                assert kept & {h.unit.id for h in bank.recall(query, budget=100_000).hits}


@pytest.mark.slow
def test_kill_9_never_loses_or_half_retains(tmp_path: Path, minilm: Embedder, zygote: Zygote) -> None:
    memdir = tmp_path / "memdir"
    rng = random.Random(int(os.environ.get("HINDSIGHT_RELIABILITY_SEED", "20240506")))
    expected = Expected()
    for n in range(ROUNDS):
        log = tmp_path / f"round-{n}.log"
        pid = zygote.start_round("writer", memdir, log, n, rng.randrange(2**31))
        if n == ROUNDS - 1 and not expected.docs:
            wait_for_a_retain(log)  # so the durability of a returned retain is checked at least once
        elif rng.random() < 0.2:
            time.sleep(rng.uniform(0.0, 1.5))  # start-up: opening, replaying or rebuilding the indexes
        else:
            wait_for_first_line(log)
            time.sleep(rng.uniform(0.0, 3.0))
        killed = zygote.kill(pid)
        entries = read_log(log)
        assert killed, f"the writer stopped by itself: {entries[-1:]}"
        verify(memdir, entries, expected, minilm)
    assert expected.docs, "nothing was ever retained"
    print(
        f"{ROUNDS} kills, landing in {expected.kills}; {expected.settled_in_flight} interrupted operations had "
        f"committed; {sum(len(v) for v in expected.docs.values())} units in {len(expected.docs)} documents survive"
    )
