"""A memory bank: the public API for retaining into and inspecting one bank."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from datetime import datetime

import networkx as nx

from hindsight import validate
from hindsight.asyncs import async_twin
from hindsight.bank_context import BankContext
from hindsight.errors import BankNotFoundError, InvalidInputError, UnitNotFoundError
from hindsight.forget import ForgetResult, forget
from hindsight.graph_view import bank_graph
from hindsight.integrity import IntegrityReport, check_bank
from hindsight.lifecycle import CallGate
from hindsight.lifecycle import public_call as _call
from hindsight.llm.usage import bank_scope
from hindsight.models import (
    BankProfile,
    BankStats,
    Content,
    Entity,
    Link,
    LinkType,
    LLMUsage,
    MemoryUnit,
    Network,
    OpinionEvent,
    RetainResult,
    TimeArg,
)
from hindsight.recall.request import DEFAULT_BUDGET
from hindsight.recall.types import RecallResult
from hindsight.reflect.types import PendingProgress, PendingReport, ReflectResult
from hindsight.retain.pipeline import RetainRequest
from hindsight.services import BankServices
from hindsight.store.search import BankSearch
from hindsight.units import BankHandle


def _network(value: Network | str | None) -> Network | None:
    if value is None:
        return None
    try:
        return Network(value)
    except ValueError as exc:
        raise InvalidInputError(f"unknown network {value!r}; expected one of {[n.value for n in Network]}") from exc


class Bank(BankContext):
    """One memory bank. Get it from `Hindsight.bank(bank_id)`."""

    def __init__(self, services: BankServices, bank_id: str) -> None:
        self._services = services
        self.id = bank_id
        self._lock = threading.RLock()
        # Working memory and the observation log: read-then-write, apart from retain's lock.
        self._context_lock = threading.Lock()
        self._indexes: BankSearch | None = None
        self._deleted = False
        self._gate = CallGate(lambda: BankNotFoundError(f"bank {bank_id!r} was deleted"))

    def __repr__(self) -> str:
        return f"Bank({self.id!r})"

    @property
    def indexes(self) -> BankSearch:
        """The bank's derived indexes, opened (and healed) on first use."""
        opened = self._indexes
        if opened is not None and not self._deleted:
            # Without the lock: a retain holds it through its commit, and a recall must not wait for that. The call
            # gates keep a delete or close from closing the indexes under a call in flight.
            return opened
        with self._lock:
            if self._deleted:
                raise BankNotFoundError(f"bank {self.id!r} was deleted")
            if self._indexes is None:
                self._indexes = self._services.open_indexes(self.id)
            return self._indexes

    def handle(self) -> BankHandle:
        """The bank as the pipelines work through it: its id, indexes, write lock and time zone."""
        return BankHandle(self.id, self.indexes, self._lock, self._clock())

    # -- retain and forget -------------------------------------------------------------------
    @_call
    def retain(
        self, content: Content, timestamp: TimeArg | None = None, context: str | None = None,
        document_id: str | None = None,
    ) -> RetainResult:
        """Store a conversation (list of Message) or text; re-retaining a document id updates it in place.

        Document ids starting with '_' are reserved for the memory the engine derives itself (`_opinions`,
        `_observations:<entity id>`): retain refuses them with ReservedDocumentIdError and changes nothing."""
        with bank_scope(self.id):
            return self._services.pipeline.retain(
                self.handle(), content, timestamp=timestamp, context=context, document_id=document_id
            )

    @_call
    def retain_many(self, requests: Iterable[RetainRequest]) -> list[RetainResult]:
        """Retain several documents (e.g. a history import): every request is validated before anything is
        written, the new units of all of them are embedded together, and each document commits atomically."""
        items = list(requests)
        if not all(isinstance(r, RetainRequest) for r in items):
            raise InvalidInputError("retain_many takes RetainRequest items")
        with bank_scope(self.id):
            return self._services.pipeline.retain_many(self.handle(), items)

    @_call
    def forget(
        self, unit_id: str | None = None, *, entity: str | None = None, document: str | None = None
    ) -> ForgetResult:
        """Remove a unit, with `document=` every unit of that document, or with `entity=` (an id, name or alias)
        every unit that mentions that entity, from the store, both indexes and the graph, and scrub the files;
        entities no unit mentions any more go too, and so do the opinions and observations derived from the units
        (other opinions lose them as evidence). Units that copied the forgotten text go too, or lose the lead or
        context that quoted it (`ForgetResult.copied_ids`, `rewritten_ids`)."""
        services = self._services
        with self._lock, services.store.writing(self.id):
            return forget(services.store, self.indexes, unit_id, entity, document,
                          embed=lambda t: services.embedder.embed(t), queue=services.pending_items)

    @_call
    def check(self) -> IntegrityReport:
        """Check that the store is consistent and that both indexes hold exactly the bank's units."""
        with self._lock:
            return check_bank(self._services.store, self.indexes, self._services.embedder.dim)

    # -- recall ------------------------------------------------------------------------------
    @_call
    def recall(
        self,
        query: str,
        budget: int = DEFAULT_BUDGET,
        networks: Iterable[Network | str] | None = None,
        query_time: datetime | str | None = None,
        as_of: datetime | str | None = None,
        top_k: int | None = None,
    ) -> RecallResult:
        """Units relevant to `query`, ranked and packed into `budget` tokens (cl100k_base), each explained.

        `query_time` anchors relative phrases in the query ("last week"; default: `as_of`, else now in the bank's
        time zone) and the dates of the hits; `as_of` ignores units mentioned after it (naive times of both are clock
        times in the bank's zone); `networks` keeps only those networks; `top_k` caps the hits.
        """
        return self._services.recall_pipeline.recall(
            self.indexes, query, self._clock(), budget=budget, networks=networks, query_time=query_time, as_of=as_of,
            top_k=top_k,
        )

    # -- reflect and the opinion network -------------------------------------------------------
    @_call
    def reflect(self, query: str, budget: int | None = None, query_time: datetime | str | None = None) -> ReflectResult:
        """Answer `query` in the bank's voice from memories of all four networks (cited by unit id), and store
        the opinions the answer shows. `budget` is the recall budget (default `reflect.answer.budget`); `query_time`
        is the answer's today, as recall's (default now in the bank's time zone). Needs an LLM."""
        with bank_scope(self.id):
            return self._services.reasoner.reflect(self.handle(), self.profile(), query, budget, query_time)

    @_call
    def process_pending(self, progress: Callable[[PendingProgress], None] | None = None) -> PendingReport:
        """Do the reasoning retain queued for this bank now, in this thread: opinion reinforcement, then observation
        regeneration. `progress` is called as items finish. Needs an LLM."""
        reasoner = self._services.reasoner
        with bank_scope(self.id):
            return reasoner.process_pending(self.handle(), progress)

    @_call
    def pending(self) -> int:
        """The number of reasoning items queued for this bank (new facts to weigh against opinions, entities to
        re-observe). A count read from the store: it runs nothing and waits for nothing."""
        return self._services.store.pending_count(self.id)

    @_call
    def merge_background(self, snippet: str) -> BankProfile:
        """Merge a biographical snippet into the background (first person; new information wins). Needs an LLM."""
        with bank_scope(self.id):
            profile, _ = self._services.reasoner.merge_background(self.profile(), snippet)
        self.set_profile(profile)
        return profile

    @_call
    def opinion_history(self, unit_id: str) -> list[OpinionEvent]:
        """An opinion's trajectory: (verdict, confidence, text, evidence, time), oldest first."""
        unit_id = self.get_unit(unit_id).id
        return self._services.store.opinion_history(self.id, unit_id)

    # -- inspection --------------------------------------------------------------------------
    @_call
    def units(
        self, network: Network | str | None = None, limit: int | None = None, offset: int = 0
    ) -> list[MemoryUnit]:
        limit = None if limit is None else validate.count(limit, "limit")
        return self._services.store.list_units(self.id, _network(network), limit, validate.count(offset, "offset"))

    @_call
    def get_unit(self, unit_id: str) -> MemoryUnit:
        found = self._services.store.get_units(self.id, [validate.unit_id(unit_id)])
        if not found:
            raise UnitNotFoundError(f"no unit {unit_id!r} in bank {self.id!r}")
        return found[0]

    @_call
    def entities(self) -> list[Entity]:
        return self._services.store.list_entities(self.id)

    @_call
    def links(self, unit_id: str) -> list[Link]:
        return self._services.store.links_of(self.id, validate.unit_id(unit_id))

    @_call
    def stats(self) -> BankStats:
        return self._services.store.stats(self.id)

    @_call
    def llm_usage(self) -> LLMUsage:
        """Tokens and calls the LLM spent on this bank over its life (stored with the bank, so they survive a
        restart; `Hindsight.llm_usage` holds this engine's counts since it opened)."""
        return self._services.store.llm_usage(self.id)

    @_call
    def to_networkx(
        self,
        networks: Iterable[Network | str] | None = None,
        link_types: Iterable[LinkType | str] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> nx.MultiDiGraph:
        nets = None if networks is None else [n for n in (_network(x) for x in networks) if n is not None]
        try:
            types = None if link_types is None else [LinkType(t) for t in link_types]
        except ValueError as exc:
            raise InvalidInputError(f"unknown link type in {list(link_types or [])!r}") from exc
        return bank_graph(self._services.store, self.id, nets, types, since, until, self._clock())

    def close(self, deleted: bool = False) -> None:
        """Close the indexes; `deleted` (from delete_bank) makes every later use a BankNotFoundError, once the calls
        in flight on the bank have returned."""
        if deleted:
            self._gate.shut()
        with self._lock:
            self._deleted = self._deleted or deleted
            if self._indexes is not None:
                self._indexes.close()
                self._indexes = None

    areflect = async_twin(reflect)
    aprocess_pending = async_twin(process_pending)
    amerge_background = async_twin(merge_background)
    aopinion_history = async_twin(opinion_history)
    aretain = async_twin(retain)
    arecall = async_twin(recall)
    aretain_many = async_twin(retain_many)
    aforget = async_twin(forget)
    acheck = async_twin(check)
    aunits = async_twin(units)
    aget_unit = async_twin(get_unit)
    aentities = async_twin(entities)
    alinks = async_twin(links)
    astats = async_twin(stats)
    allm_usage = async_twin(llm_usage)
    ato_networkx = async_twin(to_networkx)
