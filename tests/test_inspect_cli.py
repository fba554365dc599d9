"""The inspection commands of the CLI: inspect, graph and explain."""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx
import pytest

from hindsight.cli import main
from hindsight.sample import load_sample


@pytest.fixture(scope="module")
def memdir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A memory directory holding bank `b` with the sample's first two sessions, retained through the CLI."""
    root = tmp_path_factory.mktemp("cli")
    for s in load_sample()[:2]:
        path = root / f"{s.id}.json"
        path.write_text(json.dumps({"messages": [m.model_dump(mode="json") for m in s.messages]}))
        assert main(["--dir", str(root / "mem"), "retain", "b", "--file", str(path), "--document-id", s.id]) == 0
    return str(root / "mem")


pytestmark = pytest.mark.usefixtures("minilm")


def test_inspect_prints_a_summary(memdir: str, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["--dir", memdir, "inspect", "b", "--top", "3"]) == 0
    out = capsys.readouterr().out
    for heading in ("contents", "largest connected components", "top entities by mentions", "top entities by degree"):
        assert heading in out
    assert "world units" in out and "Maya" in out and "Robert Smith (0.8" in out


def test_graph_plots_an_entity_neighbourhood(memdir: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "bob.png"
    args = ["--dir", memdir, "graph", "b", "--entity", "robert", "--out", str(out), "--max-units", "4"]
    assert main([*args, "--exclude", "Maya", "--exclude", "Ava"]) == 0
    assert out.read_bytes()[:4] == b"\x89PNG"
    assert f"wrote {out}" in capsys.readouterr().out.replace("\n", "")


def test_graph_writes_an_interactive_page(memdir: str, tmp_path: Path) -> None:
    page = tmp_path / "bank.html"
    assert main(["--dir", memdir, "graph", "b", "--out", str(page), "--max-nodes", "12"]) == 0
    html = page.read_text(encoding="utf-8")
    assert "Bokeh" in html and "12 of" in html


def test_graph_exports_graphml_with_filters(memdir: str, tmp_path: Path) -> None:
    everything, world = tmp_path / "all.graphml", tmp_path / "world.graphml"
    assert main(["--dir", memdir, "graph", "b", "--out", str(everything)]) == 0
    assert (
        main(["--dir", memdir, "graph", "b", "--out", str(world), "--network", "world", "--until", "2024-03-05"]) == 0
    )
    full, part = nx.read_graphml(everything), nx.read_graphml(world)
    assert 0 < part.number_of_nodes() < full.number_of_nodes()  # the second session is after the cut


def test_graph_errors(memdir: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--dir", memdir, "graph", "b", "--entity", "Bobb", "--out", str(tmp_path / "x.png")]) == 2
    assert "did you mean Bob" in capsys.readouterr().out
    assert main(["--dir", memdir, "graph", "b", "--out", str(tmp_path / "x.pdf")]) == 2
    assert main(["--dir", memdir, "graph", "b", "--since", "yesterday", "--out", str(tmp_path / "x.png")]) == 2
    assert "not an ISO date" in capsys.readouterr().out
    assert not list(tmp_path.iterdir())


def test_explain_prints_channels_and_plots(memdir: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chart = tmp_path / "why.svg"
    args = ["--dir", memdir, "explain", "b", "What did Maya do last week?", "--query-time", "2024-03-04"]
    assert main([*args, "--top-k", "3", "--out", str(chart)]) == 0
    out = capsys.readouterr().out
    assert "found by" in out and "temporal #1" in out and "'last week'" in out
    assert "<svg" in chart.read_text(encoding="utf-8")[:400]
