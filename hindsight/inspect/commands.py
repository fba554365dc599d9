"""The inspection commands of the `hindsight` CLI: `inspect`, `graph` and `explain`."""

from __future__ import annotations

import argparse
import importlib
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from hindsight.errors import HindsightError, InvalidInputError
from hindsight.inspect.entities import top_entities
from hindsight.inspect.explain import explain_recall
from hindsight.inspect.graphs import entity_neighbourhood, write_graph
from hindsight.inspect.opinions import opinion_summary
from hindsight.inspect.render import components_table, counts_table, entities_table, explain_table, opinions_table
from hindsight.inspect.stats import graph_stats
from hindsight.recall.request import DEFAULT_BUDGET

if TYPE_CHECKING:
    from hindsight.engine import Hindsight

console = Console()

_EXPORT = (".graphml", ".json")


def _viz(module: str) -> Any:
    """A module of the `viz` extra (plots: matplotlib; interactive: bokeh), or a clear error when it is missing."""
    try:
        return importlib.import_module(f"hindsight.inspect.{module}")
    except ImportError as exc:
        raise HindsightError(f"this output needs the viz extra: pip install 'hindsight-memory[viz]' ({exc})") from exc


def _date(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError as exc:
        raise InvalidInputError(f"not an ISO date: {value!r}") from exc


def cmd_inspect(hs: Hindsight, args: argparse.Namespace) -> None:
    bank = hs.bank(args.bank, create=False)
    graph = bank.to_networkx()
    stats = graph_stats(graph, top_components=args.top)
    console.print(f"[bold]bank {args.bank}[/]")
    console.print(counts_table(stats))
    console.print(components_table(stats))
    console.print(entities_table(graph, top_entities(graph, args.top), title="top entities by mentions"))
    console.print(entities_table(graph, top_entities(graph, args.top, by="degree"), title="top entities by degree"))
    console.print(opinions_table(opinion_summary(bank, top=args.top)))


def cmd_graph(hs: Hindsight, args: argparse.Namespace) -> None:
    out = Path(args.out)
    graph = hs.bank(args.bank, create=False).to_networkx(
        networks=args.network, since=_date(args.since), until=_date(args.until)
    )
    if args.entity:
        graph = entity_neighbourhood(
            graph, args.entity, max_units=args.max_units, max_entities=args.max_entities, exclude=args.exclude or []
        )
    title = f"around {args.entity}" if args.entity else None
    if out.suffix.lower() in _EXPORT:
        write_graph(graph, out)
    elif out.suffix.lower() in (".html", ".htm"):
        _viz("interactive").graph_html(graph, out, layout=args.layout, max_nodes=args.max_nodes, title=title)
    else:
        _viz("plots").plot_graph(graph, out, layout=args.layout, max_nodes=args.max_nodes, title=title)
    drawn = f", at most {args.max_nodes} drawn" if out.suffix.lower() not in _EXPORT else ""
    console.print(f"wrote {out} (a graph of {graph.number_of_nodes()} nodes{drawn})")


def cmd_explain(hs: Hindsight, args: argparse.Namespace) -> None:
    result = hs.bank(args.bank, create=False).recall(
        args.query, budget=args.budget, query_time=args.query_time, top_k=args.top_k
    )
    explanation = explain_recall(result, rrf_k=hs.config.recall.fusion.k)
    console.print(explain_table(explanation))
    if args.out:
        _viz("plots").plot_channel_contributions(explanation, args.out)
        console.print(f"wrote {args.out}")


def add_commands(sub: Any) -> None:
    """Register the inspection subcommands on the CLI's subparsers."""
    p = sub.add_parser("inspect", help="summary of a bank: counts, components, top entities, opinions")
    p.add_argument("bank")
    p.add_argument("--top", type=int, default=10, help="entities, components and most confident opinions to list")
    p.set_defaults(func=cmd_inspect)
    p = sub.add_parser("graph", help="plot (.png/.svg), interactive page (.html) or export (.graphml/.json)")
    p.add_argument("bank")
    p.add_argument("--out", required=True)
    p.add_argument("--entity", default=None, help="only the neighbourhood of this entity (name or alias)")
    p.add_argument("--network", action="append", default=None, help="keep this network (repeatable)")
    p.add_argument("--since", default=None, help="ISO date: units mentioned from then")
    p.add_argument("--until", default=None, help="ISO date: units mentioned until then")
    p.add_argument("--max-nodes", type=int, default=60, help="draw at most this many nodes")
    p.add_argument("--max-units", type=int, default=25, help="with --entity: units of the entity to keep")
    p.add_argument("--max-entities", type=int, default=12, help="with --entity: co-mentioned entities to keep")
    p.add_argument("--exclude", action="append", default=None, help="with --entity: leave out this entity (repeatable)")
    p.add_argument("--layout", choices=["spring", "kamada-kawai"], default="spring")
    p.set_defaults(func=cmd_graph)
    p = sub.add_parser("explain", help="recall and show which channels found each hit")
    p.add_argument("bank")
    p.add_argument("query")
    p.add_argument("--top-k", type=int, default=10)
    p.add_argument("--budget", type=int, default=DEFAULT_BUDGET)
    p.add_argument("--query-time", default=None, help="ISO date that relative phrases in the query refer to")
    p.add_argument("--out", default=None, help="also plot the channel contributions (.png/.svg)")
    p.set_defaults(func=cmd_explain)
