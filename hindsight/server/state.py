"""What every route reads: the open engine, the keys, the pools, and the caller of the request."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, TypeVar

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from hindsight.bank import Bank
from hindsight.engine import Hindsight
from hindsight.server.auth import Caller, Keys
from hindsight.server.operations import Runner

T = TypeVar("T")


@dataclass
class ServerState:
    """One server process: its engine, its keys and the pools its requests run on."""

    engine: Hindsight
    keys: Keys
    runner: Runner

    async def bank(self, caller: Caller, bank_id: str, write: bool) -> Bank:
        """The bank, once the caller may read it (or write it); an unknown bank is BankNotFoundError."""
        caller.check(bank_id, write)
        return await self.runner.run(lambda: self.engine.bank(bank_id, create=False))

    def creating(self, bank_id: str, work: Callable[[Bank], T]) -> Callable[[], T]:
        """`work` as a write that creates the bank if needed, and removes it again if the write fails (for the
        bank's lane, where writes of one bank run one at a time)."""
        return lambda: self.engine.on_bank(bank_id, work)


def state(request: Request) -> ServerState:
    server: ServerState = request.app.state.server
    return server


# auto_error off: a missing key is the API's own 401 body, and with no keys configured none is needed.
_bearer = HTTPBearer(auto_error=False, description="a key of `server.keys` or HINDSIGHT_API_KEY")


def caller(request: Request, _: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> Caller:
    """The key of the request (NotAuthenticatedError, 401, when keys are on and it has none or an unknown one)."""
    return state(request).keys.caller(request.headers.get("authorization"))


Server = Annotated[ServerState, Depends(state)]
Who = Annotated[Caller, Depends(caller)]
