"""The MemoryStore interface: the single source of truth for banks, units, entities and links."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np

from hindsight.models import (
    BankProfile,
    BankStats,
    Entity,
    EntityAlias,
    EntityCandidate,
    Link,
    LinkType,
    LLMUsage,
    LogEntry,
    MemoryUnit,
    Network,
    OpinionEvent,
    WorkingMemory,
    WorkingMemoryFormat,
)
from hindsight.store.search import BankSearch


@dataclass
class DocumentRecord:
    """A retained document: its id, the hash of its (private-stripped) content and context."""

    document_id: str
    content_hash: str
    context: str | None
    updated_at: datetime


@dataclass(frozen=True)
class UnitText:
    """A unit's id with its text and lead: what a forget reads of every unit when it looks for a name."""

    unit_id: str
    text: str
    lead: str | None


@dataclass
class NewUnit:
    """A unit to insert, with its embedding and resolved entity ids."""

    unit: MemoryUnit
    embed_text: str
    embed_hash: str
    embedding: np.ndarray
    entity_ids: list[str]
    segment_embeddings: np.ndarray | None = None  # one row per ExtractedFact.segments entry


@dataclass
class EntityWrite:
    """A new entity, or new aliases and a new last-seen time for an existing one."""

    entity: Entity
    is_new: bool
    new_aliases: list[EntityAlias] = field(default_factory=list)
    keys: set[str] = field(default_factory=set)


@dataclass
class UnitUpdate:
    """An in-place change of a stored unit (an opinion's confidence, or its revised text with a new embedding)."""

    unit_id: str
    confidence: float | None = None
    text: str | None = None
    embed_text: str | None = None
    embed_hash: str | None = None
    embedding: np.ndarray | None = None
    metadata: dict[str, Any] | None = None  # replaces the unit's metadata
    drop_lead: bool = False  # the lead quoted forgotten text
    drop_context: bool = False  # the context (the unit's and its document's) quoted forgotten text


@dataclass
class WriteBatch:
    """Everything one retain (or one reasoning step) changes; applied in one transaction."""

    document: DocumentRecord | None = None
    add_units: list[NewUnit] = field(default_factory=list)
    delete_unit_ids: list[str] = field(default_factory=list)
    entities: list[EntityWrite] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    update_units: list[UnitUpdate] = field(default_factory=list)
    opinion_events: list[OpinionEvent] = field(default_factory=list)
    pending: list[PendingItem] = field(default_factory=list)  # background work queued in the same transaction
    history_replaced: list[str] = field(default_factory=list)  # opinions whose history `opinion_events` replace
    claims: list[ClaimRecord] = field(default_factory=list)  # of the batch's new units
    scrub: bool = False  # a forget: files must be scrubbed after the commit (MemoryStore.scrubs_pending)


@dataclass(frozen=True)
class ClaimRecord:
    """A state claim of a unit (hindsight/claims/): its subject key (an entity id, or a key for a speaker or a
    relative no entity stands for), attribute, value, whether the value ended, and when it was said."""

    unit_id: str
    subject: str
    attribute: str
    value: str
    ended: bool
    said: datetime
    additional: bool = False  # held beside the earlier value, not instead of it
    topic: bool = False  # the unit only talks about the attribute: no value, never supersedes


@dataclass(frozen=True)
class PendingItem:
    """Background work queued by retain: `kind` ("reinforce" a unit id, "observe" an entity id) and its key."""

    kind: str
    key: str


@dataclass
class OperationRecord:
    """A request the server runs after answering it (`"wait": false`): its state, then its result or error.

    `result` and `error` are JSON text the server wrote; `result_dropped` says a forget in the bank removed a result
    that could quote forgotten text."""

    id: str
    bank_id: str
    kind: str
    status: str  # "pending", "done" or "failed"
    created_at: float
    finished_at: float | None = None
    result: str | None = None
    error: str | None = None
    result_dropped: bool = False


@dataclass
class Change:
    """One entry of a bank's change log, which derived indexes replay."""

    seq: int
    op: str  # "add", "del", or "text" (only the indexed text changed: a lead dropped by a forget)
    label: int


