"""The ONNX graph under construction: value names, initializers, nodes, and the helpers
the translation functions (``_ops*.py``) share."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from onnx import helper, numpy_helper

from ..jit.ir import Node, Ref, Value
from ._record import host

__all__ = ["Builder", "Dynamic", "ExportError", "UnsupportedOperatorError", "onnx_dtype"]


class ExportError(RuntimeError):
    """A call that cannot be written as an ONNX graph."""


class UnsupportedOperatorError(ExportError):
    """An op (or a random draw, or a custom autograd.Function) with no ONNX translation."""


def onnx_dtype(dtype: str) -> int:
    """The ONNX element type of a tensorkit dtype name ("float32")."""
    if dtype.startswith("complex"):
        raise ExportError(f"ONNX has no complex tensors for {dtype} values in this exporter")
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


@dataclass
class Dynamic:
    """What varies with the dynamic dims (``_dynamic.py``): per value id, its dims by axis
    (the symbol's name); per (node index, attribute), its entries that vary, by position, as
    ``(symbol, k, c)`` for ``k * size + c`` (``k`` None: it varies with several symbols);
    per symbol, the graph input and axis whose size it is."""

    value_dims: dict[int, dict[int, str]] = field(default_factory=dict)
    attr_entries: dict[tuple[int, str], dict[int, tuple[str, int | None, int]]] = field(
        default_factory=dict
    )
    sources: dict[str, tuple[str, int]] = field(default_factory=dict)


class Builder:
    """Collects ONNX nodes and initializers while the graph's nodes are translated."""

    def __init__(self, values: dict[int, Value], opset: int, dynamic: Dynamic) -> None:
        self.values = values
        self.opset = opset
        self.dynamic = dynamic
        self.names: dict[int, str] = {}
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self.domains: set[str] = set()
        self.node: Node | None = None  # the node being translated
        self.index = -1  # its position in the graph
        self.producers: dict[int, Node] = {}  # value id -> the node that made it
        self.conv_outputs: dict[int, str] = {}  # a matmul written as a Conv -> (N, C, *out)
        self._count = 0
        self._dims: dict[str, str] = {}

    # ------------------------------------------------------------------ names and nodes
    def fresh(self, hint: str) -> str:
        self._count += 1
        return f"{hint}_{self._count}"

    def name(self, value_id: int) -> str:
        return self.names[value_id]

    def add(
        self, op_type: str, inputs: list[str], outputs: int | list[str] = 1, **attrs: Any
    ) -> Any:
        """Append one node; returns its output name (or the list, for several outputs)."""
        domain = attrs.pop("domain", "")
        names = (
            outputs if isinstance(outputs, list) else [self.fresh(op_type) for _ in range(outputs)]
        )
        self.nodes.append(
            helper.make_node(
                op_type, inputs, names, name=self.fresh(f"{op_type}_node"), domain=domain, **attrs
            )
        )
        return names[0] if not isinstance(outputs, list) and outputs == 1 else names

    def initializer(self, array: Any, name: str | None = None) -> str:
        name = name or self.fresh("const")
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(host(array)), name))
        return name

    def const(self, value: Any, dtype: str) -> str:
        """A Python number or array as a constant of ``dtype``."""
        return self.initializer(
            np.asarray(host(value) if hasattr(value, "shape") else value, dtype)
        )

    def ints(self, values: Any) -> str:
        return self.initializer(np.asarray(list(values), np.int64))

    # ------------------------------------------------------------------ operands
    def dtype(self, value: Any) -> str:
        return self.values[value.id].dtype

    def op_dtype(self, node: Node) -> str:
        """The dtype the op computes in: its cast, else its first tensor argument's."""
        if node.cast is not None:
            return node.cast
        for arg in node.args:
            if type(arg) is Ref:
                return self.values[arg.id].dtype
        return node.outputs[0].dtype

    def arg(self, i: int, dtype: str | None = None) -> str:
        """The node's argument ``i`` as a tensor name: a value (cast as the node asks), or a
        Python constant made a constant of ``dtype`` (default: the op's dtype)."""
        node = self.node
        arg = node.args[i]
        if type(arg) is Ref:
            name = self.names[arg.id]
            if node.cast is not None and self.values[arg.id].dtype != node.cast:
                name = self.add("Cast", [name], to=onnx_dtype(node.cast))
            return name
        return self.const(arg, dtype or self.op_dtype(node))

    def tensor(self, value: Any, dtype: str) -> str:
        """An attribute that is a value (a Ref) or an array/number (a constant)."""
        if type(value) is Ref:
            return self.names[value.id]
        return self.const(value, dtype)

    def shape(self, value: Any) -> tuple[int, ...]:
        return self.values[value.id].shape

    # ------------------------------------------------------------------ dynamic dims
    def dims_of(self, value: Any) -> dict[int, str]:
        """The dynamic dims of a value, by axis."""
        return self.dynamic.value_dims.get(value.id, {})

    def shape_input(self, attr: str, entries: tuple[int, ...], reshape: bool) -> str:
        """An int64 shape tensor for the node's ``attr`` (``entries`` as traced): constant
        where nothing varies; -1 for the one entry that varies in a Reshape; else entries
        computed from the dynamic sizes."""
        varying = self.dynamic.attr_entries.get((self.index, attr), {})
        if not varying:
            return self.ints(entries)
        if reshape and len(varying) == 1:
            (position,) = varying
            return self.ints([-1 if i == position else n for i, n in enumerate(entries)])
        parts = []
        for position, n in enumerate(entries):
            if position not in varying:
                parts.append(self.ints([n]))
                continue
            symbol, k, c = varying[position]
            if k is None:
                raise ExportError(
                    f"{self.where()}: entry {position} of {attr}={list(entries)} varies with "
                    "several dynamic dims at once; tk.onnx.export supports shapes whose "
                    "entries each follow one dynamic dim"
                )
            part = self.size(symbol)
            if k != 1:
                part = self.add("Mul", [part, self.ints([k])])
            if c:
                part = self.add("Add", [part, self.ints([c])])
            parts.append(part)
        return self.add("Concat", parts, axis=0)

    def size(self, symbol: str) -> str:
        """A 1-element int64 tensor: the size of dynamic dim ``symbol`` at run time."""
        if symbol not in self._dims:
            source, axis = self.dynamic.sources[symbol]
            self._dims[symbol] = self.add("Shape", [source], start=axis, end=axis + 1)
        return self._dims[symbol]

    def check_static(self, value: Any, axes: Any, what: str) -> None:
        """Raise if one of ``axes`` of ``value`` is dynamic (``what`` needs its size)."""
        dims = self.dims_of(value)
        rank = len(self.shape(value))
        for axis in axes:
            if axis % max(rank, 1) in dims:
                raise ExportError(
                    f"{self.where()}: {what} needs the size of axis {axis}, which is the "
                    f"dynamic dim {dims[axis % rank]!r}; make that axis static"
                )

    # ------------------------------------------------------------------ shared pieces
    def reduce(self, op_type: str, x: str, axes: Any, keepdims: bool, outputs: Any = 1) -> Any:
        """A Reduce* node over ``axes`` (None: all), with axes as an input where the opset
        takes them so (ReduceSum from 13, the others from 18)."""
        attrs: dict[str, Any] = {"keepdims": int(bool(keepdims))}
        inputs = [x]
        if axes is not None:
            axes = [axes] if isinstance(axes, int) else list(axes)
            if op_type == "ReduceSum" or self.opset >= 18:
                inputs.append(self.ints(axes))
            else:
                attrs["axes"] = axes
        return self.add(op_type, inputs, outputs, **attrs)

    def where(self) -> str:
        node = self.node
        place = f" at {node.site}" if node.site else ""
        module = f" in module {node.module}" if node.module else ""
        return f"op {node.op!r}{place}{module}"

    def unsupported(self, detail: str) -> UnsupportedOperatorError:
        return UnsupportedOperatorError(f"tk.onnx.export: {self.where()}: {detail}")
