"""The server's work placement (server/operations.py), on a real SQLite store."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from pathlib import Path

import pytest

from hindsight.server.operations import _WRITE_NICE, Runner
from hindsight.store.sqlite import SQLiteStore


def _nice() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


@pytest.mark.skipif(sys.platform != "linux", reason="Linux sets CPU priority per thread")
def test_writes_run_below_the_priority_of_reads(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "hindsight.db")
    runner = Runner(store, threads=2, llm_threads=1, keep_s=60)
    try:
        base = _nice()

        async def placed() -> tuple[int, int, int, int]:
            return (await runner.run(_nice), await runner.in_lane("b", _nice), await runner.run(_nice, llm=True),
                    await runner.dispatch("b", "write", _nice))

        read, write, llm, mcp_write = asyncio.run(placed())
        assert read == llm == base
        assert write == mcp_write == min(base + _WRITE_NICE, 19)
    finally:
        runner.close()
        store.close()
