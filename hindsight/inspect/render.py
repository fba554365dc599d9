"""Rich tables of the inspection views, for the CLI and notebooks (`rich.print(table)`)."""

from __future__ import annotations

import textwrap

import networkx as nx
from rich.table import Table

from hindsight.inspect.entities import EntityRank, entity_aliases
from hindsight.inspect.explain import ExplainedHit, RecallExplanation
from hindsight.inspect.opinions import OpinionSummary, OpinionTrajectory, TrajectoryPoint
from hindsight.inspect.stats import GraphStats


def short_text(text: str, width: int) -> str:
    """The text on one line, cut at a word boundary to at most `width` characters."""
    return textwrap.shorten(" ".join(text.split()), width=width, placeholder="…")


def counts_table(stats: GraphStats) -> Table:
    """Units per network, entities, links per type and the degree summary."""
    table = Table("what", "count", title="contents")
    for network, n in stats.units.items():
        table.add_row(f"{network} units", str(n))
    table.add_row("entities", str(stats.entities))
    table.add_row("mentions (unit -> entity)", str(stats.mentions))
    for link_type, n in stats.links.items():
        table.add_row(f"{link_type} links", str(n))
    table.add_row("unit degree: mean / max", f"{stats.mean_degree:.1f} / {stats.max_degree}")
    table.add_row("isolated units", str(stats.isolated_units))
    table.add_row("connected components", str(stats.component_count))
    return table


def components_table(stats: GraphStats) -> Table:
    """The largest connected components: size, time span, most mentioned entities."""
    table = Table("size", "from", "to", "top entities", title="largest connected components")
    for c in stats.components:
        table.add_row(str(c.size), f"{c.first:%Y-%m-%d}", f"{c.last:%Y-%m-%d}", ", ".join(c.top_entities))
    return table


def entities_table(graph: nx.MultiDiGraph, ranks: list[EntityRank], title: str = "top entities") -> Table:
    """Entities with mentions, degree and the aliases merged into them (resolution score)."""
    table = Table("entity", "label", "mentions", "degree", "aliases (resolution score)", title=title)
    for r in ranks:
        aliases = ", ".join(f"{a.alias} ({a.score:.2f})" for a in entity_aliases(graph, r.id) if a.alias != r.name)
        table.add_row(r.name, r.label, str(r.mentions), str(r.degree), aliases)
    return table


def _found_cell(hit: ExplainedHit) -> str:
    """One line per channel that found the hit: its rank there and raw score; a graph hit adds its path, and a
    reply placed after its question says so."""
    lines = [f"{c.value} #{h.rank} ({h.score:.3g})" for c, h in hit.channels.items()]
    if len(hit.path) > 1:
        lines.append("via " + " > ".join(s.via.value for s in hit.path[1:] if s.via is not None))
    if hit.reply_to:
        lines.append("reply to a question")
    return "\n".join(lines)


def explain_table(explanation: RecallExplanation, text_width: int = 160) -> Table:
    """One row per hit: the channels that found it (rank and raw score), its fused and final scores, its text."""
    table = Table(title=f"recall: {explanation.query!r}")
    table.add_column("#", no_wrap=True)
    table.add_column("found by: rank (score)", no_wrap=True)
    table.add_column("scores", no_wrap=True)
    table.add_column("text", ratio=1)
    for hit in explanation.hits:
        scores = f"fused {hit.fused_score:.4f}"
        if hit.rerank_score is not None:
            scores += f"\nrerank {hit.rerank_score:.3f}"
        scores += f"\nfinal {hit.score:.4f}"
        text = short_text(hit.text, text_width) + (" [superseded by a newer unit]" if hit.superseded_by else "")
        table.add_row(str(hit.rank), _found_cell(hit), scores, text)
    found = ", ".join(
        f"{c.value} {s.found}/{len(explanation.hits)} ({s.contribution:.3f})" for c, s in explanation.channels.items()
    )
    table.caption = f"hits found per channel (summed RRF share): {found}"
    if explanation.time_range is not None:
        tr = explanation.time_range
        table.caption += f"\ntime constraint {tr.text!r}: {tr.start:%Y-%m-%d} .. {tr.end:%Y-%m-%d}"
    return table


def _step(point: TrajectoryPoint) -> str:
    if point.before is None:
        return f"{point.confidence:.2f}"
    return f"{point.before:.2f} -> {point.confidence:.2f}"


def _evidence_cell(point: TrajectoryPoint, text_width: int) -> str:
    """One line per evidence unit: its date and text (or that it was forgotten since)."""
    lines = [
        f"{e.mentioned_at:%Y-%m-%d} {short_text(e.text, text_width)}"
        if e.text is not None and e.mentioned_at is not None
        else f"(unit {e.id} forgotten)"
        for e in point.evidence
    ]
    return "\n".join(lines)


def trajectory_table(trajectory: OpinionTrajectory, text_width: int = 90) -> Table:
    """One row per event of an opinion: when, the verdict, the confidence step, the evidence and the LLM's reason;
    a revised text shows under its event."""
    table = Table(title=short_text(f"opinion: {trajectory.opinion}", 120))
    table.add_column("#", no_wrap=True)
    table.add_column("when (UTC)", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    table.add_column("confidence", no_wrap=True)
    table.add_column("evidence", ratio=2)
    table.add_column("reason", ratio=1)
    previous = None
    for i, p in enumerate(trajectory.points):
        reason = short_text(p.reason, 2 * text_width)
        if previous is not None and p.text != previous:
            reason += f"\nrevised to: {short_text(p.text, text_width)}"
        previous = p.text
        table.add_row(
            str(i), f"{p.time:%Y-%m-%d %H:%M:%S}", p.verdict.value, _step(p), _evidence_cell(p, text_width), reason
        )
    return table


def opinions_table(summary: OpinionSummary, text_width: int = 90) -> Table:
    """The opinion count, the most confident opinions and the latest change."""
    table = Table("what", "value", title="opinions")
    table.add_row("opinions", str(summary.count))
    table.add_row("recorded changes", str(summary.changes))
    for t in summary.most_confident:
        table.add_row("most confident", f"{t.confidence:.2f} {short_text(t.opinion, text_width)}")
    if summary.latest_change is not None:
        p = summary.latest_change.latest
        table.add_row(
            "latest change",
            f"{p.time:%Y-%m-%d %H:%M} {p.verdict.value} {_step(p)}: {short_text(p.text, text_width)}\n"
            + _evidence_cell(p, text_width),
        )
    return table
