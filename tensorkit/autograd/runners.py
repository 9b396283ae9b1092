"""The per-node runners of the backward engine (``engine._execute`` picks one per pass).

- :class:`TensorRunner`: gradients flow as Tensors and each node runs its Tensor rule through
  ``node_work.work``. The runner of ``create_graph`` (grad mode is on inside the rules, so
  they are recorded), of op-level observers (a Tape, anomaly mode, ``profile(backward_ops=
  True)``: the rules' ops go through the observed op path) and of the stepper
  (``backward_steps``: each node becomes a :class:`~tensorkit.autograd.BackwardStep`).
- :class:`PlainRunner`: a first-order pass that nothing records or observes op by op.
  Gradients flow as raw arrays; a node whose op has a rule written over an array namespace
  (``OpDef.rule``, see ``ops._rule_space``) runs that same rule on the arrays, without op
  dispatch, when its gradients and saved values share one real floating dtype. Any other node
  (hooks, captured inputs, other rules or dtypes) is wrapped and run exactly as the Tensor
  runner runs it. Node-level observers (the profiler by default) get one :class:`NodeEvent`
  per node.

Both return a node's gradients out (one per edge, in the form they carry) or None when the
node was skipped; the engine sends them on and sums them (``node_work.sum_into``).
"""

from __future__ import annotations

import time
from types import MappingProxyType
from typing import Any

import numpy as np

from .. import _state
from .._backend import cpu, device_of_array
from ..ops.reduction import broadcast_dims
from ..tensor import Tensor, wrap
from .graph import AccumulateGrad, Node
from .node_work import accumulate, validate, work

__all__ = ["NodeEvent", "PlainRunner", "TensorRunner", "as_tensor", "notify_step"]


class TensorRunner:
    """Runs every node on Tensor gradients (see the module docstring). ``step`` is the last
    node's :class:`BackwardStep` when the pass describes its steps or an observer watches."""

    def __init__(self, plan: Any, create_graph: bool, retain_graph: bool, describe: bool) -> None:
        self.plan = plan
        self.create_graph = create_graph
        self.retain_graph = retain_graph
        self.describe = describe
        self.step: Any = None

    @staticmethod
    def carry(g: Tensor) -> Tensor:
        """A root gradient as this runner's buffers hold it."""
        return g

    def run(self, node: Node, buffer: list, index: int) -> tuple | None:
        plan = self.plan
        done = work(node, tuple(buffer), self.create_graph, self.retain_graph, plan)
        if done is None:
            return None
        grads_in, grads_out = done
        self.step = None
        if self.describe or _state.observers:
            self.step = make_step(index, node, grads_in, grads_out)
        return grads_out


