"""A real `hindsight serve` for tests: a subprocess on a free loopback port, stopped at the end."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import yaml

HINDSIGHT = str(Path(sys.executable).with_name("hindsight"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def served(directory: Path, config: dict[str, Any] | None = None, args: Sequence[str] = (),
           env: dict[str, str] | None = None, ready_s: float = 120) -> Iterator[str]:
    """Run `hindsight serve` on `directory` with `config` (YAML sections); yields its base URL once /v1/health
    answers. The server's output goes to `directory`/../serve-<port>.log, which a failure quotes."""
    directory.mkdir(parents=True, exist_ok=True)
    port = free_port()
    cmd = [HINDSIGHT, "--dir", str(directory)]
    if config is not None:
        path = directory.parent / f"serve-{port}.yaml"
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        cmd += ["--config", str(path)]
    cmd += ["serve", "--port", str(port), *args]
    log = directory.parent / f"serve-{port}.log"
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})})
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + ready_s
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"hindsight serve exited with {proc.returncode}: {log.read_text()[-3000:]}")
                try:
                    if httpx.get(f"{url}/v1/health", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"hindsight serve was not ready in {ready_s} s: {log.read_text()[-3000:]}")
                time.sleep(0.3)
            yield url
        finally:
            stop(proc)


def stop(proc: subprocess.Popen[Any], timeout_s: float = 60) -> int:
    """SIGINT, as Ctrl-C would: uvicorn finishes the requests in flight and the engine closes; then kill."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            return proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
    return proc.wait()
