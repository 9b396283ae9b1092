"""Running a captured graph: its plans, and its place in autograd.

:class:`CompiledGraph` lowers a :class:`~tensorkit.jit.ir.Graph` to two plans. The forward
plan computes the outputs, the writes the call made to tensors from outside (mutations and
``.grad`` assignments) and the values the backward needs; the backward plan (training graphs)
computes the placeholders' gradients from those values and the outputs' gradients. A run
wraps the outputs and, when a placeholder requires grad, links them to one
:class:`CompiledNode` whose rule is the backward plan, so ``loss.backward()`` after a compiled
call gives eager's gradients. Under ``create_graph`` the rule instead interprets the captured
nodes with tensorkit ops (forward again, then backward), so higher derivatives work.
A guard node's check runs inside the forward plan and raises ``guards.GuardFailure`` on
another value; every effect of a run (the outputs, the writes, ``.grad``) is applied after
the plan returned, so a failed run leaves no trace.
"""

from __future__ import annotations

from typing import Any

from .. import _state
from .._backend import as_device
from ..autograd.grad_mode import no_grad
from ..autograd.graph import Node, edge_of
from ..ops._apply import OPS, apply
from ..random import redraw
from ..tensor import Tensor, wrap
from .capture import unflatten
from .guards import verify
from .ir import CONSTANT, GRAD_OUTPUT, Graph, Ref, map_refs
from .ir import Node as IRNode
from .passes.memory import in_place_writes
from .plan import lower

__all__ = ["CompiledGraph", "CompiledNode"]


class CompiledNode(Node):
    """The autograd node of one compiled call: its saved arrays live until backward."""

    __slots__ = ()

    def free_saved(self) -> None:
        super().free_saved()
        self.__dict__.pop("saved_values", None)


class _CompiledOp:
    """The engine's view of a compiled graph: a name and a gradient rule."""

    def __init__(self, compiled: CompiledGraph, name: str) -> None:
        self.compiled = compiled
        self.name = name
        self.node_name = "CompiledFunctionBackward"
        self.node_class = CompiledNode

    def backward(self, node: CompiledNode, *grads: Tensor) -> tuple:
        return self.compiled.backward(node, grads)


