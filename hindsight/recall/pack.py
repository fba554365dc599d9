"""Greedy packing of ranked hits into a token budget."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, TypeVar


class _Sized(Protocol):
    @property
    def tokens(self) -> int: ...


H = TypeVar("H", bound=_Sized)


class Forms(Protocol[H]):
    """The forms a hit may be packed in, best first (none: leave it out), told of each hit packed."""

    def options(self, hit: H) -> list[H]: ...
    def packed(self, hit: H) -> None: ...


def pack(
    ranked: Iterable[H], budget: int, top_k: int | None = None, patience: int | None = None,
    forms: Forms[H] | None = None,
) -> tuple[list[H], int]:
    """Take hits in rank order while they fit, each in the first of its `forms` that fits (by default, as it is);
    one that does not fit is skipped and smaller later ones may still be taken, until `patience` hits in a row have
    not fit (None: to the end). Returns the packed hits and their token total, which never exceeds `budget`."""
    packed: list[H] = []
    used = misses = 0
    if budget <= 0 or top_k == 0:
        return packed, used
    for hit in ranked:
        options = [hit] if forms is None else forms.options(hit)
        if not options:
            continue
        chosen = next((o for o in options if used + o.tokens <= budget), None)
        if chosen is not None:
            packed.append(chosen)
            used += chosen.tokens
            misses = 0
            if forms is not None:
                forms.packed(chosen)
            if len(packed) == top_k or used == budget:
                break
        else:
            misses += 1
            if misses == patience:
                break  # the budget is all but full; the rest need not be loaded
    return packed, used
