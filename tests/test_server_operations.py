"""The server's work placement (server/operations.py), on a real SQLite store."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from hindsight.errors import InvalidInputError
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


def test_a_failed_operation_a_request_waited_on_is_its_typed_error_and_no_exception_left_unretrieved(
        tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "hindsight.db")
    runner = Runner(store, threads=2, llm_threads=1, keep_s=60)
    unretrieved: list[dict[str, Any]] = []

    def failing() -> BaseModel:
        time.sleep(0.3)  # still running when the wait starts
        raise InvalidInputError("timestamp is not an ISO date: 'larry'")

    async def waited() -> Any:
        asyncio.get_running_loop().set_exception_handler(lambda _, context: unretrieved.append(context))
        started = runner.start("b", "retain", failing)
        op = await runner.wait(started.id, 30)
        gc.collect()  # the wait's future sits in a reference cycle with the exception: collected only here
        return op

    try:
        op = asyncio.run(waited())
        assert op.status == "failed" and op.error.type == "InvalidInputError"
        assert unretrieved == []
    finally:
        runner.close()
        store.close()
