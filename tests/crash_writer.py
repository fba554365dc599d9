"""A writer to kill -9, forked by tests/crash_zygote.py. It retains into bank "crash" of MEMDIR in a loop and
appends JSON lines to its log, fsync'ed: {"begin": ...} before each operation and {"done": ...} after it returned,
so the test knows what must have survived the kill.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

PEOPLE = ["Maya", "Bob", "Priya", "Jonas", "Lena", "Omar", "Zoë", "José", "Ava", "Kenji"]
PLACES = ["Denver", "Boulder", "Lisbon", "Kyoto", "the gym", "Red Rocks", "Globex", "the library"]
DOINGS = ["went hiking", "started a new job", "adopted a beagle", "ran ten miles", "bought a bike", "cooked dinner"]


class Log:
    def __init__(self, path: Path) -> None:
        self.fh = path.open("a", encoding="utf-8")

    def write(self, entry: dict[str, Any]) -> None:
        self.fh.write(json.dumps(entry) + "\n")
        self.fh.flush()
        os.fsync(self.fh.fileno())


def document(rng: random.Random, doc_id: str, tag: str) -> dict[str, Any]:
    """A short conversation; every message carries the tag, so every unit of this version shows it."""
    messages = []
    for _ in range(rng.randint(2, 4)):
        who, other = rng.sample(PEOPLE, 2)
        messages.append(
            {
                "speaker": who,
                "content": f"[{tag}] {other} {rng.choice(DOINGS)} in {rng.choice(PLACES)} with {rng.choice(PEOPLE)}.",
            }
        )
    day = rng.randint(1, 28)
    return {"doc": doc_id, "tag": tag, "messages": messages, "timestamp": f"2024-{rng.randint(1, 12):02d}-{day:02d}"}


def writer(memdir: str, log_path: Path, round_no: int, seed: int, embedder: Any) -> None:
    from hindsight import Hindsight, HindsightConfig, Message, RetainRequest

    rng = random.Random(seed)
    log = Log(log_path)
    # Snapshots after every few changes, so that kills also land in the middle of index saves.
    config = HindsightConfig.from_dict({"store": {"hnsw": {"save_every": 3}}})
    hs = Hindsight(memdir, config=config, embedder=embedder)
    bank = hs.bank("crash")
    counter = 0

    def new_doc() -> dict[str, Any]:
        nonlocal counter
        counter += 1
        doc_id = f"r{round_no}-d{counter}"
        return document(rng, doc_id, f"{doc_id}.v{rng.randrange(10**9)}")

    def retain(d: dict[str, Any]) -> list[str]:
        msgs = [Message(**m) for m in d["messages"]]
        return [u.id for u in bank.retain(msgs, timestamp=d["timestamp"], document_id=d["doc"]).units]

    def links_of(unit_ids: list[str]) -> list[list[str]]:
        return [[k.src, k.dst, k.type.value] for uid in unit_ids for k in bank.links(uid)]

    while True:
        roll = rng.random()
        units = bank.units() if roll >= 0.7 else []
        if roll < 0.7 or not units:
            d = new_doc()
            log.write({"begin": "retain", "docs": [d]})
            ids = retain(d)
            log.write({"done": "retain", "units": {d["doc"]: ids}, "links": links_of(ids)})
        elif roll < 0.85:
            doc_id = rng.choice(sorted({u.source.document_id for u in units}))
            d = document(rng, doc_id, f"{doc_id}.v{rng.randrange(10**9)}")
            log.write({"begin": "update", "docs": [d]})
            ids = retain(d)
            log.write({"done": "update", "units": {doc_id: ids}, "links": links_of(ids)})
        elif roll < 0.95:
            batch = [new_doc() for _ in range(3)]
            log.write({"begin": "retain_many", "docs": batch})
            requests = [
                RetainRequest([Message(**m) for m in d["messages"]], d["timestamp"], None, d["doc"]) for d in batch
            ]
            results = bank.retain_many(requests)
            done = {r.document_id: [u.id for u in r.units] for r in results}
            log.write({"done": "retain_many", "units": done, "links": links_of([i for v in done.values() for i in v])})
        else:
            unit = rng.choice(units)
            log.write({"begin": "forget", "unit": unit.id, "doc": unit.source.document_id})
            bank.forget(unit.id)
            log.write({"done": "forget", "unit": unit.id})
