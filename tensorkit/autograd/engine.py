"""The backward engine, written as a step iterator.

``backward_steps`` counts each node's dependencies from the roots, then runs ready nodes (the
most recently created first, as PyTorch does) and yields one :class:`BackwardStep` per node:
the node, the gradients that flowed in and the gradients it produced. Gradients reaching a
leaf are accumulated into ``.grad`` as the iterator goes; the notebook stepper pauses it
between steps. ``backward()`` and ``grad()`` exhaust it when they record (``create_graph``) or
something observes op by op (a Tape, anomaly mode); otherwise they run ``_run_plain``, the
same schedule as a plain loop in which gradients flow as arrays and ops with an
``array_rule`` skip op dispatch. Observers that take backward at node level (the profiler,
by default) get one ``NodeEvent`` per node from that loop. The loops are iterative, so a
chain of any depth backpropagates without touching Python's recursion limit.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Iterator, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np

from .. import _state
from .._backend import cpu, device_of_array
from .._dtype import from_numpy_dtype
from ..tensor import Tensor, wrap
from .graph import AccumulateGrad, Node, edge_of

__all__ = ["BackwardStep", "backward_steps", "backward", "grad"]


class BackwardStep:
    """One executed node: ``grads_in`` per forward output, ``grads_out`` per forward input.

    For an :class:`AccumulateGrad` node ``leaf`` is the tensor whose ``.grad`` was updated.
    """

    __slots__ = ("grads_in", "grads_out", "index", "leaf", "node")

    def __init__(
        self,
        index: int,
        node: Node,
        grads_in: tuple[Tensor | None, ...],
        grads_out: tuple[Tensor | None, ...],
        leaf: Tensor | None = None,
    ) -> None:
        self.index = index
        self.node = node
        self.grads_in = grads_in
        self.grads_out = grads_out
        self.leaf = leaf

    @property
    def name(self) -> str:
        return self.node.name()

    def __repr__(self) -> str:
        return f"<BackwardStep {self.index}: {self.name}>"


def backward_steps(
    tensors: Tensor | Sequence[Tensor],
    grad_tensors: Tensor | Sequence[Tensor | None] | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Sequence[Tensor] | Tensor | None = None,
) -> Iterator[BackwardStep]:
    """Yield the backward pass one node at a time, in execution order.

    Without ``inputs``, gradients reaching leaves are accumulated into their ``.grad``. With
    ``inputs``, only the nodes leading to them run, and their gradients are captured instead:
    they are the generator's return value (``StopIteration.value``), aligned with ``inputs``.
    """
    return _execute(tensors, grad_tensors, retain_graph, create_graph, inputs, describe=True)


def _execute(
    tensors: Any,
    grad_tensors: Any,
    retain_graph: bool | None,
    create_graph: bool,
    inputs: Any,
    describe: bool,
) -> Iterator[Any]:
    """The engine. Yields a BackwardStep per node, or None when ``describe`` is False and no
    observer wants steps (``backward()`` and ``grad()`` need no step objects)."""
    if retain_graph is None:
        retain_graph = create_graph
    root_edges, dependencies, targets, needed, captured = _prepare(
        tensors, grad_tensors, create_graph, inputs
    )
    pending: dict[Node, list] = {}
    for (node, nr), root_grad in root_edges:
        _add_to_buffer(pending, node, nr, root_grad)
    ready = _ready_roots(root_edges, dependencies)

    index = 0
    pop = heapq.heappop
    while ready:
        node = pop(ready)[2]
        buffer = pending.pop(node, None)
        if buffer is None:  # no gradient reached this node
            _release(node, dependencies, ready)
            continue
        # Grad mode (and the phase observers read) change only while this node's work runs:
        # between steps, a paused iterator leaves the user's modes as they were.
        user_grad_mode = _state.grad_enabled
        _state.grad_enabled = create_graph
        watched = _state.observing
        if watched:  # observers attribute the rule's ops to this node
            previous = (_state.phase, _state.backward_node)
            _state.phase, _state.backward_node = "backward", node
        try:
            grads_in, grads_out, skipped = _work(
                node, tuple(buffer), create_graph, retain_graph, targets, captured, needed
            )
            if grads_out:
                _send(node, grads_out, pending)
        except Exception as error:
            if getattr(error, "backward_node", None) is None:
                error.backward_node = node  # tools (the notebook stepper) show where it failed
            raise
        finally:
            _state.grad_enabled = user_grad_mode
            if watched:
                _state.phase, _state.backward_node = previous
        if skipped:
            _release(node, dependencies, ready)
            continue
        step = None
        if describe or _state.observers:
            step = _step(index, node, grads_in, grads_out)
        yield step
        index += 1
        _release(node, dependencies, ready)
    return captured


def _prepare(tensors: Any, grad_tensors: Any, create_graph: bool, inputs: Any) -> tuple:
    """What a backward pass starts from: the root edges with their gradients, each reachable
    node's dependency count, the capture targets of ``inputs`` (node -> slots), the nodes
    that must run to reach them (None: all), and the empty list of captured gradients."""
    roots = _as_tuple(tensors)
    root_grads = _root_gradients(roots, grad_tensors, create_graph)
    input_tensors = _as_tuple(inputs) if inputs is not None else ()
    targets = _capture_targets(input_tensors)
    root_edges = []
    for root, root_grad in zip(roots, root_grads, strict=True):
        edge = edge_of(root)
        if edge is None:
            raise RuntimeError(
                "element 0 of tensors does not require grad and does not have a grad_fn"
            )
        root_edges.append((edge, root_grad))
    dependencies = _count_dependencies([edge[0] for edge, _ in root_edges])
    needed = _needed_nodes(dependencies, targets) if targets else None
    return root_edges, dependencies, targets, needed, [None] * len(input_tensors)


def _ready_roots(root_edges: list, dependencies: dict) -> list:
    """The heap of root nodes nothing else points to, newest first."""
    ready: list = []
    for node in {edge[0]: None for edge, _ in root_edges}:
        if dependencies[node] == 0:
            heapq.heappush(ready, (-node.seq, id(node), node))
    return ready


def _work(
    node: Node,
    grads_in: tuple,
    create_graph: bool,
    retain_graph: bool,
    targets: dict,
    captured: list,
    needed: set | None,
) -> tuple:
    """One node's work on Tensor gradients: tensor hooks, capture, then its rule (or the leaf
    accumulation). Returns ``(grads_in after hooks, grads_out, skipped)``; a node that no
    captured input depends on is skipped."""
    if node._tensor_pre_hooks is not None or node._retain_grad_hooks is not None:
        grads_in = _run_tensor_pre_hooks(node, grads_in)
    if targets and node in targets:
        _capture(targets[node], grads_in, captured)
    if needed is not None and node not in needed:
        return grads_in, (), True
    if type(node) is AccumulateGrad:
        _accumulate(node, grads_in[0], create_graph)
        return grads_in, (), False
    grads_out = _run_node(node, grads_in)
    if not retain_graph and (node._saved_inputs is not None or node._saved_outputs is not None):
        node.free_saved()
    return grads_in, grads_out, False


def _step(index: int, node: Node, grads_in: tuple, grads_out: tuple) -> BackwardStep:
    """The step record of an executed node, handed to the observers that watch steps."""
    leaf = node.variable if type(node) is AccumulateGrad else None
    step = BackwardStep(index, node, grads_in, grads_out, leaf)
    if _state.observers:
        _notify_step(step)
    return step


# ------------------------------------------------------------------ the plain fast path
def _plain_eligible(create_graph: bool) -> bool:
    """Whether ``backward()``/``grad()`` may run the array-level loop: nothing is recorded
    (no create_graph), checked by anomaly mode or observed op by op (observers that take
    backward as one event per node get those events from the loop)."""
    return not create_graph and not _state.ops_in_backward and not _state.anomaly


def _run_plain(tensors: Any, grad_tensors: Any, retain_graph: bool | None, inputs: Any) -> list:
    """The engine for a first-order backward that nothing records or observes op by op, as
    a plain loop: gradients flow as raw arrays, and a node whose op has an ``array_rule``
    runs it without op dispatch or Tensor wrappers. Anything else (hooks, captured inputs,
    rules without an array form, an op-level observer or anomaly mode that a hook turned on)
    runs on Tensors through ``_work``, exactly as in the iterator. While only node-level
    observers are active, each node's work (either way) is reported to them as one
    ``NodeEvent``, with op observation off inside it. Returns the captured gradients, as
    ``_execute`` does."""
    root_edges, dependencies, targets, needed, captured = _prepare(
        tensors, grad_tensors, False, inputs
    )
    pending: dict[Node, list] = {}
    for (node, nr), root_grad in root_edges:
        _add_to_buffer(pending, node, nr, root_grad)
    # The roots' own Tensors, by array, so a root gradient that flows unchanged to a leaf or
    # a captured input is handed over as the very tensor the iterator would hand over.
    known = {id(g._data): g for buffer in pending.values() for g in buffer if g is not None}
    home = _numpy_device(known)
    for node, buffer in pending.items():
        pending[node] = [None if g is None else g._data for g in buffer]
    ready = _ready_roots(root_edges, dependencies)
    keep = bool(retain_graph)

    index = 0
    pop, push = heapq.heappop, heapq.heappush
    user_grad_mode = _state.grad_enabled
    _state.grad_enabled = False
    node = None
    try:
        while ready:
            node = pop(ready)[2]
            buffer = pending.pop(node, None)
            if buffer is not None:
                event = None
                if (
                    _state.observing
                    and not _state.ops_in_backward
                    and (needed is None or node in needed)
                ):
                    event = _node_started(node, buffer, home)
                grads_out = None
                if (
                    not node._has_hooks
                    and not _state.ops_in_backward
                    and not _state.anomaly
                    and (not targets or (node in needed and node not in targets))
                ):
                    if type(node) is AccumulateGrad:
                        if not node.variable._leaf_hooks:
                            _accumulate(node, _as_tensor(buffer[0], known, home), False)
                            grads_out = ()
                    else:
                        rule = getattr(node.op, "array_rule", None)
                        if rule is not None:
                            grads_out = _run_array_rule(node, rule, buffer)
                            if (
                                grads_out is not None
                                and not keep
                                and (
                                    node._saved_inputs is not None
                                    or node._saved_outputs is not None
                                )
                            ):
                                node.free_saved()
                if grads_out is None:
                    grads_out = _tensor_work(
                        node, buffer, index, keep, targets, captured, needed, known, home
                    )
                if event is not None:
                    _node_finished(event, grads_out)
                if grads_out is not None:
                    index += 1
                    # Send each gradient to its input's buffer, and count the edge as done.
                    for edge, g in zip(node.edges, grads_out, strict=True):
                        if edge is not None:
                            child = edge[0]
                            if g is not None:
                                slots = pending.get(child)
                                if slots is None:
                                    meta = child.output_meta
                                    slots = [None] * (1 if meta is None else len(meta))
                                    pending[child] = slots
                                _add_array(slots, edge[1], g)
                            remaining = dependencies[child] - 1
                            dependencies[child] = remaining
                            if remaining == 0:
                                push(ready, (-child.seq, id(child), child))
                    continue
            _release(node, dependencies, ready)  # no gradient reached it, or it was skipped
    except Exception as error:
        if node is not None and getattr(error, "backward_node", None) is None:
            error.backward_node = node
        raise
    finally:
        _state.grad_enabled = user_grad_mode
        _state.observing = bool(_state.observers)  # a node's work switches it off
    return captured


class NodeEvent:
    """One backward node's work, as node-level observers (``_state.node_observers``) see
    it: the fields of an op event (``ops._apply.OpEvent``), for the node's whole work, with
    its name ("MulBackward0", "AccumulateGrad"), phase "backward" and ``backward_node`` the
    node. ``inputs`` are the gradient arrays flowing in and ``outputs`` those it produced,
    one per forward input (None where there is none; for an ``AccumulateGrad``, the leaf's
    new ``.grad``), all on ``device``: raw arrays, as the plain loop holds them (wrapping
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


def _tensor_work(
    node: Node,
    buffer: list,
    index: int,
    retain_graph: bool,
    targets: dict,
    captured: list,
    needed: set | None,
    known: dict,
    home: Any,
) -> tuple | None:
    """A node of the plain loop run on Tensors (see ``_run_plain``): its gradients out as
    arrays, or None when it was skipped."""
    grads_in = tuple([None if g is None else _as_tensor(g, known, home) for g in buffer])
    watched = _state.observing
    if watched:
        previous = (_state.phase, _state.backward_node)
        _state.phase, _state.backward_node = "backward", node
    try:
        grads_in, grads_out, skipped = _work(
            node, grads_in, False, retain_graph, targets, captured, needed
        )
    finally:
        if watched:
            _state.phase, _state.backward_node = previous
    if skipped:
        return None
    if _state.observers:
        _step(index, node, grads_in, grads_out)
    return tuple([None if g is None else g._data for g in grads_out])


def _run_array_rule(node: Node, rule: Any, buffer: list) -> tuple | None:
    """Run ``node``'s array rule on its incoming gradient arrays; None when the rule defers
    to the Tensor rule. Gradients not matching their input's shape or dtype are fixed as
    ``_validate`` fixes them."""
    g = buffer[0]
    grads_out = rule(node, np if type(g) is np.ndarray else device_of_array(g).xp, *buffer)
    if grads_out is NotImplemented:
        return None
    if type(grads_out) is not tuple:
        grads_out = (grads_out,)
    for g, meta in zip(grads_out, node.input_meta, strict=True):
        if g is not None and (
            meta is None or g.shape != meta[0] or (g.dtype is not meta[1] and g.dtype != meta[1])
        ):
            tensors = tuple([None if g is None else _as_tensor(g, None, None) for g in grads_out])
            return tuple([None if g is None else g._data for g in _validate(node, tensors)])
    return grads_out


def _as_tensor(array: Any, known: dict | None, home: Any) -> Tensor:
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


def _add_array(slots: list, nr: int, g: Any) -> None:
    """Put gradient array ``g`` in slot ``nr``; two gradients meeting at one input are added
    as arrays (as ``_sum_gradients`` does), or as Tensors when their shapes differ."""
    previous = slots[nr]
    if previous is None:
        slots[nr] = g
    elif previous.shape == g.shape:
        slots[nr] = previous + g
    else:
        slots[nr] = (_as_tensor(previous, None, None) + _as_tensor(g, None, None))._data


def _send(node: Node, grads_out: tuple, pending: dict) -> None:
    """Add each produced gradient to the input buffer of the node it flows to."""
    for edge, g in zip(node.edges, grads_out, strict=True):
        if edge is not None and g is not None:
            child, nr = edge
            slots = pending.get(child)
            if slots is None:
                meta = child.output_meta
                slots = pending[child] = [None] * (1 if meta is None else len(meta))
            previous = slots[nr]
            slots[nr] = g if previous is None else _sum_gradients(previous, g)


def _sum_gradients(a: Tensor, b: Tensor) -> Tensor:
    """``a + b`` for two gradients of one tensor (same shape and dtype, checked on the way).
    When nothing records or observes it, the arrays are added directly: no op dispatch."""
    if _state.grad_enabled or _state.observing or a._data.shape != b._data.shape:
        return a + b
    total = a._data + b._data
    if not total.shape:  # NumPy returns a scalar for 0-d operands
        total = a._device.xp.asarray(total)
    return wrap(total, a._device)


def _capture(slots: list, grads_in: tuple, captured: list) -> None:
    for slot, nr in slots:
        g = grads_in[nr]
        if g is not None:
            captured[slot] = g if captured[slot] is None else captured[slot] + g


def _notify_step(step: BackwardStep) -> None:
    for observer in _state.observers:
        on_step = getattr(observer, "backward_step", None)
        if on_step is not None:
            on_step(step)


def backward(
    tensors: Tensor | Sequence[Tensor],
    grad_tensors: Tensor | Sequence[Tensor | None] | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Sequence[Tensor] | Tensor | None = None,
) -> None:
    """Accumulate gradients of ``tensors`` into the ``.grad`` of graph leaves (or ``inputs``)."""
    if inputs is not None:
        inputs = _as_tuple(inputs)
        if not inputs:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
        _accumulate_into_inputs(tensors, grad_tensors, retain_graph, create_graph, inputs)
    elif _plain_eligible(create_graph):
        _run_plain(tensors, grad_tensors, retain_graph, None)
    else:
        for _ in _execute(tensors, grad_tensors, retain_graph, create_graph, None, False):
            pass


def grad(
    outputs: Tensor | Sequence[Tensor],
    inputs: Tensor | Sequence[Tensor],
    grad_outputs: Tensor | Sequence[Tensor | None] | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
) -> tuple[Tensor | None, ...]:
    """The gradients of ``outputs`` with respect to ``inputs``, returned (not accumulated).

    With ``is_grads_batched``, the first dimension of each ``grad_outputs`` tensor indexes a
    batch of vectors: one backward pass per vector, gradients stacked along a new first
    dimension."""
    if is_grads_batched:
        return _batched_grad(
            outputs,
            inputs,
            grad_outputs,
            retain_graph,
            create_graph,
            allow_unused,
            materialize_grads,
        )
    input_tensors = _as_tuple(inputs)
    for i, t in enumerate(input_tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"grad(): inputs[{i}] must be a Tensor, got {type(t).__name__}")
        if not t._requires_grad:
            raise RuntimeError(
                f"One of the differentiated Tensors (inputs[{i}]) does not require grad"
            )
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "Expected allow_unused to be True or not passed when materialize_grads=True, "
            "but got: allow_unused=False."
        )
    captured = _captured_gradients(outputs, grad_outputs, retain_graph, create_graph, input_tensors)
    result = []
    for i, (t, g) in enumerate(zip(input_tensors, captured, strict=True)):
        if g is None:
            if materialize_grads:
                g = t.detach().new_zeros(t.shape)
            elif not allow_unused and not materialize_grads:
                raise RuntimeError(
                    f"One of the differentiated Tensors (inputs[{i}], shape {list(t.shape)}) "
                    "appears to not have been used in the graph. Set allow_unused=True if this "
                    "is the desired behavior."
                )
        result.append(g)
    return tuple(result)


