"""Decompositions: an op that eager runs as one node, written as the smaller ops the other
passes know, where that lets them do better.

``addmm(b, x, w)`` (``linear``'s op, ``x @ w.T + b``) is one node in eager, where each node
costs dispatch time, and adds the bias into the product's own array. When the one op reading
its result is elementwise (an activation), it becomes ``matmul(x, permute(w))`` and
``add(..., b)``: fusion then joins the bias add to that op, one pass over the result instead
of two, as torch.compile's decompositions hand ``addmm``'s pieces to its fuser. Read
otherwise (a reshape, a loss, the graph's output), it stays one op: its in-place add costs
less than a separate one. Read through a view that keeps its last axis (a transformer's
feed-forward layer, linear on (batch * seq, features) viewed back to (batch, seq, features))
by an elementwise op, the add comes after the view. The gradient rule's nodes are already
matmuls and a sum.

``conv_bias(y, b, shape)`` (a convolution's product, laid out (C, N, *out), plus the bias,
copied into (N, C, *out)) becomes, on the same condition, ``add(permute(view(y)), view(b))``:
the activation's fused kernel then reads the product through the transposed view and writes
its result in C order (``fusion``), one pass where eager makes two.
"""

from __future__ import annotations

from ..elementwise import SCALAR_FORMS
from ..ir import Graph, Node, Ref, Value

__all__ = ["decompose"]


def decompose(graph: Graph) -> Graph:
    """Every ``addmm`` and ``conv_bias`` node whose result only an elementwise op reads, as
    the parts above."""
    values = graph.values()
    next_id = max(values, default=-1) + 1
    readers: dict[int, list[Node]] = {}
    for node in [*graph.nodes, *graph.backward]:
        for value_id in node.refs():
            readers.setdefault(value_id, []).append(node)
    given = set(graph.output_ids())
    dropped: set[int] = set()
    for attribute in ("nodes", "backward"):
        rewritten: list[Node] = []
        for node in getattr(graph, attribute):
            if id(node) in dropped:
                continue
            if node.op not in _PARTS or node.kind != "op" or node.cast is not None:
                rewritten.append(node)
                continue
            reshaped = _viewed_for_elementwise(node, readers, given)
            if reshaped is not None:  # addmm -> view -> activation: the add after the view
                parts = _linear_parts(node, values, next_id, reshaped)
                dropped.add(id(reshaped))
            elif _feeds_elementwise(node.outputs[0].id, readers, given):
                parts = _PARTS[node.op](node, values, next_id)
            else:
                rewritten.append(node)
                continue
            rewritten.extend(parts)
            next_id += len(parts) - 1
        setattr(graph, attribute, rewritten)
    return graph


def _viewed_for_elementwise(
    node: Node, readers: dict[int, list[Node]], given: set[int]
) -> Node | None:
    """The ``view`` that is all that reads an ``addmm``'s result, keeping its last axis, when
    one elementwise op is all that reads the view (a transformer's feed-forward layer:
    linear, reshape back to (batch, seq, features), ReLU)."""
    reading = readers.get(node.outputs[0].id, [])
    if node.op != "addmm" or node.outputs[0].id in given or len(reading) != 1:
        return None
    (view,) = reading
    if view.kind != "op" or view.op != "view" or view.args[0] != Ref(node.outputs[0].id):
        return None
    if view.outputs[0].shape[-1:] != node.outputs[0].shape[-1:]:
        return None  # the features must stay the last axis, for the bias to broadcast there
    return view if _feeds_elementwise(view.outputs[0].id, readers, given) else None


def _feeds_elementwise(value_id: int, readers: dict[int, list[Node]], given: set[int]) -> bool:
    """Whether one op, with a scalar form, is all that reads ``value_id``."""
    reading = readers.get(value_id, [])
    return (
        value_id not in given
        and len(reading) == 1
        and reading[0].kind == "op"
        and reading[0].op in SCALAR_FORMS
    )


def _linear_parts(
    node: Node, values: dict[int, Value], next_id: int, reshaped: Node | None = None
) -> list[Node]:
    """``node``'s three ops, two new values (ids ``next_id`` and the one after) between them;
    with ``reshaped`` (the view reading ``node``), the product viewed first, a third new
    value, and the add making the view's result."""
    bias, rows, weight = node.args
    weight_meta = values[weight.id]
    out = node.outputs[0]
    transposed = Value(
        next_id,
        weight_meta.shape[::-1],
        weight_meta.dtype,
        weight_meta.device,
        weight_meta.requires_grad,
    )
    product = Value(next_id + 1, out.shape, out.dtype, out.device, out.requires_grad)
    parts = [
        node.like("permute", (weight,), {"axes": (1, 0)}, transposed),
        node.like("matmul", (rows, Ref(transposed.id)), {}, product),
    ]
    if reshaped is None:
        return [*parts, node.like("add", (Ref(product.id), bias), {}, out)]
    shaped = reshaped.outputs[0]
    viewed = Value(next_id + 2, shaped.shape, out.dtype, out.device, out.requires_grad)
    return [
        *parts,
        reshaped.like("view", (Ref(product.id),), dict(reshaped.attrs), viewed),
        node.like("add", (Ref(viewed.id), bias), {}, shaped),
    ]


def _conv_bias_parts(node: Node, values: dict[int, Value], next_id: int) -> list[Node]:
    """``node``'s four ops, three new values (ids from ``next_id``) between them."""
    product, bias = node.args
    out = node.outputs[0]
    channels, spatial = out.shape[1], out.shape[2:]
    by_channel = (channels, out.shape[0], *spatial)
    bias_meta = values[bias.id]
    rows = Value(next_id, by_channel, out.dtype, out.device, out.requires_grad)
    batch_first = Value(next_id + 1, out.shape, out.dtype, out.device, out.requires_grad)
    column = Value(
        next_id + 2,
        (channels, *(1,) * len(spatial)),
        bias_meta.dtype,
        bias_meta.device,
        bias_meta.requires_grad,
    )
    return [
        node.like("view", (product,), {"shape": by_channel}, rows),
        node.like(
            "permute", (Ref(rows.id),), {"axes": (1, 0, *range(2, len(out.shape)))}, batch_first
        ),
        node.like("view", (bias,), {"shape": column.shape}, column),
        node.like("add", (Ref(batch_first.id), Ref(column.id)), {}, out),
    ]


_PARTS = {"addmm": _linear_parts, "conv_bias": _conv_bias_parts}
