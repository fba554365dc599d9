"""Background work that hangs off retain (observations, opinion reinforcement) without blocking it."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from hindsight.llm.usage import bank_scope

log = logging.getLogger(__name__)

_WAIT_LOG_SECONDS = 10.0


@dataclass
class RetainEvent:
    """What a retain call changed, handed to every registered hook."""

    bank_id: str
    document_id: str
    unit_ids: list[str]
    entity_ids: list[str]
    removed_unit_ids: list[str] = field(default_factory=list)


RetainHook = Callable[[RetainEvent], None]


class JobQueue:
    """A worker thread that runs hooks for retain events; failures are logged and counted, never lost silently."""

    def __init__(self) -> None:
        self.hooks: list[RetainHook] = []
        self.failures = 0
        self._queue: queue.Queue[RetainEvent | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False

    def add_hook(self, hook: RetainHook) -> None:
        self.hooks.append(hook)

    def submit(self, event: RetainEvent) -> int:
        """Queue an event if any hook wants it; returns the number of pending events. After close() nothing is
        queued (the engine is closing; work retain queued in the store stays there)."""
        if not self.hooks:
            return 0
        with self._lock:
            if self._closed:
                log.debug("retain event for bank %s after close: no hook runs", event.bank_id)
                return 0
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="hindsight-jobs", daemon=True)
                self._thread.start()
        self._queue.put(event)
        return self._queue.unfinished_tasks

    def _run(self) -> None:
        while True:
            event = self._queue.get()
            try:
                if event is None:
                    return
                for hook in list(self.hooks):
                    try:
                        with bank_scope(event.bank_id):  # LLM calls of the hook count for its bank
                            hook(event)
                    except Exception:
                        self.failures += 1
                        log.exception("retain hook %r failed for bank %s", hook, event.bank_id)
            finally:
                self._queue.task_done()

    @property
    def pending(self) -> int:
        return self._queue.unfinished_tasks

    def drain(self) -> None:
        """Block until every queued event has been handled."""
        self._queue.join()

    def close(self) -> None:
        """Run the hooks of every event already queued, then stop the worker. Waits as long as a hook runs: the
        store must not close under it (the engine's own hook returns at once when the engine is closing)."""
        with self._lock:
            self._closed = True
            thread, self._thread = self._thread, None
        if thread is None:
            return
        self._queue.put(None)
        while thread.is_alive():
            thread.join(timeout=_WAIT_LOG_SECONDS)
            if thread.is_alive():
                log.info("close: waiting for a background retain hook to finish")