def _batched_grad(
    outputs: Any,
    inputs: Any,
    grad_outputs: Any,
    retain_graph: bool | None,
    create_graph: bool,
    allow_unused: bool | None,
    materialize_grads: bool,
) -> tuple[Tensor | None, ...]:
    """``grad`` with ``is_grads_batched``: a loop over the batch of ``grad_outputs``."""
    from ..ops.shape import stack

    seeds = list(_as_tuple(grad_outputs)) if grad_outputs is not None else []
    if not seeds or any(not isinstance(g, Tensor) or g.dim() == 0 for g in seeds):
        raise RuntimeError(
            "If `is_grads_batched=True`, we interpret the first dimension of each grad_output "
            "as the batch dimension. The sizes of the remaining dimensions are expected to match "
            "the shape of corresponding output."
        )
    size = seeds[0].shape[0]
    per_item = []
    for b in range(size):
        keep = retain_graph if b == size - 1 else True
        per_item.append(
            grad(
                outputs,
                inputs,
                [g[b] for g in seeds],
                keep,
                create_graph,
                allow_unused,
                materialize_grads=materialize_grads,
            )
        )
    return tuple(
        None if column[0] is None else stack(list(column)) for column in zip(*per_item, strict=True)
    )


# ------------------------------------------------------------------------------ helpers
def _captured_gradients(
    tensors: Any, grad_tensors: Any, retain_graph: Any, create_graph: bool, inputs: tuple
) -> list:
    """Run the backward pass to ``inputs`` and return their gradients (the plain loop when
    it may run, else the iterator, drained)."""
    if _plain_eligible(create_graph):
        return _run_plain(tensors, grad_tensors, retain_graph, inputs)
    steps = _execute(tensors, grad_tensors, retain_graph, create_graph, inputs, describe=False)
    while True:
        try:
            next(steps)
        except StopIteration as stop:
            return stop.value


