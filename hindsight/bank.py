"""A memory bank: the public API for retaining into and inspecting one bank."""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Awaitable, Callable, Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

import networkx as nx

from hindsight.errors import InvalidBankIdError, InvalidInputError, UnitNotFoundError
from hindsight.graph_view import bank_graph
from hindsight.index.manager import BankIndexes
from hindsight.models import BankProfile, BankStats, Entity, Link, LinkType, MemoryUnit, Network, RetainResult
from hindsight.retain.pipeline import BankHandle
from hindsight.store.base import WriteBatch

if TYPE_CHECKING:
    from hindsight.engine import Hindsight

P = ParamSpec("P")
R = TypeVar("R")

_BANK_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


def validate_bank_id(bank_id: Any) -> str:
    """Bank ids become directory names: letters, digits, '_', '-', '.'; no '..'; 1-128 characters."""
    if not isinstance(bank_id, str) or not _BANK_ID.match(bank_id) or ".." in bank_id:
        raise InvalidBankIdError(
            f"invalid bank id {str(bank_id)[:64]!r}: use 1-128 letters, digits, '_', '-' or '.', starting with a "
            "letter or digit"
        )
    return bank_id


def _async_twin(fn: Callable[Concatenate[Bank, P], R]) -> Callable[Concatenate[Bank, P], Awaitable[R]]:
    async def twin(bank: Bank, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return await asyncio.to_thread(fn, bank, *args, **kwargs)

    twin.__name__ = f"a{fn.__name__}"
    twin.__qualname__ = f"Bank.a{fn.__name__}"
    twin.__doc__ = f"Async twin of `{fn.__name__}`, run in a worker thread."
    return twin


def _network(value: Network | str | None) -> Network | None:
    if value is None:
        return None
    try:
        return Network(value)
    except ValueError as exc:
        raise InvalidInputError(f"unknown network {value!r}; expected one of {[n.value for n in Network]}") from exc


class Bank:
    """One memory bank. Get it from `Hindsight.bank(bank_id)`."""

    def __init__(self, engine: Hindsight, bank_id: str) -> None:
        self._engine = engine
        self.id = bank_id
        self._lock = threading.RLock()
        self._indexes: BankIndexes | None = None

    def __repr__(self) -> str:
        return f"Bank({self.id!r})"

    @property
    def indexes(self) -> BankIndexes:
        """The bank's derived indexes, opened (and healed) on first use."""
        with self._lock:
            if self._indexes is None:
                self._indexes = self._engine._open_indexes(self.id)
            return self._indexes

    def _handle(self) -> BankHandle:
        return BankHandle(self.id, self.indexes, self._lock)

    # -- profile -----------------------------------------------------------------------------
    def profile(self) -> BankProfile:
        return self._engine.store.get_profile(self.id) or BankProfile()

    def set_profile(self, profile: BankProfile) -> None:
        if not isinstance(profile, BankProfile):
            raise InvalidInputError(f"profile must be a BankProfile, got {type(profile).__name__}")
        self._engine.store.set_profile(self.id, profile)

    # -- retain and forget -------------------------------------------------------------------
    def retain(
        self, content: Any, timestamp: Any = None, context: Any = None, document_id: Any = None
    ) -> RetainResult:
        """Store a conversation (list of Message) or text; re-retaining a document id updates it in place."""
        return self._engine.pipeline.retain(
            self._handle(), content, timestamp=timestamp, context=context, document_id=document_id
        )

    def forget(self, unit_id: str) -> None:
        """Remove a unit from the store, both indexes and the graph; orphaned entities go too."""
        with self._lock:
            if not self._engine.store.get_units(self.id, [unit_id]):
                raise UnitNotFoundError(f"no unit {unit_id!r} in bank {self.id!r}")
            self._engine.store.apply(self.id, WriteBatch(delete_unit_ids=[unit_id]))
            self.indexes.sync()

    # -- inspection --------------------------------------------------------------------------
    def units(
        self, network: Network | str | None = None, limit: int | None = None, offset: int = 0
    ) -> list[MemoryUnit]:
        return self._engine.store.list_units(self.id, _network(network), limit, offset)

    def get_unit(self, unit_id: str) -> MemoryUnit:
        found = self._engine.store.get_units(self.id, [unit_id])
        if not found:
            raise UnitNotFoundError(f"no unit {unit_id!r} in bank {self.id!r}")
        return found[0]

    def entities(self) -> list[Entity]:
        return self._engine.store.list_entities(self.id)

    def links(self, unit_id: str) -> list[Link]:
        return self._engine.store.links_of(self.id, unit_id)

    def stats(self) -> BankStats:
        return self._engine.store.stats(self.id)

    def to_networkx(
        self,
        networks: Iterable[Network | str] | None = None,
        link_types: Iterable[LinkType | str] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> nx.MultiDiGraph:
        return bank_graph(self._engine.store, self.id, networks, link_types, since, until)

    def close(self) -> None:
        with self._lock:
            if self._indexes is not None:
                self._indexes.close()
                self._indexes = None

    aretain = _async_twin(retain)
    aforget = _async_twin(forget)
    aunits = _async_twin(units)
    aget_unit = _async_twin(get_unit)
    aentities = _async_twin(entities)
    alinks = _async_twin(links)
    astats = _async_twin(stats)
    aprofile = _async_twin(profile)
    aset_profile = _async_twin(set_profile)
