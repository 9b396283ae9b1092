"""Step through ``tk.autograd.backward_steps`` one node at a time, forwards and backwards.

``previous()`` replays: it restores every leaf's ``.grad`` to what it was before the stepper
started, then runs the engine again up to the step before (so the graph must be retained).
Between steps the caller's grad mode is in force (the engine's own mode is set around each
step). ``total_steps`` is the number of nodes reachable from the loss (the engine's dependency
count): exact unless a rule returns no gradient for an input that requires one, in which case
that node is skipped and the total is corrected once the end is reached (``total_exact``).
A failure is attributed to the node the engine names on the error (``error.backward_node``).
"""

from __future__ import annotations

import heapq
import math
import numbers
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from ..autograd.engine import BackwardStep, backward_steps
from ..autograd.grad_mode import is_grad_enabled, no_grad, set_grad_enabled
from ..autograd.graph import AccumulateGrad, Node
from ..tensor import Tensor
from .capture import ForwardCapture
from .describe import chain_products, describe_error, describe_step
from .values import tensor_payload
from .walk import backward_nodes, node_ids, root_nodes

__all__ = ["BackwardStepper"]

Target = str | Node | Callable[[BackwardStep], bool]


class BackwardStepper:
    """Drive the backward pass of ``loss`` (``gradient`` seeds a non-scalar one) step by step;
    ``state()`` gives plain data.

    Breakpoints stop ``run_to`` and ``run_to_end`` after the step that triggers them:
    ``break_on_nonfinite`` (a NaN or inf gradient produced), ``break_at`` (node ids or nodes),
    ``break_on_grad_norm`` (a produced gradient's L2 norm above this bound). ``forward_inputs``
    maps nodes to their forward arguments (as :class:`ForwardCapture` records them), so that
    finite-difference checks can re-run ops that saved nothing; see :meth:`from_function`.
    """

    def __init__(
        self,
        loss: Tensor,
        *,
        retain_graph: bool = True,
        gradient: Tensor | None = None,
        break_on_nonfinite: bool = False,
        break_at: Iterable[str | Node] = (),
        break_on_grad_norm: float | None = None,
        forward_inputs: Mapping[Node, tuple] | None = None,
    ) -> None:
        self.loss = loss
        self.retain_graph = retain_graph
        self.gradient = gradient
        self.break_on_nonfinite = break_on_nonfinite
        self.break_on_grad_norm = break_on_grad_norm
        self.forward_inputs = dict(forward_inputs or {})
        roots = root_nodes(loss)
        if not roots:
            raise RuntimeError("the loss does not require grad and has no grad_fn")
        self._order = backward_nodes(roots)
        self.ids = node_ids(self._order)
        self.planned_order = [self.ids[n] for n in execution_order(roots, self._order)]
        self._nodes = {node_id: node for node, node_id in self.ids.items()}
        self.break_at = break_at
        self._leaves = [(n, n.variable) for n in self._order if type(n) is AccumulateGrad]
        self._initial_grads = [leaf.grad for _, leaf in self._leaves]
        self._saved = {n: n.saved_summary() for n in self._order}
        self.total_steps = len(self._order)
        self.total_exact = False
        self._steps: list[BackwardStep] = []
        self._chains: list[list[dict] | None] = []  # chain_products of each step, as it ran
        self._iterator: Iterator[BackwardStep] | None = None
        self.done = False
        self.error: dict | None = None
        self.stopped_by: dict | None = None

    @classmethod
    def from_function(
        cls, loss_fn: Callable[..., Tensor], inputs: Sequence[Any], **kwargs: Any
    ) -> BackwardStepper:
        """A stepper over ``loss_fn(*inputs)``, its forward run under a :class:`ForwardCapture`
        so that every node can be checked against finite differences."""
        with ForwardCapture() as capture:
            loss = loss_fn(*inputs)
        inputs_of = {node: captured[0] for node, captured in capture.inputs.items()}
        return cls(loss, forward_inputs=inputs_of, **kwargs)

    # ------------------------------------------------------------------- breakpoints
    @property
    def break_at(self) -> set[Node]:
        """The nodes to stop after; set it with node ids or nodes."""
        return self._break_at

    @break_at.setter
    def break_at(self, nodes: Iterable[str | Node]) -> None:
        if isinstance(nodes, str | Node):
            raise TypeError(f"break_at expects an iterable of node ids or nodes, got {nodes!r}")
        self._break_at = {self.node(n) for n in nodes}

    @property
    def break_on_grad_norm(self) -> float | None:
        """Stop when a produced gradient's L2 norm exceeds this bound (None: never)."""
        return self._break_on_grad_norm

    @break_on_grad_norm.setter
    def break_on_grad_norm(self, bound: float | None) -> None:
        if bound is not None:
            if isinstance(bound, bool) or not isinstance(bound, numbers.Real):
                raise TypeError(
                    f"break_on_grad_norm must be a number or None, got {type(bound).__name__}"
                )
            if not math.isfinite(bound) or bound < 0:
                raise ValueError(
                    f"break_on_grad_norm must be a finite number >= 0 or None, got {bound}"
                )
            bound = float(bound)
        self._break_on_grad_norm = bound

    # ------------------------------------------------------------------------ moving
    def node(self, key: str | Node) -> Node:
        """The node with id ``key`` (or ``key`` itself, if it is a node of this graph)."""
        node = self._nodes.get(key) if isinstance(key, str) else key
        if node not in self.ids:
            raise KeyError(f"no node {key!r} in this backward graph")
        return node

    @property
    def current_step(self) -> BackwardStep | None:
        """The step that ran last (None before the first)."""
        return self._steps[-1] if self._steps else None

    @property
    def position(self) -> int:
        """How many steps have run."""
        return len(self._steps)

    def next(self) -> dict:
        """Run one step (breakpoints are only reported) and return the state."""
        self.stopped_by = None
        step = self._advance()
        if step is not None:
            self.stopped_by = self._breakpoint(step)
        return self.state()

    def run_to(self, target: Target) -> dict:
        """Run until the step of ``target`` (a node id, a node, or a predicate on steps) has
        run, a breakpoint triggers, the pass ends or fails."""
        if callable(target) and not isinstance(target, Node):
            return self._run(target)
        wanted = self.node(target)
        return self._run(lambda step: step.node is wanted)

    def run_to_end(self) -> dict:
        """Run until a breakpoint triggers, the pass ends or fails."""
        return self._run(lambda step: False)

    def previous(self) -> dict:
        """Go back one step: restore the leaves' gradients and replay up to the step before."""
        if not self.retain_graph:
            raise RuntimeError("previous() replays the backward pass: use retain_graph=True")
        target = max(self.position - 1, 0)
        self.reset()
        while self.position < target and self._advance() is not None:
            pass
        return self.state()

    def reset(self) -> dict:
        """Back to before the first step, with every leaf's ``.grad`` as it was then."""
        self._close()
        for (_, leaf), grad in zip(self._leaves, self._initial_grads, strict=True):
            leaf.grad = grad
        self._steps = []
        self._chains = []
        self.done = False
        self.error = None
        self.stopped_by = None
        return self.state()

    def _run(self, matches: Callable[[BackwardStep], bool]) -> dict:
        self.stopped_by = None
        while True:
            step = self._advance()
            if step is None:
                break
            self.stopped_by = self._breakpoint(step)
            if self.stopped_by is None and matches(step):
                self.stopped_by = {"kind": "target", "node": self.ids[step.node]}
            if self.stopped_by is not None:
                break
        return self.state()

    def _advance(self) -> BackwardStep | None:
        if self.done or self.error is not None:
            return None
        if self._iterator is None:
            self._start()
        outer = is_grad_enabled()
        try:
            step = self._resume(self._iterator)
        except StopIteration:
            self.done = True
            self.total_steps, self.total_exact = self.position, True
            self._close()
            return None
        except Exception as error:  # reported in state(), as the pass cannot continue
            node = getattr(error, "backward_node", None)
            self.error = describe_error(error, node if node in self.ids else None, self.ids)
            self._close()
            return None
        finally:
            set_grad_enabled(outer)
        self._steps.append(step)
        self._chains.append(self._chain(step))
        return step

    def _chain(self, step: BackwardStep) -> list[dict] | None:
        """The step's chain-rule products, each with the node its gradient flows to."""
        chain = chain_products(step.node, step.grads_in, step.grads_out)
        edges = step.node.edges
        for entry in chain or ():
            edge = edges[entry["position"]]
            entry["to"] = None if edge is None else self.ids[edge[0]]
        return chain

    def _resume(self, iterator: Iterator[BackwardStep]) -> BackwardStep:
        """The next step. The engine holds its grad mode across yields and restores, on exit,
        the mode it first saw: so it is first entered in the caller's mode (restored even if
        the paused engine is only closed by the garbage collector), later resumed in its own."""
        if not self._steps:
            return next(iterator)
        with no_grad():
            return next(iterator)

    def _start(self) -> None:
        self._iterator = backward_steps(self.loss, self.gradient, retain_graph=self.retain_graph)

    def _close(self) -> None:
        if self._iterator is not None:
            self._iterator.close()
            self._iterator = None

    def _breakpoint(self, step: BackwardStep) -> dict | None:
        node_id = self.ids[step.node]
        if step.node in self.break_at:
            return {"kind": "node", "node": node_id}
        for position, g in _produced(step):
            data = np.asarray(g.detach().cpu()._data)
            if self.break_on_nonfinite and not np.isfinite(data).all():
                return {"kind": "nonfinite", "node": node_id, "position": position}
            if self.break_on_grad_norm is not None:
                norm = float(np.linalg.norm(data.reshape(-1)))
                if norm > self.break_on_grad_norm:
                    return {"kind": "norm", "node": node_id, "position": position, "norm": norm}
        return None

    # ------------------------------------------------------------------------- state
    def state(self) -> dict:
        """Plain data for the current position.

        ``position`` (steps run), ``total_steps``, ``total_exact``, ``done``, ``stopped_by``
        (the breakpoint or target that stopped a run), ``error`` (the failing node, message and
        in-place culprit), ``breakpoints`` (``nonfinite``, ``nodes``, ``grad_norm``),
        ``retain_graph``, ``step`` (the last step: node, rule, ``grads_in``, ``grads_out`` per
        input with the node they flow to, ``saved`` tensors, ``chain`` products for scalar
        nodes), ``chain_edges`` (every chain product so far, with the node it ran at and the
        node it flows to) and ``leaf_grads`` (each leaf's ``.grad`` now). Tensors are payloads
        from :func:`~tensorkit.notebook.values.tensor_payload`.
        """
        return {
            "position": self.position,
            "total_steps": self.total_steps,
            "total_exact": self.total_exact,
            "done": self.done,
            "stopped_by": self.stopped_by,
            "error": self.error,
            "breakpoints": {
                "nonfinite": self.break_on_nonfinite,
                "nodes": sorted(self.ids[n] for n in self.break_at),
                "grad_norm": self.break_on_grad_norm,
            },
            "retain_graph": self.retain_graph,
            "step": self._describe(len(self._steps) - 1) if self._steps else None,
            "chain_edges": [
                {**entry, "from": self.ids[step.node]}
                for step, chain in zip(self._steps, self._chains, strict=True)
                for entry in chain or ()
            ],
            "leaf_grads": [
                {"id": self.ids[node], "shape": list(leaf.shape), "grad": tensor_payload(leaf.grad)}
                for node, leaf in self._leaves
            ],
            "order": self.planned_order,
            "visited": [self.ids[step.node] for step in self._steps],
        }

    def _describe(self, index: int) -> dict:
        step = self._steps[index]
        node = step.node
        targets = [None if e is None else self.ids[e[0]] for e in node.edges]
        return describe_step(step, targets, self.ids[node], self._saved[node], self._chains[index])


def execution_order(roots: list[Node], nodes: list[Node]) -> list[Node]:
    """``nodes`` (all reachable from ``roots``) in the order the engine runs them: a node
    once every node pointing to it has run, the most recently created first (ties in the order
    they became ready, as the engine breaks them)."""
    waiting = dict.fromkeys(nodes, 0)
    for node in nodes:
        for edge in node.edges:
            if edge is not None:
                waiting[edge[0]] += 1
    starts = list(dict.fromkeys(roots))
    ready = [(-n.seq, i, n) for i, n in enumerate(starts) if waiting[n] == 0]
    heapq.heapify(ready)
    ticket = len(starts)
    order = []
    while ready:
        node = heapq.heappop(ready)[2]
        order.append(node)
        for edge in node.edges:
            if edge is None:
                continue
            child = edge[0]
            waiting[child] -= 1
            if waiting[child] == 0:
                ticket += 1
                heapq.heappush(ready, (-child.seq, ticket, child))
    return order


def _produced(step: BackwardStep) -> list[tuple[int, Tensor]]:
    """The gradients a step produced (for a leaf, the gradient it accumulated)."""
    grads = step.grads_in if step.leaf is not None else step.grads_out
    return [(i, g) for i, g in enumerate(grads) if g is not None]
