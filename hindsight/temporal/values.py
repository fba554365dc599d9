"""Datetime arguments: a datetime or an ISO string, made timezone-aware in its own offset (naive means the bank's
time zone)."""

from __future__ import annotations

from datetime import datetime, timezone, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from hindsight.errors import InvalidInputError


def known_zone(name: str) -> str:
    """`name` when it is an IANA zone name zoneinfo knows ("UTC", "America/Denver"); else ValueError saying so."""
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:  # OSError: a name no file system path can hold
        raise ValueError(f"unknown time zone {name[:64]!r}: use an IANA name such as 'Europe/Paris' or 'UTC'") from exc
    return name


def time_zone(name: str) -> tzinfo:
    """The zone an IANA name names ("UTC", "America/Los_Angeles"); validation (known_zone) has checked the name."""
    return timezone.utc if name == "UTC" else ZoneInfo(name)


def in_zone(moment: datetime, zone: tzinfo) -> datetime:
    """`moment` (naive: UTC) on `zone`'s clock; as it is at the ends of the calendar, where that would overflow."""
    aware = moment if moment.utcoffset() is not None else moment.replace(tzinfo=timezone.utc)
    try:
        return aware.astimezone(zone)
    except (OverflowError, ValueError):
        return aware


def on_clock(moment: datetime, zone: tzinfo) -> datetime:
    """`moment` (aware) on `zone`'s clock when that clock reads the same at that instant: the same time, with the
    zone's rules for other days, so that a date months away takes its own DST offset. A moment whose offset differs
    keeps its own clock: whoever gave it said which clock they read."""
    local = in_zone(moment, zone)
    return local if local.utcoffset() == moment.utcoffset() else moment


def parse_time(value: Any, what: str, zone: tzinfo = timezone.utc) -> datetime | None:
    """Accept a datetime or an ISO string; anything else is an InvalidInputError. An aware value keeps its offset
    (its calendar day is the one its speaker lived); a naive one is a clock time in `zone`. A clock time that a DST
    change skips or repeats reads with the offset in force before the change."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip())
        except ValueError as exc:
            raise InvalidInputError(f"{what} is not an ISO date: {value[:64]!r}") from exc
    if not isinstance(value, datetime):
        raise InvalidInputError(f"{what} must be a datetime or ISO string, got {type(value).__name__}")
    aware = value if value.tzinfo is not None and value.utcoffset() is not None else value.replace(tzinfo=zone)
    try:
        aware.astimezone(timezone.utc)  # stored as an instant: it must have one
    except (OverflowError, ValueError) as exc:
        raise InvalidInputError(f"{what} is out of range: {value!r}") from exc
    return aware
