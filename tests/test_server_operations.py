"""The server's work placement (server/operations.py), on a real SQLite store."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

from hindsight.server.operations import Runner
from hindsight.store.sqlite import SQLiteStore


def test_dispatch_puts_a_tools_writes_in_the_banks_lane_and_its_llm_work_on_the_llm_pool(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "hindsight.db")
    runner = Runner(store, threads=4, llm_threads=1, keep_s=60)
    order: list[str] = []

    def write(name: str, pause: float) -> str:
        time.sleep(pause)  # the first write is slower: a lane still finishes it first
        order.append(name)
        return threading.current_thread().name

    async def placed() -> list[str]:
        return list(await asyncio.gather(
            runner.dispatch("b", "write", lambda: write("first", 0.2)),
            runner.dispatch("b", "write", lambda: write("second", 0.0)),
            runner.dispatch("b", "read", lambda: threading.current_thread().name),
            runner.dispatch("b", "llm", lambda: threading.current_thread().name),
        ))

    try:
        first, second, read, llm = asyncio.run(placed())
        assert order == ["first", "second"]
        assert all(name.startswith("hindsight-request") for name in (first, second, read))
        assert llm.startswith("hindsight-llm")
    finally:
        runner.close()
        store.close()
