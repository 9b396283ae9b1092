"""One forward call recorded for export: tk.jit's tracer, with the arrays ops take as
attributes followed back to the values that made them.

Some ops take a tensor's array as a keyword attribute rather than an argument (``where``'s
condition, ``gather``'s index, an embedding's indices); tk.jit's graph keeps such an array
as it was. For export it must stay an edge of the graph, so :class:`_ExportTracer` replaces
every attribute array that is a value the call computed (or read) by a :class:`Ref` to it.
Max pooling's positions are computed outside the op table from ``window_argmax``; the
pooling node takes that op's window tables instead. Then dead nodes go (a node is live when
an output, or a live node through its arguments or attributes, needs it) and nodes over
constants only are computed now.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._backend import as_device, to_device_array
from ..autograd.grad_mode import no_grad
from ..jit.capture import Tracer, flatten
from ..jit.ir import BUFFER, CONSTANT, INPUT, PARAMETER, Graph, Node, Placeholder, Ref
from ..ops._apply import OPS
from ..tensor import Tensor

__all__ = ["Recording", "attr_refs", "host", "node_inputs", "record"]


@dataclass
class Recording:
    """The graph of one call, its tensor arguments (by position) and output leaves."""

    graph: Graph
    inputs: list[Tensor]
    tensors: list[Tensor | None]  # per placeholder, its live tensor (None for constants)


class _ExportTracer(Tracer):
    def op_finished(self, event: Any) -> None:
        start = len(self.graph.nodes)
        super().op_finished(event)
        for node in self.graph.nodes[start:]:
            node.attrs = {key: self._resolve(value) for key, value in node.attrs.items()}

    def _resolve(self, value: Any) -> Any:
        if isinstance(value, tuple | list):
            return type(value)(self._resolve(v) for v in value)
        if hasattr(value, "__array_interface__") or hasattr(value, "__cuda_array_interface__"):
            entry = self._by_array.get(id(value))
            if entry is not None and entry[0] is value:
                return Ref(entry[1])
        return value


def record(model: Any, args: tuple, module: Any) -> Recording:
    """Run ``model(*args)`` once under no_grad, recording it (see the module docstring)."""
    tracer = _ExportTracer(warn=True)
    leaves, _ = flatten((list(args), {}))
    inputs = [leaf for leaf in leaves if isinstance(leaf, Tensor)]
    for position, leaf in enumerate(leaves):
        if isinstance(leaf, Tensor):
            tracer.add_placeholder(leaf, INPUT, f"input {position}")
    if module is not None:
        for name, parameter in module.named_parameters():
            tracer.add_placeholder(parameter, PARAMETER, name)
        for name, buffer in module.named_buffers():
            tracer.add_placeholder(buffer, BUFFER, name)
    with no_grad(), tracer:
        result = model(*args)
        out_leaves, spec = flatten(result)
        tracer.graph.outputs = [
            Ref(tracer.value_of(t)) if isinstance(t, Tensor) else t for t in out_leaves
        ]
        tracer.graph.output_spec = spec
    graph = tracer.finish()
    _attach_pool_tables(graph.nodes)
    graph.nodes = _live(graph)
    _fold_constants(graph)
    graph.nodes = _live(graph)
    return Recording(graph, inputs, tracer.placeholder_tensors())


def attr_refs(value: Any) -> list[int]:
    """The value ids among an attribute (a Ref, or tuples holding some)."""
    if type(value) is Ref:
        return [value.id]
    if isinstance(value, tuple | list):
        return [i for v in value for i in attr_refs(v)]
    return []


def node_inputs(node: Node) -> list[int]:
    """Every value id a node reads: its arguments, then its attributes."""
    return [*node.refs(), *(i for v in node.attrs.values() for i in attr_refs(v))]


def _attach_pool_tables(nodes: list[Node]) -> None:
    """Give each ``max_pool`` node the window tables of the ``window_argmax`` over the same
    input, in place of the positions computed from it."""
    tables: dict[Any, Any] = {}
    for node in nodes:
        if node.op == "window_argmax":
            tables[node.args[0]] = node.attrs["tables"]
        elif node.op == "max_pool" and node.args[0] in tables:
            node.attrs = {"tables": tables[node.args[0]]}


def _live(graph: Graph) -> list[Node]:
    needed = {v.id for v in graph.outputs if type(v) is Ref}
    kept: list[Node] = []
    for node in reversed(graph.nodes):
        if any(v.id in needed for v in node.outputs):
            kept.append(node)
            needed.update(node_inputs(node))
    kept.reverse()
    return kept


def _fold_constants(graph: Graph) -> None:
    """Compute each op node whose every input is a constant (a causal mask, say)."""
    kept = []
    for node in graph.nodes:
        reads = node_inputs(node)
        if node.kind != "op" or not reads or any(r not in graph.constants for r in reads):
            kept.append(node)
            continue
        xp = as_device(node.outputs[0].device).xp
        args = [_constant(graph, a, node.cast) for a in node.args]
        attrs = {k: _constant(graph, v, None) for k, v in node.attrs.items()}
        result = OPS[node.op].forward(xp, *args, **attrs)
        results = result if node.multi_output else (result,)
        for value, array in zip(node.outputs, results, strict=True):
            graph.constants[value.id] = xp.asarray(array)
            graph.placeholders.append(Placeholder(value, CONSTANT, f"folded {node.op}"))
    graph.nodes = kept


def _constant(graph: Graph, value: Any, cast: str | None) -> Any:
    if type(value) is Ref:
        array = graph.constants[value.id]
        return array if cast is None else array.astype(cast)
    if isinstance(value, tuple | list):
        return type(value)(_constant(graph, v, None) for v in value)
    return value


def host(array: Any) -> np.ndarray:
    """A NumPy copy-or-view of a NumPy or CuPy array."""
    if isinstance(array, np.ndarray | np.generic):
        return np.asarray(array)
    return to_device_array(array, as_device("cpu"))
