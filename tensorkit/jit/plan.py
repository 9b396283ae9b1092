"""Lowering: a list of IR nodes becomes one generated Python function over arrays.

The function takes the input arrays as arguments, calls each op's array forward (the OpDef's
own ``forward(xp, *arrays, **attrs)``, the code eager runs) with its arguments bound to local
variables, drops each array after its last use (``passes.memory``), and returns the wanted
arrays: no Tensor wrappers, no dtype promotion at run time (the casts the capture saw are
written in), no graph nodes, no observers. A guard node is a call of its check
(``guards.check``), which raises ``GuardFailure`` out of the function on another value. Its
source is built only from identifiers (``v12``, ``f3``, ``a3``); every op, constant and
attribute is an object in the function's namespace, so nothing read from a file ever becomes
code.

An in-place update that ``passes.memory.in_place_writes`` cleared (``writes``) calls eager's
direct form of its op, which writes the tensor's own array, so the replay copies nothing
into it afterwards.

``lower(..., observed=True)`` generates the same function with each step reported to the
active observers as one :class:`PlanEvent` (the profiler's view of a replay: one op per
node, one per fused kernel).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np

from .. import _state
from .._backend import as_device
from ..autograd.grad_mode import no_grad
from ..ops._apply import OPS
from ..ops.inplace import DIRECT
from ..tensor import Tensor, wrap
from .guards import check
from .ir import Node, Ref, attr_refs
from .passes.memory import DIRECT_FORMS, last_uses

__all__ = ["Plan", "PlanEvent", "lower"]


class Plan:
    """A generated function: ``plan(*arrays) -> tuple of arrays``.

    ``inputs`` and ``outputs`` are the value ids it takes and returns; ``source`` its text
    (what ``tk.jit.explain`` and the workbench show)."""

    def __init__(
        self, function: Callable, source: str, inputs: list[int], outputs: list[int]
    ) -> None:
        self.function = function
        self.source = source
        self.inputs = inputs
        self.outputs = outputs

    def __call__(self, *arrays: Any) -> tuple:
        return self.function(*arrays)


def lower(
    nodes: Sequence[Node],
    inputs: Sequence[int],
    outputs: Sequence[int],
    constants: dict[int, Any],
    name: str = "plan",
    observed: bool = False,
    writes: dict[int, int] | None = None,
) -> Plan:
    """Generate the function that runs ``nodes`` from the ``inputs`` values to ``outputs``
    (``constants``: value id -> array, bound by name); ``observed`` reports each step;
    ``writes`` (``passes.memory.in_place_writes``): node index -> the value whose array the
    node writes its result into, with eager's direct form of the op."""
    writes = writes or {}
    namespace: dict[str, Any] = {"_array0": _array0, "_started": _started, "_finished": _finished}
    lines = [f"def {name}({', '.join(f'v{i}' for i in inputs)}):"]
    for value_id, array in constants.items():
        namespace[f"v{value_id}"] = array
    dying = last_uses(nodes, set(outputs))
    for index, node in enumerate(nodes):
        statement = _statement(index, node, namespace, writes.get(index))
        if observed and node.kind != "guard":  # a check, not an op: no event
            namespace[f"n{index}"] = node
            reads = "".join(f"v{r}, " for r in node.refs())
            made = "".join(f"v{v.id}, " for v in node.outputs)
            statement = [
                f"e{index} = _started(n{index}, {name!r}, ({reads}))",
                *statement,
                f"_finished(e{index}, ({made}))",
            ]
        lines += ["    " + line for line in statement]
        gone = [f"v{v}" for v in dying.get(index, ()) if v not in constants]
        if gone:
            lines.append(f"    del {', '.join(gone)}")
    returned = "".join(f"v{v}, " for v in outputs)
    lines.append(f"    return ({returned})")
    source = "\n".join(lines) + "\n"
    exec(compile(source, f"<tk.jit {name}>", "exec"), namespace)  # identifiers only
    return Plan(namespace[name], source, list(inputs), list(outputs))


def _statement(index: int, node: Node, namespace: dict, into: int | None = None) -> list[str]:
    """The lines that compute ``node``'s outputs (into value ``into``'s array when given)."""
    args = []
    for position, arg in enumerate(node.args):
        if type(arg) is Ref:
            args.append(f"v{arg.id}" if node.cast is None else f"v{arg.id}.astype(d{index})")
        else:
            constant = f"c{index}_{position}"
            namespace[constant] = arg
            args.append(constant)
    if node.cast is not None:
        namespace[f"d{index}"] = np.dtype(node.cast)
    static = {k: v for k, v in node.attrs.items() if not any(True for _ in attr_refs(v))}
    namespace[f"a{index}"] = static
    computed = "".join(
        f"{key}={_attr_expression(value, f'c{index}_{key}', namespace)}, "
        for key, value in node.attrs.items()
        if key not in static
    )
    call = _callee(index, node, namespace, args, computed)
    outs = [f"v{v.id}" for v in node.outputs]
    if into is not None:  # the direct form writes args[0]'s array: the result is that array
        namespace[f"f{index}"] = DIRECT[DIRECT_FORMS[node.op]]
        return [call, f"{outs[0]} = v{into}"]
    if not outs:  # a guard: a check
        lines = [call]
    elif node.multi_output:
        lines = [f"r{index} = {call}"] + [f"{o} = r{index}[{nr}]" for nr, o in enumerate(outs)]
    else:
        lines = [f"{outs[0]} = {call}"]
    xp = f"xp{index}"
    for value, out in zip(node.outputs, outs, strict=True):
        if value.shape == ():  # NumPy gives scalars for 0-d results; tensors hold arrays
            lines.append(f"{out} = _array0({out}, {xp})")
    return lines


