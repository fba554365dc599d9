"""`hindsight pending` and `hindsight process-pending`: the reasoning that retain queued for a bank (opinion
reinforcement, observation regeneration), counted, and worked off with a progress bar."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from hindsight.errors import LLMNotConfiguredError
from hindsight.llm.factory import llm_required
from hindsight.reflect.types import PendingProgress

if TYPE_CHECKING:
    from hindsight.cli_memory import Memory

console = Console()


def _cmd_pending(memory: Memory, args: argparse.Namespace) -> None:
    count = memory.bank(args.bank, create=False).pending()
    hint = f" (`hindsight process-pending {args.bank}` works them off)" if count else ""
    console.print(f"{count} items queued in bank {args.bank}{hint}", soft_wrap=True)


def _cmd_process_pending(memory: Memory, args: argparse.Namespace) -> None:
    bank = memory.bank(args.bank, create=False)
    columns = (TextColumn("reasoning"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as bar:
        task = bar.add_task("reasoning", total=None)

        def show(progress: PendingProgress) -> None:
            bar.update(task, completed=progress.done, total=progress.total)

        try:
            report = bank.process_pending(progress=show)
        except LLMNotConfiguredError as exc:  # said for this command, of the directory or of the server
            raise llm_required("process-pending") from exc
    stopped = "; stopped early, the rest stays queued" if report.interrupted else ""
    console.print(f"{len(report.reinforced)} opinions updated, {len(report.observations_regenerated)} entities "
                  f"observed, {report.failures} failures in {report.usage.calls} LLM calls; {bank.pending()} items "
                  f"left{stopped}", soft_wrap=True)


def add_pending_parsers(sub: Any) -> None:
    """Register `pending` and `process-pending` on the main parser's subcommands."""
    p = sub.add_parser("pending", help="count the reasoning work retain queued for a bank")
    p.add_argument("bank")
    p.set_defaults(func=_cmd_pending, remote=True)
    p = sub.add_parser("process-pending", help="work off the queued reasoning now, with a progress bar (needs an LLM)")
    p.add_argument("bank")
    p.set_defaults(func=_cmd_process_pending, remote=True)
