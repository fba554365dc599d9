"""A full disk or a read-only directory gives a typed error, close() still releases the store and the lock, and
the directory reopens in the same process with every committed memory. The failures are real OS errors in a
forked worker (tests/adversarial/disk_worker.py): RLIMIT_FSIZE for a full disk, chmod for a read-only directory."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.adversarial.disk_worker import SCENARIOS, TEXTS
from tests.crash_harness import Zygote

LISBON = TEXTS[0]
# What each step must raise (None: it succeeds), and how the units changed when the directory was reopened.
EXPECTED: dict[str, tuple[dict[str, str | tuple[str | None, ...] | None], int]] = {
    "close_on_full_disk": ({"close": "DiskFullError"}, 0),
    "close_with_read_only_index_dir": ({"close": "DirectoryNotWritableError"}, 0),
    # The database write fails and rolls back; SQLite reports EFBIG as an I/O error, a StoreError.
    "retain_on_full_disk": ({"retain": ("StoreError", "DiskFullError"), "close": ("DiskFullError", None)}, 0),
    # The retain commits; the snapshot it could not save is logged, and close reports it.
    "retain_with_read_only_index_dir": ({"retain": None, "close": "DirectoryNotWritableError"}, 1),
    "forget_with_read_only_index_dir": ({"forget": "DirectoryNotWritableError", "close": None}, -1),
    "new_bank_in_read_only_banks_dir": ({"new_bank": "DirectoryNotWritableError", "close": None}, 0),
    "open_on_full_disk": ({"open": ("DiskFullError", "StoreError")}, 0),
    "open_read_only_directory": ({"open": "DirectoryNotWritableError"}, 0),
    "open_in_read_only_parent": ({"open": "DirectoryNotWritableError"}, 0),
    "open_existing_read_only": ({"open": "DirectoryNotWritableError"}, 0),
}


def run(zygote: Zygote, tmp_path: Path, scenario: str) -> dict[str, Any]:
    log = tmp_path / "disk.log"
    pid = zygote.start_round("disk", tmp_path, log, [s.__name__ for s in SCENARIOS].index(scenario), 0)
    status = zygote.wait(pid)
    assert not os.WIFSIGNALED(status), f"the worker died of signal {os.WTERMSIG(status)}"
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert os.WEXITSTATUS(status) == 0, entries
    return dict(entries[-1])


@pytest.mark.parametrize("scenario", list(EXPECTED))
def test_a_full_disk_or_read_only_directory_gives_typed_errors_and_releases_the_lock(
    scenario: str, zygote: Zygote, tmp_path: Path
) -> None:
    facts = run(zygote, tmp_path, scenario)
    errors, change = EXPECTED[scenario]
    for step, expected in errors.items():
        allowed = expected if isinstance(expected, tuple) else (expected,)
        assert facts[step] in allowed, (step, facts)
    # Reopened in the same process: no DirectoryLockedError naming our own pid, and every committed memory is there.
    assert facts["units_after"] == facts["units_before"] + change, facts
    assert facts["check_ok"], facts
    assert any(LISBON in text for text in facts["recalled"]) == (scenario != "forget_with_read_only_index_dir"), facts
