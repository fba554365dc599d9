"""HindsightClient: the memory a `hindsight serve` holds, with the surface of the embedded `Hindsight`."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

from pydantic import BaseModel, ValidationError

from hindsight import validate
from hindsight.client.bank import RemoteBank
from hindsight.client.operations import poll, wait_for
from hindsight.client.transport import Flow, Lines, Request, Transport, awaiting, blocking, call, joined, path
from hindsight.config.server import ENV_API_KEY
from hindsight.errors import BankNotFoundError, InvalidInputError
from hindsight.models import BankProfile
from hindsight.server.schemas import MAX_PAGE, BankList, Health, Operation
from hindsight.store.transfer import ImportResult

DEFAULT_TIMEOUT_S = 300.0  # a reflect with a small local model takes minutes on a laptop's CPU
NDJSON = "application/x-ndjson"


class _Header(BaseModel):
    """What an import reads from the first line of an export without a bank id of its own."""

    bank_id: str


class HindsightClient:
    """A hindsight server's memory, with the methods of the embedded `Hindsight` and their async twins: `bank(id)`
    gives a `RemoteBank` with the methods of `Bank`, taking the same arguments and returning the same models, so
    moving an agent from `Hindsight(path)` to `HindsightClient(url)` changes one line.

    `api_key` defaults to $HINDSIGHT_API_KEY. Failures are the engine's typed errors: an error the server answers
    is raised as the class it names (BankNotFoundError, AccessDeniedError, ...), and a server that cannot be reached
    is ServerUnreachableError. Use as a context manager (`with` or `async with`), or call close() / aclose()."""

    def __init__(self, url: str, api_key: str | None = None, timeout: float = DEFAULT_TIMEOUT_S,
                 page_size: int = MAX_PAGE) -> None:
        if not 1 <= page_size <= MAX_PAGE:
            raise InvalidInputError(f"page_size must be between 1 and {MAX_PAGE}, got {page_size}")
        key = api_key if api_key is not None else os.environ.get(ENV_API_KEY)
        self._transport = Transport(url, key or None, timeout, page_size)

    @property
    def url(self) -> str:
        return self._transport.url

    def __repr__(self) -> str:
        return f"HindsightClient({self.url!r})"

    # -- banks -------------------------------------------------------------------------------
    def _bank(self, bank_id: str, create: bool = True) -> Flow[RemoteBank]:
        """A bank, created unless create=False (then a missing bank is BankNotFoundError)."""
        validate.bank_id(bank_id)
        try:
            yield Request("GET", path("banks", bank_id))
        except BankNotFoundError:
            if not create:
                raise
            # The API creates a bank with its profile: a profile another client set since the GET would be replaced.
            yield Request("PUT", path("banks", bank_id), body=BankProfile())
        return RemoteBank(self._transport, bank_id)

    def _banks(self) -> Flow[list[str]]:
        """The ids of the banks the key reaches."""
        return (yield from call(Request("GET", path("banks")), BankList)).banks

    def _delete_bank(self, bank_id: str) -> Flow[None]:
        """Remove every unit, entity and file of a bank (BankNotFoundError without it)."""
        yield Request("DELETE", path("banks", validate.bank_id(bank_id)))

    def _health(self) -> Flow[Health]:
        """The server's status, version and store backend; needs no key."""
        return call(Request("GET", path("health")), Health)

    # -- background work ---------------------------------------------------------------------
    def _operation(self, operation_id: str, wait: float = 0.0) -> Flow[Operation]:
        """An operation as it is now, or once it finished if that is within `wait` seconds (at most 60); a failed
        one is returned with its error, not raised."""
        return poll(operation_id, wait)

    def _wait(self, operation: Operation | str, timeout: float | None = None) -> Flow[Operation]:
        """Wait until the operation finished and return it, done, with its result; if it failed, raise the typed
        error it failed with (as the call would have with wait=True). OperationTimeoutError after `timeout` seconds
        (None: no limit); the operation goes on."""
        return wait_for(operation if isinstance(operation, str) else operation.id, timeout)

    # -- export and import -------------------------------------------------------------------
    def export_bank(self, bank_id: str) -> Iterator[str]:
        """The bank as JSON Lines, each ending in a newline, streamed as the server sends them; as
        `Hindsight.export_bank`, a missing bank is BankNotFoundError here, before the first line."""
        return self._transport.stream(Request("GET", path("banks", validate.bank_id(bank_id), "export")))

    def _export_whole(self, bank_id: str) -> Flow[Iterator[str]]:
        """The bank's export, read whole, as its lines."""
        response = yield Request("GET", path("banks", validate.bank_id(bank_id), "export"))
        lines = Lines()
        return iter([*lines.feed(response.content), *lines.end()])

    def _import_bank(self, lines: Iterable[str | bytes], bank_id: str | None = None) -> Flow[ImportResult]:
        """Create a bank from the lines of an export (`bank_id`, or the exported bank's id when None), as
        `Hindsight.import_bank`: BankExistsError when the server has it, and nothing is written."""
        data = joined(lines)
        target = validate.bank_id(bank_id if bank_id is not None else _exported_bank(data))
        return call(Request("POST", path("banks", target, "import"), content=data, content_type=NDJSON), ImportResult)

    bank, abank = blocking(_bank), awaiting(_bank)
    banks, abanks = blocking(_banks), awaiting(_banks)
    delete_bank, adelete_bank = blocking(_delete_bank), awaiting(_delete_bank)
    health, ahealth = blocking(_health), awaiting(_health)
    operation, aoperation = blocking(_operation), awaiting(_operation)
    wait, await_ = blocking(_wait), awaiting(_wait)
    aexport_bank = awaiting(_export_whole)
    import_bank, aimport_bank = blocking(_import_bank), awaiting(_import_bank)

    # -- lifecycle ---------------------------------------------------------------------------
    def close(self) -> None:
        """Close the blocking connections (aclose() closes the async ones too)."""
        self._transport.close()

    async def aclose(self) -> None:
        await self._transport.aclose()

    def __enter__(self) -> HindsightClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> HindsightClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _exported_bank(data: bytes) -> str:
    try:
        return _Header.model_validate_json(data.split(b"\n", 1)[0]).bank_id
    except ValidationError:
        raise InvalidInputError("line 1 is not the header of a hindsight export (give the bank id to import it "
                                "as)") from None