@dataclass
class IndexedUnit:
    """What a derived index needs of a unit: its label, embedding and indexed text."""

    label: int
    unit_id: str
    embedding: np.ndarray
    text: str
    lead: str = ""  # text quoted from before the unit: searchable, but neither embedded nor the unit's own
    segments: np.ndarray | None = None  # embeddings of the unit's segments, one per row (when asked for)


@dataclass
class EmbeddedText:
    """A unit's embedded text and its content hash, which is keyed by the embedder's name (embed.base.embed_hash)."""

    text: str
    hash: str


@dataclass
class UnitEntity:
    unit_id: str
    entity_id: str


@dataclass
class TimeNeighbour:
    unit_id: str
    t_mid: float


@dataclass(frozen=True)
class UnitFilter:
    """Which units a read may return: some networks only, and/or units mentioned at or before `as_of`."""

    networks: frozenset[Network] | None = None
    as_of: datetime | None = None

    @property
    def active(self) -> bool:
        return self.networks is not None or self.as_of is not None

    def admits(self, unit: MemoryUnit) -> bool:
        """Whether the unit passes the filter."""
        return ((self.networks is None or unit.network in self.networks)
                and (self.as_of is None or unit.mentioned_at <= self.as_of))


@dataclass(slots=True)
class GraphEdge:
    """A link seen from one of its ends (`src`, a label asked for) to the other (`dst`), which passed the filter."""

    src: int
    dst: int
    dst_id: str
    type: LinkType
    subtype: str | None
    weight: float
    shared_entities: tuple[str, ...] = ()
    """For an entity link: the ids of the entities both ends mention."""
    cross_document: bool = False
    """The two ends were retained from different documents."""


@dataclass(frozen=True)
class EntityRef:
    """A canonical entity as recall sees it: id, name and NER label."""

    id: str
    name: str
    label: str


@dataclass
class TimedUnit:
    """A unit found by time: its label, id, occurrence interval (epoch seconds) and midpoint."""

    label: int
    unit_id: str
    start: float
    end: float
    t_mid: float


class ProblemKind(str, Enum):
    """A kind of inconsistency `Bank.check()` can find."""

    VECTOR_MISSING = "vector_missing"  # a live unit is not in the vector index
    VECTOR_STALE = "vector_stale"  # the vector index holds a label with no live unit
    LEXICAL_MISSING = "lexical_missing"
    LEXICAL_STALE = "lexical_stale"
    BAD_EMBEDDING = "bad_embedding"  # wrong size or not finite
    DANGLING_LINK = "dangling_link"  # an end is missing or in another bank
    DANGLING_UNIT_ENTITY = "dangling_unit_entity"  # a unit-entity row whose unit or entity is missing
    ORPHAN_ENTITY = "orphan_entity"  # an entity no unit mentions
    DANGLING_ENTITY_KEY = "dangling_entity_key"  # a resolution key of a missing entity
    UNIT_WITHOUT_DOCUMENT = "unit_without_document"
    ENTITY_MISMATCH = "entity_mismatch"  # a unit's entity names differ from its unit-entity rows


@dataclass
class IntegrityProblem:
    """One inconsistency: its kind, a readable detail and the ids (unit, entity or label) involved."""

    kind: ProblemKind
    detail: str
    ids: list[str] = field(default_factory=list)