class PlainRunner:
    """Runs nodes on raw gradient arrays where the op's rule allows it (see the module
    docstring); the roots' own Tensors are kept by array, so a root gradient that flows
    unchanged to a leaf or a captured input is handed over as that very Tensor."""

    def __init__(self, plan: Any, retain_graph: bool) -> None:
        self.plan = plan
        self.retain_graph = retain_graph
        self.known = {id(g._data): g for g in plan.root_grads}
        self.home = _numpy_device(self.known)
        self.kind: type | None = None  # the gradient arrays' type, and its rule namespace
        self.space: Any = None

    @staticmethod
    def carry(g: Tensor) -> Any:
        return g._data

    def run(self, node: Node, buffer: list, index: int) -> tuple | None:
        if _state.observing or node._has_hooks or self.plan.targets:
            return self._run_watched(node, buffer, index)
        grads_out = self.on_arrays(node, buffer)
        if grads_out is None:
            return self._on_tensors(node, buffer, index)
        return grads_out

    def _run_watched(self, node: Node, buffer: list, index: int) -> tuple | None:
        """``run`` for a node with hooks, a pass with captured inputs, or observers: node-level
        observers get one NodeEvent; anything that needs Tensors gets them."""
        plan = self.plan
        event = None
        if (
            _state.observing
            and not _state.ops_in_backward
            and (plan.needed is None or node in plan.needed)
        ):
            event = _node_started(node, buffer, self.home)
        try:
            grads_out = None
            if (
                not node._has_hooks
                and not _state.ops_in_backward
                and (not plan.targets or (node in plan.needed and node not in plan.targets))
            ):
                grads_out = self.on_arrays(node, buffer)
            if grads_out is None:
                grads_out = self._on_tensors(node, buffer, index)
        except BaseException:
            if event is not None:
                _state.observing = bool(_state.observers)
            raise
        if event is not None:
            _node_finished(event, grads_out)
        return grads_out

    def on_arrays(self, node: Node, buffer: list) -> tuple | None:
        """The node's work without Tensors, or None where it needs them."""
        if type(node) is AccumulateGrad:
            if node.variable._leaf_hooks:
                return None
            accumulate(node, as_tensor(buffer[0], self.known, self.home), False, self.plan.claimed)
            return ()
        rule = getattr(node.op, "rule", None)
        if rule is None:
            return None
        if len(buffer) == 1:
            first = buffer[0]
        elif any(g is None for g in buffer) and node.attrs.get("materialize_grads", True):
            return None  # the Tensor path makes the missing gradients zeros
        else:
            first = next((g for g in buffer if g is not None), None)
        saved = node.saved_arrays()
        if first is None or not _arrays_agree(first, buffer, saved, node.op.index_saves):
            return None
        kind = type(first)
        if kind is self.kind:
            space = self.space
        else:
            space = self.space = array_space(first)
            self.kind = kind
        grads_out = rule(node, space, saved, *buffer)
        if type(grads_out) is not tuple:
            grads_out = (grads_out,)
        for g, meta in zip(grads_out, node.input_meta, strict=True):
            if g is not None and (
                meta is None
                or g.shape != meta[0]
                or (g.dtype is not meta[1] and g.dtype != meta[1])
            ):
                grads_out = _fitted(node, grads_out)
                break
        if not self.retain_graph and (
            node._saved_inputs is not None or node._saved_outputs is not None
        ):
            node.free_saved()
        return grads_out

    def _on_tensors(self, node: Node, buffer: list, index: int) -> tuple | None:
        """The node's work as the Tensor runner does it, its gradients out as arrays."""
        plan = self.plan
        grads_in = tuple(
            [None if g is None else as_tensor(g, self.known, self.home) for g in buffer]
        )
        done = work(node, grads_in, False, self.retain_graph, plan)
        if done is None:
            return None
        grads_in, grads_out = done
        if _state.observers:
            make_step(index, node, grads_in, grads_out)
        return tuple([None if g is None else g._data for g in grads_out])


def _arrays_agree(first: Any, buffer: list, saved: tuple, indices: bool) -> bool:
    """Whether the gradients (``first`` the first of them) and saved arrays share one real
    floating dtype (Python ints and floats count, being weak; integer arrays too where the
    rule reads them as ``indices`` only): then a rule's NumPy arithmetic is its Tensor
    arithmetic exactly, with no promotion or conjugation."""
    np_dtype = first.dtype
    if np_dtype.kind != "f":
        return False
    if len(buffer) > 1:
        for g in buffer:
            if g is not None and g.dtype != np_dtype:
                return False
    for value in saved:
        if value is None or type(value) in _WEAK:
            continue
        dtype = getattr(value, "dtype", None)
        if (
            dtype is not np_dtype
            and dtype != np_dtype
            and not (indices and dtype is not None and dtype.kind in "iu")
        ):
            return False
    return True


_WEAK = (float, int)
_SPACES: dict[type, Any] = {}


def array_space(array: Any) -> Any:
    """The rule namespace over arrays of ``array``'s kind (NumPy's, or its device's)."""
    kind = type(array)
    space = _SPACES.get(kind)
    if space is None:
        from ..ops._rule_space import ArraySpace

        xp = np if kind is np.ndarray or issubclass(kind, np.generic) else device_of_array(array).xp
        space = _SPACES[kind] = ArraySpace(xp)
    return space


def _summed_to(g: Any, shape: tuple) -> Any:
    """A broadcast gradient array summed back to its input's ``shape`` as the ``sum`` op sums
    (``reduction.sum_to_shape``), or None where the Tensor path must (float16, whose sum runs
    in float32; a shape broadcasting cannot explain)."""
    if g.dtype.itemsize < 4:
        return None
    try:
        dims = broadcast_dims(g.shape, shape)
    except ValueError:
        return None
    return g.sum(axis=dims, keepdims=True).reshape(shape)


def _fitted(node: Node, grads_out: tuple) -> tuple:
    """Gradient arrays made to fit their inputs: one that broadcasting widened summed back on
    the arrays (``_summed_to``), anything else as ``validate`` fixes it (``_validated``)."""
    fitted = list(grads_out)
    for i, (g, meta) in enumerate(zip(grads_out, node.input_meta, strict=True)):
        if g is None:
            continue
        if meta is None or g.dtype != meta[1]:
            return _validated(node, grads_out)
        if g.shape != meta[0]:
            summed = _summed_to(g, meta[0])
            if summed is None:
                return _validated(node, grads_out)
            fitted[i] = summed
    return tuple(fitted)


