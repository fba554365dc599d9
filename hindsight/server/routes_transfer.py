"""A bank out and back in: GET /v1/banks/{bank_id}/export as JSON Lines, POST .../import of the same."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from hindsight.server.state import Server, Who
from hindsight.store.transfer import ImportResult

router = APIRouter(prefix="/v1/banks/{bank_id}", tags=["transfer"])
NDJSON = "application/x-ndjson"
CHUNK_LINES = 500


@router.get("/export", response_class=StreamingResponse, responses={200: {"content": {NDJSON: {}}}})
async def export(bank_id: str, server: Server, who: Who) -> StreamingResponse:
    """The bank as JSON Lines: a header, then its rows; `POST .../import` reads it back."""
    bank = await server.bank(who, bank_id, write=False)
    # The bank is read whole, in its lane, before the answer starts: a failure is still an error status rather than
    # a cut stream. The lines are then made from memory as they are sent.
    lines = await server.runner.in_lane(bank_id, lambda: server.engine.export_bank(bank.id))

    async def body() -> AsyncIterator[bytes]:
        while chunk := await server.runner.run(lambda: "".join(itertools.islice(lines, CHUNK_LINES))):
            yield chunk.encode("utf-8")

    return StreamingResponse(body(), media_type=NDJSON)


@router.post("/import", openapi_extra={"requestBody": {"content": {NDJSON: {}}, "required": True}})
async def import_bank(bank_id: str, request: Request, server: Server, who: Who) -> ImportResult:
    """Create the bank from an export (JSON Lines in the body); 409 when it exists, and nothing is written."""
    who.check(bank_id, write=True)
    body = await request.body()
    return await server.runner.in_lane(
        bank_id, lambda: server.engine.import_bank(body.splitlines(keepends=True), bank_id=bank_id))