def _accumulate_into_inputs(
    tensors: Any, grad_tensors: Any, retain_graph: Any, create_graph: bool, inputs: tuple
) -> None:
    captured = _captured_gradients(tensors, grad_tensors, retain_graph, create_graph, inputs)
    for t, g in zip(inputs, captured, strict=True):
        if g is not None and not t._retains_grad:  # a retained non-leaf already has it
            _add_to_grad(t, g if create_graph else g.detach())
            _run_post_accumulate_hooks(t)


def _as_tuple(value: Any) -> tuple:
    if isinstance(value, Tensor):
        return (value,)
    return tuple(value)


def _root_gradients(roots: tuple, grad_tensors: Any, create_graph: bool) -> list[Tensor]:
    if grad_tensors is None:
        grads: list = [None] * len(roots)
    else:
        grads = (
            list(_as_tuple(grad_tensors))
            if not isinstance(grad_tensors, Tensor)
            else [grad_tensors]
        )
    if len(grads) != len(roots):
        raise RuntimeError(f"got {len(grads)} gradients for {len(roots)} tensors")
    result = []
    for root, g in zip(roots, grads, strict=True):
        if not isinstance(root, Tensor):
            raise TypeError(f"backward() expects Tensors, got {type(root).__name__}")
        if g is None:
            if root.numel() != 1:
                raise RuntimeError(
                    f"grad can be implicitly created only for scalar outputs, but the output "
                    f"has shape {list(root.shape)}; pass gradient= with that shape"
                )
            if not root._requires_grad:
                raise RuntimeError(
                    "element 0 of tensors does not require grad and does not have a grad_fn"
                )
            g = root.new_ones(root.shape)
        elif not isinstance(g, Tensor):
            raise TypeError(f"gradient must be a Tensor, got {type(g).__name__}")
        elif tuple(g.shape) != tuple(root.shape):
            raise RuntimeError(
                f"Mismatch in shape: grad_output[0] has a shape of {list(g.shape)} and output[0] "
                f"has a shape of {list(root.shape)}."
            )
        result.append(g if create_graph else g.detach())
    return result