def _attr_expression(value: Any, name: str, namespace: dict) -> str:
    """Source for an attribute holding :class:`Ref`\\ s (an index tuple, a condition)."""
    if type(value) is Ref:
        return f"v{value.id}"
    if isinstance(value, tuple | list) and any(True for _ in attr_refs(value)):
        items = "".join(
            _attr_expression(item, f"{name}_{i}", namespace) + ", " for i, item in enumerate(value)
        )
        return f"({items})" if isinstance(value, tuple) else f"[{items}]"
    namespace[name] = value
    return name


def _callee(index: int, node: Node, namespace: dict, args: list[str], computed: str) -> str:
    """The call expression of one node, with its op bound in ``namespace`` (``computed``:
    the keyword arguments built from values at run time)."""
    device = node.outputs[0].device if node.outputs else "cpu"
    namespace[f"xp{index}"] = as_device(device).xp
    joined = ", ".join(args)
    if node.kind == "op":
        namespace[f"f{index}"] = OPS[node.op].forward
        return f"f{index}(xp{index}, {joined}{', ' if joined else ''}{computed}**a{index})"
    if node.kind == "fused":
        from .fusion import kernel_for

        namespace[f"f{index}"] = kernel_for(node)
        return f"f{index}(xp{index}, {joined})"
    if node.kind == "random":
        from ..random import redraw

        namespace[f"f{index}"] = redraw
        return f"f{index}({node.op!r}, [{joined}], a{index})"
    if node.kind == "guard":
        namespace[f"f{index}"] = check(node)
        return f"f{index}({joined})"
    if node.kind == "function":
        namespace[f"f{index}"] = _run_function
        return f"f{index}(a{index}['function'], [{joined}], {device!r})"
    raise ValueError(f"node {index} ({node.op}) has unknown kind {node.kind!r}")


class PlanEvent:
    """One step of an observed plan, as node-level observers (the profiler) take events:
    the fields of ``autograd.engine.NodeEvent``, with the IR node's op (a fused kernel's name
    lists its members), module path and phase ("backward" in a backward plan); ``inputs`` and
    ``outputs`` are the arrays read and made."""

    __slots__ = (
        "device",
        "end_ns",
        "inputs",
        "module_path",
        "name",
        "outputs",
        "phase",
        "records",
        "start_ns",
    )
    op = None
    node = None
    backward_node = None
    attrs = MappingProxyType({})

    def __init__(self, node: Node, plan_name: str, inputs: tuple) -> None:
        self.name = node.op if node.kind != "fused" else _fused_name(node)
        self.phase = "backward" if plan_name == "backward" else "forward"
        self.module_path = node.module
        self.inputs = inputs
        self.outputs: tuple = ()
        self.device = as_device(node.outputs[0].device if node.outputs else "cpu")
        self.records: dict = {}
        self.start_ns = self.end_ns = 0


def _fused_name(node: Node) -> str:
    members = "+".join(member.op for member in node.members)
    return f"fused[{members}]"


def _started(node: Node, plan_name: str, inputs: tuple) -> PlanEvent:
    event = PlanEvent(node, plan_name, inputs)
    for observer in _state.observers:
        observer.op_started(event)
    event.start_ns = time.perf_counter_ns()
    return event


def _finished(event: PlanEvent, outputs: tuple) -> None:
    event.end_ns = time.perf_counter_ns()
    event.outputs = outputs
    for observer in _state.observers:
        observer.op_finished(event)


def _array0(value: Any, xp: Any) -> Any:
    return value if isinstance(value, xp.ndarray) else xp.asarray(value)


def _run_function(op: Any, arrays: list, device_name: str) -> Any:
    """A custom autograd.Function kept as an opaque node: its forward on Tensors."""
    dev = as_device(device_name)
    with no_grad():
        result = op.function_class.apply(
            *[wrap(a, dev) if hasattr(a, "shape") else a for a in arrays]
        )
    if isinstance(result, tuple):
        return tuple(r._data if isinstance(r, Tensor) else r for r in result)
    return result._data
