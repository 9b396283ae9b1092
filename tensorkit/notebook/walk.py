"""Iterative walks over a backward graph (no recursion, so any depth works)."""

from __future__ import annotations

from collections.abc import Iterable

from ..autograd.graph import AccumulateGrad, Node, edge_of
from ..tensor import Tensor

__all__ = ["backward_nodes", "node_ids", "root_nodes"]


def root_nodes(tensors: Tensor | Iterable[Tensor]) -> list[Node]:
    """The nodes gradient of ``tensors`` enters the graph through (grad_fn or accumulator)."""
    roots = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    found = [edge_of(t) for t in roots]
    return [edge[0] for edge in found if edge is not None]


def backward_nodes(roots: list[Node]) -> list[Node]:
    """Every node reachable from ``roots`` through edges, in depth-first discovery order."""
    seen: dict[Node, None] = {}
    stack = list(reversed(roots))
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen[node] = None
        for edge in reversed(node.edges):
            if edge is not None and edge[0] not in seen:
                stack.append(edge[0])
    return list(seen)


def node_ids(nodes: list[Node]) -> dict[Node, str]:
    """Stable ids for one walk: ``n0, n1, ...`` for ops and ``leaf0, ...`` for leaves."""
    ids: dict[Node, str] = {}
    ops = leaves = 0
    for node in nodes:
        if type(node) is AccumulateGrad:
            ids[node] = f"leaf{leaves}"
            leaves += 1
        else:
            ids[node] = f"n{ops}"
            ops += 1
    return ids
