"""A gate that counts the calls in flight on an object, so that closing it waits for them and refuses new ones."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Concatenate, ParamSpec, Protocol, TypeVar

from hindsight.errors import HindsightError

P = ParamSpec("P")
R = TypeVar("R")


class CallGate:
    """Public calls pass through `call()`; `shut()` refuses new calls with `refuse()` and waits for those in flight.

    A call already in flight on a thread may make nested calls after the shut (it runs to its end), and a thread
    shutting from inside its own call waits only for the other threads' calls."""

    def __init__(self, refuse: Callable[[], HindsightError]) -> None:
        self._refuse = refuse
        self._cond = threading.Condition()
        self._active = 0
        self._open = True
        self._depth = threading.local()

    def inside(self) -> int:
        """How many calls through this gate the current thread is inside."""
        return int(getattr(self._depth, "n", 0))

    @property
    def is_open(self) -> bool:
        return self._open

    @contextmanager
    def call(self) -> Iterator[None]:
        depth = self.inside()
        with self._cond:
            if not self._open and depth == 0:
                raise self._refuse()
            self._active += 1
        self._depth.n = depth + 1
        try:
            yield
        finally:
            self._depth.n = depth
            with self._cond:
                self._active -= 1
                self._cond.notify_all()

    def shut_if_idle(self) -> bool:
        """Refuse new calls from now on if no other thread has a call in flight; says whether it shut."""
        with self._cond:
            if self._active > self.inside():
                return False
            self._open = False
            return True

    def reopen(self) -> None:
        """Let calls through again after `shut_if_idle`."""
        with self._cond:
            self._open = True

    def shut(self) -> None:
        """Refuse new calls from now on, then wait until the calls in flight on other threads have returned."""
        mine = self.inside()
        with self._cond:
            self._open = False
            self._cond.wait_for(lambda: self._active <= mine)


class _Engine(Protocol):
    def call(self) -> AbstractContextManager[None]: ...


class Gated(Protocol):
    """An object whose public calls pass both its engine's gate and its own (a Bank)."""

    @property
    def _services(self) -> _Engine: ...

    @property
    def _gate(self) -> CallGate: ...


G = TypeVar("G", bound=Gated)


def public_call(method: Callable[Concatenate[G, P], R]) -> Callable[Concatenate[G, P], R]:
    """A public call: refused once the engine is closed (StoreClosedError) or the object shut (its gate's error),
    and waited for by the close or shut that comes while it runs."""

    @functools.wraps(method)
    def call(obj: G, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with obj._services.call(), obj._gate.call():
            return method(obj, *args, **kwargs)

    return call
