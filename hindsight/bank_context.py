"""The part of a bank's API that builds an agent's context: the profile, working memory, the observation log and the
context block (docs/ARCHITECTURE.md, The context block). `Bank` inherits it."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, tzinfo
from typing import Any

from pydantic import BaseModel

from hindsight import validate
from hindsight.asyncs import async_twin
from hindsight.errors import InvalidInputError
from hindsight.lifecycle import CallGate
from hindsight.lifecycle import public_call as _call
from hindsight.llm.factory import llm_required
from hindsight.llm.usage import bank_scope
from hindsight.memory_context.block import BlockParts, ContextBlock, build, log_room, stable_prefix
from hindsight.memory_context.log import LLMStages, ObservationLog, ObserveReport, llm_stages
from hindsight.memory_context.working import WorkingContent, WorkingMemories
from hindsight.models import BANK_SCOPE, BankProfile, LogEntry, WorkingMemory, WorkingMemoryFormat
from hindsight.recall.types import RecallHit
from hindsight.services import BankServices
from hindsight.store.search import BankSearch
from hindsight.temporal.values import known_zone, on_clock, parse_time, time_zone
from hindsight.text import private_free


class BankContext:
    """A bank's profile, working memory, observation log and context block."""

    id: str
    _services: BankServices
    _gate: CallGate
    _context_lock: threading.Lock  # working memory and the log: read-then-write, apart from retain's lock

    @property
    def indexes(self) -> BankSearch:
        """The bank's derived indexes (opened by Bank)."""
        raise NotImplementedError

    # -- profile -----------------------------------------------------------------------------
    @_call
    def profile(self) -> BankProfile:
        return self._services.store.get_profile(self.id) or BankProfile()

    @_call
    def set_profile(self, profile: BankProfile) -> None:
        """Replace the profile. Setting or changing `timezone` changes the clock the bank's dates are shown on, and
        the one naive times given from now on are read on; no stored instant changes."""
        if not isinstance(profile, BankProfile):
            raise InvalidInputError(f"profile must be a BankProfile, got {type(profile).__name__}")
        limits = self._services.config.limits
        validate.text(profile.name, "profile name", limits.max_name_chars)
        validate.text(profile.background, "profile background", limits.max_message_chars)
        if profile.timezone is not None:  # model_copy(update=...) skips the model's own check
            try:
                known_zone(profile.timezone)
            except ValueError as exc:
                raise InvalidInputError(str(exc)) from exc
        marker = self._services.config.retain.private_marker
        # <private> spans are never stored, here as in retained text.
        profile = profile.model_copy(update={"name": private_free(profile.name, marker),
                                             "background": private_free(profile.background, marker)})
        self._services.store.set_profile(self.id, profile)

    @_call
    def time_zone(self) -> str:
        """The IANA name of the zone the bank's dates are in: its profile's `timezone`, else the engine's
        `retain.timezone`."""
        return self.profile().timezone or self._services.config.retain.timezone

    def _clock(self) -> tzinfo:
        """The bank's time zone (`time_zone`)."""
        return time_zone(self.time_zone())

    # -- working memory ----------------------------------------------------------------------
    def _memories(self) -> WorkingMemories:
        services = self._services
        return WorkingMemories(services.store, self.id, services.config.limits.max_working_memory_chars,
                               services.config.retain.private_marker)

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
        return self._observe(scope, None if thread_id is None else scope, self._clock())

    def _observe(self, scope: str, thread: str | None, zone: tzinfo) -> ObserveReport:
        """Observe into the scope's log, condensed to fit whole in the block of `thread` at `context.budget` (a
        call with a smaller budget shows it cut by priority: condensing for it would lose what others show)."""
        services = self._services
        with self._context_write(), bank_scope(self.id):
            room = log_room(self._parts(thread), services.config.context.budget, services.recall_pipeline.tokens)
            return self._log(self._llm_stages()).observe(scope, datetime.now(zone), zone, room)

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
        (default now; naive: a clock time in the bank's zone), the days on the bank's clock. `stable_prefix` says how
        many leading characters are unchanged since the previous block of the same thread (docs/ARCHITECTURE.md, The
        context block)."""
        services = self._services
        config = services.config.context
        thread = None if thread_id is None else validate.thread_id(thread_id)
        budget = config.budget if budget is None else validate.count(budget, "budget")
        zone = self._clock()
        when = on_clock(parse_time(query_time, "query_time", zone) or datetime.now(zone), zone)
        if query is not None:
            validate.text(query, "query", services.config.limits.max_query_chars)
        forgets = services.store.forget_count(self.id)  # before the block's first read
        scope = thread if thread is not None and config.observations == "thread" else BANK_SCOPE
        if observe:
            self._observe(scope, thread, zone)
        parts = self._parts(thread, self._log().entries(scope))
        pipeline = services.recall_pipeline

        def recall(room: int) -> list[RecallHit]:
            return pipeline.recall(self.indexes, query or "", zone, budget=room, query_time=when).hits

        block = build(parts, recall if query is not None else None, budget, when, pipeline.tokens)
        # Kept in the store, so that every process (and every engine) on the bank compares with the same block; not
        # kept when a forget committed while it was built (None). A read (observe=False) compares with the writer's
        # block and keeps nothing, so a reader never moves the writer's stable prefix.
        key = thread or BANK_SCOPE
        previous = (services.store.swap_context_block(self.id, key, block.text, forgets) if observe
                    else services.store.context_block(self.id, key))
        return block.model_copy(update={"stable_prefix": stable_prefix(previous or "", block.text)})


    aprofile = async_twin(profile)
    aset_profile = async_twin(set_profile)
    atime_zone = async_twin(time_zone)
    acontext = async_twin(context)
    aobserve = async_twin(observe)
    aobservation_log = async_twin(observation_log)
    aworking_memory = async_twin(working_memory)
    aupdate_working_memory = async_twin(update_working_memory)
    aworking_memory_versions = async_twin(working_memory_versions)
    arevert_working_memory = async_twin(revert_working_memory)
    aset_working_memory_format = async_twin(set_working_memory_format)
    aworking_memory_format = async_twin(working_memory_format)
