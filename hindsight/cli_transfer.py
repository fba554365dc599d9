"""`hindsight export` and `hindsight import`: a bank as JSON Lines, to a file or stdout and back from a file or stdin,
on a directory (--dir) or through a server (--url)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import IO, TYPE_CHECKING

from rich.console import Console

if TYPE_CHECKING:
    from hindsight.cli_memory import Memory

# stdout may carry the export: what the commands say goes to stderr.
console = Console(stderr=True)


def _write(lines: Iterable[str], out: IO[str]) -> int:
    count = 0
    for line in lines:
        out.write(line)
        count += 1
    return count


def _cmd_export(memory: Memory, args: argparse.Namespace) -> None:
    # The bank is read (or its absence found) here, before a file is written.
    lines = memory.export_bank(args.bank)
    if args.output is None:
        count = _write(lines, sys.stdout)
    else:
        target = Path(args.output)
        part = target.with_name(target.name + ".part")  # a cut export never takes the file's name
        with part.open("w", encoding="utf-8", newline="") as out:
            count = _write(lines, out)
        os.replace(part, target)
    console.print(f"exported bank {args.bank}: {count} lines to {args.output or 'stdout'}")


def _cmd_import(memory: Memory, args: argparse.Namespace) -> None:
    if args.file == "-":
        result = memory.import_bank(sys.stdin.buffer, bank_id=args.bank)
    else:
        with open(args.file, "rb") as source:  # bytes: lines split on b"\n" only
            result = memory.import_bank(source, bank_id=args.bank)
    console.print(f"imported bank {result.bank_id}: {result.units} units, {result.entities} entities, "
                  f"{result.links} links")


def add_transfer_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `export` and `import` on the main parser's subcommands."""
    p = sub.add_parser("export", help="write a bank as JSON Lines (to a file, or stdout)")
    p.add_argument("bank")
    p.add_argument("-o", "--output", default=None, help="the file to write (default stdout)")
    p.set_defaults(func=_cmd_export, remote=True)
    p = sub.add_parser("import", help="create a bank from an export (a file, or stdin)")
    p.add_argument("file", nargs="?", default="-", help="the export to read ('-' or none: stdin)")
    p.add_argument("--bank", default=None, help="the new bank's id (default: the exported bank's)")
    p.set_defaults(func=_cmd_import, remote=True)
