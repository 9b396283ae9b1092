"""One forward call recorded for export: tk.jit's capture, under no_grad, then the passes
export needs.

Max pooling reads its positions from ``window_argmax``'s output; for ONNX's ``MaxPool`` the
pooling node takes that op's window tables instead (and the argmax goes with dead-code
elimination). Then nodes over constants only are computed now (a causal mask, say).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._backend import as_device, to_device_array
from ..autograd.grad_mode import no_grad
from ..jit.capture import Tracer, flatten
from ..jit.ir import BUFFER, INPUT, PARAMETER, Graph, Node, Ref
from ..jit.passes.constant_fold import fold_constants
from ..jit.passes.dce import eliminate_dead_code
from ..tensor import Tensor

__all__ = ["Recording", "host", "record"]


@dataclass
class Recording:
    """The graph of one call, its tensor arguments (by position) and output leaves."""

    graph: Graph
    inputs: list[Tensor]
    tensors: list[Tensor | None]  # per placeholder, its live tensor (None for constants)


def record(model: Any, args: tuple, module: Any) -> Recording:
    """Run ``model(*args)`` once under no_grad, recording it (see the module docstring)."""
    tracer = Tracer(warn=True)
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
    graph = eliminate_dead_code(fold_constants(eliminate_dead_code(graph)))
    return Recording(graph, inputs, tracer.placeholder_tensors())


def _attach_pool_tables(nodes: list[Node]) -> None:
    """Give each ``max_pool`` node the window tables of the ``window_argmax`` that made its
    positions, in place of those positions."""
    tables: dict[int, Any] = {}
    for node in nodes:
        if node.op == "window_argmax":
            tables[node.outputs[0].id] = node.attrs["tables"]
        elif node.op == "max_pool" and type(node.args[1]) is Ref and node.args[1].id in tables:
            node.attrs = {"tables": tables[node.args[1].id]}
            node.args = node.args[:1]


def host(array: Any) -> np.ndarray:
    """A NumPy copy-or-view of a NumPy or CuPy array."""
    if isinstance(array, np.ndarray | np.generic):
        return np.asarray(array)
    return to_device_array(array, as_device("cpu"))