def _capture_targets(inputs: tuple) -> dict:
    """Map each input's edge node to [(slot in inputs, output_nr)] for capturing its grad."""
    targets: dict = {}
    for slot, t in enumerate(inputs):
        edge = edge_of(t)
        if edge is None:
            raise RuntimeError(
                f"One of the differentiated Tensors (inputs[{slot}]) does not require grad"
            )
        targets.setdefault(edge[0], []).append((slot, edge[1]))
    return targets


def _count_dependencies(roots: list[Node]) -> dict[Node, int]:
    """How many edges point to each node reachable from ``roots`` (iterative DFS).

    Every reachable node is a key, the roots included (with 0 unless something points to them).
    """
    dependencies: dict[Node, int] = dict.fromkeys(roots, 0)
    stack = list(dependencies)
    while stack:
        node = stack.pop()
        for edge in node.edges:
            if edge is None:
                continue
            child = edge[0]
            count = dependencies.get(child)
            if count is None:
                dependencies[child] = 1
                stack.append(child)
            else:
                dependencies[child] = count + 1
    return dependencies


def _needed_nodes(dependencies: dict, targets: dict) -> set:
    """The nodes from which some target can be reached through at least one edge: the nodes
    that must run. A target outside this set only has its incoming gradient captured."""
    parents: dict = {}
    for node in dependencies:
        for edge in node.edges:
            if edge is not None:
                parents.setdefault(edge[0], []).append(node)
    needed: set = set()
    stack = [parent for node in targets for parent in parents.get(node, ())]
    while stack:
        node = stack.pop()
        if node not in needed:
            needed.add(node)
            stack.extend(parents.get(node, ()))
    return needed


