"""Decompositions: an op that eager runs as one node, written as the smaller ops the other
passes know, where that lets them do better.

``addmm(b, x, w)`` (``linear``'s op, ``x @ w.T + b``) is one node in eager, where each node
costs dispatch time, and adds the bias into the product's own array. When the one op reading
its result is elementwise (an activation), it becomes ``matmul(x, permute(w))`` and
``add(..., b)``: fusion then joins the bias add to that op, one pass over the result instead
of two, as torch.compile's decompositions hand ``addmm``'s pieces to its fuser. Read
otherwise (a reshape, a loss, the graph's output), it stays one op: its in-place add costs
less than a separate one. The gradient rule's nodes are already matmuls and a sum.
"""

from __future__ import annotations

from ..elementwise import SCALAR_FORMS
from ..ir import Graph, Node, Ref, Value

__all__ = ["decompose"]


def decompose(graph: Graph) -> Graph:
    """Every ``addmm`` node whose result only an elementwise op reads, as a permute, a
    matmul and an add."""
    values = graph.values()
    next_id = max(values, default=-1) + 1
    readers: dict[int, list[Node]] = {}
    for node in [*graph.nodes, *graph.backward]:
        for value_id in node.refs():
            readers.setdefault(value_id, []).append(node)
    given = set(graph.output_ids())
    for attribute in ("nodes", "backward"):
        rewritten: list[Node] = []
        for node in getattr(graph, attribute):
            if (
                node.op != "addmm"
                or node.kind != "op"
                or not _feeds_elementwise(node.outputs[0].id, readers, given)
            ):
                rewritten.append(node)
                continue
            rewritten.extend(_linear_parts(node, values[node.args[2].id], next_id))
            next_id += 2
        setattr(graph, attribute, rewritten)
    return graph


def _feeds_elementwise(value_id: int, readers: dict[int, list[Node]], given: set[int]) -> bool:
    """Whether one op, with a scalar form, is all that reads ``value_id``."""
    reading = readers.get(value_id, [])
    return (
        value_id not in given
        and len(reading) == 1
        and reading[0].kind == "op"
        and reading[0].op in SCALAR_FORMS
    )


def _linear_parts(node: Node, weight_meta: Value, next_id: int) -> list[Node]:
    """``node``'s three ops, two new values (ids ``next_id`` and the one after) between them."""
    bias, rows, weight = node.args
    out = node.outputs[0]
    transposed = Value(
        next_id,
        weight_meta.shape[::-1],
        weight_meta.dtype,
        weight_meta.device,
        weight_meta.requires_grad,
    )
    product = Value(next_id + 1, out.shape, out.dtype, out.device, out.requires_grad)

    return [
        node.like("permute", (weight,), {"axes": (1, 0)}, transposed),
        node.like("matmul", (rows, Ref(transposed.id)), {}, product),
        node.like("add", (Ref(product.id), bias), {}, out),
    ]
