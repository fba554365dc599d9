"""Waiting for the work a server answered before doing (`"wait": false`): long polls of GET /v1/operations/{id}."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from pydantic import BaseModel

from hindsight.client.transport import Flow, Request, call, path, typed_error
from hindsight.errors import HindsightError, OperationTimeoutError
from hindsight.server.schemas import MAX_WAIT_S, ErrorInfo, Operation

T = TypeVar("T", bound=BaseModel)


def poll(op_id: str, hold_s: float = 0.0) -> Flow[Operation]:
    """The operation, once it finished or `hold_s` seconds passed (the server holds the request that long)."""
    hold_s = min(max(hold_s, 0.0), MAX_WAIT_S)
    return call(Request("GET", path("operations", op_id), params={"wait": hold_s}, hold_s=hold_s), Operation)


def settle(op: Operation) -> Operation:
    """A finished operation that did not fail; the typed error it failed with, raised, if it did."""
    if op.status == "failed":
        raise typed_error(op.error or ErrorInfo(type="HindsightError", message=f"operation {op.id} failed"))
    return op


def wait_for(op_id: str, timeout: float | None = None, tick_s: float = MAX_WAIT_S,
             between: Callable[[], Flow[None]] | None = None) -> Flow[Operation]:
    """Long-poll until the operation is done (returned) or failed (its error raised); OperationTimeoutError after
    `timeout` seconds (None: no limit). `between` runs after each poll that found it still pending."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        left = tick_s if deadline is None else min(tick_s, deadline - time.monotonic())
        op = yield from poll(op_id, left)
        if op.status != "pending":
            return settle(op)
        if deadline is not None and time.monotonic() >= deadline:
            raise OperationTimeoutError(f"operation {op_id} ({op.kind} in bank {op.bank_id!r}) did not finish in "
                                        f"{timeout:g} s; it goes on on the server")
        if between is not None:
            yield from between()


def result_of(op: Operation, into: type[T]) -> T:
    """The result of a done operation."""
    if isinstance(op.result, into):
        return op.result
    if op.result_dropped:
        raise HindsightError(f"operation {op.id} is done, but a forget in bank {op.bank_id!r} dropped its result "
                             "(it could quote forgotten text)")
    raise HindsightError(f"operation {op.id} is done without a {into.__name__}")
