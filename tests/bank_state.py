"""Helpers shared by the reliability tests: a full snapshot of a bank, and a small seeded memory directory."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from hindsight import Hindsight, Message
from hindsight.bank import Bank
from hindsight.embed.base import Embedder

# Small documents with people, places and dates, so that a bank gets entities and links of every kind quickly.
SEED_DOCS: list[tuple[str, str, list[Message]]] = [
    (
        "d1",
        "2024-05-01T09:00:00",
        [
            Message(speaker="Maya", content="Bob and I went hiking at Red Rocks near Denver on Saturday."),
            Message(speaker="Ava", role="assistant", content="Sounds lovely. Did Bob enjoy the trail?"),
            Message(speaker="Maya", content="He did, so we planned a trip to Zion in June because of it."),
        ],
    ),
    (
        "d2",
        "2024-05-03T18:30:00",
        [
            Message(speaker="Maya", content="Priya started a new job at Globex in Boulder last week."),
            Message(
                speaker="Ava", role="assistant", content="Congratulations to Priya! Is Globex the robotics company?"
            ),
        ],
    ),
    (
        "d3",
        "2024-05-06T08:15:00",
        [
            Message(speaker="Maya", content="Bob adopted a beagle named Pepper yesterday."),
            Message(speaker="Ava", role="assistant", content="Pepper is a great name for a beagle."),
        ],
    ),
]


@dataclass(frozen=True)
class BankState:
    """Everything observable about a bank's contents, comparable with ==."""

    units: tuple[tuple[str, str, str], ...]  # (id, network, text)
    entities: tuple[tuple[str, str, tuple[str, ...]], ...]  # (id, name, aliases)
    links: tuple[tuple[str, str, str, float], ...]
    documents: int


def bank_state(bank: Bank) -> BankState:
    store = bank._services.store
    units = tuple(sorted((u.id, u.network.value, u.text) for u in bank.units()))
    entities = tuple(sorted((e.id, e.name, tuple(sorted(a.alias for a in e.aliases))) for e in bank.entities()))
    links = tuple(sorted((k.src, k.dst, k.type.value, k.weight) for k in store.all_links(bank.id)))
    return BankState(units, entities, links, bank.stats().documents)


def seed(bank: Bank) -> None:
    for doc_id, when, messages in SEED_DOCS:
        bank.retain(messages, timestamp=when, document_id=doc_id)


def seeded_memdir(root: Path, minilm: Embedder, bank_ids: tuple[str, ...] = ("seed",)) -> Path:
    """A closed memory directory whose banks hold SEED_DOCS."""
    path = root / "seeded"
    with Hindsight(path, embedder=minilm) as hs:
        for bank_id in bank_ids:
            seed(hs.bank(bank_id))
    return path


def copy_memdir(template: Path, dest: Path) -> Path:
    shutil.copytree(template, dest)
    (dest / "LOCK").unlink(missing_ok=True)
    return dest