def _release(node: Node, dependencies: dict, ready: list) -> None:
    """Count ``node``'s edges as done; a child whose last dependency this was becomes ready."""
    for edge in node.edges:
        if edge is None:
            continue
        child = edge[0]
        remaining = dependencies[child] - 1
        dependencies[child] = remaining
        if remaining == 0:
            heapq.heappush(ready, (-child.seq, id(child), child))


def _add_to_buffer(pending: dict, node: Node, nr: int, g: Tensor) -> None:
    buffer = pending.get(node)
    if buffer is None:
        buffer = pending[node] = [None] * node.num_outputs
    previous = buffer[nr]
    buffer[nr] = g if previous is None else previous + g


def _run_tensor_pre_hooks(node: Node, grads_in: tuple) -> tuple:
    if node._tensor_pre_hooks is None and node._retain_grad_hooks is None:
        return grads_in
    grads = list(grads_in)
    for nr, hooks in (node._tensor_pre_hooks or {}).items():
        for hook in list(hooks.values()):
            if grads[nr] is not None:
                replaced = hook(grads[nr])
                if replaced is not None:
                    grads[nr] = _check_hook_result(hook, grads[nr], replaced)
    for nr, hook in (node._retain_grad_hooks or {}).items():
        if grads[nr] is not None:
            hook(grads[nr])
    return tuple(grads)


