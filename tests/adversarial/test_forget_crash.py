"""kill -9 right after a forget or a bank delete commits, at each exact step of the scrub that follows: opening the
directory again (touching no bank) finishes the scrub, so no byte of the forgotten text, and no directory of the
deleted bank, is left in any file; the other bank is untouched."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hindsight import Message
from hindsight.embed.base import Embedder
from tests.adversarial.crash_forget import KILL_POINTS, MODES
from tests.adversarial.forget_fixtures import NEEDLES, OTHER, build, engine, leaked_bytes
from tests.bank_state import bank_state, copy_memdir
from tests.crash_harness import Zygote

FULL = os.environ.get("HINDSIGHT_FULL_RELIABILITY") == "1"
# Every step with forget by unit and the deletes; with the flag, forget by entity and by document at every step too.
CASES = [(p, 0) for p in range(len(KILL_POINTS))] + [
    (p, m) for m in (1, 2) for p, (op, _, _) in enumerate(KILL_POINTS) if op == "forget" and (FULL or p == 0)
]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory, minilm: Embedder) -> Path:
    memdir = tmp_path_factory.mktemp("crash") / "m"
    build(memdir, minilm)
    with engine(memdir, minilm) as hs:
        hs.bank("keep").retain([Message(speaker="Maya", content="I water the ferns on Sundays."), *OTHER],
                               timestamp="2024-05-05", document_id="ferns")
    return memdir


@pytest.mark.parametrize(("point", "mode"), CASES, ids=["-".join([*KILL_POINTS[p], MODES[m]]) for p, m in CASES])
def test_a_kill_right_after_the_commit_leaves_nothing_once_reopened(
    point: int, mode: int, zygote: Zygote, template: Path, tmp_path: Path, minilm: Embedder
) -> None:
    memdir = copy_memdir(template, tmp_path / "m")
    with engine(memdir, minilm) as hs:
        keep = bank_state(hs.bank("keep"))
    operation, where, method = KILL_POINTS[point]
    log = tmp_path / "log"
    pid = zygote.start_round("forgetter", memdir, log, mode, point)
    assert os.WIFSIGNALED(zygote.wait(pid)), log.read_text()
    assert json.loads(log.read_text().splitlines()[-1]) == {"killed": f"{operation} after {where}.{method}"}
    if point == 0:
        assert leaked_bytes(memdir, NEEDLES)  # the kill left the scrub to do

    with engine(memdir, minilm):
        pass  # opening alone finishes it

    assert leaked_bytes(memdir, NEEDLES) == {}
    with engine(memdir, minilm) as hs:
        assert bank_state(hs.bank("keep")) == keep
        if operation == "delete":
            assert hs.banks() == ["keep"]
            assert not (memdir / "banks" / "b").exists()
        else:
            bank = hs.bank("b")
            assert bank.units() and not any(n in u.text.lower() for u in bank.units() for n in NEEDLES)
            assert bank.check().ok
        assert not hs.store.scrubs_pending()


def test_a_leftover_bank_directory_is_removed_on_open(template: Path, tmp_path: Path, minilm: Embedder) -> None:
    """A directory under banks/ whose bank the store does not hold (a delete killed before it removed it, with no
    mark, as an older hindsight left it) goes on open; the banks that exist keep theirs."""
    memdir = copy_memdir(template, tmp_path / "m")
    leftover = memdir / "banks" / "gone"
    (leftover / "sub").mkdir(parents=True)
    (leftover / "lexical.db").write_bytes(b"zebulon quixley")
    with engine(memdir, minilm):
        pass
    assert not leftover.exists()
    assert {p.name for p in (memdir / "banks").iterdir()} == {"b", "keep"}
