"""Greedy packing of ranked hits into a token budget."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, TypeVar


class _Sized(Protocol):
    @property
    def tokens(self) -> int: ...


H = TypeVar("H", bound=_Sized)


def pack(
    ranked: Iterable[H], budget: int, top_k: int | None = None, patience: int | None = None
) -> tuple[list[H], int]:
    """Take hits in rank order while they fit; one that does not fit is skipped and smaller later ones may still
    be taken, until `patience` hits in a row have not fit (None: to the end). Returns the packed hits and their
    token total, which never exceeds `budget`."""
    packed: list[H] = []
    used = misses = 0
    if budget <= 0 or top_k == 0:
        return packed, used
    for hit in ranked:
        if used + hit.tokens <= budget:
            packed.append(hit)
            used += hit.tokens
            misses = 0
            if len(packed) == top_k or used == budget:
                break
        else:
            misses += 1
            if misses == patience:
                break  # the budget is all but full; the rest need not be loaded
    return packed, used
