"""The test side of the kill -9 zygote (tests/crash_zygote.py): start it, fork a worker per round, kill it."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

ROOT = Path(__file__).resolve().parent.parent


def wait_until(done: Callable[[], bool], what: str, timeout: float = 120.0) -> None:
    """Poll `done` until it holds; fail naming `what` did not happen within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if done():
            return
        time.sleep(0.05)
    raise AssertionError(f"{what} within {timeout} s")


def wait_for_first_line(path: Path, timeout: float = 120.0) -> None:
    wait_until(lambda: path.exists() and path.stat().st_size > 0, "the worker logged nothing", timeout)


class Zygote:
    """The zygote process, started once per test session (fixture `zygote`); each round forks one worker."""

    def __init__(self) -> None:
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
            "TOKENIZERS_PARALLELISM": "false",
            "HF_HUB_OFFLINE": "1",
        }
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("crash_zygote.py"))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )

    def __enter__(self) -> Zygote:
        assert self._line().strip() == "ready"
        return self

    def _line(self) -> str:
        assert self.proc.stdout is not None
        return self.proc.stdout.readline()

    def _send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def start_round(self, worker: str, memdir: Path, log: Path, n: int, seed: int) -> int:
        """Fork `worker` for round `n`, logging to `log`; returns its pid."""
        self._send(f"round {worker} {memdir} {log} {n} {seed}")
        return int(self._line().split()[1])

    def wait(self, pid: int, timeout: float = 120.0) -> int:
        """Wait for the worker to end by itself; returns its wait status (os.WIFSIGNALED tells a crash). A worker
        still running after `timeout` seconds is hung: it is killed, and the test fails."""
        assert self.proc.stdout is not None
        if not select.select([self.proc.stdout], [], [], timeout)[0]:
            self.kill(pid)
            raise AssertionError(f"the worker hung for {timeout} s and was killed")
        _, dead, status = self._line().split()
        assert int(dead) == pid
        return int(status)

    def kill(self, pid: int) -> bool:
        """SIGKILL the worker and wait for it; True when the kill (not the worker itself) ended it."""
        os.kill(pid, signal.SIGKILL)
        return os.WIFSIGNALED(self.wait(pid))

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        assert self.proc.stdin is not None
        self._send("quit")
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