def _hook_name(hook: Any) -> str:
    return getattr(hook, "__name__", type(hook).__name__)


def _check_hook_result(hook: Any, old: Tensor, new: Any) -> Tensor:
    """A tensor hook's replacement gradient must keep the gradient's type, dtype and shape."""
    if not isinstance(new, Tensor):
        raise TypeError(
            f"expected Variable or None (got {type(new).__name__}) from hook '{_hook_name(hook)}'"
        )
    if new._data.dtype != old._data.dtype:
        raise RuntimeError(
            f"hook '{_hook_name(hook)}' has changed the type of value (was {old.dtype} got "
            f"{new.dtype})"
        )
    if new._data.shape != old._data.shape:
        raise RuntimeError(f"hook '{_hook_name(hook)}' has changed the size of value")
    return new


def _check_node_hook_result(hook: Any, replaced: Any, expected: int) -> tuple:
    """A node hook's replacement gradients: a tuple of the same length."""
    if not isinstance(replaced, tuple):
        raise TypeError(f"expected tuple, but hook returned '{type(replaced).__name__}'")
    if len(replaced) != expected:
        raise RuntimeError(
            f"hook '{_hook_name(hook)}' has returned an incorrect number of values (got "
            f"{len(replaced)}, but expected {expected})"
        )
    return replaced


