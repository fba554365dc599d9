"""Validation of recall arguments into a RecallRequest; bad arguments raise InvalidInputError."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone, tzinfo
from typing import Any

from hindsight.errors import ContentTooLargeError, InvalidInputError
from hindsight.models import Network
from hindsight.store.base import UnitFilter
from hindsight.temporal.values import on_clock, parse_time
from hindsight.text import clean_text, strip_private
from hindsight.validate import count

# The token budget of a recall when the caller gives none.
DEFAULT_BUDGET = 4096


@dataclass(frozen=True)
class RecallRequest:
    """Validated recall arguments. `text` is the query made safe (no control characters, lone surrogates or private
    spans: those are neither searched for nor logged)."""

    query: str
    text: str
    budget: int
    top_k: int | None
    query_time: datetime
    as_of: datetime | None
    unit_filter: UnitFilter


def _networks(value: Any) -> frozenset[Network] | None:
    if value is None:
        return None
    items: Iterable[Any] = [value] if isinstance(value, (str, Network)) else value
    try:
        items = list(items)
    except TypeError as exc:
        raise InvalidInputError(f"networks must be a list of network names, got {type(value).__name__}") from exc
    out = set()
    for item in items:
        try:
            out.add(Network(item))
        except ValueError as exc:
            raise InvalidInputError(
                f"unknown network {str(item)[:64]!r}; expected one of {[n.value for n in Network]}"
            ) from exc
    return frozenset(out)


def make_request(
    query: Any, budget: Any, networks: Any, query_time: Any, as_of: Any, top_k: Any, max_query_chars: int,
    zone: tzinfo = timezone.utc,
) -> RecallRequest:
    """Check and normalize recall arguments. Naive times are clock times in `zone` (the bank's time zone); query_time
    defaults to as_of when given, else to now there, and is on `zone`'s clock when it reads the same there
    (temporal.values.on_clock)."""
    if not isinstance(query, str):
        raise InvalidInputError(f"query must be a string, got {type(query).__name__}")
    if not query.strip():
        raise InvalidInputError("query is empty")
    if len(query) > max_query_chars:
        raise ContentTooLargeError(f"a query of {len(query):,} characters exceeds the limit of {max_query_chars:,}")
    budget = count(budget, "budget")
    top_k = None if top_k is None else count(top_k, "top_k")
    as_of_t = parse_time(as_of, "as_of", zone)
    when = on_clock(parse_time(query_time, "query_time", zone) or as_of_t or datetime.now(zone), zone)
    return RecallRequest(
        query=query, text=clean_text(strip_private(query)), budget=budget, top_k=top_k, query_time=when, as_of=as_of_t,
        unit_filter=UnitFilter(networks=_networks(networks), as_of=as_of_t),
    )
