"""A bank out and back in: GET /v1/banks/{bank_id}/export as JSON Lines, POST .../import of the same."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator
from typing import IO

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from hindsight.server.state import Server, Who
from hindsight.store.transfer import ImportResult

router = APIRouter(prefix="/v1/banks/{bank_id}", tags=["transfer"])
NDJSON = "application/x-ndjson"
# An export is held in memory up to this size, then in a temporary file.
SPOOL_BYTES = 8 * 1024 * 1024
CHUNK_BYTES = 256 * 1024


@router.get("/export", response_class=StreamingResponse, responses={200: {"content": {NDJSON: {}}}})
async def export(bank_id: str, server: Server, who: Who) -> StreamingResponse:
    """The bank as JSON Lines: a header, then its rows; `POST .../import` reads it back."""
    bank = await server.bank(who, bank_id, write=False)

    def spool() -> IO[bytes]:
        # Written whole, in the bank's lane, before the answer starts: a failure is still an error status rather
        # than a cut stream.
        out = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115 - closed once streamed
        for line in server.engine.export_bank(bank.id):
            out.write(line.encode("utf-8"))
        out.seek(0)
        return out

    spooled = await server.runner.in_lane(bank_id, spool)

    async def body() -> AsyncIterator[bytes]:
        try:
            while chunk := await server.runner.run(lambda: spooled.read(CHUNK_BYTES)):
                yield chunk
        finally:
            spooled.close()

    return StreamingResponse(body(), media_type=NDJSON)


@router.post("/import", openapi_extra={"requestBody": {"content": {NDJSON: {}}, "required": True}})
async def import_bank(bank_id: str, request: Request, server: Server, who: Who) -> ImportResult:
    """Create the bank from an export (JSON Lines in the body); 409 when it exists, and nothing is written."""
    who.check(bank_id, write=True)
    body = await request.body()
    return await server.runner.in_lane(
        bank_id, lambda: server.engine.import_bank(body.splitlines(keepends=True), bank_id=bank_id))