class BankStore(ABC):
    """Banks, their documents and units, and the writes that change them. Implementations apply a WriteBatch
    atomically, in one transaction."""

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

    @abstractmethod
    def apply(self, bank_id: str, batch: WriteBatch) -> int:
        """Apply a batch atomically; returns the bank's write sequence after it (see last_change)."""
    @abstractmethod
    def last_change(self, bank_id: str) -> int:
        """The bank's write sequence: it grows with every committed write, so equal values mean equal contents."""
    @abstractmethod
    def writing(self, bank_id: str) -> AbstractContextManager[None]:
        """Hold the bank's write lock against every other process sharing the store, for a read-then-write (a
        retain's entity resolution and its apply); apply() alone needs no lock."""
    @abstractmethod
    def open_search(self, bank_id: str, dim: int) -> BankSearch:
        """The bank's vector and lexical search over embeddings of `dim` floats."""

    @abstractmethod
    def get_document(self, bank_id: str, document_id: str) -> DocumentRecord | None: ...
    @abstractmethod
    def document_units(self, bank_id: str, document_id: str) -> list[MemoryUnit]: ...
    @abstractmethod
    def documents_with_context(self, bank_id: str) -> list[DocumentRecord]:
        """The bank's documents retained with a context (their units carry it)."""
    @abstractmethod
    def unit_texts(self, bank_id: str) -> Iterator[UnitText]:
        """Every unit's text and lead, in label order, read a page at a time."""
    @abstractmethod
    def units_before(self, bank_id: str, unit_id: str, limit: int) -> list[MemoryUnit]:
        """Up to `limit` units of the unit's document retained just before it, nearest first."""
    @abstractmethod
    def get_units(self, bank_id: str, unit_ids: list[str]) -> list[MemoryUnit]: ...
    @abstractmethod
    def list_units(
        self, bank_id: str, network: Network | None = None, limit: int | None = None, offset: int = 0
    ) -> list[MemoryUnit]: ...
    @abstractmethod
    def lookup_embeddings(self, hashes: list[str]) -> dict[str, np.ndarray]:
        """Stored embeddings by content hash, across banks (the persistent embedding cache)."""
    @abstractmethod
    def indexed_units(self, bank_id: str, labels: list[int] | None = None,
                      with_segments: bool = False) -> list[IndexedUnit]:
        """Units by label (all of the bank's when labels is None); segment embeddings only when asked for."""
    @abstractmethod
    def embedded_sample(self, bank_id: str) -> EmbeddedText | None:
        """The embedded text and hash of one of the bank's units (None when it has none)."""
    @abstractmethod
    def labels_to_ids(self, bank_id: str, labels: list[int], unit_filter: UnitFilter | None = None) -> dict[int, str]:
        """Ids of the labels' units that exist (and pass the filter)."""
    @abstractmethod
    def stats(self, bank_id: str) -> BankStats: ...
    @abstractmethod
    def close(self) -> None: ...


class GraphStore(ABC):
    """The temporal entity graph: entities, links, claims, and the reads recall and reasoning make of them."""

    @abstractmethod
    def entity_candidates(self, bank_id: str, keys: set[str]) -> list[EntityCandidate]:
        """Up to 64 entities with one of the blocking keys, with their aliases; co-occurrence is read apart."""
    @abstractmethod
    def entity_cooccurrence(self, bank_id: str, entity_ids: list[str], units: int) -> dict[str, set[str]]:
        """The normalized names of the entities that share one of each entity's `units` most recent units."""
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
    @abstractmethod
    def neighbour_links(
        self, bank_id: str, labels: list[int], unit_filter: UnitFilter | None = None
    ) -> list[GraphEdge]:
        """Every link touching one of `labels`, either direction, seen from that end; the far end passes the filter.
        Entity links carry the entities their two ends share."""
    @abstractmethod
    def update_links(self, bank_id: str, labels: list[int], unit_filter: UnitFilter | None = None) -> list[GraphEdge]:
        """The update links into `labels` (older units) from the newer units superseding them, which pass the
        filter; seen from the older end, so `dst` is the newer unit and `subtype` the attribute."""
    @abstractmethod
    def claims_about(self, bank_id: str, keys: Sequence[tuple[str, str]], limit: int) -> list[ClaimRecord]:
        """The latest `limit` claims (not topics) of each (subject, attribute family) key, newest first: the family
        "club" also finds "club:running"."""
    @abstractmethod
    def unit_claims(self, bank_id: str, labels: list[int]) -> dict[int, list[ClaimRecord]]:
        """The claims and topics of each of `labels` that has any."""
    @abstractmethod
    def reply_links(self, bank_id: str, labels: list[int], unit_filter: UnitFilter | None = None) -> list[GraphEdge]:
        """The reply links from `labels` (units that ask a question) to the units answering them, which pass
        the filter."""
    @abstractmethod
    def units_in_time(
        self, bank_id: str, start: datetime, end: datetime, margin_s: float, limit: int,
        unit_filter: UnitFilter | None = None,
    ) -> list[TimedUnit]:
        """Units whose occurrence overlaps [start, end] and whose midpoint lies within `margin_s` of it: up to
        `limit` on each side of the range's midpoint, nearest first."""
    @abstractmethod
    def entity_unit_counts(self, bank_id: str, entity_ids: list[str]) -> dict[str, int]:
        """How many units mention each entity."""
    @abstractmethod
    def filtered_labels(self, bank_id: str, unit_filter: UnitFilter) -> set[int]:
        """The labels of all the bank's units that pass the filter."""

    @abstractmethod
    def opinion_history(self, bank_id: str, unit_id: str) -> list[OpinionEvent]:
        """The opinion's events, oldest first."""
    @abstractmethod
    def units_of_entities(self, bank_id: str, entity_ids: list[str], networks: set[Network], limit: int) -> list[str]:
        """Ids of units in `networks` mentioning any of the entities, newest first, at most `limit`."""
    @abstractmethod
    def citing_units(self, bank_id: str, unit_ids: Sequence[str]) -> dict[str, set[str]]:
        """Opinions and observations that cite any of `unit_ids` as a source or as evidence in their history:
        derived unit id -> the cited ids among `unit_ids`."""
    @abstractmethod
    def unit_entities(self, bank_id: str, unit_ids: list[str]) -> dict[str, list[EntityRef]]:
        """The canonical entities each unit mentions, by unit id (units without entities are left out)."""


