"""Channels-last convolutions: a compiled graph's convolutions computed in (N, *S, C) memory.

Eager runs a convolution on (N, C, *S) arrays, as every op must return that layout: im2col
lays the windows out (C, *kernel, N, *out), one matmul gives the result by channel, and
``conv_bias`` adds the bias while copying it into (N, C, *out); its backward copies the
gradient back by channel. A graph knows where each array goes next, so, as torch.compile's
layout optimization does for convolutions, this pass runs each convolution it recognizes with
one row per output position instead:

- forward: ``im2col(x, channels_last=True)`` (N, *out, *kernel, C), viewed (M, K) with
  M = N * prod(out); ``matmul`` by the weight's rows (Cout, K) transposed gives (M, Cout),
  which *is* the (N, *out, Cout) memory of the result: the bias is a broadcast ``add``, and
  the result is a ``permute`` of it, (N, Cout, *out) to every reader, no copy. An activation
  reading only that result runs before the permute, so fusion joins it to the add;
- backward: the gradient permuted to (N, *out, Cout) (contiguous when it came from the
  layer above in that memory) is the (M, Cout) operand of the weight's gradient,
  ``permute(gy) @ rows``, and of the input's, ``gy @ weight_rows`` summed back by
  ``col2im(channels_last=True)`` into (N, *S, C) memory.

The next convolution's im2col then reads (N, *S, C) memory, contiguous runs of C values. The
products are the same sums in another order (float rounding differs from eager's, as with
any change of BLAS call). A convolution that is not the exact pattern (grouped, without a
bias, cuDNN's, an im2col read elsewhere) is left as eager ran it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..elementwise import SCALAR_FORMS
from ..ir import Graph, Node, Ref, Value

__all__ = ["channels_last_convolutions"]


@dataclass
class _Conv:
    """The nodes of one convolution as eager recorded them (backward parts [] if absent)."""

    im2col: Node
    cols: Node  # view(im2col, (1, K, M))
    weight: Node  # view(w, (1, Cout, K))
    product: Node  # matmul(weight, cols)
    bias: Node  # conv_bias(product, b)
    activation: Node | None  # the one unary elementwise op reading the result
    stays_last: bool  # the result's readers take (N, *out, C) memory as well as eager's
    grad_chain: list[Node]  # view, permute, contiguous, view: the gradient by channel
    weight_grad: list[Node]  # permute(cols), matmul, view
    input_grad: list[Node]  # permute(weight), matmul, view, col2im


def channels_last_convolutions(graph: Graph) -> Graph:
    """Rewrite every recognized convolution as the module's text says (in place)."""
    everything = [*graph.nodes, *graph.backward]
    produced = {v.id: n for n in everything for v in n.outputs}
    readers: dict[int, list[Node]] = {}
    for node in everything:
        for value_id in node.refs():
            readers.setdefault(value_id, []).append(node)
    given = set(graph.output_ids())
    values = graph.values()
    ids = _Ids(max(values, default=-1) + 1)
    replaced: dict[int, list[Node]] = {}  # id(old node) -> the nodes standing in its place
    dropped: set[int] = set()
    last: set[int] = set()  # values the rewrite leaves in channels-last memory
    for node in everything:
        conv = _recognize(node, produced, readers, given)
        if conv is None:
            continue
        parts = _rewrite(conv, values, ids, last)
        replaced.update(parts)
        dropped |= {id(n) for n in _nodes(conv)} - set(parts)
    if not replaced:
        return graph
    for attribute in ("nodes", "backward"):
        rewritten: list[Node] = []
        for node in getattr(graph, attribute):
            if id(node) in replaced:
                rewritten.extend(replaced[id(node)])
            elif id(node) not in dropped:
                rewritten.append(node)
        setattr(graph, attribute, rewritten)
    _results_in_c_order(graph, last, ids)
    return graph


# Ops whose result is a fresh C-ordered array whatever their inputs' layouts.
_FRESH = frozenset({"matmul", "addmm", "contiguous", "im2col", "reshape", "clone"})


