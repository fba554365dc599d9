"""A tree as pydantic writes its schema (a node whose children are nodes: a $ref to itself in $defs), and trees of
any depth, for working memory under a recursive schema."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class Node(BaseModel):
    name: str
    children: list[Node] = []


def tree(depth: int) -> dict[str, Any]:
    """A Node `depth` nodes deep: each node is two levels of JSON (its object, its children's array)."""
    node: dict[str, Any] = {"name": "leaf", "children": []}
    for i in range(depth - 1):
        node = {"name": f"n{i}", "children": [node]}
    return node


def tree_text(depth: int) -> str:
    """The JSON text of a tree `depth` nodes deep, written out: deeper than the json module writes."""
    return '{"name": "n", "children": [' * (depth - 1) + '{"name": "leaf", "children": []}' + "]}" * (depth - 1)