class WorkQueue(ABC):
    """The queue of background work (reinforcement, observations), shared by every worker of the store."""

    @abstractmethod
    def add_pending(self, bank_id: str, items: list[PendingItem]) -> None:
        """Queue work; an item already queued keeps its place (debounce), and one a worker has claimed is marked
        to be run again once that worker finishes it."""
    @abstractmethod
    def claim_pending(self, bank_id: str, kind: str, claim: str, limit: int) -> list[str]:
        """Up to `limit` unclaimed keys of `kind`, oldest first, now held by the worker run `claim`."""
    @abstractmethod
    def finish_pending(self, bank_id: str, kind: str, keys: Sequence[str], claim: str) -> None:
        """Remove done keys held by `claim`; a key queued again while it was held goes back to the queue."""
    @abstractmethod
    def release_pending(self, claim: str | None = None) -> int:
        """Put the keys `claim` holds (every claim, of every bank, when None) back in the queue; returns how many."""
    @abstractmethod
    def pending_count(self, bank_id: str) -> int: ...


class OperationLog(ABC):
    """The operations a server runs in the background, readable from every process sharing the store."""

    @abstractmethod
    def add_operation(self, op: OperationRecord) -> None:
        """Record a new operation, owned by this process."""
    @abstractmethod
    def finish_operation(self, op: OperationRecord) -> None:
        """Write its final status, finish time, and result or error."""
    @abstractmethod
    def get_operation(self, op_id: str) -> OperationRecord | None: ...
    @abstractmethod
    def expire_operations(self, finished_before: float) -> int:
        """Remove the operations that finished before that time; returns how many."""
    @abstractmethod
    def interrupt_operations(self) -> int:
        """Fail the unfinished operations of processes that no longer run (never those of a live process sharing
        the store); returns how many."""


class UsageLog(ABC):
    """Each bank's LLM token counters over its whole life."""

    @abstractmethod
    def add_llm_usage(self, bank_id: str, usage: LLMUsage) -> None:
        """Add to the bank's persisted token counters (nothing when the bank does not exist)."""
    @abstractmethod
    def llm_usage(self, bank_id: str) -> LLMUsage:
        """The bank's token counters over its whole life."""


class Integrity(ABC):
    """Consistency checks, and the scrub that makes a forget total."""

    # Where the store keeps each bank's derived search files (SQLite), None when search lives in the database.
    bank_files: Path | None = None

    @abstractmethod
    def live_labels(self, bank_id: str) -> set[int]:
        """The labels of every unit the bank holds."""
    @abstractmethod
    def integrity_problems(self, bank_id: str, dim: int) -> list[IntegrityProblem]:
        """Inconsistencies inside the store (links, unit-entity rows, entities, embeddings of `dim` floats)."""

    @abstractmethod
    def purge(self) -> None:
        """Make deleted rows unrecoverable from the storage files (after a forget)."""
    @abstractmethod
    def scrubs_pending(self) -> list[str]:
        """Banks whose forget or delete committed (WriteBatch.scrub, delete_bank) and whose files may still hold
        what it removed: the scrub after the commit has not finished."""
    @abstractmethod
    def scrub_done(self, bank_id: str) -> None:
        """The files of the bank hold nothing its forgets and delete removed."""


