"""A bank on a hindsight server: the methods of the embedded `Bank`, with the same arguments and results, and their
async twins. Each call is written once, as a flow (client/transport.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any, Literal, TypeVar, overload

from pydantic import BaseModel

from hindsight import validate
from hindsight.client.operations import result_of, wait_for
from hindsight.client.transport import (
    Flow,
    Param,
    Request,
    Transport,
    awaiting,
    blocking,
    body,
    call,
    decode,
    iso,
    path,
)
from hindsight.errors import InvalidInputError
from hindsight.forget import ForgetResult
from hindsight.integrity import IntegrityReport
from hindsight.memory_context.block import ContextBlock
from hindsight.memory_context.log import ObserveReport
from hindsight.memory_context.working import WorkingContent
from hindsight.models import (
    BANK_SCOPE,
    BankProfile,
    BankStats,
    Content,
    Entity,
    Link,
    LogEntry,
    MemoryUnit,
    Network,
    RetainResult,
    TimeArg,
    WorkingMemory,
    WorkingMemoryFormat,
)
from hindsight.recall.request import DEFAULT_BUDGET
from hindsight.recall.types import RecallResult
from hindsight.reflect.types import PendingProgress, PendingReport, ReflectResult
from hindsight.retain.pipeline import RetainRequest
from hindsight.server.schemas import (
    BankInfo,
    ContextBody,
    ForgetBody,
    FormatBody,
    ObserveBody,
    Operation,
    Page,
    ReasonBody,
    RecallBody,
    ReflectBody,
    RetainBody,
    RetainResponse,
    RevertBody,
    WorkingMemoryBody,
)

T = TypeVar("T")
# How often process_pending reads the queue to report progress.
PROGRESS_TICK_S = 1.0


def pages(page_size: int, where: str, page: type[Page[T]], params: dict[str, Param], limit: int | None,
          offset: int) -> Flow[list[T]]:
    """`limit` items from `offset` on (all of them when None), a page at a time."""
    found: list[T] = []
    at: int | None = validate.count(offset, "offset")
    limit = None if limit is None else validate.count(limit, "limit")
    while at is not None and (limit is None or len(found) < limit):
        size = page_size if limit is None else min(page_size, limit - len(found))
        response = yield Request("GET", where, params={**params, "limit": size, "offset": at})
        got = decode(response, page)
        found += got.items
        at = got.next_offset
    return found


class RemoteBank:
    """One bank of a server. Get it from `HindsightClient.bank(bank_id)`; it has the methods of `Bank`."""

    def __init__(self, transport: Transport, bank_id: str) -> None:
        self._transport = transport
        self.id = bank_id

    def __repr__(self) -> str:
        return f"RemoteBank({self.id!r} at {self._transport.url})"

    def _path(self, *rest: str) -> str:
        return path("banks", self.id, *rest)

    def _info(self) -> Flow[BankInfo]:
        return call(Request("GET", self._path()), BankInfo)

    # -- profile -----------------------------------------------------------------------------
    def _profile(self) -> Flow[BankProfile]:
        return (yield from self._info()).profile

    def _time_zone(self) -> Flow[str]:
        """The IANA name of the zone the bank's dates are in, as `Bank.time_zone`."""
        return (yield from self._info()).timezone

    def _set_profile(self, profile: BankProfile) -> Flow[None]:
        if not isinstance(profile, BankProfile):
            raise InvalidInputError(f"profile must be a BankProfile, got {type(profile).__name__}")
        yield Request("PUT", self._path(), body=profile)

    # -- working memory, the observation log and the context block -----------------------------
    def _working_memory(self, scope: str = BANK_SCOPE) -> Flow[WorkingMemory]:
        """The current working memory of `scope`, as `Bank.working_memory`."""
        params: dict[str, Param] = {"scope": validate.scope(scope)}
        return call(Request("GET", self._path("working-memory"), params=params), WorkingMemory)

    def _update_working_memory(self, content: WorkingContent, scope: str = BANK_SCOPE,
                               note: str | None = None) -> Flow[WorkingMemory]:
        """Store a new version of the working memory of `scope`, as `Bank.update_working_memory`: markdown, or
        under a schema JSON (text, a mapping or a model instance)."""
        data = content.model_dump(mode="json") if isinstance(content, BaseModel) else content
        data = dict(data) if isinstance(data, Mapping) else data
        sent = body(WorkingMemoryBody, content=data, scope=scope, note=note)
        return call(Request("POST", self._path("working-memory"), body=sent), WorkingMemory)

    def _working_memory_versions(self, scope: str = BANK_SCOPE) -> Flow[list[WorkingMemory]]:
        """Every stored version of the working memory of `scope`, oldest first, read a page at a time."""
        return pages(self._transport.page_size, self._path("working-memory", "versions"), Page[WorkingMemory],
                     {"scope": validate.scope(scope)}, None, 0)

    def _revert_working_memory(self, version: int, scope: str = BANK_SCOPE,
                               note: str | None = None) -> Flow[WorkingMemory]:
        """Restore version `version` (0: the template) of the working memory of `scope`, as a new version."""
        sent = body(RevertBody, version=version, scope=scope, note=note)
        return call(Request("POST", self._path("working-memory", "revert"), body=sent), WorkingMemory)

    def _set_working_memory_format(self, template: str | None = None,
                                   schema: type[BaseModel] | Mapping[str, Any] | None = None,
                                   ) -> Flow[WorkingMemoryFormat]:
        """Make the bank's working memory markdown from `template`, or JSON that `schema` (a pydantic model class or
        a JSON schema) checks, as `Bank.set_working_memory_format`."""
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            schema = schema.model_json_schema()
        sent = body(FormatBody, template=template, json_schema=dict(schema) if isinstance(schema, Mapping) else schema)
        return call(Request("PUT", self._path("working-memory", "format"), body=sent), WorkingMemoryFormat)

    def _working_memory_format(self) -> Flow[WorkingMemoryFormat]:
        return call(Request("GET", self._path("working-memory", "format")), WorkingMemoryFormat)

    def _observe(self, thread_id: str | None = None) -> Flow[ObserveReport]:
        """Write what people said in the units not yet observed into the observation log (of the bank, or of the
        thread), as `Bank.observe`."""
        return call(Request("POST", self._path("observe"), body=body(ObserveBody, thread_id=thread_id)),
                    ObserveReport)

    def _observation_log(self, thread_id: str | None = None) -> Flow[list[LogEntry]]:
        """The observation log of the bank (or of a thread), in its order, read a page at a time."""
        params: dict[str, Param] = {} if thread_id is None else {"thread_id": validate.thread_id(thread_id)}
        return pages(self._transport.page_size, self._path("observations"), Page[LogEntry], params, None, 0)

    def _context(self, query: str | None = None, thread_id: str | None = None, budget: int | None = None,
                 query_time: datetime | str | None = None, observe: bool = True) -> Flow[ContextBlock]:
        """The context for one turn, as `Bank.context`: profile, working memory, the observation log (observed first
        unless `observe` is False, which a read-only key needs) and the memories recalled for `query`."""
        sent = body(ContextBody, query=query, thread_id=thread_id, budget=budget, query_time=iso(query_time),
                    observe=observe)
        return call(Request("POST", self._path("context"), body=sent), ContextBlock)

    # -- retain and forget -------------------------------------------------------------------
    def _retain(self, content: Content, timestamp: TimeArg | None, context: str | None, document_id: str | None,
                wait: bool) -> Flow[RetainResult | Operation]:
        sent = body(RetainBody, content=content, timestamp=iso(timestamp), context=context, document_id=document_id,
                    wait=wait)
        response = yield Request("POST", self._path("retain"), body=sent)
        if response.status_code == 202:  # answered before it was done
            return decode(response, Operation)
        return decode(response, RetainResponse).results[0]

    @overload
    def retain(self, content: Content, timestamp: TimeArg | None = None, context: str | None = None,
               document_id: str | None = None, *, wait: Literal[True] = True) -> RetainResult: ...

    @overload
    def retain(self, content: Content, timestamp: TimeArg | None = None, context: str | None = None,
               document_id: str | None = None, *, wait: Literal[False]) -> Operation: ...

    def retain(self, content: Content, timestamp: TimeArg | None = None, context: str | None = None,
               document_id: str | None = None, *, wait: bool = True) -> RetainResult | Operation:
        """Store a conversation (list of Message) or text, as `Bank.retain`. With `wait=False` the server answers at
        once with an `Operation`, to wait for with `HindsightClient.wait`; retains of a bank apply in order."""
        return self._transport.run(self._retain(content, timestamp, context, document_id, wait))

    @overload
    async def aretain(self, content: Content, timestamp: TimeArg | None = None, context: str | None = None,
                      document_id: str | None = None, *, wait: Literal[True] = True) -> RetainResult: ...

    @overload
    async def aretain(self, content: Content, timestamp: TimeArg | None = None, context: str | None = None,
                      document_id: str | None = None, *, wait: Literal[False]) -> Operation: ...

    async def aretain(self, content: Content, timestamp: TimeArg | None = None, context: str | None = None,
                      document_id: str | None = None, *, wait: bool = True) -> RetainResult | Operation:
        """Async twin of `retain`."""
        return await self._transport.arun(self._retain(content, timestamp, context, document_id, wait))

    def _retain_many(self, requests: Iterable[RetainRequest]) -> Flow[list[RetainResult]]:
        """Retain several documents, as `Bank.retain_many`: all are checked before any is written."""
        items = list(requests)
        if not all(isinstance(r, RetainRequest) for r in items):
            raise InvalidInputError("retain_many takes RetainRequest items")
        if not items:
            return []
        sent = body(RetainBody, items=[{"content": r.content, "timestamp": iso(r.timestamp), "context": r.context,
                                        "document_id": r.document_id} for r in items])
        response = yield Request("POST", self._path("retain"), body=sent)
        return decode(response, RetainResponse).results

    def _forget(self, unit_id: str | None = None, *, entity: str | None = None,
                document: str | None = None) -> Flow[ForgetResult]:
        """Remove a unit, every unit of a `document`, or every unit that mentions an `entity`, with what derives from
        them, as `Bank.forget`."""
        if unit_id is None:
            request = Request("POST", self._path("forget"), body=body(ForgetBody, entity=entity, document=document))
        elif entity is None and document is None:
            request = Request("DELETE", self._path("units", validate.unit_id(unit_id)))
        else:
            raise InvalidInputError("forget takes exactly one of a unit id, document=... and entity=...")
        return call(request, ForgetResult)

    def _check(self) -> Flow[IntegrityReport]:
        """Check that the store is consistent and that both indexes hold exactly the bank's units."""
        return call(Request("GET", self._path("check")), IntegrityReport)

    # -- recall and reflect ------------------------------------------------------------------
    def _recall(self, query: str, budget: int = DEFAULT_BUDGET, networks: Iterable[Network | str] | None = None,
                query_time: datetime | str | None = None, as_of: datetime | str | None = None,
                top_k: int | None = None) -> Flow[RecallResult]:
        """Units relevant to `query`, ranked and packed into `budget` tokens, each explained, as `Bank.recall`."""
        sent = body(RecallBody, query=query, budget=budget, networks=None if networks is None else list(networks),
                    query_time=iso(query_time), as_of=iso(as_of), top_k=top_k)
        return call(Request("POST", self._path("recall"), body=sent), RecallResult)

    def _reflect(self, query: str, budget: int | None = None,
                 query_time: datetime | str | None = None) -> Flow[ReflectResult]:
        """Answer `query` in the bank's voice from its memories, as `Bank.reflect`. Needs an LLM on the server."""
        sent = body(ReflectBody, query=query, budget=budget, query_time=iso(query_time))
        return call(Request("POST", self._path("reflect"), body=sent), ReflectResult)

    def _process_pending(self, progress: Callable[[PendingProgress], None] | None = None) -> Flow[PendingReport]:
        """Do the reasoning retain queued for this bank now, as `Bank.process_pending`: it runs on the server as an
        operation this call waits for; `progress` is called each second with how far the queue went down."""
        before = (yield from self._info()).pending if progress is not None else 0
        started = yield from call(Request("POST", self._path("reason"), body=ReasonBody(wait=False)), Operation)
        if progress is None:
            return result_of((yield from wait_for(started.id)), PendingReport)
        done = yield from wait_for(started.id, tick_s=PROGRESS_TICK_S, between=lambda: self._progress(before, progress))
        yield from self._progress(before, progress)  # the last word: how far it went
        return result_of(done, PendingReport)

    def _progress(self, before: int, progress: Callable[[PendingProgress], None]) -> Flow[None]:
        left = (yield from self._info()).pending
        done = max(0, before - left)
        progress(PendingProgress(done=done, total=done + left))

    def _pending(self) -> Flow[int]:
        """The number of reasoning items queued for this bank; it runs nothing and waits for nothing."""
        return (yield from self._info()).pending

    # -- inspection --------------------------------------------------------------------------
    def _units(self, network: Network | str | None = None, limit: int | None = None,
               offset: int = 0) -> Flow[list[MemoryUnit]]:
        """The bank's units, oldest first: `limit` of them from `offset` (all when None), read a page at a time."""
        params: dict[str, Param] = {} if network is None else {"network": getattr(network, "value", network)}
        return pages(self._transport.page_size, self._path("units"), Page[MemoryUnit], params, limit, offset)

    def _get_unit(self, unit_id: str) -> Flow[MemoryUnit]:
        return call(Request("GET", self._path("units", validate.unit_id(unit_id))), MemoryUnit)

    def _entities(self) -> Flow[list[Entity]]:
        """Every entity of the bank, by name (as the embedded store lists them), read a page at a time."""
        found = yield from pages(self._transport.page_size, self._path("entities"), Page[Entity], {}, None, 0)
        return sorted(found, key=lambda e: e.name)

    def _links(self, unit_id: str) -> Flow[list[Link]]:
        where = self._path("links", validate.unit_id(unit_id))
        return pages(self._transport.page_size, where, Page[Link], {}, None, 0)

    def _stats(self) -> Flow[BankStats]:
        return call(Request("GET", self._path("stats")), BankStats)

    profile, aprofile = blocking(_profile), awaiting(_profile)
    set_profile, aset_profile = blocking(_set_profile), awaiting(_set_profile)
    time_zone, atime_zone = blocking(_time_zone), awaiting(_time_zone)
    retain_many, aretain_many = blocking(_retain_many), awaiting(_retain_many)
    forget, aforget = blocking(_forget), awaiting(_forget)
    check, acheck = blocking(_check), awaiting(_check)
    recall, arecall = blocking(_recall), awaiting(_recall)
    reflect, areflect = blocking(_reflect), awaiting(_reflect)
    process_pending, aprocess_pending = blocking(_process_pending), awaiting(_process_pending)
    pending, apending = blocking(_pending), awaiting(_pending)
    units, aunits = blocking(_units), awaiting(_units)
    get_unit, aget_unit = blocking(_get_unit), awaiting(_get_unit)
    entities, aentities = blocking(_entities), awaiting(_entities)
    links, alinks = blocking(_links), awaiting(_links)
    stats, astats = blocking(_stats), awaiting(_stats)
    working_memory, aworking_memory = blocking(_working_memory), awaiting(_working_memory)
    update_working_memory, aupdate_working_memory = blocking(_update_working_memory), awaiting(_update_working_memory)
    working_memory_versions = blocking(_working_memory_versions)
    aworking_memory_versions = awaiting(_working_memory_versions)
    revert_working_memory, arevert_working_memory = blocking(_revert_working_memory), awaiting(_revert_working_memory)
    set_working_memory_format = blocking(_set_working_memory_format)
    aset_working_memory_format = awaiting(_set_working_memory_format)
    working_memory_format, aworking_memory_format = blocking(_working_memory_format), awaiting(_working_memory_format)
    observe, aobserve = blocking(_observe), awaiting(_observe)
    observation_log, aobservation_log = blocking(_observation_log), awaiting(_observation_log)
    context, acontext = blocking(_context), awaiting(_context)