class CompiledGraph:
    """A graph ready to run: ``run(tensors)`` takes the live tensor of every placeholder
    but the constants and gradients (None there) and returns the call's result."""

    def __init__(self, graph: Graph, name: str = "graph") -> None:
        self.graph = graph
        self.name = name
        self.op = _CompiledOp(self, name)
        placeholders = graph.placeholders
        self.feeds = [
            i for i, p in enumerate(placeholders) if p.kind not in (CONSTANT, GRAD_OUTPUT)
        ]
        feed_ids = [placeholders[i].value.id for i in self.feeds]
        self.output_refs = [v.id for v in graph.outputs if type(v) is Ref]
        self.mutations = [(m.placeholder, m.value) for m in graph.mutations]
        self.leaf_grads = list(graph.leaf_grads.items())
        self.differentiable = sorted(graph.grads)  # placeholder indexes with a gradient
        self.saved = _saved_values(graph, set(feed_ids))
        saved_feeds = set(feed_ids)
        self.saved_placeholders = [i for i in self.feeds if placeholders[i].value.id in self.saved]
        self.saved_computed = [v for v in self.saved if v not in saved_feeds]
        wanted = (
            self.output_refs
            + [v for _, v in self.mutations]
            + [v for _, v in self.leaf_grads if v is not None]
            + self.saved_computed
        )
        self.written = [index for index, _ in self.mutations]
        targets = {value: placeholders[index].value for index, value in self.mutations}
        keep = set(wanted) - set(targets) | {
            placeholders[i].value.id for i in self.saved_placeholders
        }
        self.writes = in_place_writes(graph.nodes, targets, keep)
        self.forward_plan = lower(
            graph.nodes, feed_ids, wanted, graph.constants, "forward", writes=self.writes
        )
        self._observed_plan: Any = None  # lowered on the first call a profiler watches
        self.devices = {value_id: as_device(v.device) for value_id, v in graph.values().items()}
        self.backward_plan = None
        if graph.backward:
            seed_ids = [p.value.id for p in placeholders if p.kind == GRAD_OUTPUT]
            backward_inputs = (
                [placeholders[i].value.id for i in self.saved_placeholders]
                + self.saved_computed
                + seed_ids
            )
            grad_ids = [graph.grads[i] for i in self.differentiable]
            self.backward_plan = lower(
                graph.backward, backward_inputs, grad_ids, graph.constants, "backward"
            )

    # ------------------------------------------------------------------ forward
    def run(self, tensors: list[Tensor | None]) -> Any:
        """Replay the graph on ``tensors`` (one per placeholder; see the class). Under a
        profiler each step of the forward plan is reported (``plan.PlanEvent``); under an
        observer that needs every op (a Tape, anomaly mode) the graph is interpreted with
        tensorkit ops instead, so it sees what eager code would show."""
        plan = self.forward_plan
        if self.written:
            self._check_unshared(tensors)
        if _state.observing:
            if _state.ops_in_backward or _state.anomaly:
                return self.run_interpreted(tensors)
            if self._observed_plan is None:
                graph = self.graph
                self._observed_plan = lower(
                    graph.nodes,
                    plan.inputs,
                    plan.outputs,
                    graph.constants,
                    "forward",
                    True,
                    self.writes,
                )
            plan = self._observed_plan
        arrays = [tensors[i]._data for i in self.feeds]
        results = plan.function(*arrays)
        position = len(self.output_refs)
        outputs = results[:position]
        for index, _ in self.mutations:
            target = tensors[index]
            if results[position] is not target._data:  # else the plan wrote it in place
                target._data[...] = results[position]
            target.bump_version("compiled graph", None)
            position += 1
        for index, value in self.leaf_grads:
            target = tensors[index]
            if value is None:
                target.grad = None
            else:
                target.grad = wrap(results[position], target._device)
                position += 1
        saved = results[position:]
        wrapped = self._wrap_outputs(outputs, tensors, saved)
        leaves = iter(wrapped)
        flat = [next(leaves) if type(v) is Ref else v for v in self.graph.outputs]
        return unflatten(flat, self.graph.output_spec)

    def _check_unshared(self, tensors: list[Tensor | None]) -> None:
        """Raise ``SharedMemoryError`` where a tensor the graph writes (a mutation) shares
        memory with another tensor it is fed: the recording read them as two values, and a
        replay (which writes after the plan) would give the other one's readers old values
        where eager code, writing the shared memory, gives new ones."""
        owner: dict[int, int] = {}  # feed index -> the id of its array's memory owner
        counts: dict[int, int] = {}
        for index in self.feeds:
            data = tensors[index]._data
            base = data.base
            key = owner[index] = id(data) if base is None else id(base)
            counts[key] = counts.get(key, 0) + 1
        for index in self.written:
            if counts[owner[index]] > 1:
                other = next(i for i in self.feeds if i != index and owner[i] == owner[index])
                names = self.graph.placeholders
                raise SharedMemoryError(
                    f"tk.jit: {names[other].name!r} shares memory with {names[index].name!r}, "
                    f"which {self.name} writes; the recorded graph reads them as two tensors: "
                    "pass tensors that do not share memory (or call the function itself)"
                )

    def run_interpreted(self, tensors: list[Tensor | None]) -> Any:
        """The graph run op by op with tensorkit ops (see ``run``): eager's autograd graph,
        and every op reported to the observers."""
        env = self._environment(tensors)
        interpret(self.graph.nodes, env, {})
        for index, value in self.mutations:
            tensors[index].copy_(env[value])
        for index, value in self.leaf_grads:
            tensors[index].grad = None if value is None else env[value].detach()
        flat = [env[v.id] if type(v) is Ref else v for v in self.graph.outputs]
        return unflatten(flat, self.graph.output_spec)

    def _environment(self, tensors: list) -> dict[int, Any]:
        """Value id -> Tensor for every placeholder but the gradients."""
        placeholders = self.graph.placeholders
        env: dict[int, Any] = {placeholders[i].value.id: tensors[i] for i in self.feeds}
        for value_id, array in self.graph.constants.items():
            env[value_id] = wrap(array, self.devices[value_id])
        return env

    def _wrap_outputs(self, outputs: tuple, tensors: list, saved: tuple) -> list[Tensor]:
        wrapped = [
            wrap(array, self.devices[ref])
            for array, ref in zip(outputs, self.output_refs, strict=True)
        ]
        if (
            self.backward_plan is None
            or not _state.grad_enabled
            or not any(tensors[i]._requires_grad for i in self.differentiable)
        ):
            return wrapped
        edges = tuple(edge_of(tensors[i]) for i in self.differentiable)
        meta = tuple(
            None if edge is None else (tensors[i]._data.shape, tensors[i]._data.dtype)
            for i, edge in zip(self.differentiable, edges, strict=True)
        )
        node = CompiledNode(self.op, edges, {}, meta)
        node._saved_inputs = [(tensors[i], tensors[i]._version) for i in self.saved_placeholders]
        node.saved_values = saved
        node.feeds = [tensors[i] for i in self.feeds]
        grad_refs = {ref.id for ref in self.graph.grad_outputs}
        node.output_meta = tuple(
            (out._data.shape, out._data.dtype)
            for out, ref in zip(wrapped, self.output_refs, strict=True)
            if ref in grad_refs
        )
        nr = 0
        for out, ref in zip(wrapped, self.output_refs, strict=True):
            if ref in grad_refs:
                out.grad_fn = node
                out._output_nr = nr
                out._requires_grad = True
                nr += 1
        return wrapped

    # ------------------------------------------------------------------ backward
    def backward(self, node: CompiledNode, grads: tuple) -> tuple:
        """The gradient rule of a compiled call (see the module docstring)."""
        if _state.grad_enabled:  # create_graph: differentiable, through tensorkit ops
            return self._interpret_backward(node, grads)
        saved_inputs = node.saved_arrays()  # checks the versions, as eager does
        arrays = [*saved_inputs, *node.saved_values, *[g._data for g in grads]]
        results = self.backward_plan.function(*arrays)
        return tuple(
            wrap(array, node.feeds[self.feeds.index(i)]._device)
            for array, i in zip(results, self.differentiable, strict=True)
        )

    def _interpret_backward(self, node: CompiledNode, grads: tuple) -> tuple:
        node.saved_arrays()
        tensors: list = [None] * len(self.graph.placeholders)
        for i, tensor in zip(self.feeds, node.feeds, strict=True):
            tensors[i] = tensor
        env = self._environment(tensors)
        saved = dict(zip(self.saved_computed, node.saved_values, strict=True))
        interpret(self.graph.nodes, env, saved)
        seeds = [p.value.id for p in self.graph.placeholders if p.kind == GRAD_OUTPUT]
        for value_id, g in zip(seeds, grads, strict=True):
            env[value_id] = g
        interpret(self.graph.backward, env, {}, create_graph=True)
        return tuple(env[self.graph.grads[i]] for i in self.differentiable)


