"""Matplotlib figures of the inspection views, saved as PNG or SVG. Needs the `viz` extra (matplotlib).

Each helper returns the Figure (shown inline by Jupyter) and writes it when given `out`. Figures are built without
pyplot, so nothing depends on a display or on global state. Large inputs are cut to the top k, not drawn as hairballs.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import networkx as nx
from matplotlib.axes import Axes
from matplotlib.dates import AutoDateLocator, ConciseDateFormatter, date2num
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from hindsight.errors import InvalidInputError
from hindsight.inspect.entities import EntityTimeline, is_entity
from hindsight.inspect.explain import RecallExplanation
from hindsight.inspect.graphs import Layout, graph_layout, links_to_draw, top_subgraph
from hindsight.inspect.opinions import OpinionTrajectory
from hindsight.inspect.render import short_text
from hindsight.models import Verdict
from hindsight.recall.types import Channel

NETWORK_COLOURS = {"world": "#4C78A8", "experience": "#F58518", "opinion": "#E45756", "observation": "#54A24B"}
ENTITY_COLOUR = "#B8B0AC"
CHANNEL_COLOURS = {
    Channel.SEMANTIC: "#4C78A8",
    Channel.LEXICAL: "#F58518",
    Channel.GRAPH: "#54A24B",
    Channel.TEMPORAL: "#B279A2",
}
# One colour per opinion line; the verdict of each event is its marker's shape.
OPINION_COLOURS = ["#4C78A8", "#E45756", "#54A24B", "#B279A2", "#F58518", "#72B7B2", "#9D755D", "#FF9DA6"]
VERDICT_MARKERS = {
    Verdict.FORMED: "o",
    Verdict.REINFORCE: "^",
    Verdict.WEAKEN: "v",
    Verdict.CONTRADICT: "X",
    Verdict.NEUTRAL: "s",
}
# (colour, line style, width) per edge type; mentions are drawn faint so that links stand out.
EDGE_STYLES = {
    "entity": ("#7F7F7F", "solid", 1.0),
    "temporal": ("#4C78A8", "dotted", 1.2),
    "semantic": ("#54A24B", "dashed", 1.2),
    "causal": ("#E45756", "solid", 2.0),
    "mentions": ("#D0D0D0", "solid", 0.6),
}


def save(fig: Figure, out: str | Path | None) -> Figure:
    """Write the figure to a .png or .svg path (when given) and return it."""
    if out is not None:
        path = Path(out)
        if path.suffix.lower() not in (".png", ".svg"):
            raise InvalidInputError(f"plots are written as .png or .svg, not {path.name!r}")
        fig.savefig(path, dpi=150, bbox_inches="tight")
    return fig


def _num(times: list[datetime]) -> Any:
    """Matplotlib date numbers (its typing rejects datetimes in plot calls)."""
    return date2num(times)  # type: ignore[no-untyped-call]


def _legend(ax: Axes, handles: list[Line2D] | None = None) -> None:
    """The legend outside the axes, on the right, where it hides nothing."""
    if handles is None:
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    else:
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)


def _finish_dated(fig: Figure, ax: Axes, handles: list[Line2D], out: str | Path | None) -> Figure:
    """Legend, slanted date ticks, save."""
    _legend(ax, handles)
    fig.autofmt_xdate()
    return save(fig, out)


def _unit_label(data: dict[str, Any]) -> str:
    rank = data.get("rank")
    if rank is not None:
        return f"#{rank}"
    return f"{data['mentioned_at']:%b %d}"


def plot_graph(
    graph: nx.MultiDiGraph,
    out: str | Path | None = None,
    *,
    layout: Layout = "spring",
    max_nodes: int = 60,
    title: str | None = None,
    max_links_per_unit: int = 4,
    seed: int = 7,
) -> Figure:
    """Units as circles coloured by network (labelled by recall rank, else by date), entities as grey squares
    with their names, edges styled by type (recall path hops thicker); the graph's `focus` node is drawn larger.
    At most `max_nodes` nodes, the best connected ones, and of each unit's links the `max_links_per_unit`
    strongest (recall path hops always). An entity link between two units that mention an entity on the plot is not
    drawn: the entity's node shows it."""
    if max_links_per_unit < 0:
        raise InvalidInputError("max_links_per_unit must be >= 0")
    g = top_subgraph(graph, max_nodes)
    n = g.number_of_nodes()
    size = min(14.0, 6.0 + 0.12 * n)
    fig = Figure(figsize=(size, size * 0.75))
    ax = fig.add_subplot()
    ax.set_axis_off()
    shown = f" ({n} of {graph.number_of_nodes()} nodes)" if n < graph.number_of_nodes() else ""
    ax.set_title((title or graph.graph.get("query") or graph.graph.get("bank_id") or "memory graph") + shown)
    if n == 0:
        return save(fig, out)
    keep = links_to_draw(g, max_links_per_unit)
    pos = graph_layout(g, keep, layout, seed)
    drawn = []
    for etype, (colour, style, width) in EDGE_STYLES.items():
        edges = [(s, t) for s, t, k in keep if k == etype]
        if edges:
            drawn.append(etype)
            on_path = [g.edges[s, t, etype].get("on_path", False) for s, t in edges]
            nx.draw_networkx_edges(
                g,
                pos,
                ax=ax,
                edgelist=edges,
                edge_color=colour,
                style=style,
                width=[width * (2.5 if p else 1.0) for p in on_path],
                arrows=etype == "causal",
                alpha=0.8,
                node_size=300,
            )
    focus = g.graph.get("focus")
    units = [u for u, d in g.nodes(data=True) if not is_entity(d)]
    entities = [e for e, d in g.nodes(data=True) if is_entity(d)]
    nx.draw_networkx_nodes(
        g,
        pos,
        ax=ax,
        nodelist=units,
        node_shape="o",
        linewidths=0.5,
        edgecolors="white",
        node_color=[NETWORK_COLOURS.get(g.nodes[u]["network"], "#333333") for u in units],
        node_size=[420 if g.nodes[u].get("rank") else 260 for u in units],
    )
    nx.draw_networkx_nodes(
        g,
        pos,
        ax=ax,
        nodelist=entities,
        node_shape="s",
        node_color=ENTITY_COLOUR,
        node_size=[700 if e == focus else 220 for e in entities],
    )
    labels = {u: _unit_label(g.nodes[u]) for u in units}
    nx.draw_networkx_labels(g, pos, labels=labels, ax=ax, font_size=7, font_color="black", verticalalignment="bottom")
    nx.draw_networkx_labels(
        g,
        pos,
        labels={e: g.nodes[e]["name"] for e in entities},
        ax=ax,
        font_size=8,
        font_weight="bold",
        verticalalignment="top",
    )
    _graph_legend(ax, g, drawn)
    return save(fig, out)


