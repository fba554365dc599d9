"""The MemoryStore interface: the single source of truth for banks, units, entities and links."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from hindsight.models import BankProfile, BankStats, Entity, EntityAlias, Link, MemoryUnit, Network
from hindsight.retain.entities import EntityCandidate


@dataclass
class DocumentRecord:
    """A retained document: its id, the hash of its (private-stripped) content and context."""

    document_id: str
    content_hash: str
    context: str | None
    updated_at: datetime


@dataclass
class NewUnit:
    """A unit to insert, with its embedding and resolved entity ids."""

    unit: MemoryUnit
    embed_text: str
    embed_hash: str
    embedding: np.ndarray
    entity_ids: list[str]


@dataclass
class EntityWrite:
    """A new entity, or new aliases and a new last-seen time for an existing one."""

    entity: Entity
    is_new: bool
    new_aliases: list[EntityAlias] = field(default_factory=list)
    keys: set[str] = field(default_factory=set)


@dataclass
class WriteBatch:
    """Everything one retain changes; applied in one transaction."""

    document: DocumentRecord | None = None
    add_units: list[NewUnit] = field(default_factory=list)
    delete_unit_ids: list[str] = field(default_factory=list)
    entities: list[EntityWrite] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)


@dataclass
class Change:
    """One entry of a bank's change log, which derived indexes replay."""

    seq: int
    op: str  # "add" or "del"
    label: int


@dataclass
class IndexedUnit:
    """What a derived index needs of a unit: its label, embedding and indexed text."""

    label: int
    unit_id: str
    embedding: np.ndarray
    text: str


@dataclass
class UnitEntity:
    unit_id: str
    entity_id: str


@dataclass
class TimeNeighbour:
    unit_id: str
    t_mid: float


class MemoryStore(ABC):
    """Persistent storage of all banks. Implementations must apply a WriteBatch atomically."""

    # banks
    @abstractmethod
    def create_bank(self, bank_id: str, profile: BankProfile) -> None: ...
    @abstractmethod
    def get_profile(self, bank_id: str) -> BankProfile | None: ...
    @abstractmethod
    def set_profile(self, bank_id: str, profile: BankProfile) -> None: ...
    @abstractmethod
    def list_banks(self) -> list[str]: ...
    @abstractmethod
    def delete_bank(self, bank_id: str) -> None: ...

    # writes
    @abstractmethod
    def apply(self, bank_id: str, batch: WriteBatch) -> int:
        """Apply a batch atomically; returns the bank's change-log sequence after it."""

    # documents and units
    @abstractmethod
    def get_document(self, bank_id: str, document_id: str) -> DocumentRecord | None: ...
    @abstractmethod
    def document_units(self, bank_id: str, document_id: str) -> list[MemoryUnit]: ...
    @abstractmethod
    def get_units(self, bank_id: str, unit_ids: list[str]) -> list[MemoryUnit]: ...
    @abstractmethod
    def list_units(
        self, bank_id: str, network: Network | None = None, limit: int | None = None, offset: int = 0
    ) -> list[MemoryUnit]: ...
    @abstractmethod
    def lookup_embeddings(self, hashes: list[str]) -> dict[str, np.ndarray]:
        """Stored embeddings by content hash, across banks (the persistent embedding cache)."""

    # graph
    @abstractmethod
    def entity_candidates(self, bank_id: str, keys: set[str], cooccurrence_units: int) -> list[EntityCandidate]: ...
    @abstractmethod
    def list_entities(self, bank_id: str) -> list[Entity]: ...
    @abstractmethod
    def entity_recent_units(self, bank_id: str, entity_id: str, limit: int) -> list[str]: ...
    @abstractmethod
    def time_neighbours(self, bank_id: str, t_mid: float, limit: int) -> list[TimeNeighbour]:
        """Up to `limit` units on each side of t_mid, nearest first."""
    @abstractmethod
    def links_of(self, bank_id: str, unit_id: str) -> list[Link]: ...
    @abstractmethod
    def all_links(self, bank_id: str) -> list[Link]: ...
    @abstractmethod
    def unit_entity_pairs(self, bank_id: str) -> list[UnitEntity]:
        """The unit-entity rows of a bank, for graph views."""

    # derived-index support
    @abstractmethod
    def last_change(self, bank_id: str) -> int: ...
    @abstractmethod
    def changes_since(self, bank_id: str, seq: int) -> list[Change]: ...
    @abstractmethod
    def indexed_units(self, bank_id: str, labels: list[int] | None = None) -> list[IndexedUnit]:
        """Units by label (all of the bank's when labels is None)."""
    @abstractmethod
    def labels_to_ids(self, bank_id: str, labels: list[int]) -> dict[int, str]: ...

    @abstractmethod
    def stats(self, bank_id: str) -> BankStats: ...
    @abstractmethod
    def close(self) -> None: ...
