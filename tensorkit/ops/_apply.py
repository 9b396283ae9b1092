"""The path of one op: check, promote, compute on arrays, wrap, record, notify.

An op is declared once as an :class:`OpDef`: a forward on arrays (NumPy or CuPy, through the
``xp`` module it is given) and a gradient rule written with tensorkit ops, so that the rule is
itself recorded under ``create_graph=True`` and double backward needs no extra code.

``apply`` is the hot path. With no observer active it does one flag check for observers, one
for grad mode, and allocates a graph node only when an input requires grad.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _state
from .._dtype import (
    FLOATING,
    category,
    default_dtype_for_category,
    from_numpy_dtype,
    get_default_dtype,
    result_type_of,
)
from ..autograd.graph import Node, grad_accumulator, node_class
from ..tensor import Tensor, VersionCounter, check_not_inference, wrap
from ._rule_space import tensor_rule

# How an op treats differing input dtypes:
KEEP = "keep"  # no promotion: the op takes its inputs as they are
COMMON = "common"  # promote all inputs to their common dtype (add, mul, where, ...)
FLOAT = "float"  # common dtype, and integers/bool become the default float (exp, div, ...)

# What a gradient rule needs kept from the forward pass:
SAVE_NONE, SAVE_INPUTS, SAVE_OUTPUT, SAVE_BOTH = 0, 1, 2, 3

# Every OpDef by its key: how tk.jit's graphs name ops, and how a saved graph finds them.
OPS: dict[str, OpDef] = {}


class OpDef:
    """One operation: its name, its forward on arrays and its gradient rule.

    ``forward(xp, *arrays, **attrs)`` returns an array (or a tuple for multi-output ops).
    ``backward(ctx, *grads)`` returns one gradient (or None) per input; ``ctx`` is the graph
    node, giving ``ctx.saved_tensors``, ``ctx.attrs`` and ``ctx.needs_input_grad``.
    ``outputs`` is 1, or -1 for an op returning a tuple; ``view`` marks ops whose output shares
    its first input's storage; ``moves_device`` marks the op whose output lives elsewhere.

    ``key`` names the op in ``OPS`` (tk.jit's graphs and saved files): its ``name`` unless
    two ops share a name; a key already taken raises.

    ``rule(ctx, space, saved, *grads)``, given instead of ``backward``, is the gradient rule
    written over a namespace (see ``ops._rule_space``): the engine's plain runner runs it on
    raw arrays, and ``backward`` is the same rule on Tensors. One rule, two kinds of values.
    ``index_saves`` says the rule reads its saved integer arrays only as indices (a loss's
    targets), never as operands, so the plain runner may run it on arrays beside them.
    """

    __slots__ = (
        "backward",
        "forward",
        "index_saves",
        "key",
        "moves_device",
        "name",
        "node_class",
        "node_name",
        "outputs",
        "promote",
        "rule",
        "saves",
        "view",
    )

    def __init__(
        self,
        name: str,
        forward: Callable,
        backward: Callable | None,
        *,
        promote: str = KEEP,
        saves: int = SAVE_NONE,
        view: bool = False,
        outputs: int = 1,
        node_name: str | None = None,
        moves_device: bool = False,
        rule: Callable | None = None,
        key: str | None = None,
        index_saves: bool = False,
    ) -> None:
        self.name = name
        self.key = key or name
        if self.key in OPS:
            raise ValueError(f"an op with key {self.key!r} exists already: {OPS[self.key]!r}")
        OPS[self.key] = self
        self.node_name = node_name or "".join(p.capitalize() for p in name.split("_")) + "Backward0"
        self.node_class = node_class(self.node_name)
        self.forward = forward
        self.rule = rule
        self.backward = backward if rule is None else tensor_rule(rule)
        self.promote = promote
        self.saves = saves
        self.view = view
        self.outputs = outputs
        self.moves_device = moves_device
        self.index_saves = index_saves

    def __repr__(self) -> str:
        return f"OpDef({self.name!r})"

    def __call__(self, *inputs: Any, **attrs: Any) -> Any:
        return apply(self, *inputs, **attrs)


def apply(op: OpDef, *inputs: Any, **attrs: Any) -> Any:
    """Run ``op`` on ``inputs`` (tensors, or Python scalars where the op allows them)."""
    if _state.observing:
        return _observed_apply(op, inputs, attrs)
    arrays, dev, requires_grad = unwrap(op, inputs)
    with_graph = requires_grad and _state.grad_enabled and op.backward is not None
    try:
        result = op.forward(dev.xp, *arrays, **attrs)
    except ValueError as error:
        raise _explain(op, inputs, error) from None
    except OverflowError:  # a Python int outside the tensor dtype's range: wrap it, as PyTorch
        result = op.forward(dev.xp, *_wrap_scalars(arrays), **attrs)
    if op.outputs == 1:
        return _finish_single(op, inputs, attrs, result, dev, with_graph)
    return _finish_multi(op, inputs, attrs, result, dev, with_graph)


# Python scalar types that leave a tensor's dtype unchanged, by the tensor's dtype kind (NumPy
# treats Python scalars as "weak", as PyTorch does, so no cast is needed for these).
_WEAK_SCALARS = {
    "f": (float, int, bool),
    "c": (complex, float, int, bool),
    "i": (int, bool),
    "u": (int, bool),
    "b": (bool,),
}


def unwrap(op: OpDef, inputs: tuple) -> tuple[list, Any, bool]:
    """The inputs' arrays (promoted as the op asks), their common device, and whether any
    input requires grad. Raises if tensors live on different devices."""
    arrays = []
    dev = None
    requires_grad = False
    np_dtype = None
    mixed = False
    scalars = None
    for x in inputs:
        if isinstance(x, Tensor):
            data = x._data
            if dev is None:
                dev = x._device
                np_dtype = data.dtype
            else:
                if x._device is not dev:
                    raise_device_mismatch(op, inputs)
                if data.dtype is not np_dtype:
                    mixed = True
            if x._requires_grad:
                requires_grad = True
            arrays.append(data)
        else:
            if x is not None:
                scalars = [x] if scalars is None else [*scalars, x]
            arrays.append(x)
    if dev is None:
        raise TypeError(f"{op.name}(): expected at least one Tensor argument, got {inputs!r}")
    if op.promote is not KEEP:
        if scalars is not None and not mixed:
            weak = _WEAK_SCALARS[np_dtype.kind]
            for x in scalars:
                if type(x) not in weak:
                    mixed = True
        if mixed:
            _promote_arrays(op, inputs, arrays)
        elif op.promote is FLOAT and np_dtype.kind not in "fc":
            target = get_default_dtype().np
            arrays = [a.astype(target) if hasattr(a, "astype") else a for a in arrays]
    return arrays, dev, requires_grad


def _promote_arrays(op: OpDef, inputs: tuple, arrays: list) -> None:
    with_dims, zero_dim, scalars = [], [], []
    for i, x in enumerate(inputs):
        if isinstance(x, Tensor | np.ndarray):  # an array counts as a tensor, as in PyTorch
            data = x._data if isinstance(x, Tensor) else x
            (with_dims if data.ndim else zero_dim).append(from_numpy_dtype(data.dtype))
        elif x is not None:
            if isinstance(x, np.generic):  # a NumPy scalar is a Python number, as in PyTorch
                arrays[i] = x = x.item()
            if not isinstance(x, bool | int | float | complex):
                raise TypeError(
                    f"{op.name}(): expected Tensor or number arguments, got {type(x).__name__}"
                )
            scalars.append(x)
    target = result_type_of(with_dims, zero_dim, scalars)
    if op.promote is FLOAT and category(target) < FLOATING:
        target = default_dtype_for_category(FLOATING)
    target_np = target.np
    for i, a in enumerate(arrays):
        if isinstance(inputs[i], Tensor | np.ndarray) and a.dtype != target_np:
            arrays[i] = a.astype(target_np)


def _finish_single(
    op: OpDef, inputs: tuple, attrs: dict, data: Any, dev: Any, with_graph: bool
) -> Tensor:
    if op.moves_device:
        dev = attrs["device"]
    elif not data.shape and type(data) is not dev.array_type:
        data = dev.xp.asarray(data)
    out = wrap(data, dev)
    if op.view:
        _link_view(out, inputs[0], op, inputs, attrs)
    if with_graph:
        node = make_node(op, inputs, attrs)
        out.grad_fn = node
        out._requires_grad = True
        if op.saves & SAVE_OUTPUT:
            counter = out._version_counter = VersionCounter()
            node._saved_outputs = ((data, dev, counter, 0, 0),)
    return out


def _finish_multi(
    op: OpDef, inputs: tuple, attrs: dict, results: tuple, dev: Any, with_graph: bool
) -> tuple:
    outs = []
    for nr, data in enumerate(results):
        if not data.shape and type(data) is not dev.array_type:
            data = dev.xp.asarray(data)
        out = wrap(data, dev)
        if op.view:
            _link_view(out, inputs[0], op, inputs, attrs, nr)
        outs.append(out)
    if with_graph:
        node = make_node(op, inputs, attrs)
        node.output_meta = tuple((o._data.shape, o._data.dtype) for o in outs)
        saved = []
        for nr, out in enumerate(outs):
            if out._data.dtype.kind in "fc":
                out.grad_fn = node
                out._requires_grad = True
                out._output_nr = nr
            if op.saves & SAVE_OUTPUT:
                saved.append((out._data, dev, out.version_counter(), 0, nr))
        if saved:
            node._saved_outputs = tuple(saved)
    return tuple(outs)


def make_node(op: Any, inputs: tuple, attrs: dict) -> Node:
    """A graph node for ``op`` applied to ``inputs``: edges, input metadata, saved inputs.

    A saved input is ``(tensor, its version now)``; scalars and None are kept as they are.
    """
    edges = []
    meta = []
    saved = [] if op.saves & SAVE_INPUTS else None
    for x in inputs:
        if isinstance(x, Tensor):
            if saved is not None:
                counter = x._version_counter
                saved.append((x, 0 if counter is None else counter.value))
            if x._requires_grad:
                producer = x.grad_fn
                if producer is None:
                    edges.append((grad_accumulator(x), 0))
                else:
                    edges.append((producer, x._output_nr))
                data = x._data
                meta.append((data.shape, data.dtype))
                continue
        elif saved is not None:
            saved.append(x)
        edges.append(None)
        meta.append(None)
    node = op.node_class(op, edges, attrs, meta)
    if saved is not None:
        if _state.inference_tensors_made:
            check_not_inference(inputs)
        node._saved_inputs = saved
    return node


def _link_view(
    out: Tensor, source: Tensor, op: OpDef, inputs: tuple, attrs: dict, nr: int | None = None
) -> None:
    """Make ``out`` a view of ``source``: shared version counter, and a recipe to replay it
    (``nr`` picks the output of a multi-output view op such as split)."""
    counter = source._version_counter
    if counter is None:
        counter = source._version_counter = VersionCounter()
    out._version_counter = counter
    if _state.inference_tensors_made and source._is_inference:
        out._is_inference = True  # a view of an inference tensor is one too
    base = source._base if source._base is not None else source
    out._base = base
    parent = source._view_fn if source._base is not None else None
    out._view_fn = (op, inputs[1:], attrs, parent, nr)


def replay_view(view_fn: Any, base: Tensor) -> Tensor:
    """Apply the chain of view ops recorded in ``view_fn`` to ``base`` (a tensor)."""
    op, extra_inputs, attrs, parent, nr = view_fn
    source = base if parent is None else replay_view(parent, base)
    result = apply(op, source, *extra_inputs, **attrs)
    return result if nr is None else result[nr]


def replay_view_on_array(view_fn: Any, xp: Any, array: Any) -> Any:
    """The same chain of view ops applied to a raw array (giving an array view)."""
    op, extra_inputs, attrs, parent, nr = view_fn
    source = array if parent is None else replay_view_on_array(parent, xp, array)
    extra = [x._data if isinstance(x, Tensor) else x for x in extra_inputs]
    result = op.forward(xp, source, *extra, **attrs)
    return result if nr is None else result[nr]


def _wrap_scalars(arrays: list) -> list:
    """Python ints converted to the integer dtype of the tensors beside them, wrapping around
    (as NumPy scalars, which CuPy accepts beside its arrays; a 0-d NumPy array it refuses)."""
    np_dtype = next(a.dtype for a in arrays if hasattr(a, "dtype"))
    return [
        np.array(a).astype(np_dtype)[()] if type(a) is int and np_dtype.kind in "iu" else a
        for a in arrays
    ]


def _explain(op: OpDef, inputs: tuple, error: ValueError) -> Exception:
    """PyTorch's wording for a broadcasting failure; other errors pass through unchanged."""
    if "broadcast" not in str(error):
        return error
    shapes = [tuple(x.shape) for x in inputs if isinstance(x, Tensor)]
    if len(shapes) < 2:
        return RuntimeError(f"{op.name}(): {error}")
    a, b = shapes[0], shapes[1]
    ndim = max(len(a), len(b))
    padded_a = (1,) * (ndim - len(a)) + a
    padded_b = (1,) * (ndim - len(b)) + b
    for dim in range(ndim - 1, -1, -1):
        size_a, size_b = padded_a[dim], padded_b[dim]
        if size_a != size_b and size_a != 1 and size_b != 1:
            return RuntimeError(
                f"The size of tensor a ({size_a}) must match the size of tensor b ({size_b}) at "
                f"non-singleton dimension {dim} (in {op.name} of shapes {list(a)} and {list(b)})"
            )
    return RuntimeError(
        f"{op.name}(): shapes {[list(s) for s in shapes]} do not broadcast: {error}"
    )


def raise_device_mismatch(op: OpDef, inputs: tuple) -> None:
    devices = []
    for x in inputs:
        if isinstance(x, Tensor) and str(x._device) not in devices:
            devices.append(str(x._device))
    raise RuntimeError(
        f"Expected all tensors to be on the same device, but found at least two devices, "
        f"{devices[0]} and {devices[1]}! (when checking arguments for {op.name})"
    )


def apply_untaped(op: OpDef, *inputs: Any, **attrs: Any) -> Any:
    """Run ``op`` (an op without a gradient rule) on tensors without telling the op
    observers: bookkeeping the user's Tape should not show (a loss checking its integer
    targets). A ``tk.jit`` capture (``_state.tracer``) still records it, so a compiled graph
    computes it for each call instead of keeping the values of the recorded one."""
    arrays, dev, _ = unwrap(op, inputs)
    result = op.forward(dev.xp, *arrays, **attrs)
    if op.outputs == 1:
        outputs: tuple = (_finish_single(op, inputs, attrs, result, dev, False),)
    else:
        outputs = _finish_multi(op, inputs, attrs, result, dev, False)
    tracer = _state.tracer
    if tracer is not None:
        event = OpEvent(op, inputs, attrs)
        event.outputs = outputs
        tracer.op_started(event)
        tracer.op_finished(event)
    return outputs[0] if op.outputs == 1 else outputs


# ----------------------------------------------------------------------- observed path
class OpEvent:
    """What observers learn about one op: name, phase, tensors, node, timing, module path.
    ``arguments`` is the call's whole argument tuple where ``inputs`` holds only its tensors
    (a custom Function), else None."""

    __slots__ = (
        "arguments",
        "attrs",
        "backward_node",
        "end_ns",
        "inputs",
        "module_path",
        "name",
        "node",
        "op",
        "outputs",
        "phase",
        "records",
        "start_ns",
    )

    def __init__(self, op: OpDef, inputs: tuple, attrs: dict) -> None:
        self.op = op
        self.name = op.name
        self.phase = _state.phase
        self.inputs = inputs
        self.attrs = attrs
        self.arguments: tuple | None = None
        self.outputs: tuple = ()
        self.node: Node | None = None
        self.backward_node = _state.backward_node
        self.module_path = ".".join(_state.module_path)
        self.start_ns = 0
        self.end_ns = 0
        self.records: dict = {}


def _observed_apply(op: OpDef, inputs: tuple, attrs: dict) -> Any:
    """``apply`` while a Tape, profiler or anomaly check watches: same result, plus events.

    Ops that run inside an observed op (a composite calling primitives) are not reported
    again: only the outermost op is an event.
    """
    observers = _state.observers
    event = OpEvent(op, inputs, attrs)
    for observer in observers:
        observer.op_started(event)
    _state.observing = False
    try:
        event.start_ns = time.perf_counter_ns()
        arrays, dev, requires_grad = unwrap(op, inputs)
        with_graph = requires_grad and _state.grad_enabled and op.backward is not None
        try:
            result = op.forward(dev.xp, *arrays, **attrs)
        except ValueError as error:
            raise _explain(op, inputs, error) from None
        except OverflowError:
            result = op.forward(dev.xp, *_wrap_scalars(arrays), **attrs)
        event.end_ns = time.perf_counter_ns()
        if op.outputs == 1:
            out = _finish_single(op, inputs, attrs, result, dev, with_graph)
            event.outputs = (out,)
            event.node = out.grad_fn if with_graph else None
        else:
            out = _finish_multi(op, inputs, attrs, result, dev, with_graph)
            event.outputs = out
            event.node = out[0].grad_fn if with_graph else None
    finally:
        _state.observing = bool(_state.observers)
    for observer in observers:
        observer.op_finished(event)
    return out
