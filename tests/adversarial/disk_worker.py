"""Full-disk and read-only workers forked by the kill -9 zygote (tests/crash_zygote.py). A full disk is a real
RLIMIT_FSIZE in the forked worker (SIGXFSZ ignored, so writes past the limit fail with EFBIG); a read-only directory
is a real chmod, with the worker dropped to user nobody first when it runs as root (root ignores permissions).
Each scenario logs one JSON line: the error each step raised, and the state found on reopening in the same process."""

from __future__ import annotations

import os
import resource
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hindsight import Hindsight, HindsightConfig, RetainRequest
from tests.crash_writer import Log

NOBODY = 65534
TEXTS = [
    "Maya moved to Lisbon in March to work on tide models.",
    "Bob adopted a grey cat called Pixel last winter.",
    "Priya runs the Tuesday chess club at the library.",
]
# A dirty vector index at close: no snapshot is saved before it, unless a scenario asks for one per change.
LAZY = HindsightConfig.from_dict({"store": {"hnsw": {"save_every": 5000}}})
EAGER = HindsightConfig.from_dict({"store": {"hnsw": {"save_every": 1}}})


@contextmanager
def full_disk() -> Iterator[None]:
    """Every write past the first KiB of a file fails with EFBIG, as writes fail on a full disk."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1024, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))


@contextmanager
def read_only(path: Path) -> Iterator[None]:
    mode = path.stat().st_mode
    path.chmod(0o555)
    try:
        yield
    finally:
        path.chmod(mode)


def attempt(step: Callable[[], object]) -> str | None:
    """The name of the error `step` raised (prefixed UNTYPED unless a HindsightError), or None."""
    from hindsight.errors import HindsightError

    try:
        step()
    except HindsightError as exc:
        return type(exc).__name__
    except Exception as exc:  # the bug: an untyped error
        return f"UNTYPED {type(exc).__name__}: {exc}"
    return None


class Scene:
    """One scenario's memory directory, the embedder, and what it found."""

    def __init__(self, work: Path, embedder: Any) -> None:
        self.memdir = work / "memdir"
        self.embedder = embedder
        self.facts: dict[str, Any] = {}

    def open(self, config: HindsightConfig = LAZY) -> Hindsight:
        return Hindsight(self.memdir, config=config, embedder=self.embedder)

    def seeded(self, config: HindsightConfig = LAZY) -> Hindsight:
        hs = self.open(config)
        hs.bank("b").retain_many([RetainRequest(text) for text in TEXTS])
        self.facts["units_before"] = len(hs.bank("b").units())
        return hs

    def reopen(self) -> None:
        """Reopen in this process: the lock must be free, and the bank whole and checked."""
        with self.open() as hs:
            bank = hs.bank("b")
            self.facts["units_after"] = len(bank.units())
            self.facts["check_ok"] = bank.check().ok
            self.facts["recalled"] = sorted(h.text for h in bank.recall("Lisbon tide models", top_k=1).hits)

    def index_dir(self) -> Path:
        return self.memdir / "banks" / "b"


def close_on_full_disk(s: Scene) -> None:
    hs = s.seeded()
    with full_disk():
        s.facts["close"] = attempt(hs.close)
    s.reopen()


def close_with_read_only_index_dir(s: Scene) -> None:
    hs = s.seeded()
    with read_only(s.index_dir()):
        s.facts["close"] = attempt(hs.close)
    s.reopen()


def retain_on_full_disk(s: Scene) -> None:
    hs = s.seeded()
    with full_disk():
        s.facts["retain"] = attempt(lambda: hs.bank("b").retain("Omar fixed the lighthouse lamp on Friday."))
        s.facts["close"] = attempt(hs.close)
    s.reopen()


def retain_with_read_only_index_dir(s: Scene) -> None:
    hs = s.seeded(EAGER)  # every change saves the snapshot: the save fails under the retain
    with read_only(s.index_dir()):
        s.facts["retain"] = attempt(lambda: hs.bank("b").retain("Omar fixed the lighthouse lamp on Friday."))
        s.facts["close"] = attempt(hs.close)
    s.reopen()


def forget_with_read_only_index_dir(s: Scene) -> None:
    hs = s.seeded()
    bank = hs.bank("b")
    [lisbon] = [u.id for u in bank.units() if "Lisbon" in u.text]
    with read_only(s.index_dir()):
        s.facts["forget"] = attempt(lambda: bank.forget(lisbon))
    s.facts["close"] = attempt(hs.close)
    s.reopen()


def new_bank_in_read_only_banks_dir(s: Scene) -> None:
    hs = s.seeded()
    with read_only(s.index_dir().parent):
        s.facts["new_bank"] = attempt(lambda: hs.bank("c").retain("Lena sold her old bike."))
    s.facts["close"] = attempt(hs.close)
    s.reopen()


def open_on_full_disk(s: Scene) -> None:
    with full_disk():
        s.facts["open"] = attempt(s.open)
    s.seeded().close()
    s.reopen()


def open_read_only_directory(s: Scene) -> None:
    s.memdir.mkdir()
    with read_only(s.memdir):
        s.facts["open"] = attempt(s.open)
    s.seeded().close()
    s.reopen()


def open_in_read_only_parent(s: Scene) -> None:
    with read_only(s.memdir.parent):
        s.facts["open"] = attempt(s.open)
    s.seeded().close()
    s.reopen()


def open_existing_read_only(s: Scene) -> None:
    s.seeded().close()
    with read_only(s.memdir):
        s.facts["open"] = attempt(s.open)
    s.reopen()


SCENARIOS: list[Callable[[Scene], None]] = [
    close_on_full_disk, close_with_read_only_index_dir, retain_on_full_disk, retain_with_read_only_index_dir,
    forget_with_read_only_index_dir, new_bank_in_read_only_banks_dir, open_on_full_disk, open_read_only_directory,
    open_in_read_only_parent, open_existing_read_only,
]


def _drop_root(work: Path, embedder: Any) -> None:
    """Root writes through any permission: warm up the lazily loaded parts as root, then become user nobody."""
    with Hindsight(work / "warm", embedder=embedder) as hs:
        hs.bank("w").retain(TEXTS[0])
        hs.bank("w").recall("tide")
    os.chown(work, NOBODY, NOBODY)
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def disk(memdir: str, log_path: Path, round_no: int, seed: int, embedder: Any) -> None:
    """The zygote's "disk" worker: `round_no` picks the scenario from SCENARIOS."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    log = Log(log_path)  # opened before the worker may give up root
    work = Path(tempfile.mkdtemp(prefix="hindsight-disk-"))
    if os.geteuid() == 0 and "read_only" in SCENARIOS[round_no].__name__:
        _drop_root(work, embedder)
    scene = Scene(work, embedder)
    try:
        SCENARIOS[round_no](scene)
    finally:
        log.write({"scenario": SCENARIOS[round_no].__name__, **scene.facts})
        shutil.rmtree(work, ignore_errors=True)