def _validated(node: Node, grads_out: tuple) -> tuple:
    """Gradient arrays fixed to their inputs' shapes and dtypes, as ``validate`` fixes them."""
    tensors = tuple([None if g is None else as_tensor(g) for g in grads_out])
    return tuple([None if g is None else g._data for g in validate(node, tensors)])


def as_tensor(array: Any, known: dict | None = None, home: Any = None) -> Tensor:
    """A gradient array as a Tensor on its device (see ``_array_device``; 0-d NumPy scalars
    become arrays); a root gradient's array gives back the root gradient Tensor itself."""
    if known:
        tensor = known.get(id(array))
        if tensor is not None and tensor._data is array:
            return tensor
    dev = _array_device(array, home)
    if type(array) is not dev.array_type:
        array = dev.xp.asarray(array)
    return wrap(array, dev)


def _numpy_device(known: dict) -> Any:
    """The root gradients' device (``known`` holds them) when its arrays are NumPy's: the
    CPU, or the test stand-in "cuda" device, whose arrays alone do not say where they live.
    None otherwise."""
    for root in known.values():
        dev = root._device
        return dev if dev.array_type is np.ndarray else None
    return None


def _array_device(array: Any, home: Any) -> Any:
    """The device of a gradient array: a NumPy array's is ``home`` (``_numpy_device``) or
    the CPU."""
    kind = type(array)
    if kind is np.ndarray or issubclass(kind, np.generic):
        return cpu if home is None else home
    return device_of_array(array)


# ----------------------------------------------------------------------- observation
def make_step(index: int, node: Node, grads_in: tuple, grads_out: tuple) -> Any:
    """The step record of an executed node, handed to the observers that watch steps."""
    from .engine import BackwardStep

    leaf = node.variable if type(node) is AccumulateGrad else None
    step = BackwardStep(index, node, grads_in, grads_out, leaf)
    if _state.observers:
        notify_step(step)
    return step


def notify_step(step: Any) -> None:
    for observer in _state.observers:
        on_step = getattr(observer, "backward_step", None)
        if on_step is not None:
            on_step(step)


class NodeEvent:
    """One backward node's work, as node-level observers (``_state.node_observers``) see
    it: the fields of an op event (``ops._apply.OpEvent``), for the node's whole work, with
    its name ("MulBackward0", "AccumulateGrad"), phase "backward" and ``backward_node`` the
    node. ``inputs`` are the gradient arrays flowing in and ``outputs`` those it produced,
    one per forward input (None where there is none; for an ``AccumulateGrad``, the leaf's
    new ``.grad``), all on ``device``: raw arrays, as the plain runner holds them (wrapping
    each as a Tensor would cost more than recording it). ``op`` and ``node`` are None."""

    __slots__ = (
        "backward_node",
        "device",
        "end_ns",
        "inputs",
        "module_path",
        "name",
        "observers",
        "outputs",
        "records",
        "start_ns",
    )
    op = None
    node = None
    phase = "backward"
    attrs = MappingProxyType({})

    def __init__(self, node: Node, inputs: tuple, device: Any, observers: tuple) -> None:
        self.name = node.name()
        self.inputs = inputs
        self.device = device
        self.outputs: tuple = ()
        self.backward_node = node
        self.module_path = ".".join(_state.module_path)
        self.observers = observers
        self.start_ns = 0
        self.end_ns = 0
        self.records: dict = {}


def _node_started(node: Node, buffer: list, home: Any) -> NodeEvent:
    """Tell the node-level observers that ``node``'s work starts, and switch op observation
    off until ``_node_finished``: the rule's ops are part of the node's one event."""
    first = buffer[0]
    if first is None:
        first = next(g for g in buffer if g is not None)
    event = NodeEvent(node, tuple(buffer), _array_device(first, home), _state.node_observers)
    for observer in event.observers:
        observer.op_started(event)
    _state.observing = False
    event.start_ns = time.perf_counter_ns()
    return event


def _node_finished(event: NodeEvent, grads_out: tuple | None) -> None:
    """Close ``event`` with the gradient arrays the node produced, and report it."""
    event.end_ns = time.perf_counter_ns()
    _state.observing = bool(_state.observers)
    node = event.backward_node
    if type(node) is AccumulateGrad:
        grad = node.variable.grad
        event.outputs = () if grad is None else (grad._data,)
    elif grads_out:
        event.outputs = grads_out
    for observer in event.observers:
        observer.op_finished(event)
