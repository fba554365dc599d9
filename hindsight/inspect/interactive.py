"""An interactive graph as one self-contained HTML file (Bokeh, its JavaScript inlined): it opens offline, with pan,
zoom and hover (a unit's date, network and text; an entity's label and aliases). Needs the `viz` extra."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import networkx as nx
from bokeh.embed import file_html
from bokeh.models import ColumnDataSource, HoverTool
from bokeh.plotting import figure
from bokeh.resources import INLINE

from hindsight.errors import InvalidInputError
from hindsight.inspect.entities import is_entity
from hindsight.inspect.graphs import Layout, graph_layout, links_to_draw, top_subgraph
from hindsight.inspect.plots import EDGE_STYLES, ENTITY_COLOUR, NETWORK_COLOURS
from hindsight.inspect.render import short_text

_FIELDS = ("name", "kind", "group", "detail", "colour", "marker", "size", "label")
_LABELLED_UNITS = 40  # above this, unit dates would cover the plot: hover shows them


def _node_row(data: dict[str, Any], labelled: bool) -> dict[str, Any]:
    """A node's hover fields, style and on-plot label (units are labelled only in small graphs, or by rank)."""
    if is_entity(data):
        aliases = ", ".join(f"{a.alias} ({a.score:.2f})" for a in data.get("aliases", []))
        return {
            "name": data["name"],
            "kind": data["label"],
            "group": "entity",
            "detail": aliases,
            "colour": ENTITY_COLOUR,
            "marker": "square",
            "size": 14,
            "label": data["name"],
        }
    rank = data.get("rank")
    name = f"#{rank}" if rank is not None else f"{data['mentioned_at']:%Y-%m-%d}"
    return {
        "name": name,
        "kind": data["network"],
        "group": f"{data['network']} unit",
        "detail": short_text(data["text"], 300),
        "colour": NETWORK_COLOURS.get(data["network"], "#333333"),
        "marker": "circle",
        "size": 16 if rank is not None else 11,
        "label": name if rank is not None or labelled else "",
    }


def graph_html(
    graph: nx.MultiDiGraph,
    out: str | Path,
    *,
    layout: Layout = "spring",
    max_nodes: int = 150,
    max_links_per_unit: int = 4,
    title: str | None = None,
    seed: int = 7,
) -> Path:
    """Write the graph (its `max_nodes` best connected nodes, each unit's strongest links) as an HTML page."""
    path = Path(out)
    if path.suffix.lower() not in (".html", ".htm"):
        raise InvalidInputError(f"an interactive graph is written as .html, not {path.name!r}")
    g = top_subgraph(graph, max_nodes)
    links = links_to_draw(g, max_links_per_unit)
    pos = graph_layout(g, links, layout, seed)
    shown = f" ({g.number_of_nodes()} of {graph.number_of_nodes()} nodes)" if len(g) < len(graph) else ""
    name = title or graph.graph.get("query") or graph.graph.get("bank_id") or "memory graph"
    fig = figure(
        title=f"{name}{shown}",
        tools="pan,wheel_zoom,box_zoom,reset,save",
        active_scroll="wheel_zoom",
        sizing_mode="stretch_both",
        match_aspect=True,
    )
    fig.axis.visible = False
    fig.grid.visible = False
    for etype, (colour, style, width) in EDGE_STYLES.items():
        edges = [(s, t) for s, t, k in links if k == etype]
        if edges:
            fig.multi_line(
                xs=[[pos[s][0], pos[t][0]] for s, t in edges],
                ys=[[pos[s][1], pos[t][1]] for s, t in edges],
                line_color=colour,
                line_dash=style,
                line_alpha=0.7,
                line_width=[width * (2.5 if g.edges[s, t, etype].get("on_path") else 1.0) for s, t in edges],
                legend_label=f"{etype} link",
            )
    labelled = sum(1 for _, d in g.nodes(data=True) if not is_entity(d)) <= _LABELLED_UNITS
    rows = [_node_row(d, labelled) for _, d in g.nodes(data=True)]
    source = ColumnDataSource(
        {
            "x": [pos[n][0] for n in g.nodes],
            "y": [pos[n][1] for n in g.nodes],
            **{key: [r[key] for r in rows] for key in _FIELDS},
        }
    )
    nodes = fig.scatter(
        "x",
        "y",
        source=source,
        marker="marker",
        size="size",
        fill_color="colour",
        line_color="white",
        legend_group="group",
    )
    fig.add_tools(HoverTool(renderers=[nodes], tooltips=[("", "@name (@kind)"), ("", "@detail")]))
    fig.text("x", "y", text="label", source=source, text_font_size="8pt", x_offset=6, y_offset=-4)
    fig.legend.location = "top_left"
    fig.legend.click_policy = "hide"
    path.write_text(file_html(fig, resources=INLINE, title=name), encoding="utf-8")
    return path