def _graph_legend(ax: Axes, g: nx.MultiDiGraph, types: list[str]) -> None:
    nets = sorted({d["network"] for _, d in g.nodes(data=True) if not is_entity(d)})
    handles = [
        Line2D([], [], marker="o", ls="", color=NETWORK_COLOURS.get(x, "#333333"), label=f"{x} unit") for x in nets
    ]
    handles.append(Line2D([], [], marker="s", ls="", color=ENTITY_COLOUR, label="entity"))
    handles += [
        Line2D([], [], color=EDGE_STYLES[t][0], ls=EDGE_STYLES[t][1], lw=EDGE_STYLES[t][2], label=f"{t} link")
        for t in types
    ]
    _legend(ax, handles)


def plot_entity_timeline(
    timeline: EntityTimeline, out: str | Path | None = None, *, max_units: int = 30, text_width: int = 70
) -> Figure:
    """One row per unit, the latest `max_units`: the occurrence interval as a bar, the mention time as a dot,
    coloured by network, with the start of the unit's text."""
    if max_units < 1:
        raise InvalidInputError("max_units must be >= 1")
    entries = timeline.entries[-max_units:]
    fig = Figure(figsize=(11.0, 1.2 + 0.32 * max(len(entries), 1)))
    ax = fig.add_subplot()
    shown = f" (latest {len(entries)} of {len(timeline.entries)})" if len(entries) < len(timeline.entries) else ""
    ax.set_title(f"{timeline.name}: {len(timeline.entries)} units{shown}")
    ax.xaxis_date()
    for row, e in enumerate(entries):
        colour = NETWORK_COLOURS.get(e.network.value, "#333333")
        if e.occurred_start is not None and e.occurred_end is not None:
            ax.plot(
                _num([e.occurred_start, e.occurred_end]),
                [row, row],
                color=colour,
                lw=5,
                alpha=0.45,
                solid_capstyle="butt",
            )
        ax.plot(_num([e.mentioned_at]), [row], "o", color=colour, ms=5)
    ax.set_yticks(range(len(entries)), [short_text(e.text, text_width) for e in entries], fontsize=7)
    ax.set_ylim(len(entries) - 0.5, -0.5)
    ax.grid(axis="x", alpha=0.3)
    handles = [
        Line2D([], [], color="#555555", lw=5, alpha=0.45, label="occurred"),
        Line2D([], [], marker="o", ls="", color="#555555", label="mentioned"),
    ]
    return _finish_dated(fig, ax, handles, out)


