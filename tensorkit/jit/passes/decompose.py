"""Decompositions: an op that eager runs as one node, written as the smaller ops the other
passes know.

``linear(b, x, w)`` is one node in eager, where each node costs dispatch time. In a graph it
becomes ``matmul(x, permute(w))`` and ``add(..., b)``: the bias add is then an elementwise
op that fusion joins to the activation after it, as torch.compile's decompositions hand
``addmm``'s pieces to its fuser. The gradient rule's nodes are already matmuls and a sum.
"""

from __future__ import annotations

from ..ir import Graph, Node, Ref, Value

__all__ = ["decompose"]


def decompose(graph: Graph) -> Graph:
    """Every ``linear`` node, forward or backward, as a permute, a matmul and an add."""
    values = graph.values()
    next_id = max(values, default=-1) + 1
    for attribute in ("nodes", "backward"):
        rewritten: list[Node] = []
        for node in getattr(graph, attribute):
            if node.op != "linear" or node.kind != "op":
                rewritten.append(node)
                continue
            rewritten.extend(_linear_parts(node, values[node.args[2].id], next_id))
            next_id += 2
        setattr(graph, attribute, rewritten)
    return graph


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

    def part(op: str, args: tuple, attrs: dict, output: Value) -> Node:
        return Node(
            op=op,
            args=args,
            attrs=attrs,
            outputs=(output,),
            site=node.site,
            module=node.module,
            phase=node.phase,
        )

    return [
        part("permute", (weight,), {"axes": (1, 0)}, transposed),
        part("matmul", (rows, Ref(transposed.id)), {}, product),
        part("add", (Ref(product.id), bias), {}, out),
    ]
