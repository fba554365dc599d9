"""A gate that counts the calls in flight on an object, so that closing it waits for them and refuses new ones."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from hindsight.errors import HindsightError


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

    def shut(self) -> None:
        """Refuse new calls from now on, then wait until the calls in flight on other threads have returned."""
        mine = self.inside()
        with self._cond:
            self._open = False
            self._cond.wait_for(lambda: self._active <= mine)
