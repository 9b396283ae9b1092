"""Dead-code elimination: drop nodes whose outputs nothing needs."""

from __future__ import annotations

from ..ir import Graph, Node

__all__ = ["eliminate_dead_code"]


def eliminate_dead_code(graph: Graph) -> Graph:
    """Keep the nodes that lead to an output, a gradient, a write or a value the backward
    reads; random draws stay (they advance the generator, as the eager call did), and so
    do guards (their check is the effect) with what they read."""
    graph.backward = _live(graph.backward, set(graph.grads.values()))
    needed = set(graph.output_ids())
    for node in graph.backward:
        needed.update(node.refs())
    graph.nodes = _live(graph.nodes, needed)
    return graph


def _live(nodes: list[Node], needed: set[int]) -> list[Node]:
    kept: list[Node] = []
    for node in reversed(nodes):
        if node.kind in ("random", "function", "guard") or any(
            v.id in needed for v in node.outputs
        ):
            kept.append(node)
            needed.update(node.refs())
    kept.reverse()
    return kept
