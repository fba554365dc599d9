"""A forget or a bank delete that kills itself (SIGKILL) right after one exact step, forked by tests/crash_zygote.py.

The round's seed picks the step (KILL_POINTS), its number how to forget (MODES). The worker logs the step before
the kill, fsync'ed, so the test knows the kill landed there and not somewhere else.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

from tests.crash_writer import Log

# (operation, the object whose method returns just before the kill, that method)
KILL_POINTS = [
    ("forget", "store", "apply"),  # the forget committed; nothing of the index replay or the scrub ran
    ("forget", "indexes", "sync"),  # the indexes applied it; FTS5 segments not merged, WAL not truncated
    ("forget", "indexes", "purge"),  # the index files are scrubbed; the database's WAL is not
    ("forget", "store", "purge"),  # everything is scrubbed; the mark that says so is not cleared
    ("delete", "store", "delete_bank"),  # the delete committed; WAL not truncated, directory not removed
    ("delete", "store", "purge"),  # WAL truncated; directory not removed
]
MODES = ["unit", "entity", "document"]


def forgetter(memdir: str, log_path: Path, round_no: int, seed: int, embedder: Any) -> None:
    from hindsight import Hindsight

    operation, where, method = KILL_POINTS[seed]
    log = Log(log_path)
    hs = Hindsight(memdir, embedder=embedder)
    bank = hs.bank("b")
    target = {"store": hs.store, "indexes": bank.indexes}[where]
    original = getattr(target, method)

    def then_die(*args: Any, **kwargs: Any) -> Any:
        original(*args, **kwargs)
        log.write({"killed": f"{operation} after {where}.{method}"})
        os.kill(os.getpid(), signal.SIGKILL)

    setattr(target, method, then_die)
    if operation == "delete":
        hs.delete_bank("b")
    elif MODES[round_no] == "unit":
        bank.forget(next(u.id for u in bank.units() if u.text.startswith("Maya: My neighbour")))
    elif MODES[round_no] == "entity":
        bank.forget(entity="Zebulon Quixley")
    else:
        bank.forget(document="bike")
    log.write({"error": "the kill point was never reached"})
