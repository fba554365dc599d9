"""The context routes under /v1/banks/{bank_id}: working memory, its versions and format, the observation log, and
the context block of a turn."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from hindsight.memory_context.block import ContextBlock
from hindsight.memory_context.log import ObserveReport
from hindsight.models import BANK_SCOPE, LogEntry, WorkingMemory, WorkingMemoryFormat
from hindsight.server.routes_inspect import Limit, Offset, sliced
from hindsight.server.schemas import ContextBody, FormatBody, ObserveBody, Page, RevertBody, WorkingMemoryBody
from hindsight.server.state import Server, Who

router = APIRouter(prefix="/v1/banks/{bank_id}", tags=["context"])
Scope = Annotated[str, Query(description='"bank" (shared by every thread) or a thread id')]
Thread = Annotated[str | None, Query(description="a thread id; default: the bank's log")]


@router.get("/working-memory")
async def working_memory(bank_id: str, server: Server, who: Who, scope: Scope = BANK_SCOPE) -> WorkingMemory:
    """The current version of a scope's working memory (version 0, the template, before any update)."""
    bank = await server.bank(who, bank_id, write=False)
    return await server.runner.run(lambda: bank.working_memory(scope))


@router.post("/working-memory")
async def update_working_memory(bank_id: str, body: WorkingMemoryBody, server: Server, who: Who) -> WorkingMemory:
    """Store a new version of a scope's working memory; under a schema, content that does not match it is refused
    (WorkingMemorySchemaError) and nothing changes."""
    bank = await server.bank(who, bank_id, write=True)
    return await server.runner.in_lane(bank_id, lambda: bank.update_working_memory(body.content, body.scope,
                                                                                   body.note))


@router.get("/working-memory/versions")
async def working_memory_versions(bank_id: str, server: Server, who: Who, scope: Scope = BANK_SCOPE,
                                  limit: Limit = 100, offset: Offset = 0) -> Page[WorkingMemory]:
    """Every stored version of a scope's working memory, oldest first, a page at a time."""
    bank = await server.bank(who, bank_id, write=False)
    return sliced(await server.runner.run(lambda: bank.working_memory_versions(scope)), offset, limit)


@router.post("/working-memory/revert")
async def revert_working_memory(bank_id: str, body: RevertBody, server: Server, who: Who) -> WorkingMemory:
    """Restore a version (0: the template) as a new version; an unknown version is VersionNotFoundError (404)."""
    bank = await server.bank(who, bank_id, write=True)
    return await server.runner.in_lane(bank_id, lambda: bank.revert_working_memory(body.version, body.scope,
                                                                                   body.note))


@router.get("/working-memory/format")
async def working_memory_format(bank_id: str, server: Server, who: Who) -> WorkingMemoryFormat:
    bank = await server.bank(who, bank_id, write=False)
    return await server.runner.run(bank.working_memory_format)


@router.put("/working-memory/format")
async def set_working_memory_format(bank_id: str, body: FormatBody, server: Server,
                                   who: Who) -> WorkingMemoryFormat:
    """Make every scope's working memory markdown from `template`, or JSON checked by `json_schema`; refused while
    a scope's current content would not fit."""
    bank = await server.bank(who, bank_id, write=True)
    return await server.runner.in_lane(bank_id, lambda: bank.set_working_memory_format(body.template,
                                                                                       body.json_schema))


@router.post("/observe")
async def observe(bank_id: str, body: ObserveBody, server: Server, who: Who) -> ObserveReport:
    """Write what people said in the units not yet observed into the log (the bank's, or a thread's)."""
    bank = await server.bank(who, bank_id, write=True)
    return await server.runner.in_lane(bank_id, lambda: bank.observe(body.thread_id))


@router.get("/observations")
async def observation_log(bank_id: str, server: Server, who: Who, thread_id: Thread = None, limit: Limit = 100,
                          offset: Offset = 0) -> Page[LogEntry]:
    """The observation log of the bank (or of a thread), in its order, a page at a time."""
    bank = await server.bank(who, bank_id, write=False)
    return sliced(await server.runner.run(lambda: bank.observation_log(thread_id)), offset, limit)


@router.post("/context")
async def context(bank_id: str, body: ContextBody, server: Server, who: Who) -> ContextBlock:
    """The context block of a turn. It observes first (a write, in the bank's lane) unless `observe` is false."""
    bank = await server.bank(who, bank_id, write=body.observe)

    def build() -> ContextBlock:
        return bank.context(body.query, body.thread_id, body.budget, body.query_time, observe=body.observe)

    return await (server.runner.in_lane(bank_id, build) if body.observe else server.runner.run(build))
