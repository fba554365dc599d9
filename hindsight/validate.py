"""Checks of the public API's arguments: ids, counts and bounded text. Every method that takes one of these goes
through here, so a rule (no control characters, valid UTF-8, SQLite's integer range) holds everywhere at once."""

from __future__ import annotations

import numbers
import re
from typing import Any

from hindsight.errors import ContentTooLargeError, InvalidBankIdError, InvalidInputError, InvalidUnitIdError
from hindsight.models import BANK_SCOPE

# fullmatch, never `$`: `$` also matches before a final newline, and "alice\n" would pass.
_BANK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
_ID = re.compile(r"[^\x00-\x1f\x7f]{1,256}")
# SQLite stores integers as signed 64-bit; a larger limit or offset overflows when it is bound.
MAX_INT = 2**63 - 1


def _show(value: Any) -> str:
    return repr(value if not isinstance(value, str) else value[:64])


def _utf8(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates
        return False
    return True


def is_id(value: Any) -> bool:
    """1-256 characters, no control characters, not all blank, valid UTF-8 (no lone surrogates)."""
    return isinstance(value, str) and bool(_ID.fullmatch(value)) and bool(value.strip()) and _utf8(value)


def identifier(value: Any, what: str) -> str:
    """A document, message or entity id (or an entity name), or InvalidInputError."""
    if not is_id(value):
        raise InvalidInputError(f"{what} must be 1-256 printable characters, got {_show(value)}")
    return str(value)


def unit_id(value: Any) -> str:
    """A unit id, or InvalidUnitIdError (also a UnitNotFoundError: no unit has such an id)."""
    if not is_id(value):
        raise InvalidUnitIdError(f"no unit can have the id {_show(value)}: unit ids are 1-256 printable characters")
    return str(value)


def bank_id(value: Any) -> str:
    """Bank ids become directory names: letters, digits, '_', '-', '.'; no '..'; 1-128 characters."""
    if not isinstance(value, str) or not _BANK_ID.fullmatch(value) or ".." in value:
        raise InvalidBankIdError(
            f"invalid bank id {_show(value)}: use 1-128 letters, digits, '_', '-' or '.', starting with a letter or "
            "digit"
        )
    return value


def count(value: Any, what: str) -> int:
    """`value` as an int in 0..2**63-1 (bools and floats are not ints here), or InvalidInputError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidInputError(f"{what} must be an integer, got {type(value).__name__}")
    number = int(value)
    if not 0 <= number <= MAX_INT:
        raise InvalidInputError(f"{what} must be between 0 and {MAX_INT}, got {number}")
    return number


def bounded_text(value: Any, what: str, max_chars: int) -> str | None:
    """An optional string of at most `max_chars` characters: None, the string, or a typed error."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be a string, got {type(value).__name__}")
    if len(value) > max_chars:
        raise ContentTooLargeError(f"a {what} of {len(value):,} characters exceeds the limit of {max_chars:,}")
    return value


def text(value: Any, what: str, max_chars: int) -> str:
    """A string of at most `max_chars` characters and of valid UTF-8 (no lone surrogates), or a typed error."""
    out = bounded_text(value, what, max_chars)
    if out is None or not _utf8(out):
        raise InvalidInputError(f"{what} must be a string of valid UTF-8, got {_show(value)}")
    return out


def scope(value: Any) -> str:
    """A working memory's scope: "bank", or a thread id (1-256 printable characters)."""
    return identifier(value, 'scope ("bank" or a thread id)')


def thread_id(value: Any) -> str:
    """A thread id: 1-256 printable characters, and not "bank", the scope of what every thread shares."""
    if value == BANK_SCOPE:
        raise InvalidInputError(f"a thread cannot be named {BANK_SCOPE!r}: that is the scope of the whole bank")
    return identifier(value, "thread id")
