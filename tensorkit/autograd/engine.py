"""The backward engine: one scheduler, written as a step iterator.

``_execute`` counts each node's dependencies from the roots, then runs ready nodes (the most
recently created first, as PyTorch does) until none is left. ``backward()``, ``grad()`` and
``backward_steps`` (the notebook stepper) all run it; what differs is the per-node runner it
picks once per pass (``runners``): the plain runner (raw gradient arrays, the ops' rules run
on them) for a first-order pass nothing observes op by op, the Tensor runner otherwise
(``create_graph``, a Tape, anomaly mode, the stepper's step records). Gradients a node
produces are sent to its inputs' buffers and summed there (``node_work.sum_into``, the one
place gradients meet); a leaf's accumulate into its ``.grad``. The loop is iterative, so a
chain of any depth backpropagates without touching Python's recursion limit.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence
from typing import Any

from .. import _state
from ..tensor import Tensor, wrap
from .graph import Node, edge_of
from .node_work import add_to_grad, claim, run_post_accumulate_hooks, sum_gradients, sum_into
from .runners import PlainRunner, TensorRunner

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


class _Plan:
    """What a backward pass starts from: the root edges with their gradients, each reachable
    node's dependency count, the capture targets of ``inputs`` (node -> [(slot, output_nr)]),
    the nodes that must run to reach them (None: all), the captured gradients and the
    claims on gradient memory (``node_work``'s docstring), the root gradients' first."""

    __slots__ = (
        "captured",
        "claimed",
        "dependencies",
        "needed",
        "root_edges",
        "root_grads",
        "targets",
    )

    def __init__(self, tensors: Any, grad_tensors: Any, create_graph: bool, inputs: Any) -> None:
        roots = _as_tuple(tensors)
        self.root_grads = _root_gradients(roots, grad_tensors, create_graph)
        input_tensors = _as_tuple(inputs) if inputs is not None else ()
        self.targets = _capture_targets(input_tensors)
        self.root_edges = []
        for root, root_grad in zip(roots, self.root_grads, strict=True):
            edge = edge_of(root)
            if edge is None:
                raise RuntimeError(
                    "element 0 of tensors does not require grad and does not have a grad_fn"
                )
            self.root_edges.append((edge, root_grad))
        self.dependencies = _count_dependencies([edge[0] for edge, _ in self.root_edges])
        self.needed = _needed_nodes(self.dependencies, self.targets) if self.targets else None
        self.captured: list = [None] * len(input_tensors)
        self.claimed: dict = {}
        for root_grad in self.root_grads:
            claim(self.claimed, root_grad._data)


def _runner(plan: _Plan, create_graph: bool, retain_graph: bool, describe: bool) -> Any:
    """The pass's runner: plain unless something records, describes or observes op by op."""
    if create_graph or describe or _state.ops_in_backward:
        return TensorRunner(plan, create_graph, retain_graph, describe)
    return PlainRunner(plan, retain_graph)


def _execute(
    tensors: Any,
    grad_tensors: Any,
    retain_graph: bool | None,
    create_graph: bool,
    inputs: Any,
    describe: bool,
) -> Iterator[Any]:
    """The engine. With ``describe`` it yields a :class:`BackwardStep` per executed node;
    otherwise it yields nothing (``backward()`` and ``grad()`` drain it). Returns the
    captured gradients of ``inputs``."""
    if retain_graph is None:
        retain_graph = create_graph
    plan = _Plan(tensors, grad_tensors, create_graph, inputs)
    runner = _runner(plan, create_graph, retain_graph, describe)
    pending: dict[Node, list] = {}
    for (node, nr), root_grad in plan.root_edges:
        sum_into(_slots(pending, node), nr, runner.carry(root_grad))
    dependencies = plan.dependencies
    # Ready nodes run newest first; nodes of one seq (every AccumulateGrad) in the order they
    # became ready, a ticket each, so hooks (and DDP's buckets) see one order on every run.
    ready: list = []
    ticket = 0
    for node in {edge[0]: None for edge, _ in plan.root_edges}:
        if dependencies[node] == 0:
            ticket += 1
            heapq.heappush(ready, (-node.seq, ticket, node))

    index = 0
    pop, push = heapq.heappop, heapq.heappush
    run = runner.run
    # Grad mode is the pass's (``create_graph``) while the engine runs and the user's while a
    # paused iterator waits: code running between steps sees its own modes.
    user_grad_mode = _state.grad_enabled
    _state.grad_enabled = create_graph
    follow = None  # the one node made ready by the last one, when nothing else is ready
    follow_ticket = 0
    try:
        while follow is not None or ready:
            node = pop(ready)[2] if follow is None else follow
            follow = None
            buffer = pending.pop(node, None)
            edges = node.edges
            grads_out = None
            watched = buffer is not None and _state.observing
            if watched:  # observers attribute the rule's ops (and sums) to this node
                outer = (_state.phase, _state.backward_node)
                _state.phase, _state.backward_node = "backward", node
            try:
                if buffer is not None:
                    grads_out = run(node, buffer, index)
                # Send each gradient to its input's buffer and count the edge as done (every
                # edge counts, whether or not a gradient flows on it).
                sent = grads_out if grads_out else (None,) * len(edges)
                for edge, g in zip(edges, sent, strict=True):
                    if edge is None:
                        continue
                    child = edge[0]
                    if g is not None:
                        slots = pending.get(child)
                        if slots is None:
                            meta = child.output_meta
                            slots = [None] * (1 if meta is None else len(meta))
                            pending[child] = slots
                        nr = edge[1]
                        held = slots[nr]
                        slots[nr] = g if held is None else sum_gradients(held, g)
                    remaining = dependencies[child] - 1
                    dependencies[child] = remaining
                    if remaining == 0:
                        ticket += 1
                        if follow is None:
                            follow, follow_ticket = child, ticket
                        else:
                            push(ready, (-child.seq, ticket, child))
            except Exception as error:
                if getattr(error, "backward_node", None) is None:
                    error.backward_node = node  # tools (the stepper) show where it failed
                raise
            finally:
                if watched:
                    _state.phase, _state.backward_node = outer
            if follow is not None and ready:  # it waits its turn among the others
                push(ready, (-follow.seq, follow_ticket, follow))
                follow = None
            if grads_out is not None:
                if describe:
                    _state.grad_enabled = user_grad_mode
                    try:
                        yield runner.step
                    finally:
                        user_grad_mode = _state.grad_enabled
                        _state.grad_enabled = create_graph
                index += 1
    finally:
        _state.grad_enabled = user_grad_mode
    return plan.captured


def _slots(pending: dict, node: Node) -> list:
    """``node``'s input buffer: one gradient slot per output."""
    slots = pending.get(node)
    if slots is None:
        slots = pending[node] = [None] * node.num_outputs
    return slots


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
    """Run the backward pass to ``inputs`` and return their gradients."""
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
            # a copy: one captured gradient may be another input's too, or the user's
            add_to_grad(t, g if create_graph else g.detach(), False)
            run_post_accumulate_hooks(t)


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
            if _state.observing:  # made by an op, so a Tape shows where the backward starts
                g = root.new_ones(root.shape)
            else:  # a new tensor in no graph: nothing to detach
                data = root._data
                result.append(wrap(root._device.xp.ones(data.shape, data.dtype), root._device))
                continue
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
