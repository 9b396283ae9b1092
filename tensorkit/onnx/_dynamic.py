"""Dynamic axes: which sizes in a recorded graph follow a dynamic dim.

A tk.jit graph holds the sizes it was traced at. For each dynamic dim (a name given to some
input axes), the call is recorded again with those axes one longer, and the two graphs are
compared node by node: the same ops must run on the same arguments; a value whose size
changed has that axis dynamic; an entry of a ``view``/``reshape``/``expand`` shape that
changed by ``k`` is ``k * size + c`` of the dim. Anything else that changed (a constant made
inside the call, a slice bound, another attribute) cannot follow the dim: an error names it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..jit.capture import flatten, unflatten
from ..jit.ir import Graph, Node, Ref
from ..ops.shape import cat
from ..tensor import Tensor
from ._builder import Dynamic, ExportError
from ._record import Recording, host, record

__all__ = ["find_dynamic"]

_SHAPES = {("view", "shape"), ("reshape", "shape"), ("expand", "shape")}
_IGNORED = {("cat", "sizes")}  # Concat needs no sizes
_BATCH_ONLY = {("conv_bias", "shape")}  # the translation reads all but entry 0


def find_dynamic(
    base: Recording,
    model: Any,
    args: tuple,
    module: Any,
    axes: dict[int, dict[int, str]],
    input_names: list[str],
) -> Dynamic:
    """``axes``: per input position (among the call's tensors), its dynamic axes by name."""
    dynamic = Dynamic()
    symbols: list[str] = []
    for position, named in axes.items():
        for axis, symbol in named.items():
            if symbol not in symbols:
                symbols.append(symbol)
                dynamic.sources[symbol] = (input_names[position], axis)
    for symbol in symbols:
        grown = _grown(args, {p: [a for a, s in n.items() if s == symbol] for p, n in axes.items()})
        variant = record(model, grown, module)
        source, axis = dynamic.sources[symbol]
        size = base.inputs[input_names.index(source)].shape[axis]
        _compare(base.graph, variant.graph, symbol, size, dynamic)
    return dynamic


def _grown(args: tuple, axes: dict[int, list[int]]) -> tuple:
    """``args`` with each listed axis of each tensor one longer (its first slice repeated)."""
    leaves, spec = flatten((list(args), {}))
    position = 0
    for i, leaf in enumerate(leaves):
        if isinstance(leaf, Tensor):
            for axis in axes.get(position, []):
                leaf = cat([leaf, leaf.narrow(axis, 0, 1)], axis)
            leaves[i] = leaf
            position += 1
    return tuple(unflatten(leaves, spec)[0])


def _compare(base: Graph, variant: Graph, symbol: str, size: int, dynamic: Dynamic) -> None:
    def fail(what: str, node: Node | None = None) -> ExportError:
        where = ""
        if node is not None:
            where = f" (op {node.op!r}" + (f" at {node.site}" if node.site else "")
            where += (f" in module {node.module}" if node.module else "") + ")"
        return ExportError(
            f"tk.onnx.export: dynamic dim {symbol!r}: {what}{where}; the graph recorded at "
            "one size cannot follow that dim. Trace it with static sizes (no dynamic_axes) "
            "or keep the code from reading that size"
        )

    if len(base.placeholders) != len(variant.placeholders) or len(base.nodes) != len(variant.nodes):
        raise fail("the call runs different ops at another size (control flow on a size?)")
    for p0, p1 in zip(base.placeholders, variant.placeholders, strict=True):
        if p0.value.id != p1.value.id or p0.kind != p1.kind:
            raise fail("the call reads different tensors at another size")
        _note_dims(p0.value, p1.value, symbol, dynamic)
        if p0.value.id in base.constants and not _same(
            base.constants[p0.value.id], variant.constants[p1.value.id]
        ):
            raise fail(f"a tensor made inside the call ({p0.name}) changes with the size")
    for index, (n0, n1) in enumerate(zip(base.nodes, variant.nodes, strict=True)):
        if n0.op != n1.op or not _same(n0.args, n1.args) or set(n0.attrs) != set(n1.attrs):
            raise fail("a different op or argument at another size", n0)
        for v0, v1 in zip(n0.outputs, n1.outputs, strict=True):
            _note_dims(v0, v1, symbol, dynamic)
        for key, a0 in n0.attrs.items():
            a1 = n1.attrs[key]
            if _same(a0, a1) or (n0.op, key) in _IGNORED:
                continue
            shaped = (n0.op, key) in _SHAPES | _BATCH_ONLY and len(a0) == len(a1)
            varying = (
                [i for i, (x, y) in enumerate(zip(a0, a1, strict=True)) if x != y] if shaped else []
            )
            if (n0.op, key) in _BATCH_ONLY and varying == [0]:
                continue
            if (n0.op, key) not in _SHAPES or not shaped:
                raise fail(f"its attribute {key}={_short(a0)} changes with the size", n0)
            entries = dynamic.attr_entries.setdefault((index, key), {})
            for i in varying:
                k = a1[i] - a0[i]
                seen = entries.get(i)
                entries[i] = (symbol, k, a0[i] - k * size) if seen is None else (symbol, None, 0)


def _note_dims(v0: Any, v1: Any, symbol: str, dynamic: Dynamic) -> None:
    for axis, (n0, n1) in enumerate(zip(v0.shape, v1.shape, strict=True)):
        if n0 != n1:
            dynamic.value_dims.setdefault(v0.id, {})[axis] = symbol


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b) and not (hasattr(a, "shape") and hasattr(b, "shape")):
        return False
    if isinstance(a, tuple | list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if hasattr(a, "shape"):
        x, y = host(a), host(b)
        return x.shape == y.shape and x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True)
    if type(a) is Ref:
        return a.id == b.id
    return a == b or (a != a and b != b)  # NaN equals NaN here


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
