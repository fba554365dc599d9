"""The `hindsight` command line: retain into a bank and inspect what it holds, on a memory directory (--dir) or
through a running server (--url)."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from hindsight import __version__
from hindsight.cli_context import add_context_parsers
from hindsight.cli_mcp import add_mcp_parser
from hindsight.cli_memory import Memory, add_memory_parsers
from hindsight.cli_migrate import add_migrate_parser
from hindsight.cli_models import add_models_parser
from hindsight.cli_pending import add_pending_parsers
from hindsight.cli_serve import add_serve_parser
from hindsight.cli_transfer import add_transfer_parsers
from hindsight.engine import Hindsight
from hindsight.errors import DirectoryLockedError, HindsightError
from hindsight.inspect.commands import add_commands as add_inspect_commands
from hindsight.models import Message

console = Console()


def _read_content(path: Path) -> str | list[Message]:
    """A .json file holds a list of messages (or {"messages": [...]}); anything else is plain text."""
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() != ".json":
        return text
    data: Any = json.loads(text)
    if isinstance(data, dict):
        data = data.get("messages")
    if not isinstance(data, list):
        raise HindsightError(f"{path}: expected a JSON list of messages or an object with 'messages'")
    return [Message.model_validate(m) for m in data]


def _cmd_retain(memory: Memory, args: argparse.Namespace) -> None:
    content: str | list[Message] = args.text if args.text is not None else _read_content(Path(args.file))
    result = memory.bank(args.bank).retain(content, timestamp=args.timestamp, context=args.context,
                                           document_id=args.document_id)
    console.print(f"[bold]{result.document_id}[/]: {result.created} new, {result.unchanged} unchanged, "
                  f"{result.removed} removed")


def _cmd_units(memory: Memory, args: argparse.Namespace) -> None:
    table = Table("id", "network", "when", "entities", "text", show_lines=False)
    for u in memory.bank(args.bank, create=False).units(network=args.network, limit=args.limit):
        when = u.occurred_start.date().isoformat() if u.occurred_start else ""
        table.add_row(u.id[:8], u.network.value, when, ", ".join(u.entities), u.text[:100].replace("\n", " / "))
    console.print(table)


def _cmd_entities(memory: Memory, args: argparse.Namespace) -> None:
    table = Table("name", "label", "mentions", "aliases")
    for e in sorted(memory.bank(args.bank, create=False).entities(), key=lambda e: -e.mention_count):
        table.add_row(e.name, e.label, str(e.mention_count), ", ".join(a.alias for a in e.aliases if a.alias != e.name))
    console.print(table)


def _cmd_stats(memory: Memory, args: argparse.Namespace) -> None:
    stats = memory.bank(args.bank, create=False).stats()
    console.print_json(stats.model_dump_json())


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hindsight", description="Long-term memory for AI agents.")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--dir", default="./memdir", help="memory directory (default ./memdir)")
    where.add_argument("--url", default=None, help="work through the hindsight server at this URL instead")
    parser.add_argument("--api-key", default=None, help="the server's key, with --url (default $HINDSIGHT_API_KEY)")
    parser.add_argument("--config", default=None, help="YAML config file, or preset:NAME (docs/configuration.md)")
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.add_argument("--version", action="version", version=f"hindsight {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("retain", help="retain a file or text into a bank")
    p.add_argument("bank")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--file")
    src.add_argument("--text")
    p.add_argument("--timestamp", default=None, help="ISO date of the content (without an offset, a clock time in "
                   "the bank's time zone)")
    p.add_argument("--context", default=None)
    p.add_argument("--document-id", default=None)
    p.set_defaults(func=_cmd_retain, remote=True)
    p = sub.add_parser("units", help="list a bank's memory units")
    p.add_argument("bank")
    p.add_argument("--network", default=None)
    p.add_argument("--limit", type=int, default=50)
    p.set_defaults(func=_cmd_units, remote=True)
    p = sub.add_parser("entities", help="list a bank's entities")
    p.add_argument("bank")
    p.set_defaults(func=_cmd_entities, remote=True)
    p = sub.add_parser("stats", help="counts of units, entities and links")
    p.add_argument("bank")
    p.set_defaults(func=_cmd_stats, remote=True)
    add_pending_parsers(sub)
    add_memory_parsers(sub)
    add_context_parsers(sub)
    add_transfer_parsers(sub)
    add_inspect_commands(sub)
    add_models_parser(sub)
    add_migrate_parser(sub)
    add_serve_parser(sub)
    add_mcp_parser(sub)
    return parser


def _open(args: argparse.Namespace) -> Memory:
    """The memory the command works on: the directory, or the server at --url."""
    if args.url is None:
        if args.api_key is not None:
            raise HindsightError("--api-key goes with --url: a memory directory has no keys")
        return Hindsight(args.dir, config=args.config)
    if not getattr(args, "remote", False):
        raise HindsightError(f"`hindsight {args.command}` works on a memory directory (--dir), not through a server "
                             "(--url)")
    if args.config is not None:
        raise HindsightError("--config goes with --dir: a server (--url) runs with its own configuration")
    try:
        from hindsight.client import HindsightClient
    except ImportError as exc:
        raise HindsightError(f"--url needs the [server] extra: pip install 'hindsight-memory[server]' ({exc})") from exc
    return HindsightClient(args.url, api_key=args.api_key)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING)
    try:
        if getattr(args, "standalone", False):  # e.g. `models`: no memory directory
            if args.url is not None:
                raise HindsightError(f"`hindsight {args.command}` does not work through a server (--url)")
            args.func(args)
        else:
            with _open(args) as memory:
                args.func(memory, args)
    except (HindsightError, OSError, ValueError) as exc:
        hint = (f"; if a server holds it, run the command through the server: hindsight --url URL {args.command} ..."
                if isinstance(exc, DirectoryLockedError) else "")
        console.print(f"[red]error:[/] {escape(str(exc))}{escape(hint)}", soft_wrap=True)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