@dataclass(frozen=True)
class Unobserved:
    """What a scope has not observed: the units, and the scope's mark before (`since`) and after reading them
    (`through`): the label of the bank's newest unit of the networks read, every unit up to it now shown."""

    units: list[MemoryUnit]
    since: int
    through: int


class ContextStore(ABC):
    """What the context an agent sends is made of besides units: each scope's versioned working memory, the
    append-only observation log with the units each scope has observed, and the last block each scope was sent (for
    its stable prefix). A scope is "bank" or a thread id."""

    @abstractmethod
    def working_memory_format(self, bank_id: str) -> WorkingMemoryFormat | None: ...
    @abstractmethod
    def set_working_memory_format(self, bank_id: str, fmt: WorkingMemoryFormat) -> None: ...
    @abstractmethod
    def working_memory_scopes(self, bank_id: str) -> list[str]:
        """The scopes that have a stored version."""
    @abstractmethod
    def working_memory(self, bank_id: str, scope: str, version: int | None = None) -> WorkingMemory | None:
        """A stored version (the latest when `version` is None), or None."""
    @abstractmethod
    def working_memory_versions(self, bank_id: str, scope: str) -> list[WorkingMemory]:
        """Every stored version of the scope, oldest first."""
    @abstractmethod
    def add_working_memory(self, bank_id: str, scope: str, content: str, note: str | None,
                           reverted_from: int | None, at: datetime) -> WorkingMemory:
        """Store the scope's next version (BankNotFoundError without the bank)."""

    @abstractmethod
    def observation_log(self, bank_id: str, scope: str) -> list[LogEntry]:
        """The scope's log, in its order."""
    @abstractmethod
    def unobserved_units(self, bank_id: str, scope: str, document_prefix: str | None,
                         networks: Sequence[Network]) -> Unobserved:
        """The units of `networks` the scope has not observed yet, in retain order; with `document_prefix`, only
        those of the document of that id and of the documents whose id starts with it and a colon. It reads only
        the units retained since the scope's mark and those a forget asks to observe again, so its cost follows
        what is new, not the bank's size."""
    @abstractmethod
    def append_observations(self, bank_id: str, scope: str, entries: list[LogEntry], observed: list[str],
                            through: int) -> int:
        """Append the entries to the scope's log, mark `observed` (every unit read, written or not) as observed and
        move the scope's mark to `through` (Unobserved.through), in one transaction; a unit another writer marked
        meanwhile is left out with its entries. Returns how many entries were appended."""
    @abstractmethod
    def replace_observation_log(self, bank_id: str, scope: str, before: list[int], entries: list[LogEntry]) -> bool:
        """Replace the scope's log by `entries` (a condensed log), if its entries are still those of the seqs
        `before`; returns whether it did. Units whose entries are gone stay observed."""

    @abstractmethod
    def forget_count(self, bank_id: str) -> int:
        """How many forgets (WriteBatch.scrub) have committed in the bank, in any process (BankNotFoundError without
        the bank)."""
    @abstractmethod
    def context_block(self, bank_id: str, scope: str) -> str:
        """The scope's last kept context block ("" when none is kept); reads only."""

    @abstractmethod
    def swap_context_block(self, bank_id: str, scope: str, text: str, forgets: int) -> str | None:
        """Keep `text` as the scope's last context block and return the one it replaces ("" for the first), in one
        transaction, so that of two processes' swaps one returns the other's text (BankNotFoundError without the
        bank). A forget (WriteBatch.scrub) and delete_bank drop the bank's blocks; a block built across a forget
        may quote what it removed, so when `forget_count` is no longer `forgets` (read before the block's first
        read) nothing is kept and None is returned."""


class MemoryStore(BankStore, GraphStore, WorkQueue, OperationLog, UsageLog, Integrity, ContextStore):
    """Persistent storage of all banks: every role a backend implements (see store/factory.py)."""
