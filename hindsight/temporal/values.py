"""Datetime arguments: a datetime or an ISO string, made timezone-aware (naive means UTC)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from hindsight.errors import InvalidInputError
from hindsight.models import as_utc


def parse_time(value: Any, what: str) -> datetime | None:
    """Accept a datetime or an ISO string (naive = UTC); anything else is an InvalidInputError."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip())
        except ValueError as exc:
            raise InvalidInputError(f"{what} is not an ISO date: {value[:64]!r}") from exc
    if not isinstance(value, datetime):
        raise InvalidInputError(f"{what} must be a datetime or ISO string, got {type(value).__name__}")
    try:
        return as_utc(value)
    except (OverflowError, ValueError) as exc:
        raise InvalidInputError(f"{what} is out of range: {value!r}") from exc
