"""`hindsight mcp`: serve a memory directory's banks to an MCP client (Claude Desktop, Cursor, ...) over stdio."""

from __future__ import annotations

import argparse

from rich.console import Console

from hindsight.config import HindsightConfig
from hindsight.config.server import ALL_TOOLS, READ_TOOLS, McpConfig
from hindsight.engine import Hindsight
from hindsight.errors import ConfigError, HindsightError

# stdout carries the protocol: whatever the command itself says goes to stderr.
console = Console(stderr=True)


def mcp_config(config: HindsightConfig, args: argparse.Namespace) -> McpConfig:
    """The config's `server.mcp` with the command's flags over it (ConfigError names a bad flag value)."""
    over: dict[str, object] = {}
    if args.read_only:
        over["read_only"] = True
    if args.bank is not None:
        over["bank"] = args.bank
    if args.tools is not None:
        tools = [t.strip() for t in args.tools.split(",") if t.strip()]
        if unknown := [t for t in tools if t not in ALL_TOOLS]:
            raise ConfigError(f"--tools: no tool {', '.join(unknown)}; the tools are {', '.join(ALL_TOOLS)}")
        over["tools"] = tools
    return config.updated({"server": {"mcp": over}}).server.mcp


def _serve(args: argparse.Namespace) -> None:
    try:
        from hindsight.server.mcp import build_mcp
    except ImportError as exc:
        raise HindsightError(f"hindsight mcp needs the [server] extra: pip install 'hindsight-memory[server]' "
                             f"({exc})") from exc
    config = HindsightConfig.from_yaml(args.config) if args.config else HindsightConfig()
    offered = mcp_config(config, args)
    with Hindsight(args.dir, config) as hs:
        build_mcp(hs, offered).run("stdio")


def _cmd_mcp(args: argparse.Namespace) -> None:
    try:
        _serve(args)
    except (HindsightError, OSError, ValueError) as exc:
        console.print(f"[red]error:[/] {exc}", soft_wrap=True)
        raise SystemExit(2) from None


def add_mcp_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `mcp` on the main parser's subcommands."""
    p = sub.add_parser("mcp", help="serve the memory to an MCP client over stdio")
    # Also after the subcommand, as MCP client configs write it; SUPPRESS keeps a value given before it.
    p.add_argument("--dir", default=argparse.SUPPRESS, help="memory directory (default ./memdir)")
    p.add_argument("--config", default=argparse.SUPPRESS, help="YAML config file, or preset:NAME")
    p.add_argument("--read-only", action="store_true", help="offer only the reading tools: " + ", ".join(READ_TOOLS))
    p.add_argument("--bank", default=None, help="bind every tool to this bank (the tools then take no bank id)")
    p.add_argument("--tools", default=None, help="the tools to offer, comma-separated (default: server.mcp.tools)")
    p.set_defaults(func=_cmd_mcp, standalone=True)