def _results_in_c_order(graph: Graph, last: set[int], ids: _Ids) -> None:
    """Whatever leaves the graph (its results, gradients, writes) in eager's C order: a
    ``contiguous`` (no copy when the array is already C-ordered) after each value that may
    hold channels-last memory, that is, any value computed from the rewrite's channels-last
    values through ops that keep a layout."""
    maybe = set(last)
    for node in [*graph.nodes, *graph.backward]:
        if node.op not in _FRESH and any(r in maybe for r in node.refs()):
            maybe |= {v.id for v in node.outputs}
    leaving = {v for v in graph.output_ids() if v in maybe}
    if not leaving:
        return
    values = graph.values()
    ordered: dict[int, int] = {}  # value id -> its C-ordered copy's id
    for attribute in ("nodes", "backward"):
        rewritten: list[Node] = []
        for node in getattr(graph, attribute):
            rewritten.append(node)
            for value in node.outputs:
                if value.id in leaving:
                    copy = ids.value(values[value.id], value.shape)
                    rewritten.append(node.like("contiguous", (Ref(value.id),), {}, copy))
                    ordered[value.id] = copy.id
        setattr(graph, attribute, rewritten)
    graph.outputs = [Ref(ordered.get(v.id, v.id)) if type(v) is Ref else v for v in graph.outputs]
    graph.grad_outputs = [Ref(ordered.get(v.id, v.id)) for v in graph.grad_outputs]
    graph.grads = {i: ordered.get(v, v) for i, v in graph.grads.items()}
    graph.leaf_grads = {
        i: None if v is None else ordered.get(v, v) for i, v in graph.leaf_grads.items()
    }
    for mutation in graph.mutations:
        mutation.value = ordered.get(mutation.value, mutation.value)


class _Ids:
    def __init__(self, start: int) -> None:
        self.next = start

    def value(self, like: Value, shape: tuple[int, ...]) -> Value:
        value = Value(self.next, shape, like.dtype, like.device, like.requires_grad)
        self.next += 1
        return value


def _nodes(conv: _Conv) -> list[Node]:
    found = [conv.im2col, conv.cols, conv.weight, conv.product, conv.bias]
    found += [conv.activation] if conv.activation is not None else []
    return found + conv.grad_chain + conv.weight_grad + conv.input_grad


# ----------------------------------------------------------------------------- matching
def _is(node: Node | None, op: str) -> bool:
    return node is not None and node.kind == "op" and node.op == op and node.cast is None


def _only_reader(value_id: int, readers: dict[int, list[Node]], given: set[int]) -> Node | None:
    found = readers.get(value_id, [])
    return found[0] if len(found) == 1 and value_id not in given else None


def _recognize(
    node: Node, produced: dict[int, Node], readers: dict[int, list[Node]], given: set[int]
) -> _Conv | None:
    """The convolution whose im2col ``node`` is, when every part is eager's pattern."""
    if not _is(node, "im2col") or node.attrs.get("batch_first") or node.attrs.get("channels_last"):
        return None
    d = len(node.attrs["kernel"])
    cols = _only_reader(node.outputs[0].id, readers, given)
    if not _is(cols, "view") or cols.outputs[0].shape[0] != 1:
        return None  # grouped convolutions keep eager's layout
    cols_readers = readers.get(cols.outputs[0].id, [])
    product = next((r for r in cols_readers if _is(r, "matmul")), None)
    if product is None or product.args[1] != Ref(cols.outputs[0].id):
        return None
    weight = produced.get(product.args[0].id) if type(product.args[0]) is Ref else None
    if not _is(weight, "view") or type(weight.args[0]) is not Ref:
        return None
    bias = _only_reader(product.outputs[0].id, readers, given)
    if not _is(bias, "conv_bias") or len(bias.outputs[0].shape) != d + 2:
        return None
    weight_grad = _weight_grad(cols, product, cols_readers, readers, given)
    input_grad = _input_grad(weight, product, readers, given)
    if weight_grad is None or input_grad is None:
        return None
    gy = {n.args[0].id for n in weight_grad[1:2]} | {n.args[1].id for n in input_grad[1:2]}
    if len(gy) > 1:
        return None
    matmuls = {id(n) for n in weight_grad[1:2] + input_grad[1:2]}
    if gy and any(id(r) not in matmuls for r in readers.get(next(iter(gy)), [])):
        return None
    grad_chain = _grad_chain(next(iter(gy)), produced, readers, given) if gy else []
    if grad_chain is None:
        return None
    activation = _only_reader(bias.outputs[0].id, readers, given)
    if activation is not None and not _unary(activation, bias.outputs[0].id):
        activation = None
    result = (activation or bias).outputs[0].id
    stays_last = result not in given and all(
        any(_is(r, op) for op in _TAKE_CHANNELS_LAST)
        or (_is(r, "im2col") and not r.attrs["batch_first"])
        for r in readers.get(result, [])
    )
    return _Conv(
        node,
        cols,
        weight,
        product,
        bias,
        activation,
        stays_last,
        grad_chain,
        weight_grad,
        input_grad,
    )