def _run_node(node: Node, grads_in: tuple) -> tuple:
    if node.output_meta is not None:
        grads_in = _materialize(node, grads_in)
    if node._pre_hooks:
        for hook in list(node._pre_hooks.values()):
            replaced = hook(grads_in)
            if replaced is not None:
                grads_in = _check_node_hook_result(hook, replaced, len(grads_in))
    grads_out = node.op.backward(node, *grads_in)
    if type(grads_out) is not tuple:
        grads_out = (grads_out,)
    if len(grads_out) != len(node.edges):
        raise RuntimeError(
            f"function {node.name()} returned an incorrect number of gradients (expected "
            f"{len(node.edges)}, got {len(grads_out)})"
        )
    for g, meta in zip(grads_out, node.input_meta, strict=True):
        if g is not None and (
            meta is None
            or type(g) is not Tensor
            or g._data.shape != meta[0]
            or g._data.dtype != meta[1]
        ):
            grads_out = _validate(node, grads_out)
            break
    if node._post_hooks:
        for hook in list(node._post_hooks.values()):
            replaced = hook(grads_out, grads_in)
            if replaced is not None:
                grads_out = _check_node_hook_result(hook, replaced, len(grads_out))
    if _state.anomaly:
        from .anomaly import check_gradients

        check_gradients(node, grads_out)
    return grads_out


