"""Race workers forked by the kill -9 zygote (tests/crash_zygote.py): threads call one public operation in a loop
while the main thread closes the engine or deletes the bank. Each logs one JSON line: every exception the threads
saw, typed or not, and whether the directory reopens cleanly in the same process afterwards."""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hindsight import Hindsight, RetainRequest
from hindsight.bank import Bank
from hindsight.errors import BankNotFoundError, HindsightError, StoreClosedError
from tests.crash_writer import Log

Op = Callable[[Hindsight, Bank, int, int], object]  # (engine, bank, thread, call number)


def _text(t: int, i: int) -> str:
    return f"Maya met Bob in Denver for climbing trip {i} of crew {t}, and Priya brought the rope."


def _forget(hs: Hindsight, bank: Bank, t: int, i: int) -> object:
    units = bank.units(limit=1, offset=t)
    return bank.forget(units[0].id) if units else bank.retain(_text(t, i))


async def _arecall(bank: Bank) -> object:
    return await bank.arecall("climbing rope")


def _new_bank(hs: Hindsight, bank: Bank, t: int, i: int) -> object:
    bank_id = f"tmp-{t}-{i}"
    hs.bank(bank_id).retain(_text(t, i))
    hs.delete_bank(bank_id)
    return None


OPS: dict[str, Op] = {
    "retain": lambda hs, b, t, i: b.retain(_text(t, i), document_id=f"d{t}-{i % 3}"),
    "retain_many": lambda hs, b, t, i: b.retain_many([RetainRequest(_text(t, i + k)) for k in range(2)]),
    "recall": lambda hs, b, t, i: b.recall("who climbed in Denver?"),
    "arecall": lambda hs, b, t, i: asyncio.run(_arecall(b)),
    "forget": _forget,
    "units": lambda hs, b, t, i: b.units(),
    "check": lambda hs, b, t, i: b.check(),
    "stats": lambda hs, b, t, i: b.stats(),
    "entities": lambda hs, b, t, i: b.entities(),
    "pending": lambda hs, b, t, i: b.pending(),
    "reflect": lambda hs, b, t, i: b.reflect("who climbs?"),  # no LLM: LLMNotConfiguredError, until closed
    "bank": lambda hs, b, t, i: hs.bank(b.id).stats(),
    "banks": lambda hs, b, t, i: hs.banks(),
    "delete_bank": _new_bank,
}


@dataclass(frozen=True)
class Race:
    """Threads running `ops` (one thread each) while the main thread runs `against` ("close" or "delete_bank")."""

    ops: tuple[str, ...]
    against: str

    @property
    def threads(self) -> tuple[str, ...]:
        """The op of each thread: a lone op runs on three threads, so that it also races itself."""
        return self.ops if len(self.ops) > 1 else self.ops * 3

    @property
    def name(self) -> str:
        return f"{'+'.join(self.ops)}-vs-{self.against}"


RACES = [Race((op,), "close") for op in OPS] + [
    Race((op,), "delete_bank") for op in ("retain", "retain_many", "recall", "forget", "units", "check", "stats")
] + [Race(("recall", "recall", "recall", "retain"), "close")]  # the example of the issue


def _run_threads(hs: Hindsight, bank: Bank, race: Race, rng: random.Random, seen: list[str]) -> int:
    """Run the race once; returns how many threads were refused after the close or delete, as they must be."""
    refusal = StoreClosedError if race.against == "close" else BankNotFoundError
    done = threading.Event()
    refused: list[int] = []

    def loop(t: int, op: Op) -> None:
        i = 0
        while True:
            i += 1
            after = done.is_set()
            try:
                op(hs, bank, t, i)
            except refusal:
                if after:
                    refused.append(t)
                    return
                done.wait()  # refused while the close or delete runs: the next call, after it, must be refused too
                continue
            except HindsightError as exc:  # e.g. UnitNotFoundError when two threads forget one unit
                seen.append(f"{type(exc).__name__}")
            except Exception as exc:  # the bug: an untyped error
                seen.append(f"UNTYPED {type(exc).__module__}.{type(exc).__name__}: {exc}")
            if after:
                seen.append("UNTYPED no refusal after the close or delete")
                return

    threads = [threading.Thread(target=loop, args=(t, OPS[op])) for t, op in enumerate(race.threads)]
    for th in threads:
        th.start()
    time.sleep(rng.uniform(0.02, 0.15))
    if race.against == "close":
        closer = threading.Thread(target=hs.close)  # from another thread, while this one closes too
        closer.start()
        hs.close()
        closer.join()
        hs.close()
    else:
        hs.delete_bank(bank.id)
    done.set()
    for th in threads:
        th.join(timeout=60)
    return len(refused)


def race(memdir: str, log_path: Path, round_no: int, seed: int, embedder: Any) -> None:
    """The zygote's "race" worker: `round_no` picks the race from RACES, and `seed` is the number of rounds."""
    spec = RACES[round_no]
    rng = random.Random(seed)
    seen: list[str] = []
    refused = threads = 0
    for n in range(seed):
        path = Path(memdir) / f"round{n}"
        hs = Hindsight(path, embedder=embedder)
        bank = hs.bank("b")
        bank.retain(" ".join(_text(99, k) for k in range(4)))
        refused += _run_threads(hs, bank, spec, rng, seen)
        threads += len(spec.threads)
        hs.close()
        with Hindsight(path, embedder=embedder) as again:  # the lock was released, and the bank is whole
            report = again.bank("b").check()
            if not report.ok:
                seen.append(f"UNTYPED check failed after the race: {report.problems}")
    Log(log_path).write({"race": spec.name, "seen": seen, "refused": refused, "threads": threads})