# Ops that read a channels-last result as fast as eager's layout and keep it (max pooling's).
_TAKE_CHANNELS_LAST = ("threshold_backward", "window_argmax", "max_pool")


def _unary(node: Node, value_id: int) -> bool:
    form = SCALAR_FORMS.get(node.op)
    return (
        node.kind == "op"
        and form is not None
        and form.arity == 1
        and node.args == (Ref(value_id),)
        and not node.attrs
        and node.cast is None
        and node.op not in ("expand", "contiguous", "clone")
    )


def _gradient_product(
    operand_readers: list[Node],
    product: Node,
    side: int,
    readers: dict[int, list[Node]],
    given: set[int],
) -> list[Node] | None:
    """The matmul rule's nodes for one operand of ``product``: [permute(operand), a matmul
    reading it as argument ``side``, the view of that product], [] when nothing but
    ``product`` reads the operand, None when something else does."""
    others = [r for r in operand_readers if r is not product]
    if not others:
        return []
    (transposed,) = others if len(others) == 1 else (None,)
    if not _is(transposed, "permute") or transposed.attrs["axes"] != (0, 2, 1):
        return None
    product_t = _only_reader(transposed.outputs[0].id, readers, given)
    if not _is(product_t, "matmul") or product_t.args[side] != Ref(transposed.outputs[0].id):
        return None
    shaped = _only_reader(product_t.outputs[0].id, readers, given)
    if not _is(shaped, "view") or type(product_t.args[1 - side]) is not Ref:
        return None
    return [transposed, product_t, shaped]


def _weight_grad(
    cols: Node,
    product: Node,
    cols_readers: list[Node],
    readers: dict[int, list[Node]],
    given: set[int],
) -> list[Node] | None:
    """[permute(cols), matmul(gy, it), view] or [] when nothing else reads the columns."""
    return _gradient_product(cols_readers, product, 1, readers, given)


def _input_grad(
    weight: Node, product: Node, readers: dict[int, list[Node]], given: set[int]
) -> list[Node] | None:
    """[permute(weight), matmul(it, gy), view, col2im] or [] when nothing else reads the
    weight's view."""
    if weight.outputs[0].id in given:
        return None
    found = _gradient_product(readers.get(weight.outputs[0].id, []), product, 0, readers, given)
    if not found:
        return found
    summed = _only_reader(found[-1].outputs[0].id, readers, given)
    if not _is(summed, "col2im") or summed.attrs.get("batch_first"):
        return None
    return [*found, summed]


def _grad_chain(
    gy: int, produced: dict[int, Node], readers: dict[int, list[Node]], given: set[int]
) -> list[Node] | None:
    """conv_bias's gradient by channel, view(contiguous(permute(view(gout)))), whose inner
    values nothing else reads."""
    chain: list[Node] = []
    value = gy
    for op in ("view", "contiguous", "permute", "view"):
        node = produced.get(value)
        if not _is(node, op) or type(node.args[0]) is not Ref:
            return None
        if chain and _only_reader(node.outputs[0].id, readers, given) is not chain[-1]:
            return None
        chain.append(node)
        value = node.args[0].id
    if chain[2].attrs["axes"] != (1, 0, 2):
        return None
    return chain[::-1]  # in execution order: view, permute, contiguous, view