def plot_opinion_trajectories(
    trajectories: list[OpinionTrajectory],
    out: str | Path | None = None,
    *,
    max_opinions: int = 5,
    x: Literal["time", "order"] = "time",
    text_width: int = 70,
    max_labels: int = 24,
) -> Figure:
    """One confidence line per opinion (the first `max_opinions`, e.g. from `opinion_trajectories(bank, k)`), a
    marker at each event shaped by its verdict, and each change labelled with its verdict and step when there are at
    most `max_labels` changes (beyond that the labels would overlap; the markers still show the verdicts). The x axis
    is the time of the events, or with `x="order"` their order (evenly spaced: events minutes apart stay readable)."""
    if max_opinions < 1:
        raise InvalidInputError("max_opinions must be >= 1")
    shown = trajectories[:max_opinions]
    label_changes = sum(len(t.changes()) for t in shown) <= max_labels
    height = 4.8 + 0.25 * len(shown)
    fig = Figure(figsize=(10.0, height))
    ax = fig.add_subplot()
    cut = f" ({len(shown)} of {len(trajectories)} opinions)" if len(shown) < len(trajectories) else ""
    ax.set_title("opinion confidence" + (" over time" if x == "time" else " by event") + cut)
    times = sorted({p.time for t in shown for p in t.points})
    order = {time: i for i, time in enumerate(times)}

    def xs(moments: list[datetime]) -> list[float]:
        return list(_num(moments)) if x == "time" else [float(order[m]) for m in moments]

    end = xs(times[-1:])
    handles = []
    for i, t in enumerate(shown):
        colour = OPINION_COLOURS[i % len(OPINION_COLOURS)]
        px, conf = xs([p.time for p in t.points]), [p.confidence for p in t.points]
        # Confidence holds between events: a step line, drawn on to the last event on the plot.
        ax.step([*px, *end], [*conf, conf[-1]], where="post", color=colour, lw=1.8, alpha=0.9)
        for p, px_i in zip(t.points, px, strict=True):
            ax.plot([px_i], [p.confidence], VERDICT_MARKERS[p.verdict], color=colour, ms=8, mec="black", mew=0.6)
            if label_changes and p.verdict is not Verdict.FORMED:
                up = p.delta >= 0
                ax.annotate(
                    f"{p.verdict.value} {p.delta:+.2f}",
                    (px_i, p.confidence),
                    xytext=(0, 9 if up else -9),
                    textcoords="offset points",
                    ha="center",
                    va="bottom" if up else "top",
                    fontsize=7,
                    color=colour,
                )
        label = f"{short_text(t.opinion, text_width)} ({t.confidence:.2f})"
        handles.append(Line2D([], [], color=colour, lw=1.8, label=label))
    ax.set_ylim(-0.08, 1.1)
    ax.margins(x=0.08)  # room for the labels of the first and last events
    ax.set_ylabel("confidence")
    ax.grid(alpha=0.3)
    present = {p.verdict for t in shown for p in t.points}
    markers = [
        Line2D([], [], marker=m, ls="", color="#777777", mec="black", mew=0.6, label=v.value)
        for v, m in VERDICT_MARKERS.items()
        if v in present
    ]
    if handles:
        fig.legend(handles=handles, loc="lower center", fontsize=8, frameon=False)
        fig.subplots_adjust(bottom=(0.8 + 0.2 * len(handles)) / height)  # inches: the x axis, then a row each
    _legend(ax, markers)
    if x == "time":
        # Events of one session are seconds apart, of a long-lived bank months apart: concise labels suit both.
        locator = AutoDateLocator()  # type: ignore[no-untyped-call]
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(ConciseDateFormatter(locator))  # type: ignore[no-untyped-call]
    else:
        ax.set_xlabel("event, in order")
        ax.set_xlim(-0.5, max(len(times), 2) - 0.5)  # integer ticks need a span of 1 at least
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    return save(fig, out)


def plot_channel_contributions(
    explanation: RecallExplanation, out: str | Path | None = None, *, max_hits: int = 10, text_width: int = 60
) -> Figure:
    """A horizontal stacked bar per hit (the first `max_hits`): each channel's RRF share 1 / (k + rank), labelled
    with the hit's rank in that channel."""
    if max_hits < 1:
        raise InvalidInputError("max_hits must be >= 1")
    hits = explanation.hits[:max_hits]
    fig = Figure(figsize=(10.0, 1.4 + 0.4 * max(len(hits), 1)))
    ax = fig.add_subplot()
    ax.set_title(short_text(f"why recalled: {explanation.query}", 100))
    rows = range(len(hits))
    left = [0.0] * len(hits)
    for channel in Channel:
        widths = [h.contributions.get(channel, 0.0) for h in hits]
        if any(widths):
            bars = ax.barh(rows, widths, left=left, color=CHANNEL_COLOURS[channel], label=channel.value, height=0.6)
            ranks = [f"{h.channels[channel].rank}" if channel in h.channels else "" for h in hits]
            ax.bar_label(bars, labels=ranks, label_type="center", fontsize=7, color="white")
            left = [a + b for a, b in zip(left, widths, strict=True)]
    ax.set_yticks(rows, [f"#{h.rank} {short_text(h.text, text_width)}" for h in hits], fontsize=7)
    ax.set_ylim(len(hits) - 0.5, -0.5)
    ax.margins(x=0.03)
    ax.set_xlabel("reciprocal rank fusion score by channel (bar labels: rank in the channel)")
    _legend(ax)
    ax.grid(axis="x", alpha=0.3)
    return save(fig, out)
