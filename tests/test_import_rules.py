"""Rules of the house, read from the imports of every module under hindsight/ (module-level, function-level and
TYPE_CHECKING imports alike: each is a dependency): dependencies point one way, and there are no cycles."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "hindsight"


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """The hindsight modules `name` imports; `from pkg import sub` counts as the submodule, not the package."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                out.add(sub if sub in MODULES else base)
    return {m for m in out if m in MODULES and m != name}


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


@pytest.mark.parametrize(
    ("layer", "forbidden"),
    [
        ("store", {"retain", "recall", "reflect", "llm"}),
        ("recall", {"retain", "reflect"}),
        ("memory_context", {"retain", "reflect"}),
        ("temporal", {"retain", "recall", "reflect", "store", "llm"}),
        ("config", {"retain", "recall", "reflect", "store", "llm", "embed"}),
    ],
)
def test_dependencies_point_one_way(layer: str, forbidden: set[str]) -> None:
    broken = sorted(f"{m} imports {d}" for m, deps in GRAPH.items() if _layer(m) == layer
                    for d in deps if _layer(d) in forbidden)
    assert not broken, broken


# What the pipeline stages may know of the store: its interfaces, never a backend.
STORE_INTERFACES = {"hindsight.store.base", "hindsight.store.search"}


def test_pipeline_stages_know_no_store_backend() -> None:
    stages = {"recall", "retain", "reflect", "memory_context"}
    broken = sorted(f"{m} imports {d}" for m, deps in GRAPH.items() if _layer(m) in stages
                    for d in deps if _layer(d) == "store" and d not in STORE_INTERFACES)
    assert not broken, broken


# What the context block's LLM stages may know of the LLM: its interface, never a backend or the factory.
LLM_INTERFACES = {"hindsight.llm.base", "hindsight.llm.schema"}


def test_the_context_block_knows_the_llm_by_its_interface_only() -> None:
    broken = sorted(f"{m} imports {d}" for m, deps in GRAPH.items() if _layer(m) == "memory_context"
                    for d in deps if _layer(d) == "llm" and d not in LLM_INTERFACES)
    assert not broken, broken


def test_there_are_no_import_cycles() -> None:
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        path.append(module)
        for dep in sorted(GRAPH[module]):
            if state.get(dep) == 1:
                return [*path[path.index(dep):], dep]
            if dep not in state and (cycle := visit(dep)):
                return cycle
        path.pop()
        state[module] = 2
        return None

    for module in sorted(GRAPH):
        if module not in state:
            cycle = visit(module)
            assert cycle is None, " -> ".join(cycle)


def test_the_rules_see_real_imports() -> None:
    # A reader that found nothing would pass every rule: check it against imports known to exist.
    assert "hindsight.store.base" in GRAPH["hindsight.store.sqlite"]
    assert "hindsight.store.search" in GRAPH["hindsight.recall.semantic"]
    assert "hindsight.recall.fusion" in GRAPH["hindsight.recall.pipeline"]
    assert "hindsight.nicknames" in GRAPH["hindsight.names"]  # `from hindsight.nicknames import ...`
    assert "hindsight.retain.nlp_extractor" in GRAPH["hindsight.retain.factory"]  # imported inside a function
