"""The memory routes under /v1: banks, retain, recall, reflect, reasoning, forgetting, and operations."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse

from hindsight import __version__
from hindsight.bank import Bank
from hindsight.errors import OperationNotFoundError
from hindsight.forget import ForgetResult
from hindsight.models import BankProfile
from hindsight.recall.types import RecallResult
from hindsight.reflect.types import PendingReport, ReflectResult
from hindsight.retain.pipeline import RetainRequest
from hindsight.server.auth import Caller
from hindsight.server.schemas import (
    MAX_WAIT_S,
    BankInfo,
    BankList,
    Deleted,
    ForgetBody,
    Health,
    Operation,
    ReasonBody,
    RecallBody,
    ReflectBody,
    RetainBody,
    RetainResponse,
)
from hindsight.server.state import Server, ServerState, Who

router = APIRouter(prefix="/v1")


@router.get("/health", tags=["server"])
async def health(server: Server) -> Health:
    """Status and version; needs no key."""
    return Health(version=__version__, store=server.engine.config.store.backend)


# -- banks -----------------------------------------------------------------------------------------
@router.get("/banks", tags=["banks"])
async def list_banks(server: Server, who: Who) -> BankList:
    """The banks this key reaches."""
    return BankList(banks=who.visible(await server.runner.run(server.engine.banks)))


async def _info(server: ServerState, who: Caller, bank_id: str) -> BankInfo:
    bank = await server.bank(who, bank_id, write=False)
    return await server.runner.run(lambda: BankInfo(bank_id=bank.id, profile=bank.profile(),
                                                    timezone=bank.time_zone(), stats=bank.stats(),
                                                    pending=bank.pending()))


@router.get("/banks/{bank_id}", tags=["banks"])
async def get_bank(bank_id: str, server: Server, who: Who) -> BankInfo:
    """A bank's profile, the time zone its dates are in, counts, and how much background reasoning is queued."""
    return await _info(server, who, bank_id)


@router.put("/banks/{bank_id}", tags=["banks"])
async def put_bank(bank_id: str, profile: BankProfile, server: Server,
                   who: Who) -> BankInfo:
    """Create the bank, or replace its profile (with `timezone`, the clock its dates are shown on and naive times
    are read on; no stored instant changes)."""
    who.check(bank_id, write=True)
    await server.runner.in_lane(bank_id, server.creating(bank_id, lambda bank: bank.set_profile(profile)))
    return await _info(server, who, bank_id)


@router.delete("/banks/{bank_id}", tags=["banks"])
async def delete_bank(bank_id: str, server: Server, who: Who) -> Deleted:
    """Remove the bank with every unit, entity and file of it."""
    who.check(bank_id, write=True)
    await server.runner.in_lane(bank_id, lambda: server.engine.delete_bank(bank_id))
    return Deleted(bank_id=bank_id)


# -- memory ----------------------------------------------------------------------------------------
@router.post("/banks/{bank_id}/retain", tags=["memory"], responses={202: {"model": Operation}})
async def retain(bank_id: str, body: RetainBody, server: Server,
                 who: Who) -> RetainResponse:
    """Retain one document or several (`items`), creating the bank if needed. Retains of one bank run in the order
    they arrive. With `"wait": false` the answer is 202 and an operation to read back."""
    who.check(bank_id, write=True)
    requests = [RetainRequest(i.content, i.timestamp, i.context, i.document_id) for i in body.requests()]
    # Bad content is refused before the bank is created, and before an operation is answered.
    await server.runner.run(lambda: server.engine.pipeline.validate(requests))

    def work(bank: Bank) -> RetainResponse:
        if body.items is None:
            r = requests[0]
            return RetainResponse(results=[bank.retain(r.content, r.timestamp, r.context, r.document_id)])
        return RetainResponse(results=bank.retain_many(requests))

    if not body.wait:
        op = await server.runner.run(lambda: server.runner.start(bank_id, "retain", server.creating(bank_id, work)))
        return JSONResponse(op.model_dump(mode="json"), status_code=202)  # type: ignore[return-value]
    return await server.runner.in_lane(bank_id, server.creating(bank_id, work))


@router.post("/banks/{bank_id}/recall", tags=["memory"])
async def recall(bank_id: str, body: RecallBody, server: Server,
                 who: Who) -> RecallResult:
    """The units relevant to the query, ranked and packed into `budget` tokens, each with its explanation."""
    bank = await server.bank(who, bank_id, write=False)
    return await server.runner.run(lambda: bank.recall(
        body.query, budget=body.budget, networks=body.networks, query_time=body.query_time, as_of=body.as_of,
        top_k=body.top_k))


@router.post("/banks/{bank_id}/reflect", tags=["memory"])
async def reflect(bank_id: str, body: ReflectBody, server: Server,
                  who: Who) -> ReflectResult:
    """An answer in the bank's voice from its memories, cited by unit id; the opinions it shows are stored.
    Needs an LLM (503 without one)."""
    bank = await server.bank(who, bank_id, write=True)
    return await server.runner.run(lambda: bank.reflect(body.query, body.budget, body.query_time), llm=True)


@router.post("/banks/{bank_id}/reason", tags=["memory"], responses={202: {"model": Operation}})
async def reason(bank_id: str, body: ReasonBody, server: Server,
                 who: Who) -> PendingReport:
    """Run the reasoning retain queued (opinion reinforcement, observations) now, and report it. Needs an LLM.
    With `"wait": false` the answer is 202 and an operation to wait on."""
    bank = await server.bank(who, bank_id, write=True)
    if not body.wait:
        op = await server.runner.run(lambda: server.runner.start(bank_id, "reason", bank.process_pending))
        return JSONResponse(op.model_dump(mode="json"), status_code=202)  # type: ignore[return-value]
    return await server.runner.run(bank.process_pending, llm=True)


@router.get("/operations/{operation_id}", tags=["memory"])
async def get_operation(operation_id: str, server: Server, who: Who,
                        wait: Annotated[float, Query(ge=0.0, le=MAX_WAIT_S)] = 0.0) -> Operation:
    """An operation: pending, done (with its result) or failed (with its error). `wait` holds the request up to
    that many seconds until it finishes."""
    op = await server.runner.wait(operation_id, wait)
    if op is None:
        raise OperationNotFoundError(f"no operation {operation_id!r} (finished ones are kept "
                                     f"{server.runner.keep_s:g} s)")
    who.check(op.bank_id, write=False)
    return op


# -- forgetting ------------------------------------------------------------------------------------
@router.delete("/banks/{bank_id}/units/{unit_id}", tags=["forget"])
async def forget_unit(bank_id: str, unit_id: str, server: Server,
                      who: Who) -> ForgetResult:
    """Forget one unit, and what derives from it; says what was removed."""
    bank = await server.bank(who, bank_id, write=True)
    return await server.runner.in_lane(bank_id, lambda: bank.forget(unit_id))


@router.post("/banks/{bank_id}/forget", tags=["forget"])
async def forget(bank_id: str, body: ForgetBody, server: Server,
                 who: Who) -> ForgetResult:
    """Forget every unit of a document, or every unit that mentions an entity; says what was removed."""
    bank = await server.bank(who, bank_id, write=True)
    return await server.runner.in_lane(bank_id, lambda: bank.forget(entity=body.entity, document=body.document))
