"""The inspection API and its plots, on the sample conversation retained with real MiniLM and spaCy."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import networkx as nx
import pytest

from hindsight import Bank, Hindsight, HindsightConfig, LinkType
from hindsight.embed.base import Embedder
from hindsight.errors import EntityNotFoundError, InvalidInputError
from hindsight.inspect import (
    entity_aliases,
    entity_neighbourhood,
    entity_timeline,
    explain_recall,
    find_entity,
    graph_stats,
    plots,
    recall_subgraph,
    top_entities,
    top_subgraph,
    unit_graph,
    write_graph,
)
from hindsight.inspect.render import components_table, counts_table, entities_table, explain_table
from hindsight.recall.types import Channel, RecallResult
from hindsight.sample import load_sample

# Short channel lists, so that on a bank this small the graph channel has units left to add (it only votes for
# units the semantic channel did not list).
SMALL_POOLS = HindsightConfig.model_validate({"recall": {"fusion": {"pool": 8}}})
MULTI_HOP = "Where does the brother who waited at the finish line work?"


@pytest.fixture(scope="module")
def bank(tmp_path_factory: pytest.TempPathFactory, minilm: Embedder) -> Iterator[Bank]:
    with Hindsight(tmp_path_factory.mktemp("inspect"), config=SMALL_POOLS, embedder=minilm) as hs:
        b = hs.bank("inspect")
        for s in load_sample():
            b.retain(s.messages, timestamp=s.date, document_id=s.id)
        yield b


@pytest.fixture(scope="module")
def graph(bank: Bank) -> nx.MultiDiGraph:
    return bank.to_networkx()


@pytest.fixture(scope="module")
def multi_hop(bank: Bank) -> RecallResult:
    return bank.recall(MULTI_HOP, query_time="2024-08-01", top_k=6)


def _names_by_id(bank: Bank) -> dict[str, str]:
    return {e.id: e.name for e in bank.entities()}


# -- entity views --------------------------------------------------------------------------------


def test_find_entity_by_id_name_or_alias(bank: Bank, graph: nx.MultiDiGraph) -> None:
    bob = find_entity(graph, "Bob")
    assert _names_by_id(bank)[bob] == "Bob"
    assert find_entity(graph, "robert smith") == bob  # an alias, any case
    assert find_entity(graph, bob) == bob
    with pytest.raises(EntityNotFoundError, match="did you mean Bob"):
        find_entity(graph, "Bobb")
    with pytest.raises(InvalidInputError):
        find_entity(graph, "  ")


def test_top_entities_by_mentions_and_degree(bank: Bank, graph: nx.MultiDiGraph) -> None:
    units = bank.units()
    by_mentions = top_entities(graph, 5)
    assert len(by_mentions) == 5
    # The two speakers are in every exchange.
    assert {r.name for r in by_mentions[:2]} == {"Maya", "Ava"}
    assert by_mentions[0].mentions == len(units)
    stored = {e.id: e.mention_count for e in bank.entities()}
    assert all(r.mentions == stored[r.id] for r in by_mentions)
    assert [r.mentions for r in by_mentions] == sorted((r.mentions for r in by_mentions), reverse=True)
    # Degree: distinct entities co-mentioned with Bob, counted from the units' own entity lists.
    bob = next(r for r in top_entities(graph, 100, by="degree") if r.name == "Bob")
    co = {name for u in units if "Bob" in u.entities for name in u.entities} - {"Bob"}
    assert bob.degree == len(co)
    by_degree = top_entities(graph, 10, by="degree")
    assert [r.degree for r in by_degree] == sorted((r.degree for r in by_degree), reverse=True)
    with pytest.raises(InvalidInputError):
        top_entities(graph, by="fame")  # type: ignore[arg-type]


def test_views_follow_a_filtered_graph(bank: Bank, graph: nx.MultiDiGraph) -> None:
    june = bank.to_networkx(since=datetime(2024, 6, 1))
    assert 0 < sum(1 for _, d in june.nodes(data=True) if d["kind"] == "unit") < len(bank.units())
    maya_all = next(r for r in top_entities(graph, 3) if r.name == "Maya")
    maya_june = next(r for r in top_entities(june, 3) if r.name == "Maya")
    assert 0 < maya_june.mentions < maya_all.mentions
    assert all(
        e.mentioned_at >= datetime(2024, 6, 1, tzinfo=timezone.utc) for e in entity_timeline(june, "Maya").entries
    )


def test_entity_timeline(graph: nx.MultiDiGraph) -> None:
    timeline = entity_timeline(graph, "bob")
    assert timeline.name == "Bob"
    assert len(timeline.entries) == graph.in_degree(timeline.entity_id)
    assert [e.when for e in timeline.entries] == sorted(e.when for e in timeline.entries)
    assert all(any(a in e.text for a in ("Bob", "Robert", "brother")) for e in timeline.entries)
    lisbon = entity_timeline(graph, "Lisbon").entries[0]
    assert lisbon.occurred_start is not None and lisbon.occurred_start.date().isoformat() == "2024-02-26"
    assert lisbon.occurred_start <= lisbon.when <= lisbon.mentioned_at


def test_entity_aliases_carry_resolution_scores(graph: nx.MultiDiGraph) -> None:
    aliases = entity_aliases(graph, "Bob")
    by_alias = {a.alias: a.score for a in aliases}
    assert {"Bob", "Robert Smith"} <= set(by_alias)
    assert by_alias["Bob"] == 1.0  # the mention that created the entity
    assert 0.6 <= by_alias["Robert Smith"] < 1.0  # merged by the resolver's combined score
    assert [a.score for a in aliases] == sorted((a.score for a in aliases), reverse=True)


# -- subgraphs and export ------------------------------------------------------------------------


def test_entity_neighbourhood_is_small_and_centred(graph: nx.MultiDiGraph) -> None:
    sub = entity_neighbourhood(graph, "Maya", max_units=5, max_entities=3)
    maya = find_entity(graph, "Maya")
    assert sub.graph["focus"] == maya
    units = [n for n, d in sub.nodes(data=True) if d["kind"] == "unit"]
    entities = [n for n, d in sub.nodes(data=True) if d["kind"] == "entity"]
    assert len(units) == 5 and len(entities) == 4
    assert all(sub.has_edge(u, maya, "mentions") for u in units)
    assert any(d["type"] != "mentions" for _, _, d in sub.edges(data=True))  # links among the units are kept
    with pytest.raises(InvalidInputError):
        entity_neighbourhood(graph, "Maya", max_units=0)
    bob = entity_neighbourhood(graph, "Bob", exclude=["maya", "Ava"])
    names = {d["name"] for _, d in bob.nodes(data=True) if d["kind"] == "entity"}
    assert "Bob" in names and "Lisbon" in names and not names & {"Maya", "Ava"}


def test_top_subgraph_and_unit_graph(graph: nx.MultiDiGraph) -> None:
    assert top_subgraph(graph, 10).number_of_nodes() == 10
    assert top_subgraph(graph, 10_000).number_of_nodes() == graph.number_of_nodes()
    units = unit_graph(graph)
    assert units.number_of_nodes() == sum(1 for _, d in graph.nodes(data=True) if d["kind"] == "unit")
    link_types = {t.value for t in LinkType}
    assert all(set(d["types"]) <= link_types for _, _, d in units.edges(data=True))


def test_write_graph_graphml_and_json(graph: nx.MultiDiGraph, tmp_path: Path) -> None:
    back = nx.read_graphml(write_graph(graph, tmp_path / "g.graphml"))
    assert back.number_of_nodes() == graph.number_of_nodes()
    assert back.number_of_edges() == graph.number_of_edges()
    data = json.loads(write_graph(graph, tmp_path / "g.json").read_text())
    bob = next(n for n in data["nodes"] if n.get("name") == "Bob")
    assert any(a["alias"] == "Robert Smith" and 0 < a["score"] < 1 for a in json.loads(bob["aliases"]))
    with pytest.raises(InvalidInputError):
        write_graph(graph, tmp_path / "g.csv")


# -- statistics ----------------------------------------------------------------------------------


def test_graph_stats(bank: Bank, graph: nx.MultiDiGraph) -> None:
    stats = graph_stats(graph, top_components=2)
    stored = bank.stats()
    assert stats.units == stored.units
    assert stats.links == stored.links
    assert stats.entities == stored.entities
    assert stats.mentions == sum(e.mention_count for e in bank.entities())
    n_units = len(bank.units())
    assert sum(stats.degree_histogram.values()) == n_units
    assert stats.max_degree == max(stats.degree_histogram)
    assert sum(c.size for c in stats.components) <= n_units
    assert stats.components[0].top_entities[:2] in (["Ava", "Maya"], ["Maya", "Ava"])
    # Without links every unit is its own component.
    bare = graph_stats(bank.to_networkx(link_types=[]))
    assert bare.component_count == bare.isolated_units == n_units and bare.max_degree == 0


# -- recall explanation --------------------------------------------------------------------------


def test_explain_recall_table(multi_hop: RecallResult) -> None:
    explanation = explain_recall(multi_hop)
    assert [h.rank for h in explanation.hits] == list(range(1, len(multi_hop.hits) + 1))
    for hit, raw in zip(explanation.hits, multi_hop.hits, strict=True):
        assert sum(hit.contributions.values()) == pytest.approx(raw.fused_score)
        assert set(hit.channels) == {c.channel for c in raw.channels}
    total = sum(s.contribution for s in explanation.channels.values())
    assert total == pytest.approx(sum(h.fused_score for h in multi_hop.hits))
    assert explanation.channels[Channel.GRAPH].found >= 1  # the small pools leave the graph channel room
    assert "Northwind" in " ".join(h.text for h in explanation.hits)  # reached through Bob
    with pytest.raises(InvalidInputError):
        explain_recall(multi_hop, rrf_k=-1)


def test_recall_subgraph_holds_hits_paths_and_shared_entities(graph: nx.MultiDiGraph, multi_hop: RecallResult) -> None:
    sub = recall_subgraph(graph, multi_hop)
    for rank, hit in enumerate(multi_hop.hits, start=1):
        assert sub.nodes[hit.unit.id]["rank"] == rank
        assert all(step.unit_id in sub for step in hit.path)
    on_path = [(s, t, d["type"]) for s, t, d in sub.edges(data=True) if d["on_path"]]
    walked = [h for h in multi_hop.hits if len(h.path) > 1]
    assert walked and on_path
    last = walked[0].path
    assert any({s, t} == {last[-2].unit_id, last[-1].unit_id} for s, t, _ in on_path)
    entities = [n for n, d in sub.nodes(data=True) if d["kind"] == "entity"]
    assert all(sub.in_degree(e) >= 2 for e in entities)
    assert len(recall_subgraph(graph, multi_hop, max_entities=1).nodes) < len(sub.nodes)


def test_temporal_recall_explanation_shows_the_time_range(bank: Bank) -> None:
    result = bank.recall("What did Maya do last week?", query_time="2024-03-04", top_k=5)
    explanation = explain_recall(result)
    assert explanation.time_range is not None and explanation.time_range.text == "last week"
    assert explanation.channels[Channel.TEMPORAL].found >= 1


# -- tables and plots ----------------------------------------------------------------------------


def test_rich_tables_render(graph: nx.MultiDiGraph, multi_hop: RecallResult) -> None:
    from rich.console import Console

    console = Console(width=140, record=True)
    stats = graph_stats(graph)
    for table in (
        counts_table(stats),
        components_table(stats),
        entities_table(graph, top_entities(graph, 5)),
        explain_table(explain_recall(multi_hop)),
    ):
        console.print(table)
    text = console.export_text()
    assert "entity links" in text and "Robert Smith (0.8" in text
    assert re.search(r"via (entity|temporal|semantic|causal)", text)  # a graph hit shows its link path


def _is_png(path: Path) -> bool:
    return path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _is_svg(path: Path) -> bool:
    head = path.read_text(encoding="utf-8")[:400]
    return head.startswith("<?xml") and "<svg" in head


def test_plots_write_png_and_svg(graph: nx.MultiDiGraph, multi_hop: RecallResult, tmp_path: Path) -> None:
    figures = {
        "neighbourhood": lambda out: plots.plot_graph(entity_neighbourhood(graph, "Bob"), out, title="around Bob"),
        "whole": lambda out: plots.plot_graph(graph, out, max_nodes=15, layout="kamada-kawai"),
        "recall": lambda out: plots.plot_graph(recall_subgraph(graph, multi_hop), out),
        "timeline": lambda out: plots.plot_entity_timeline(entity_timeline(graph, "Maya"), out, max_units=8),
        "channels": lambda out: plots.plot_channel_contributions(explain_recall(multi_hop), out, max_hits=4),
    }
    titles = {}
    for name, draw in figures.items():
        png, svg = tmp_path / f"{name}.png", tmp_path / f"{name}.svg"
        titles[name] = draw(png).axes[0].get_title()
        draw(svg)
        assert _is_png(png) and png.stat().st_size > 5000, name
        assert _is_svg(svg), name
    # Large inputs are cut to the top k, and the title says so.
    assert "latest 8 of" in titles["timeline"]
    assert f"(15 of {graph.number_of_nodes()} nodes)" in titles["whole"]
    assert titles["recall"].startswith(MULTI_HOP)


def test_plot_limits_and_bad_paths(graph: nx.MultiDiGraph, tmp_path: Path) -> None:
    fig = plots.plot_graph(graph, max_nodes=12)
    assert len(fig.axes[0].collections) >= 2  # edges and nodes drawn
    empty = plots.plot_graph(nx.MultiDiGraph(), tmp_path / "empty.png")
    assert empty.axes[0].get_title() == "memory graph" and _is_png(tmp_path / "empty.png")
    with pytest.raises(InvalidInputError):
        plots.plot_graph(graph, tmp_path / "g.jpg", max_nodes=5)
    with pytest.raises(InvalidInputError):
        plots.plot_graph(graph, layout="circular")  # type: ignore[arg-type]


def test_interactive_html_is_self_contained(graph: nx.MultiDiGraph, multi_hop: RecallResult, tmp_path: Path) -> None:
    from hindsight.inspect.interactive import graph_html

    page = graph_html(entity_neighbourhood(graph, "Bob"), tmp_path / "bob.html", title="around Bob")
    html = page.read_text(encoding="utf-8")
    # BokehJS is inlined: no script or stylesheet is fetched when the page opens.
    assert not re.search(r"<script[^>]*\bsrc=", html) and not re.search(r"<link[^>]*\bhref=", html)
    assert "Bokeh" in html and "around Bob" in html
    assert "Robert Smith (0.8" in html  # hover shows an entity's aliases with their resolution scores
    big = graph_html(graph, tmp_path / "all.html", max_nodes=10).read_text(encoding="utf-8")
    assert f"(10 of {graph.number_of_nodes()} nodes)" in big
    assert "#1" in graph_html(recall_subgraph(graph, multi_hop), tmp_path / "r.html").read_text(encoding="utf-8")
    with pytest.raises(InvalidInputError):
        graph_html(graph, tmp_path / "g.png")