# ---------------------------------------------------------------------------- rewriting
def _rewrite(
    conv: _Conv, values: dict[int, Value], ids: _Ids, left_last: set[int]
) -> dict[int, list[Node]]:
    """``id(old node)`` -> the new nodes that stand where it stood (the others are
    dropped); the ids of values left in channels-last memory are added to ``left_last``."""
    im2col, attrs = conv.im2col, conv.im2col.attrs
    x, w, b = im2col.args[0], conv.weight.args[0], conv.bias.args[1]
    out = conv.bias.outputs[0]
    d = len(attrs["kernel"])
    batch, c_out, spatial = out.shape[0], out.shape[1], out.shape[2:]
    w_meta = values[w.id]
    c_in = w_meta.shape[1]
    rows_count = batch * math.prod(spatial)
    depth = math.prod(attrs["kernel"]) * c_in
    last = (0, *range(2, 2 + d), 1)  # (N, C, *S) -> (N, *S, C)
    first = (0, d + 1, *range(1, d + 1))  # and back
    x_meta = values[x.id]
    windows = ids.value(x_meta, (batch, *spatial, *attrs["kernel"], c_in))
    patches = ids.value(x_meta, (rows_count, depth))
    w_last = ids.value(w_meta, (c_out, *attrs["kernel"], c_in))
    w_dense = ids.value(w_meta, w_last.shape)
    w_rows = ids.value(w_meta, (c_out, depth))
    w_cols = ids.value(w_meta, (depth, c_out))
    y = ids.value(out, (rows_count, c_out))
    y_last = ids.value(out, (batch, *spatial, c_out))
    site = conv.bias
    forward = [
        site.like("im2col", (x,), {**attrs, "channels_last": True}, windows),
        site.like("view", (Ref(windows.id),), {"shape": patches.shape}, patches),
        site.like("permute", (w,), {"axes": last}, w_last),
        site.like("contiguous", (Ref(w_last.id),), {}, w_dense),
        site.like("view", (Ref(w_dense.id),), {"shape": w_rows.shape}, w_rows),
        site.like("permute", (Ref(w_rows.id),), {"axes": (1, 0)}, w_cols),
        site.like("matmul", (Ref(patches.id), Ref(w_cols.id)), {}, y),
        site.like("view", (Ref(y.id),), {"shape": y_last.shape}, y_last),
    ]
    act = conv.activation
    result = (act or conv.bias).outputs[0]
    if conv.stays_last:  # add (and activation) on (N, *out, Cout) memory, then a permute
        summed = ids.value(out, y_last.shape)
        forward.append(site.like("add", (Ref(y_last.id), b), {}, summed))
        if act is not None:
            activated = ids.value(result, summed.shape)
            forward.append(act.like(act.op, (Ref(summed.id),), {}, activated))
            summed = activated
        forward.append(site.like("permute", (Ref(summed.id),), {"axes": first}, result))
        left_last.add(result.id)
    else:  # the fused kernel reads the product through a permute and writes eager's layout
        y_first = ids.value(out, out.shape)
        column = ids.value(values[b.id], (c_out, *(1,) * d))
        forward.append(site.like("permute", (Ref(y_last.id),), {"axes": first}, y_first))
        forward.append(site.like("view", (b,), {"shape": column.shape}, column))
        forward.append(site.like("add", (Ref(y_first.id), Ref(column.id)), {}, out))
        if act is not None:
            forward.append(act.like(act.op, (Ref(out.id),), {}, result))
    parts: dict[int, list[Node]] = {id(conv.bias): []}
    parts[id(act or conv.bias)] = forward
    if not conv.grad_chain:
        return parts
    chain = conv.grad_chain
    gout = chain[0].args[0]
    g_meta = values[gout.id]
    g_last = ids.value(g_meta, (batch, *spatial, c_out))
    g_dense = ids.value(g_meta, g_last.shape)
    gy = ids.value(g_meta, (rows_count, c_out))
    at = chain[-1]
    parts[id(at)] = [
        at.like("permute", (gout,), {"axes": last}, g_last),
        at.like("contiguous", (Ref(g_last.id),), {}, g_dense),
        at.like("view", (Ref(g_dense.id),), {"shape": gy.shape}, gy),
    ]
    if conv.weight_grad:
        shaped = conv.weight_grad[-1]
        gw = shaped.outputs[0]
        gy_t = ids.value(g_meta, (c_out, rows_count))
        gw_rows = ids.value(gw, (c_out, depth))
        gw_last = ids.value(gw, w_last.shape)
        gw_first = ids.value(gw, gw.shape)
        parts[id(shaped)] = [
            shaped.like("permute", (Ref(gy.id),), {"axes": (1, 0)}, gy_t),
            shaped.like("matmul", (Ref(gy_t.id), Ref(patches.id)), {}, gw_rows),
            shaped.like("view", (Ref(gw_rows.id),), {"shape": gw_last.shape}, gw_last),
            shaped.like("permute", (Ref(gw_last.id),), {"axes": first}, gw_first),
            shaped.like("contiguous", (Ref(gw_first.id),), {}, gw),
        ]
    if conv.input_grad:
        col2im = conv.input_grad[-1]
        gx = col2im.outputs[0]
        g_patches = ids.value(gx, (rows_count, depth))
        g_windows = ids.value(gx, windows.shape)
        parts[id(col2im)] = [
            col2im.like("matmul", (Ref(gy.id), Ref(w_rows.id)), {}, g_patches),
            col2im.like("view", (Ref(g_patches.id),), {"shape": g_windows.shape}, g_windows),
            col2im.like(
                "col2im", (Ref(g_windows.id),), {**col2im.attrs, "channels_last": True}, gx
            ),
        ]
        left_last.add(gx.id)
    return parts
