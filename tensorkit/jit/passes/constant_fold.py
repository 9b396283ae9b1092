"""Constant folding: compute once the nodes whose every input is a constant."""

from __future__ import annotations

from typing import Any

from ..._backend import as_device
from ...ops._apply import OPS
from ..ir import CONSTANT, Graph, Node, Placeholder, Ref, map_refs

__all__ = ["fold_constants"]


def fold_constants(graph: Graph) -> Graph:
    """Replace each op node whose tensor arguments are all constants by constants holding
    its results, computed now by the op's own forward (random draws and opaque functions
    are never folded; a node without tensor arguments is left alone)."""
    graph.nodes = _fold(graph, graph.nodes)
    graph.backward = _fold(graph, graph.backward)
    return graph


def _fold(graph: Graph, nodes: list[Node]) -> list[Node]:
    kept = []
    for node in nodes:
        refs = list(node.refs())
        if node.kind != "op" or not refs or any(r not in graph.constants for r in refs):
            kept.append(node)
            continue
        results = _evaluate(graph, node)
        for value, array in zip(node.outputs, results, strict=True):
            graph.constants[value.id] = array
            graph.placeholders.append(Placeholder(value, CONSTANT, f"folded {node.op}"))
    return kept


def _evaluate(graph: Graph, node: Node) -> tuple:
    xp = as_device(node.outputs[0].device).xp
    args: list[Any] = []
    for arg in node.args:
        if type(arg) is Ref:
            array = graph.constants[arg.id]
            args.append(array if node.cast is None else array.astype(node.cast))
        else:
            args.append(arg)
    attrs = {k: map_refs(v, lambda ref: graph.constants[ref.id]) for k, v in node.attrs.items()}
    result = OPS[node.op].forward(xp, *args, **attrs)
    results = result if node.multi_output else (result,)
    return tuple(
        r if hasattr(r, "shape") and r.shape == () and isinstance(r, xp.ndarray) else xp.asarray(r)
        for r in results
    )
