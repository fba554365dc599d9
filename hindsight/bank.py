"""A memory bank: the public API for retaining into and inspecting one bank."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any, Concatenate, ParamSpec, TypeVar

import networkx as nx
from pydantic import BaseModel

from hindsight import validate
from hindsight.asyncs import async_twin
from hindsight.errors import BankNotFoundError, InvalidInputError, UnitNotFoundError
from hindsight.forget import ForgetResult, forget
from hindsight.graph_view import bank_graph
from hindsight.integrity import IntegrityReport, check_bank
from hindsight.lifecycle import CallGate
from hindsight.llm.factory import llm_required
from hindsight.llm.usage import bank_scope
from hindsight.memory_context.block import BlockParts, ContextBlock, build, log_room, stable_prefix
from hindsight.memory_context.log import LLMStages, ObservationLog, ObserveReport, llm_stages
from hindsight.memory_context.working import WorkingContent, WorkingMemories
from hindsight.models import (
    BANK_SCOPE,
    BankProfile,
    BankStats,
    Content,
    Entity,
    Link,
    LinkType,
    LLMUsage,
    LogEntry,
    MemoryUnit,
    Network,
    OpinionEvent,
    RetainResult,
    TimeArg,
    WorkingMemory,
    WorkingMemoryFormat,
)
from hindsight.recall.request import DEFAULT_BUDGET
from hindsight.recall.types import RecallHit, RecallResult
from hindsight.reflect.types import PendingProgress, PendingReport, ReflectResult
from hindsight.retain.pipeline import RetainRequest
from hindsight.services import BankServices
from hindsight.store.search import BankSearch
from hindsight.temporal.values import parse_time, time_zone
from hindsight.units import BankHandle

P = ParamSpec("P")
R = TypeVar("R")


def _network(value: Network | str | None) -> Network | None:
    if value is None:
        return None
    try:
        return Network(value)
    except ValueError as exc:
        raise InvalidInputError(f"unknown network {value!r}; expected one of {[n.value for n in Network]}") from exc


def _call(method: Callable[Concatenate[Bank, P], R]) -> Callable[Concatenate[Bank, P], R]:
    """A public call: refused once the engine is closed (StoreClosedError) or the bank deleted (BankNotFoundError),
    and waited for by the close or delete that comes while it runs."""

    @functools.wraps(method)
    def call(bank: Bank, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with bank._services.call(), bank._gate.call():
            return method(bank, *args, **kwargs)

    return call


class Bank:
    """One memory bank. Get it from `Hindsight.bank(bank_id)`."""

    def __init__(self, services: BankServices, bank_id: str) -> None:
        self._services = services
        self.id = bank_id
        self._lock = threading.RLock()
        # Working memory and the observation log: read-then-write, apart from retain's lock.
        self._context_lock = threading.Lock()
        # Each forget adds 1 as it starts and as it ends: a block built across a forget may quote what it removed, and
        # is not kept (the forget dropped the kept ones). One process per SQLite directory: this covers every writer.
        self._forgets = 0
        self._forgets_lock = threading.Lock()
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
        """The bank as the pipelines write through it: its id, indexes and write lock."""
        return BankHandle(self.id, self.indexes, self._lock)

    # -- profile -----------------------------------------------------------------------------
    @_call
    def profile(self) -> BankProfile:
        return self._services.store.get_profile(self.id) or BankProfile()

    @_call
    def set_profile(self, profile: BankProfile) -> None:
        if not isinstance(profile, BankProfile):
            raise InvalidInputError(f"profile must be a BankProfile, got {type(profile).__name__}")
        limits = self._services.config.limits
        validate.bounded_text(profile.name, "profile name", limits.max_name_chars)
        validate.bounded_text(profile.background, "profile background", limits.max_message_chars)
        self._services.store.set_profile(self.id, profile)

    # -- working memory ----------------------------------------------------------------------
    def _memories(self) -> WorkingMemories:
        services = self._services
        return WorkingMemories(services.store, self.id, services.config.limits.max_working_memory_chars)

    @contextmanager
    def _context_write(self) -> Iterator[None]:
        with self._context_lock, self._services.store.writing(self.id):
            yield

    @_call
    def working_memory(self, scope: str = BANK_SCOPE) -> WorkingMemory:
        """The current working memory of `scope` ("bank", or a thread id): version 0, the bank's template, until
        the first update."""
        return self._memories().current(scope)

    @_call
    def update_working_memory(self, content: WorkingContent, scope: str = BANK_SCOPE,
                              note: str | None = None) -> WorkingMemory:
        """Store a new version of the working memory of `scope`: markdown, or under a schema JSON (text, a mapping
        or a model instance) that it must match (WorkingMemorySchemaError, changing nothing, when not)."""
        with self._context_write():
            return self._memories().update(scope, content, note)

    @_call
    def working_memory_versions(self, scope: str = BANK_SCOPE) -> list[WorkingMemory]:
        """Every stored version of the working memory of `scope`, oldest first."""
        return self._memories().versions(scope)

    @_call
    def revert_working_memory(self, version: int, scope: str = BANK_SCOPE, note: str | None = None) -> WorkingMemory:
        """Restore version `version` (0: the template) of the working memory of `scope`, as a new version."""
        with self._context_write():
            return self._memories().revert(scope, version, note)

    @_call
    def set_working_memory_format(self, template: str | None = None,
                                  schema: type[BaseModel] | Mapping[str, Any] | None = None) -> WorkingMemoryFormat:
        """Make the bank's working memory (every scope's) markdown that starts as `template`, or JSON that `schema`
        (a pydantic model class or a JSON schema) checks; refused while a current version would not fit."""
        with self._context_write():
            return self._memories().set_format(template, schema)

    @_call
    def working_memory_format(self) -> WorkingMemoryFormat:
        return self._memories().format()

    # -- the observation log -------------------------------------------------------------------
    def _log(self, stages: LLMStages | None = None) -> ObservationLog:
        services = self._services
        return ObservationLog(services.store, self.id, services.recall_pipeline.tokens,
                              services.config.context.condense_tokens, stages)

    def _llm_stages(self) -> LLMStages | None:
        """The LLM's stages of the log when `context.observer: llm` asks for them (LLMNotConfiguredError without an
        LLM: the rules do not replace an LLM observer behind the user's back)."""
        services = self._services
        if services.config.context.observer != "llm":
            return None
        if services.llm is None:
            raise llm_required("context.observer: llm")
        return llm_stages(services.llm, services.config.context, services.recall_pipeline.tokens, self._memories(),
                          services.config.llm.max_retries)

    @_call
    def observe(self, thread_id: str | None = None) -> ObserveReport:
        """Write what people said in the units not yet observed into the observation log (of the bank, or with
        `thread_id` of that thread's documents: the document `thread_id` and those whose id starts "thread_id:"),
        offline, or with `context.observer: llm` by the LLM once they hold `context.observe_tokens`; then condense
        the log if it passed `context.condense_tokens` or would not fit whole in a block of `context.budget`, and
        with the LLM update the scope's working memory from the new high-priority entries. Runs only when called
        (and inside `context`, for the block's budget)."""
        scope = BANK_SCOPE if thread_id is None else validate.thread_id(thread_id)
        return self._observe(scope, None if thread_id is None else scope)

    def _observe(self, scope: str, thread: str | None) -> ObserveReport:
        """Observe into the scope's log, condensed to fit whole in the block of `thread` at `context.budget` (a
        call with a smaller budget shows it cut by priority: condensing for it would lose what others show)."""
        services = self._services
        with self._context_write(), bank_scope(self.id):
            room = log_room(self._parts(thread), services.config.context.budget, services.recall_pipeline.tokens)
            return self._log(self._llm_stages()).observe(scope, datetime.now(timezone.utc), room)

    def _parts(self, thread: str | None, log: list[LogEntry] | None = None) -> BlockParts:
        """What the block of `thread` is made of: the profile, the working memories and `log` (none: the room a
        log gets depends on the rest alone)."""
        memories = self._memories()
        return BlockParts(
            profile=self.profile(),
            memories=[("working_memory", memories.current(BANK_SCOPE)),
                      *([("thread_working_memory", memories.current(thread))] if thread is not None else [])],
            log=log or [],
        )

    @_call
    def observation_log(self, thread_id: str | None = None) -> list[LogEntry]:
        """The observation log of the bank (or of a thread), in its order."""
        scope = BANK_SCOPE if thread_id is None else validate.thread_id(thread_id)
        return self._log().entries(scope)

    # -- the context block ---------------------------------------------------------------------
    @_call
    def context(
        self, query: str | None = None, thread_id: str | None = None, budget: int | None = None,
        query_time: datetime | str | None = None, observe: bool = True,
    ) -> ContextBlock:
        """The context for one turn, in at most `budget` tokens (default `context.budget`): the profile and the
        working memory (the bank's, then the thread's), the observation log (observed first unless `observe` is
        False), then the memories recalled for `query` (none without one), dated relative to `query_time`
        (default now). `stable_prefix` says how many leading characters are unchanged since the previous block of
        the same thread (docs/ARCHITECTURE.md, The context block)."""
        services = self._services
        config = services.config.context
        thread = None if thread_id is None else validate.thread_id(thread_id)
        budget = config.budget if budget is None else validate.count(budget, "budget")
        when = parse_time(query_time, "query_time", time_zone(services.config.retain.timezone))
        when = when or datetime.now(timezone.utc)
        if query is not None:
            validate.text(query, "query", services.config.limits.max_query_chars)
        forgets = self._forgets
        scope = thread if thread is not None and config.observations == "thread" else BANK_SCOPE
        if observe:
            self._observe(scope, thread)
        parts = self._parts(thread, self._log().entries(scope))
        pipeline = services.recall_pipeline

        def recall(room: int) -> list[RecallHit]:
            return pipeline.recall(self.indexes, query or "", budget=room, query_time=when).hits

        block = build(parts, recall if query is not None else None, budget, when, pipeline.tokens)
        # Kept in the store, so that every process (and every engine) on the bank compares with the same block.
        with self._forgets_lock:
            kept = forgets % 2 == 0 and forgets == self._forgets
            previous = services.store.swap_context_block(self.id, thread or BANK_SCOPE, block.text) if kept else ""
        return block.model_copy(update={"stable_prefix": stable_prefix(previous, block.text)})

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
            with self._forgets_lock:
                self._forgets += 1
            try:
                return forget(services.store, self.indexes, unit_id, entity, document,
                              embed=lambda t: services.embedder.embed(t), queue=services.pending_items)
            finally:
                with self._forgets_lock:
                    self._forgets += 1

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

        `query_time` anchors relative phrases in the query ("last week"; default: `as_of`, else now, UTC);
        `as_of` ignores units mentioned after it; `networks` keeps only those networks; `top_k` caps the hits.
        """
        return self._services.recall_pipeline.recall(
            self.indexes, query, budget=budget, networks=networks, query_time=query_time, as_of=as_of, top_k=top_k
        )

    # -- reflect and the opinion network -------------------------------------------------------
    @_call
    def reflect(self, query: str, budget: int | None = None, query_time: datetime | str | None = None) -> ReflectResult:
        """Answer `query` in the bank's voice from memories of all four networks (cited by unit id), and store
        the opinions the answer shows. `budget` is the recall budget (default `reflect.answer.budget`). Needs an LLM."""
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
        zone = time_zone(self._services.config.retain.timezone)
        return bank_graph(self._services.store, self.id, nets, types, since, until, zone)

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
    aprofile = async_twin(profile)
    aset_profile = async_twin(set_profile)
    ato_networkx = async_twin(to_networkx)
    acontext = async_twin(context)
    aobserve = async_twin(observe)
    aobservation_log = async_twin(observation_log)
    aworking_memory = async_twin(working_memory)
    aupdate_working_memory = async_twin(update_working_memory)
    aworking_memory_versions = async_twin(working_memory_versions)
    arevert_working_memory = async_twin(revert_working_memory)
    aset_working_memory_format = async_twin(set_working_memory_format)
    aworking_memory_format = async_twin(working_memory_format)
