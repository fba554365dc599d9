"""The commands of the context an agent sends, on a directory (--dir) or through a server (--url) alike: `context`
(the block of a turn), `working-memory` (show, set, versions, revert) and `observe`. The block and a working
memory's content go to stdout as they are, so that they can be piped; what describes them goes to stderr. Times are
on the bank's clock (its time zone)."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from hindsight.cli_memory import one_line
from hindsight.errors import InvalidInputError
from hindsight.models import BANK_SCOPE, WorkingMemory
from hindsight.temporal.values import in_zone, time_zone

if TYPE_CHECKING:
    from hindsight.cli_memory import Memory

console = Console()
notes = Console(stderr=True)
# What `working-memory` does; without one of them, it shows.
_ACTIONS = ("show", "set", "versions", "revert")


def _cmd_context(memory: Memory, args: argparse.Namespace) -> None:
    block = memory.bank(args.bank, create=False).context(args.query, thread_id=args.thread, budget=args.budget,
                                                         query_time=args.query_time)
    if block.text:
        console.out(block.text, highlight=False)
    sections = ", ".join(s.name for s in block.sections) or "nothing fits"
    notes.print(f"{block.tokens} of {block.budget} tokens ({sections}); {block.stable_prefix} leading characters "
                "as in this thread's previous block", highlight=False, soft_wrap=True)


def _time(moment: datetime, zone: tzinfo) -> str:
    """"2024-05-03 22:30 PDT": the time on the bank's clock, with its zone's abbreviation."""
    return f"{in_zone(moment, zone):%Y-%m-%d %H:%M %Z}"


def _described(memory: WorkingMemory, zone: tzinfo) -> str:
    if memory.created_at is None:
        return f'scope "{memory.scope}": version 0, the template'
    note = f" ({memory.note})" if memory.note else ""
    return f'scope "{memory.scope}": version {memory.version} of {_time(memory.created_at, zone)}{note}'


def _parsed(args: argparse.Namespace) -> tuple[str, str, int | None]:
    """The action, the bank and the version of a `working-memory` command line, checked."""
    words: list[str] = args.words
    action, rest = (words[0], words[1:]) if words[0] in _ACTIONS else ("show", words)
    wanted = ["BANK", "VERSION"] if action == "revert" else ["BANK"]
    if len(rest) != len(wanted):
        raise InvalidInputError(f"working-memory {action} takes {' '.join(wanted)}, got {len(rest)} words")
    if (args.file is not None) != (action == "set"):
        raise InvalidInputError("working-memory set takes the new content with --file FILE (- for stdin), and "
                                "only set takes --file")
    if args.note is not None and action not in ("set", "revert"):
        raise InvalidInputError("--note goes with set or revert")
    if action != "revert":
        return action, rest[0], None
    if not rest[1].isdigit():
        raise InvalidInputError(f"VERSION must be a version number (0: the template), got {rest[1]!r}")
    return action, rest[0], int(rest[1])


def _cmd_working_memory(memory: Memory, args: argparse.Namespace) -> None:
    action, bank_id, version = _parsed(args)
    bank = memory.bank(bank_id, create=False)
    name = bank.time_zone()
    zone = time_zone(name)
    if action == "show":
        current = bank.working_memory(args.scope)
        notes.print(escape(_described(current, zone)), highlight=False, soft_wrap=True)
        if current.content:  # as stored: `set --file` of what this prints stores it again unchanged
            console.out(current.content, highlight=False, end="" if current.content.endswith("\n") else "\n")
    elif action == "set":
        content = sys.stdin.read() if args.file == "-" else Path(args.file).read_text(encoding="utf-8")
        stored = bank.update_working_memory(content, scope=args.scope, note=args.note)
        console.print(f"stored {escape(_described(stored, zone))}", highlight=False, soft_wrap=True)
    elif action == "versions":
        # The zone in the heading, not on each row: the content column keeps its width.
        table = Table("version", f"when ({name})", "restores", "note", "content",
                      title=f"working memory: {args.scope}")
        for v in bank.working_memory_versions(args.scope):
            table.add_row(str(v.version), f"{in_zone(v.created_at, zone):%Y-%m-%d %H:%M}" if v.created_at else "",
                          "" if v.reverted_from is None else str(v.reverted_from), escape(v.note or ""),
                          one_line(v.content, 80))
        console.print(table)
    else:
        assert version is not None  # _parsed gives revert its version
        restored = bank.revert_working_memory(version, scope=args.scope, note=args.note)
        console.print(f"restored version {version} as {escape(_described(restored, zone))}", highlight=False,
                      soft_wrap=True)


def _cmd_observe(memory: Memory, args: argparse.Namespace) -> None:
    report = memory.bank(args.bank, create=False).observe(args.thread)
    condensed = ", then condensed the log" if report.condensed else ""
    console.print(f"observed {report.units} units into the log of {escape(report.scope)}: {report.appended} entries "
                  f"appended{condensed}; it holds {report.entries} entries", highlight=False, soft_wrap=True)


def add_context_parsers(sub: Any) -> None:
    """Register `context`, `working-memory` and `observe` on the main parser's subcommands."""
    p = sub.add_parser("context", help="the context block of a turn, for an agent's system prompt (observes first)")
    p.add_argument("bank")
    p.add_argument("--query", default=None, help="this turn's message: the memories relevant to it are added")
    p.add_argument("--thread", default=None, help="the conversation thread (its working memory follows the bank's)")
    p.add_argument("--budget", type=int, default=None, help="tokens of the block (default context.budget; 0: none)")
    p.add_argument("--query-time", default=None, help="ISO time of the turn (default: now; without an offset, a clock "
                   "time in the bank's time zone)")
    p.set_defaults(func=_cmd_context, remote=True)
    p = sub.add_parser("working-memory", help="show a bank's working memory; set it, list its versions, revert",
                       usage="hindsight working-memory [show|set|versions|revert] BANK [VERSION] [options]")
    p.add_argument("words", nargs="+", metavar="[show|set|versions|revert] BANK [VERSION]",
                   help="show (the default) prints the content; set stores --file as a new version; versions lists "
                        "them; revert restores VERSION (0: the template) as a new version")
    p.add_argument("--scope", default=BANK_SCOPE, help='"bank" (shared by every thread; the default) or a thread id')
    p.add_argument("--file", default=None, help="with set: the new content, from this file or - for stdin")
    p.add_argument("--note", default=None, help="with set or revert: why it changed, kept with the version")
    p.set_defaults(func=_cmd_working_memory, remote=True)
    p = sub.add_parser("observe", help="write what was said since the last observe into the observation log")
    p.add_argument("bank")
    p.add_argument("--thread", default=None, help="a thread's log (its own documents) instead of the bank's")
    p.set_defaults(func=_cmd_observe, remote=True)
