"""Turns an OSError from writing a file of the memory directory into a typed error that says what to do."""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

from hindsight.errors import DirectoryNotWritableError, DiskFullError, StoreError

_FULL = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT}
_DENIED = {errno.EACCES, errno.EPERM, errno.EROFS}


def disk_error(exc: OSError, what: str) -> StoreError:
    """The typed error for `exc`, raised while doing `what` (e.g. "saving the vector index of bank x")."""
    if exc.errno in _FULL:
        return DiskFullError(f"{what} failed: {exc}. The disk is full, or a file size or quota limit was reached: "
                             "free space, then retry")
    if exc.errno in _DENIED:
        return DirectoryNotWritableError(f"{what} failed: {exc}. The directory is read-only or this user may not "
                                         "write to it: make it writable, or open a copy in a writable place")
    return StoreError(f"{what} failed: {exc}")


def sqlite_disk_error(exc: sqlite3.Error, what: str, path: Path) -> StoreError | None:
    """The typed error for an SQLite failure on the database at `path` that a full disk, or a directory SQLite may
    not write its journal into, caused; None for any other failure."""
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
    if code == sqlite3.SQLITE_FULL:
        return disk_error(OSError(errno.ENOSPC, str(exc)), what)
    if code == sqlite3.SQLITE_READONLY or (code == sqlite3.SQLITE_CANTOPEN and not os.access(path.parent, os.W_OK)):
        return disk_error(OSError(errno.EACCES, str(exc)), what)
    return None
