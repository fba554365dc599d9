"""The `hindsight` command line: retain into a bank and inspect what it holds."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from hindsight import __version__
from hindsight.cli_mcp import add_mcp_parser
from hindsight.cli_migrate import add_migrate_parser
from hindsight.cli_models import add_models_parser
from hindsight.cli_pending import add_pending_parsers
from hindsight.cli_serve import add_serve_parser
from hindsight.engine import Hindsight
from hindsight.errors import HindsightError
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


def _cmd_retain(hs: Hindsight, args: argparse.Namespace) -> None:
    content: str | list[Message] = args.text if args.text is not None else _read_content(Path(args.file))
    result = hs.bank(args.bank).retain(content, timestamp=args.timestamp, context=args.context,
                                       document_id=args.document_id)
    console.print(f"[bold]{result.document_id}[/]: {result.created} new, {result.unchanged} unchanged, "
                  f"{result.removed} removed")


def _cmd_units(hs: Hindsight, args: argparse.Namespace) -> None:
    table = Table("id", "network", "when", "entities", "text", show_lines=False)
    for u in hs.bank(args.bank, create=False).units(network=args.network, limit=args.limit):
        when = u.occurred_start.date().isoformat() if u.occurred_start else ""
        table.add_row(u.id[:8], u.network.value, when, ", ".join(u.entities), u.text[:100].replace("\n", " / "))
    console.print(table)


def _cmd_entities(hs: Hindsight, args: argparse.Namespace) -> None:
    table = Table("name", "label", "mentions", "aliases")
    for e in sorted(hs.bank(args.bank, create=False).entities(), key=lambda e: -e.mention_count):
        table.add_row(e.name, e.label, str(e.mention_count), ", ".join(a.alias for a in e.aliases if a.alias != e.name))
    console.print(table)


def _cmd_stats(hs: Hindsight, args: argparse.Namespace) -> None:
    stats = hs.bank(args.bank, create=False).stats()
    console.print_json(stats.model_dump_json())


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hindsight", description="Long-term memory for AI agents.")
    parser.add_argument("--dir", default="./memdir", help="memory directory (default ./memdir)")
    parser.add_argument("--config", default=None, help="YAML config file, or preset:NAME (docs/configuration.md)")
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.add_argument("--version", action="version", version=f"hindsight {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("retain", help="retain a file or text into a bank")
    p.add_argument("bank")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--file")
    src.add_argument("--text")
    p.add_argument("--timestamp", default=None, help="ISO date of the content")
    p.add_argument("--context", default=None)
    p.add_argument("--document-id", default=None)
    p.set_defaults(func=_cmd_retain)
    p = sub.add_parser("units", help="list a bank's memory units")
    p.add_argument("bank")
    p.add_argument("--network", default=None)
    p.add_argument("--limit", type=int, default=50)
    p.set_defaults(func=_cmd_units)
    p = sub.add_parser("entities", help="list a bank's entities")
    p.add_argument("bank")
    p.set_defaults(func=_cmd_entities)
    p = sub.add_parser("stats", help="counts of units, entities and links")
    p.add_argument("bank")
    p.set_defaults(func=_cmd_stats)
    add_pending_parsers(sub)
    add_inspect_commands(sub)
    add_models_parser(sub)
    add_migrate_parser(sub)
    add_serve_parser(sub)
    add_mcp_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING)
    try:
        if getattr(args, "standalone", False):  # e.g. `models`: no memory directory
            args.func(args)
        else:
            with Hindsight(args.dir, config=args.config) as hs:
                args.func(hs, args)
    except HindsightError as exc:
        console.print(f"[red]error:[/] {exc}")
        return 2
    except (OSError, ValueError) as exc:
        console.print(f"[red]error:[/] {exc}")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
