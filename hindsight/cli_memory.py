"""The commands that read or change a memory on a directory (--dir) or through a server (--url) alike: recall,
reflect, forget, delete-bank and banks. Each is written once, against what `Hindsight` and `HindsightClient` share.
Dates are on the bank's clock (its time zone)."""

from __future__ import annotations

import argparse
from datetime import timezone, tzinfo
from typing import TYPE_CHECKING, TypeAlias

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from hindsight.errors import InvalidInputError
from hindsight.models import MemoryUnit, Network
from hindsight.recall.format import unit_day
from hindsight.recall.request import DEFAULT_BUDGET
from hindsight.temporal.values import time_zone

if TYPE_CHECKING:
    from hindsight.client import HindsightClient
    from hindsight.engine import Hindsight

# What a command that runs on a directory or through a server gets.
Memory: TypeAlias = "Hindsight | HindsightClient"
console = Console()


def when(unit: MemoryUnit, zone: tzinfo) -> str:
    """The day a unit's fact happened, else the day it was mentioned on `zone`'s clock."""
    return unit_day(unit, zone).isoformat()


def one_line(text: str, width: int = 160) -> str:
    return escape(text.replace("\n", " / ")[:width])


def _cmd_recall(memory: Memory, args: argparse.Namespace) -> None:
    result = memory.bank(args.bank, create=False).recall(
        args.query, budget=args.budget, networks=args.network, query_time=args.query_time, as_of=args.as_of,
        top_k=args.top_k)
    table = Table("#", "score", "when", "network", "found by", "text", title=f"recall: {escape(result.query)}")
    clock = result.query_time.tzinfo or timezone.utc  # the hits' headers are on the query time's clock too
    for rank, hit in enumerate(result.hits, 1):
        found = ", ".join(f"{c.channel.value} #{c.rank}" for c in hit.channels)
        note = f" [dim](updated by {hit.superseded_by[:8]})[/]" if hit.superseded_by else ""
        table.add_row(str(rank), f"{hit.score:.3f}", when(hit.unit, clock), hit.unit.network.value, found,
                      one_line(hit.unit.text) + note)
    console.print(table)
    console.print(f"{len(result.hits)} hits, {result.tokens_used} of {result.budget} tokens, asked at "
                  f"{result.query_time.isoformat(timespec='minutes')}")


def _cmd_reflect(memory: Memory, args: argparse.Namespace) -> None:
    bank = memory.bank(args.bank, create=False)
    result = bank.reflect(args.query, budget=args.budget, query_time=args.query_time)
    zone = time_zone(bank.time_zone())
    console.print(f"[bold]answer:[/] {escape(result.answer)}")
    evidence = Table("unit", "cited", "when", "network", "text", title="evidence")
    for u in result.evidence:
        evidence.add_row(u.id[:8], "yes" if u.id in result.cited else "", when(u, zone), u.network.value,
                         one_line(u.text))
    console.print(evidence)
    for change in result.opinions:
        console.print(f"opinion {change.unit.id[:8]} ({change.unit.confidence or 0:.2f}): {escape(change.unit.text)}")
    if not result.known:
        console.print("the memories do not answer this question")
    if result.weak:
        console.print(f"[yellow]weak answer:[/] {escape(result.weak)}")
    console.print(f"{len(result.opinions)} opinions formed or updated; {escape(result.model)}: "
                  f"{result.usage.calls} LLM calls, {result.usage.prompt_tokens} prompt + "
                  f"{result.usage.completion_tokens} completion tokens, {result.seconds:.1f} s", soft_wrap=True)


def _cmd_forget(memory: Memory, args: argparse.Namespace) -> None:
    bank = memory.bank(args.bank, create=False)
    result = bank.forget(args.unit, entity=args.entity, document=args.document)
    console.print(f"forgot {len(result.unit_ids)} units, {len(result.copied_ids)} that copied their text and "
                  f"{len(result.derived_ids)} opinions or observations drawn from them; {len(result.entity_ids)} "
                  f"entities left unmentioned went too; {len(result.revised_ids)} opinions lost evidence, "
                  f"{len(result.rewritten_ids)} units lost a quote", soft_wrap=True)


def _cmd_delete_bank(memory: Memory, args: argparse.Namespace) -> None:
    if not args.yes:
        raise InvalidInputError(f"delete-bank removes every memory of bank {args.bank}: add --yes to do it")
    memory.delete_bank(args.bank)
    console.print(f"deleted bank {args.bank}")


def _cmd_banks(memory: Memory, args: argparse.Namespace) -> None:
    for bank_id in memory.banks():
        console.print(escape(bank_id), highlight=False)


def add_memory_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register recall, reflect, forget, delete-bank and banks on the main parser's subcommands."""
    p = sub.add_parser("recall", help="the memories relevant to a query, ranked, with why each was found")
    p.add_argument("bank")
    p.add_argument("query")
    p.add_argument("--budget", type=int, default=DEFAULT_BUDGET, help="tokens of memories to return (default "
                   f"{DEFAULT_BUDGET})")
    p.add_argument("--top-k", type=int, default=None, help="at most this many hits")
    p.add_argument("--network", action="append", default=None, choices=[n.value for n in Network],
                   help="only this network (repeat for several)")
    p.add_argument("--query-time", default=None, help="ISO time 'now' means in the query (default: now; without an "
                   "offset, a clock time in the bank's time zone)")
    p.add_argument("--as-of", default=None, help="ISO time: recall as the bank was then")
    p.set_defaults(func=_cmd_recall, remote=True)
    p = sub.add_parser("reflect", help="an answer in the bank's voice from its memories (needs an LLM)")
    p.add_argument("bank")
    p.add_argument("query")
    p.add_argument("--budget", type=int, default=None, help="tokens of evidence (default reflect.answer.budget)")
    p.add_argument("--query-time", default=None, help="ISO time 'now' means in the query (default: now; without an "
                   "offset, a clock time in the bank's time zone)")
    p.set_defaults(func=_cmd_reflect, remote=True)
    p = sub.add_parser("forget", help="remove a unit, a document's units or an entity's, and what derives from them")
    p.add_argument("bank")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--unit", default=None, help="a unit id")
    what.add_argument("--entity", default=None, help="an entity's id, name or alias")
    what.add_argument("--document", default=None, help="a document id")
    p.set_defaults(func=_cmd_forget, remote=True)
    p = sub.add_parser("delete-bank", help="remove a bank with all its memories")
    p.add_argument("bank")
    p.add_argument("--yes", action="store_true", help="yes, delete it")
    p.set_defaults(func=_cmd_delete_bank, remote=True)
    p = sub.add_parser("banks", help="list the banks")
    p.set_defaults(func=_cmd_banks, remote=True)
