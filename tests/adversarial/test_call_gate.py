"""The gate every public call passes through (hindsight/lifecycle.py): shutting it refuses new calls with the typed
error, waits for the calls in flight on other threads, and never deadlocks a thread that shuts from inside a call."""

from __future__ import annotations

import threading
import time

import pytest

from hindsight.errors import StoreClosedError
from hindsight.lifecycle import CallGate


def gate() -> CallGate:
    return CallGate(lambda: StoreClosedError("closed"))


def test_shut_waits_for_a_call_in_flight_on_another_thread_then_refuses_new_ones() -> None:
    g, entered, finished = gate(), threading.Event(), []

    def slow_call() -> None:
        with g.call():
            entered.set()
            time.sleep(0.3)
            finished.append(time.monotonic())

    worker = threading.Thread(target=slow_call)
    worker.start()
    entered.wait()
    g.shut()
    shut_at = time.monotonic()
    worker.join()
    assert finished and finished[0] <= shut_at
    with pytest.raises(StoreClosedError), g.call():
        pass


def test_a_call_in_flight_may_finish_its_nested_calls_after_the_shut() -> None:
    g, inside, release, nested = gate(), threading.Event(), threading.Event(), []

    def call() -> None:
        with g.call():
            inside.set()
            release.wait()
            with g.call():  # e.g. reflect reading the profile: part of the call already in flight
                nested.append(True)

    worker = threading.Thread(target=call)
    worker.start()
    inside.wait()
    shutter = threading.Thread(target=g.shut)
    shutter.start()
    time.sleep(0.05)
    assert shutter.is_alive()  # waiting for the call
    release.set()
    worker.join()
    shutter.join(timeout=5)
    assert nested == [True] and not shutter.is_alive()


def test_shutting_from_inside_a_call_waits_only_for_other_threads() -> None:
    g = gate()
    done = threading.Event()

    def call_then_shut() -> None:
        with g.call():
            g.shut()
            done.set()

    worker = threading.Thread(target=call_then_shut)
    worker.start()
    worker.join(timeout=5)
    assert done.is_set()
    assert not g.is_open
