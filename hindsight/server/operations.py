"""Where a request's work runs: thread pools, one ordered lane per bank for writes, and background operations.

- Recalls and inspection run on `threads` workers at once.
- Work that waits on the LLM (reflect, reasoning) runs on `llm_threads` workers of its own, so a slow model never
  takes the threads recall needs.
- Retains of one bank run one at a time, in the order they arrived, on the same workers; banks run side by side.
- `"wait": false` work becomes an operation in the store, which any server process sharing it can read back.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime, timezone
from typing import Literal, TypeVar

from pydantic import BaseModel

from hindsight.errors import HindsightError
from hindsight.reflect.types import PendingReport
from hindsight.server.errors import error_info
from hindsight.server.schemas import ErrorInfo, Operation, RetainResponse
from hindsight.store.base import MemoryStore, OperationRecord

log = logging.getLogger(__name__)

T = TypeVar("T")
Kind = Literal["retain", "reason"]
# Where a request's work runs: the request pool, the bank's lane, or the LLM pool.
WorkKind = Literal["read", "write", "llm"]
# How often a wait polls the store for an operation another process runs.
_POLL_S = 0.2
# How often, at most, finished operations past `keep_s` are deleted (one DELETE, not one per request).
_EXPIRE_EVERY_S = 60.0


class Lanes:
    """One FIFO lane per key on a shared pool: a lane's jobs run one at a time, in submission order."""

    def __init__(self, pool: ThreadPoolExecutor) -> None:
        self._pool = pool
        self._lock = threading.Lock()
        self._queues: dict[str, deque[Callable[[], None]]] = {}

    def submit(self, key: str, fn: Callable[[], T]) -> Future[T]:
        future: Future[T] = Future()

        def job() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(fn())
            except BaseException as exc:  # handed to whoever waits on the future
                future.set_exception(exc)

        with self._lock:
            queue = self._queues.get(key)
            if queue is not None:
                queue.append(job)  # the lane's runner will get to it
                return future
            self._queues[key] = deque([job])
        self._pool.submit(self._drain, key)
        return future

    def _drain(self, key: str) -> None:
        while True:
            with self._lock:
                queue = self._queues[key]
                if not queue:
                    del self._queues[key]
                    return
                job = queue.popleft()
            job()


class Runner:
    """The pools of one server process and its operation log."""

    def __init__(self, store: MemoryStore, threads: int, llm_threads: int, keep_s: float) -> None:
        self.store = store
        self.keep_s = keep_s
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="hindsight-request")
        self._llm_pool = ThreadPoolExecutor(llm_threads, thread_name_prefix="hindsight-llm")
        self._lanes = Lanes(self._pool)
        self._running: dict[str, Future[BaseModel]] = {}
        self._expired_at = float("-inf")
        if interrupted := store.interrupt_operations():
            log.warning("%d operations of a server that stopped were marked failed", interrupted)

    async def run(self, fn: Callable[[], T], llm: bool = False) -> T:
        """Run blocking work on the request pool (or the LLM pool) and await it."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._llm_pool if llm else self._pool, fn)

    async def in_lane(self, bank_id: str, fn: Callable[[], T]) -> T:
        """Run a write in the bank's lane, after the writes submitted before it."""
        return await asyncio.wrap_future(self._lanes.submit(bank_id, fn))

    async def dispatch(self, bank_id: str | None, kind: WorkKind, work: Callable[[], T]) -> T:
        """Run an MCP tool's work where the same HTTP route's would run."""
        if kind == "write" and bank_id is not None:
            return await self.in_lane(bank_id, work)
        return await self.run(work, llm=kind == "llm")

    def start(self, bank_id: str, kind: Kind, fn: Callable[[], BaseModel]) -> Operation:
        """Record an operation and start it: retains in the bank's lane, reasoning on the LLM pool."""
        now = time.time()
        if time.monotonic() - self._expired_at >= _EXPIRE_EVERY_S:
            self._expired_at = time.monotonic()
            self.store.expire_operations(now - self.keep_s)
        record = OperationRecord(id=uuid.uuid4().hex, bank_id=bank_id, kind=kind, status="pending", created_at=now)
        self.store.add_operation(record)
        future = self._lanes.submit(bank_id, fn) if kind == "retain" else self._llm_pool.submit(fn)
        self._running[record.id] = future
        future.add_done_callback(lambda f: self._finish(record, f))
        return operation(record)

    def _finish(self, record: OperationRecord, future: Future[BaseModel]) -> None:
        exc = future.exception()
        record.finished_at = time.time()
        if exc is None:
            record.status, record.result = "done", future.result().model_dump_json()
        else:
            record.status, record.error = "failed", error_info(exc).model_dump_json()
            if not isinstance(exc, HindsightError):
                log.error("operation %s failed", record.id, exc_info=exc)
        try:
            self.store.finish_operation(record)
        except HindsightError as store_exc:  # the store is closing or failing: the log says what became of it
            log.error("operation %s finished (%s) but could not be recorded: %s", record.id, record.status, store_exc)
        finally:
            self._running.pop(record.id, None)

    async def wait(self, op_id: str, timeout_s: float) -> Operation | None:
        """The operation once it finished or the timeout passed; None when no process knows it."""
        future = self._running.get(op_id)
        if future is not None:
            waited = asyncio.wrap_future(future)
            # A failure is the operation's record, read below: retrieved here, asyncio does not log it as lost.
            waited.add_done_callback(lambda f: f.cancelled() or f.exception())
            done, _ = await asyncio.wait([waited], timeout=timeout_s)
            if done:
                await asyncio.sleep(0)  # let the done callback record it
        deadline = time.monotonic() + timeout_s
        while True:
            record = await self.run(lambda: self.store.get_operation(op_id))
            if record is None or record.status != "pending" or time.monotonic() >= deadline:
                return None if record is None else operation(record)
            await asyncio.sleep(min(_POLL_S, max(0.0, deadline - time.monotonic())))

    def close(self) -> None:
        """Finish the work in flight (every acknowledged retain commits), then stop the pools."""
        self._pool.shutdown(wait=True)
        self._llm_pool.shutdown(wait=True)


def _when(seconds: float | None) -> datetime | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, timezone.utc)


def operation(record: OperationRecord) -> Operation:
    """The API's view of a stored operation."""
    result: BaseModel | None = None
    if record.result is not None:
        model = RetainResponse if record.kind == "retain" else PendingReport
        result = model.model_validate_json(record.result)
    return Operation.model_validate({
        "id": record.id, "bank_id": record.bank_id, "kind": record.kind, "status": record.status,
        "created_at": _when(record.created_at), "finished_at": _when(record.finished_at), "result": result,
        "error": None if record.error is None else ErrorInfo.model_validate_json(record.error),
        "result_dropped": record.result_dropped,
    })
