"""llama.cpp's own messages routed to `logging`, and a model load that leaves the process's standard streams alone.

With `verbose=False`, llama-cpp-python silences a load by pointing file descriptors 1 and 2 (and `sys.stdout`,
`sys.stderr`) at /dev/null for the whole process while it runs: whatever any other thread of the host prints
meanwhile is lost. Here llama.cpp's messages go to the `hindsight.llm.llama_cpp` logger instead, and the load runs
with that redirect turned into a no-op.
"""

from __future__ import annotations

import ctypes
import importlib
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

native_log = logging.getLogger("hindsight.llm.llama_cpp")

# ggml_log_level (ggml.h): 0 none, 1 debug, 2 info, 3 warn, 4 error, 5 the continuation of the previous message.
# Info and warnings are logged one level lower: a normal load logs many info lines and warns about quirks of the
# model file that are not the host's concern, and a host without logging configured must see nothing of it.
_LEVELS = {0: logging.DEBUG, 1: logging.DEBUG, 2: logging.DEBUG, 3: logging.INFO, 4: logging.ERROR}
_CONTINUATION = 5
# The redirect, and the modules whose copy of it a model load enters (backend init, model file).
_REDIRECT = "suppress_stdout_stderr"
_REDIRECTING_MODULES = ("llama", "_internals")


class _Lines:
    """Joins the pieces llama.cpp logs (progress dots, continuations) into whole lines, one record each."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._parts: list[str] = []
        self._level = logging.DEBUG

    def add(self, level: int, text: bytes | None) -> None:
        piece = (text or b"").decode("utf-8", "replace")
        with self._lock:
            if level != _CONTINUATION and not self._parts:
                self._level = _LEVELS.get(level, logging.DEBUG)
            self._parts.append(piece)
            if not piece.endswith("\n"):
                return
            line, level_of_line = "".join(self._parts).rstrip(), self._level
            self._parts.clear()
        if line:
            native_log.log(level_of_line, "%s", line)


_lines = _Lines()
_callback: Any = None  # the ctypes callback must stay referenced as long as llama.cpp may call it
_install_lock = threading.Lock()
_load_lock = threading.Lock()


def _on_log(level: int, text: bytes | None, user_data: ctypes.c_void_p) -> None:
    _lines.add(level, text)


def _route_native_log(llama_cpp: ModuleType) -> None:
    """Send llama.cpp's log to `native_log`. Process-wide, like the printing handler of llama-cpp-python it
    replaces; installed once."""
    global _callback
    with _install_lock:
        if _callback is None:
            _callback = llama_cpp.llama_log_callback(_on_log)
            llama_cpp.llama_log_set(_callback, ctypes.c_void_p(0))


class _LeaveStreams:
    """Stands in for llama-cpp-python's `suppress_stdout_stderr`: the same interface, no redirect."""

    def __init__(self, disable: bool = True) -> None:
        self.disable = disable

    def __enter__(self) -> _LeaveStreams:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


@contextmanager
def quiet_load() -> Iterator[None]:
    """Around `Llama(..., verbose=False)`: llama.cpp logs through `logging`, and the redirect of the standard
    streams that llama-cpp-python would make is a no-op. One load at a time; a load the host starts meanwhile is
    not redirected either, which loses nothing. ImportError without llama-cpp-python."""
    import llama_cpp

    _route_native_log(llama_cpp)
    modules = [importlib.import_module(f"llama_cpp.{name}") for name in _REDIRECTING_MODULES]
    with _load_lock:
        saved = [(m, getattr(m, _REDIRECT)) for m in modules if hasattr(m, _REDIRECT)]
        for module, _ in saved:
            setattr(module, _REDIRECT, _LeaveStreams)
        try:
            yield
        finally:
            for module, original in saved:
                setattr(module, _REDIRECT, original)
