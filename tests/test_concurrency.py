"""Concurrency: writer and reader threads on one bank, and two processes on one memory directory.

Threads: 4 writers (new documents, updates, forgets, and retains whose transaction fails half way) and 8
readers (recall, listings, check) for a few seconds; HINDSIGHT_FULL_RELIABILITY=1 runs them for 60 s.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from hindsight import DirectoryLockedError, Hindsight, Message, StoreError
from hindsight.bank import Bank
from hindsight.cli import main as cli_main
from hindsight.embed.base import Embedder
from hindsight.store.sqlite import SQLiteStore
from tests.bank_state import bank_state, seed

FULL = os.environ.get("HINDSIGHT_FULL_RELIABILITY") == "1"
SECONDS = 60.0 if FULL else 6.0
POISON = "poisonmarker"
ROOT = Path(__file__).resolve().parent.parent
NAMES = ["Maya", "Bob", "Priya", "Jonas", "Lena", "Omar"]
QUERIES = [
    "Where did Maya go hiking?",
    "Who adopted a beagle?",
    f"{POISON} secret",
    "Bob Denver",
    "What happened in May?",
]


class Writer:
    """Retains, updates and forgets its own documents, and tracks what the bank must hold of them."""

    def __init__(self, bank: Bank, n: int) -> None:
        self.bank, self.n, self.rng = bank, n, random.Random(n)
        self.expected: dict[str, set[str]] = {}
        self.returned: set[str] = set()
        self.poisoned = 0

    def messages(self, doc: str, poison: bool = False) -> list[Message]:
        a, b = self.rng.sample(NAMES, 2)
        text = f"{a} met {b} in Denver on day {self.rng.randrange(10**6)} ({doc})."
        return [
            Message(speaker=a, content=f"{POISON} {text}" if poison else text),
            Message(speaker=b, content=f"{b} enjoyed it ({doc})."),
        ]

    def step(self, i: int) -> None:
        roll, doc = self.rng.random(), f"w{self.n}-d{i}"
        if roll < 0.1:
            with pytest.raises(StoreError):
                self.bank.retain(self.messages(doc, poison=True), timestamp="2024-05-02", document_id=doc)
            self.poisoned += 1
            return
        if roll < 0.25 and self.expected:
            doc = self.rng.choice(sorted(self.expected))  # an update replaces the document's units
        elif roll < 0.35 and self.expected:
            victim = self.rng.choice(sorted(self.expected))
            unit = self.rng.choice(sorted(self.expected[victim]))
            self.bank.forget(unit)
            self.expected[victim].discard(unit)
            if not self.expected[victim]:
                del self.expected[victim]
            return
        ids = {u.id for u in self.bank.retain(self.messages(doc), timestamp="2024-05-02", document_id=doc).units}
        self.expected[doc] = ids
        self.returned |= ids


@pytest.fixture
def poisoned_store(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the store fail after a poisoned document's units are written, inside the transaction."""
    insert_links = SQLiteStore._insert_links

    def failing(self: SQLiteStore, c: object, bank_id: str, links: list[object], labels: dict[str, int]) -> None:
        texts = [
            r[0]
            for r in c.execute(  # type: ignore[attr-defined]
                f"SELECT text FROM units WHERE label IN ({','.join('?' * len(labels))})", list(labels.values())
            )
        ]
        if any(POISON in t for t in texts):
            raise __import__("sqlite3").OperationalError("injected failure after the units were written")
        insert_links(self, c, bank_id, links, labels)  # type: ignore[arg-type]

    monkeypatch.setattr(SQLiteStore, "_insert_links", failing)


