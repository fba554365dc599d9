"""Every public call racing close() or delete_bank ends in a typed error, never a crash: each race runs in a
process forked by the zygote, which must exit 0, and every exception its threads saw must be a HindsightError."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.adversarial.race_worker import RACES, Race
from tests.crash_harness import Zygote

FULL = os.environ.get("HINDSIGHT_FULL_RELIABILITY") == "1"
ROUNDS = 20 if FULL else 1


@pytest.mark.parametrize("race", RACES, ids=[r.name for r in RACES])
def test_a_race_with_close_or_delete_ends_in_typed_errors(race: Race, zygote: Zygote, tmp_path: Path) -> None:
    log = tmp_path / "race.log"
    pid = zygote.start_round("race", tmp_path / "memdir", log, RACES.index(race), ROUNDS)
    status = zygote.wait(pid)
    assert not os.WIFSIGNALED(status), f"the race killed the process with signal {os.WTERMSIG(status)}"
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert os.WEXITSTATUS(status) == 0, entries
    [entry] = entries
    assert [s for s in entry["seen"] if s.startswith("UNTYPED")] == []
    # Every thread, once the close or delete returned, was refused with StoreClosedError or BankNotFoundError.
    assert entry["refused"] == entry["threads"]
