"""Async twins of blocking methods: the work runs in a worker thread, so the event loop stays free."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Concatenate, ParamSpec, TypeVar

S = TypeVar("S")
P = ParamSpec("P")
R = TypeVar("R")


def async_twin(fn: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], Awaitable[R]]:
    """`atwin = async_twin(method)` in a class body gives `await obj.atwin(...)`."""

    async def twin(obj: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return await asyncio.to_thread(fn, obj, *args, **kwargs)

    twin.__name__ = f"a{fn.__name__}"
    twin.__qualname__ = f"{fn.__qualname__.rsplit('.', 1)[0]}.a{fn.__name__}"
    twin.__doc__ = f"Async twin of `{fn.__name__}`, run in a worker thread."
    return twin