@pytest.mark.slow
def test_writers_and_readers_share_a_bank(hs: Hindsight, poisoned_store: None) -> None:
    bank = hs.bank("busy")
    seed(bank)
    seeded = {u.id for u in bank.units()}
    writers = [Writer(bank, n) for n in range(4)]
    errors: list[BaseException] = []
    seen: set[str] = set()
    seen_lock = threading.Lock()
    stop = threading.Event()
    reads = [0]

    def write(w: Writer) -> None:
        i = 0
        try:
            while not stop.is_set():
                w.step(i)
                i += 1
        except BaseException as exc:
            errors.append(exc)

    def read(r: int) -> None:
        rng = random.Random(100 + r)
        try:
            while not stop.is_set():
                roll = rng.random()
                if roll < 0.05:
                    report = bank.check()
                    assert report.ok, str(report)
                elif roll < 0.15:
                    units = bank.units()
                    assert all(POISON not in u.text for u in units)
                    bank.entities()
                    bank.stats()
                else:
                    result = bank.recall(
                        rng.choice(QUERIES), budget=rng.choice([50, 500, 5000]), networks=rng.choice([None, ["world"]])
                    )
                    assert result.tokens_used <= result.budget
                    assert all(POISON not in h.unit.text for h in result.hits)
                    with seen_lock:
                        seen.update(h.unit.id for h in result.hits)
                reads[0] += 1
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(w,)) for w in writers]
    threads += [threading.Thread(target=read, args=(r,)) for r in range(8)]
    for t in threads:
        t.start()
    time.sleep(SECONDS)
    stop.set()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors

    # No lost unit: the bank holds exactly what the writers were told, plus the seed documents.
    actual: dict[str, set[str]] = {}
    for u in bank.units():
        actual.setdefault(u.source.document_id, set()).add(u.id)
    expected = {doc: ids for w in writers for doc, ids in w.expected.items()}
    assert {d: ids for d, ids in actual.items() if d.startswith("w")} == expected
    # Every recalled unit had been committed: writers got it back from retain (rolled-back units never show).
    assert seen <= set().union(seeded, *(w.returned for w in writers))
    assert sum(w.poisoned for w in writers) > 0 and reads[0] > 0
    report = bank.check()
    assert report.ok, str(report)


def test_second_process_gets_a_clear_lock_error_and_never_corrupts(hs: Hindsight, memdir: Path) -> None:
    seed(hs.bank("b"))
    before = bank_state(hs.bank("b"))
    hs.close()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from hindsight import Hindsight; hs = Hindsight(sys.argv[1]); "
            "print('open', flush=True); sys.stdin.read()",
            str(memdir),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        with pytest.raises(DirectoryLockedError, match=f"locked by pid {holder.pid}"):
            Hindsight(memdir)
        assert cli_main(["--dir", str(memdir), "retain", "b", "--text", "Bob moved to Lisbon."]) == 2
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(30)
    # The holder died without closing: its lock went with it, and nothing changed.
    with Hindsight(memdir, embedder=hs._embedder_override) as again:
        bank = again.bank("b", create=False)
        assert bank_state(bank) == before
        assert bank.check().ok


def test_lock_is_released_on_close_and_held_per_directory(memdir: Path, tmp_path: Path, minilm: Embedder) -> None:
    first = Hindsight(memdir, embedder=minilm)
    other = Hindsight(tmp_path / "elsewhere", embedder=minilm)  # another directory is independent
    with pytest.raises(DirectoryLockedError, match=f"locked by pid {os.getpid()}"):
        Hindsight(memdir)
    first.close()
    Hindsight(memdir).close()
    other.close()


def test_a_recall_does_not_wait_for_a_retain_committing_in_the_same_bank(hs: Hindsight) -> None:
    bank = hs.bank("b")
    bank.retain("Ann skis in Utah every winter.", timestamp="2024-01-05T10:00:00Z")
    committing, done = threading.Event(), threading.Event()

    def commit() -> None:  # what a retain's commit holds while it resolves, links and writes
        with bank.handle().lock:
            committing.set()
            done.wait(30)

    writer = threading.Thread(target=commit)
    writer.start()
    committing.wait(10)
    try:
        started = time.monotonic()
        hits = bank.recall("Where does Ann ski?").hits
        assert time.monotonic() - started < 10 and hits
        assert writer.is_alive()
    finally:
        done.set()
        writer.join()