def interpret(
    nodes: list[IRNode], env: dict[int, Any], fixed: dict[int, Any], create_graph: bool = False
) -> None:
    """Run ``nodes`` with tensorkit ops on the Tensors in ``env`` (value id -> Tensor),
    adding their outputs. A random node takes its value from ``fixed`` when there (what a
    compiled forward drew, so a recomputation sees the same draws), else draws again; the
    ops of gradient rules (phase "backward") are recorded only with ``create_graph``, as in
    the engine."""
    for node in nodes:
        args = [env[a.id] if type(a) is Ref else a for a in node.args]
        attrs = {k: map_refs(v, lambda ref: env[ref.id]._data) for k, v in node.attrs.items()}
        if node.kind == "random":
            value = node.outputs[0]
            array = fixed.get(value.id)
            if array is None:
                array = redraw(node.op, [a._data for a in args], attrs)
            env[value.id] = wrap(array, as_device(value.device))
            continue
        if node.kind == "fused":
            interpret(node.members, env, fixed, create_graph)
            continue
        if node.kind == "guard":
            verify(node, args[0])
            continue
        if node.kind == "function":
            result = node.attrs["function"].function_class.apply(*args)
        elif node.phase == "backward" and not create_graph:
            with no_grad():
                result = apply(OPS[node.op], *args, **attrs)
        else:
            result = apply(OPS[node.op], *args, **attrs)
        outs = result if node.multi_output else (result,)
        for value, out in zip(node.outputs, outs, strict=True):
            env[value.id] = out


def _saved_values(graph: Graph, feeds: set[int]) -> list[int]:
    """The values the backward reads that the forward has (placeholders or computed),
    in first-use order; random draws of the forward are kept for ``interpret`` too."""
    produced_backward = {v.id for node in graph.backward for v in node.outputs}
    seeds = {p.value.id for p in graph.placeholders if p.kind == GRAD_OUTPUT}
    saved: dict[int, None] = {}
    for node in graph.backward:
        for value_id in node.refs():
            if (
                value_id not in produced_backward
                and value_id not in seeds
                and value_id not in graph.constants
            ):
                saved[value_id] = None
    for value_id in graph.grads.values():
        if value_id not in produced_backward and value_id not in seeds:
            saved[value_id] = None
    if graph.backward:
        for node in graph.nodes:
            if node.kind == "random":
                saved[node.outputs[0].id] = None
    return list(saved)


class SharedMemoryError(RuntimeError):
    """A replay's arguments share memory with a tensor the graph writes (see ``run``)."""
