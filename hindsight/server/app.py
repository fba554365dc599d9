"""The FastAPI app of `hindsight serve`: one memory, its routes under /v1, MCP at /mcp, errors as typed bodies."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hindsight import __version__
from hindsight.config import HindsightConfig
from hindsight.engine import Hindsight
from hindsight.errors import NotAuthenticatedError
from hindsight.server import errors, routes, routes_context, routes_inspect, routes_transfer
from hindsight.server.auth import Keys
from hindsight.server.mcp import build_mcp
from hindsight.server.operations import Runner
from hindsight.server.state import ServerState

log = logging.getLogger(__name__)
# How `serve --workers N` hands the memory to its worker processes, which each build the app.
ENV_SERVE_DIR = "HINDSIGHT_SERVE_DIR"
ENV_SERVE_CONFIG = "HINDSIGHT_SERVE_CONFIG"


class BodyLimit:
    """413 for a request body over `max_bytes`: at once from Content-Length, else once the body read passes it."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        too_large = HTTPException(413, f"the request body is over the server's limit of {self.max_bytes} bytes "
                                       "(server.max_body_bytes)")
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_bytes:
            await errors.error_response(413, errors.http_info(too_large))(scope, receive, send)
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.max_bytes:
                raise too_large  # the app's handler answers 413 before anything is read into the memory
            return message

        await self.app(scope, counted, send)


class McpKey:
    """401 at /mcp for a request without a known key, as the API answers; the tools then check the key's banks."""

    def __init__(self, app: ASGIApp, keys: Keys) -> None:
        self.app = app
        self.keys = keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith("/mcp") and self.keys.enabled:
            authorization = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
            try:
                self.keys.caller(authorization)
            except NotAuthenticatedError as exc:
                await errors.error_response(401, errors.error_info(exc))(scope, receive, send)
                return
        await self.app(scope, receive, send)


def create_app(path: str | os.PathLike[str], config: HindsightConfig | None = None) -> FastAPI:
    """The app serving the memory at `path`; the engine opens when the app starts and closes when it stops."""
    config = config or HindsightConfig()
    keys = Keys(config.server.keys)  # a key that cannot be read fails here, before the server starts

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        engine = await asyncio.to_thread(Hindsight, Path(path), config)
        # Load the models now: /v1/health answers once the server can serve, and no request pays for the load.
        await asyncio.to_thread(lambda: (engine.pipeline, engine.recall_pipeline))
        runner = Runner(engine.store, config.server.threads, config.server.llm_threads,
                        config.server.keep_operations_s)
        app.state.server = ServerState(engine, keys, runner)
        mcp = build_mcp(engine, config.server.mcp,
                        caller=lambda request: keys.caller(request.headers.get("authorization") if request else None),
                        dispatch=runner.dispatch)
        # The tools are routes of this app at /mcp (a mount would answer /mcp with a redirect); the SDK checks the
        # Host header against the address served.
        app.router.routes.extend(mcp.streamable_http_app(streamable_http_path="/mcp", host=config.server.host).routes)
        log.info("serving %s (store %s)", path, config.store.backend)
        try:
            async with mcp.session_manager.run():
                yield
        finally:
            await asyncio.to_thread(runner.close)
            await asyncio.to_thread(engine.close)

    app = FastAPI(title="hindsight", version=__version__, lifespan=lifespan,
                  description="Long-term memory for AI agents: retain, recall and reflect over banks of memories.")
    errors.install(app)
    app.include_router(routes.router)
    app.include_router(routes_inspect.router)
    app.include_router(routes_transfer.router)
    app.include_router(routes_context.router)
    app.add_middleware(McpKey, keys=keys)
    app.add_middleware(BodyLimit, max_bytes=config.server.max_body_bytes)
    return app


def app_from_env() -> FastAPI:
    """The app of one worker process of `hindsight serve --workers N`."""
    return create_app(os.environ[ENV_SERVE_DIR], HindsightConfig.model_validate_json(os.environ[ENV_SERVE_CONFIG]))
