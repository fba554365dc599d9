"""Errors as HTTP responses: a typed error keeps its type and message, with a fitting status; nothing else leaks."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from hindsight import errors as e
from hindsight.server.schemas import ErrorBody, ErrorInfo

log = logging.getLogger(__name__)

# The first class an error is an instance of gives its status, so subclasses come before their bases.
STATUS: list[tuple[type[e.HindsightError], int]] = [
    (e.NotAuthenticatedError, 401),
    (e.AccessDeniedError, 403),
    (e.ContentTooLargeError, 413),
    (e.InvalidUnitIdError, 404),
    (e.BankNotFoundError, 404),
    (e.UnitNotFoundError, 404),
    (e.DocumentNotFoundError, 404),
    (e.EntityNotFoundError, 404),
    (e.OperationNotFoundError, 404),
    (e.VersionNotFoundError, 404),
    (e.InvalidInputError, 400),
    (e.BankExistsError, 409),
    (e.EmbedderMismatchError, 409),
    (e.LLMNotConfiguredError, 503),
    (e.LLMError, 502),
    (e.ExtractionError, 502),
    (e.StoreClosedError, 503),
    (e.DiskFullError, 507),
]
# What the type of a framework-level failure is called in an error body.
_HTTP_TYPES = {400: "InvalidInputError", 401: "NotAuthenticatedError", 404: "NotFoundError",
               405: "MethodNotAllowedError", 413: "ContentTooLargeError"}


def status_of(exc: e.HindsightError) -> int:
    return next((status for cls, status in STATUS if isinstance(exc, cls)), 500)


def error_info(exc: BaseException) -> ErrorInfo:
    """What a client may learn of an error: a typed error's class and message; of anything else, nothing."""
    if isinstance(exc, e.HindsightError):
        # str() of a KeyError subclass quotes its message
        message = exc.args[0] if len(exc.args) == 1 and isinstance(exc.args[0], str) else str(exc)
        return ErrorInfo(type=type(exc).__name__, message=message)
    return ErrorInfo(type="InternalError", message="the server failed; its log has the details")


def http_info(exc: HTTPException) -> ErrorInfo:
    """The error body of a failure the framework raised (an unknown route, a body too large)."""
    return ErrorInfo(type=_HTTP_TYPES.get(exc.status_code, "HTTPError"), message=str(exc.detail))


def error_response(status: int, info: ErrorInfo) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse(ErrorBody(error=info).model_dump(), status_code=status, headers=headers)


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors()[:10]:
        where = ".".join(str(x) for x in err.get("loc", ()) if x != "body") or "body"
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    return "; ".join(parts) or "the request is not valid"


def install(app: FastAPI) -> None:
    """Map every failure of a request to an error body."""

    async def hindsight_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, e.HindsightError)
        status = status_of(exc)
        if status >= 500:
            log.error("%s: %s", type(exc).__name__, exc)
        return error_response(status, error_info(exc))

    async def invalid_request(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return error_response(422, ErrorInfo(type="InvalidInputError", message=_validation_message(exc)))

    async def http_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, HTTPException)
        return error_response(exc.status_code, http_info(exc))

    async def unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected failure of a request", exc_info=exc)
        return error_response(500, error_info(exc))

    app.add_exception_handler(e.HindsightError, hindsight_error)
    app.add_exception_handler(RequestValidationError, invalid_request)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(Exception, unexpected)
