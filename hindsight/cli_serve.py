"""`hindsight serve`: the HTTP API and MCP over one memory, on uvicorn."""

from __future__ import annotations

import argparse
import ipaddress
import os
from typing import Any

from rich.console import Console

from hindsight.config import HindsightConfig
from hindsight.errors import ConfigError
from hindsight.server.auth import Keys

console = Console(stderr=True)
# How long uvicorn's supervisor waits for a worker to answer its health ping before it kills the worker and starts
# another. Its default, 5 s, is shorter than a worker can take to start (Python, the app's imports, the models) on a
# busy machine, where it would kill every worker while it starts and the server would never serve. A worker that dies
# is still replaced at once; only one that hangs waits this long. The supervisor handles signals between its checks, so
# a SIGTERM that comes while a worker starts may wait up to this long too.
WORKER_HEALTHCHECK_S = 60


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve_config(args: argparse.Namespace) -> HindsightConfig:
    """The config with the command line's overrides, refused when it cannot be served safely."""
    config = HindsightConfig.from_yaml(args.config) if args.config else HindsightConfig()
    overrides: dict[str, Any] = {k: v for k, v in (("host", args.host), ("port", args.port),
                                                   ("workers", args.workers)) if v is not None}
    config = config.updated({"server": overrides}) if overrides else config
    server = config.server
    if server.workers > 1 and config.store.backend != "postgres":
        raise ConfigError(f"--workers {server.workers} needs the Postgres store (store.backend: postgres, see "
                          "docs/POSTGRES.md): an embedded SQLite memory belongs to one process, so serve it with one "
                          "worker and let its threads (server.threads) take the load")
    if not Keys(server.keys).enabled and not _loopback(server.host) and not args.insecure:
        raise ConfigError(f"no keys are configured, so the server would let anyone who reaches {server.host} read "
                          "and change every bank: configure server.keys (or HINDSIGHT_API_KEY), or pass --insecure")
    return config


def _cmd_serve(args: argparse.Namespace) -> None:
    import uvicorn

    from hindsight.server.app import ENV_SERVE_CONFIG, ENV_SERVE_DIR, create_app

    config = serve_config(args)
    server = config.server
    if not Keys(server.keys).enabled:
        console.print(f"[yellow]no keys configured[/]: serving without authentication on {server.host} only")
    console.print(f"hindsight: {args.dir} on http://{server.host}:{server.port} (API docs at /docs, MCP at /mcp)")
    level = "info" if args.verbose else "warning"
    if server.workers == 1:
        uvicorn.run(create_app(args.dir, config), host=server.host, port=server.port, log_level=level)
        return
    os.environ[ENV_SERVE_DIR] = str(args.dir)
    os.environ[ENV_SERVE_CONFIG] = config.model_dump_json()
    uvicorn.run("hindsight.server.app:app_from_env", factory=True, host=server.host, port=server.port,
                workers=server.workers, log_level=level, timeout_worker_healthcheck=WORKER_HEALTHCHECK_S)


def add_serve_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `serve` on the main parser's subcommands."""
    p = sub.add_parser("serve", help="serve the memory over HTTP (API docs at /docs) and MCP (at /mcp)")
    # Also after the subcommand; SUPPRESS keeps a value given before it.
    p.add_argument("--dir", default=argparse.SUPPRESS, help="memory directory (default ./memdir)")
    p.add_argument("--config", default=argparse.SUPPRESS, help="YAML config file, or preset:NAME")
    p.add_argument("--host", default=None, help="address to listen on (server.host, default 127.0.0.1)")
    p.add_argument("--port", type=int, default=None, help="port (server.port, default 8000)")
    p.add_argument("--workers", type=int, default=None, help="server processes; more than one needs Postgres")
    p.add_argument("--insecure", action="store_true",
                   help="allow listening on a non-loopback address without keys")
    p.set_defaults(func=_cmd_serve, standalone=True)