def _materialize(node: Node, grads_in: tuple) -> tuple:
    """Replace missing gradients of multi-output nodes by zeros (as PyTorch does)."""
    if all(g is not None for g in grads_in):
        return grads_in
    from ..ops.creation import zeros

    if not node.attrs.get("materialize_grads", True):
        return grads_in
    grads = list(grads_in)
    for nr, g in enumerate(grads):
        shape, np_dtype = node.output_meta[nr]
        if g is None and np_dtype is not None:
            dtype = from_numpy_dtype(np_dtype)
            grads[nr] = zeros(shape, dtype=dtype, device=_device_of(grads_in))
    return tuple(grads)


def _device_of(grads: tuple) -> Any:
    for g in grads:
        if g is not None:
            return g.device
    return None


def _validate(node: Node, grads_out: tuple) -> tuple:
    """Each gradient must match its input's shape and dtype: sum broadcast dims, cast dtype."""
    fixed = list(grads_out)
    for i, (g, meta) in enumerate(zip(grads_out, node.input_meta, strict=True)):
        if g is None:
            continue
        if meta is None:
            fixed[i] = None
            continue
        if not isinstance(g, Tensor):
            raise TypeError(
                f"function {node.name()} returned a gradient of type {type(g).__name__} at "
                f"index {i}; expected a Tensor"
            )
        shape, np_dtype = meta
        data = g._data
        if data.shape != shape:
            g = _sum_to(node, i, g, shape)
        if g._data.dtype != np_dtype:
            if g._data.dtype.kind == "c" and np_dtype.kind != "c":
                g = g.real
            g = g.to(from_numpy_dtype(np_dtype))
        fixed[i] = g
    return tuple(fixed)


def _sum_to(node: Node, index: int, g: Tensor, shape: tuple) -> Tensor:
    from ..ops.reduction import sum_to_shape

    try:
        return sum_to_shape(g, shape)
    except ValueError:
        raise RuntimeError(
            f"Function {node.name()} returned an invalid gradient at index {index} - got "
            f"{list(g.shape)} but expected shape compatible with {list(shape)}"
        ) from None


def _accumulate(node: AccumulateGrad, g: Tensor, create_graph: bool) -> None:
    leaf = node.variable
    if leaf._leaf_hooks:
        for hook in list(leaf._leaf_hooks.values()):
            replaced = hook(g)
            if replaced is not None:
                g = _check_hook_result(hook, g, replaced)
    _add_to_grad(leaf, g if create_graph else g.detach())
    _run_post_accumulate_hooks(leaf)


def _run_post_accumulate_hooks(leaf: Tensor) -> None:
    if leaf._post_accumulate_hooks:
        for hook in list(leaf._post_accumulate_hooks.values()):
            hook(leaf)


def _add_to_grad(leaf: Tensor, g: Tensor) -> None:
    """Accumulate out of place, so no gradient handed out earlier (a step's record, a user's
    tensor passed as ``gradient=``) is ever changed behind its holder's back."""
    if leaf.grad is None:
        # Own the memory: a rule may return a broadcast or other view, which must not be
        # stored as .grad (it would be read-only or alias another tensor).
        leaf.grad = g.clone() if g._base is not None or g._data.base is not None else g
    else:
        leaf.grad = leaf.grad + g
