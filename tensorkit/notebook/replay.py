"""Recorded backward steps, replayable without a kernel.

A :class:`~tensorkit.autograd.Tape` hands each backward step it observes to a
:class:`PassRecorder`, which describes it as :class:`~tensorkit.notebook.BackwardStepper`
does (same node ids, rule, gradients in and out as bounded payloads from
:func:`~tensorkit.notebook.values.tensor_payload`, where each gradient flows, saved tensors) and
adds the leaf's ``.grad`` after an accumulation. :func:`replay_passes` turns a recording's
steps into one replay model per backward pass (its backward graph, steps and leaves), which the
replay view (``widgets/src/replay.js``) steps through in the browser. :func:`validate_replay`
checks those fields of a recording read from disk.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from .. import _state
from ..autograd.engine import BackwardStep
from ..autograd.graph import AccumulateGrad, Node
from .describe import chain_products, describe_step
from .layout import layer_bands
from .values import tensor_payload
from .walk import backward_nodes, node_ids

__all__ = ["PassRecorder", "replay_passes", "validate_replay"]


class PassRecorder:
    """Describes the steps of one backward pass, starting from its first step's node.

    Node ids are :func:`~tensorkit.notebook.walk.node_ids` of the nodes reachable from the
    first node (as the stepper numbers a loss's graph); a later root outside that graph (a
    backward over several tensors) extends the walk. ``leaves`` lists each leaf's id, shape and
    ``.grad`` when the walk reached it (before the pass). Holds the graph's nodes until dropped.
    """

    def __init__(self, root: Node) -> None:
        self._order: list[Node] = []
        self.ids: dict[Node, str] = {}
        self._saved: dict[Node, list[dict]] = {}
        self.leaves: list[dict] = []
        self._extend(root)

    def describe(self, step: BackwardStep) -> dict:
        """The step as :meth:`BackwardStepper.state` reports it, plus ``leaf_grad`` for an
        accumulation. The chain-rule products (scalar nodes whose saved values are kept) run
        the rule again, unobserved: no Tape or profiler sees those ops."""
        node = step.node
        if node not in self.ids:
            self._extend(node)
        targets = [None if e is None else self._id(e[0]) for e in node.edges]
        with _unobserved():
            chain = chain_products(node, step.grads_in, step.grads_out)
        for entry in chain or ():
            entry["to"] = targets[entry["position"]]
        detail = describe_step(step, targets, self.ids[node], self._saved[node], chain)
        if step.leaf is not None:
            detail["leaf_grad"] = tensor_payload(step.leaf.grad)
        return detail

    def _id(self, node: Node) -> str:
        if node not in self.ids:
            self._extend(node)
        return self.ids[node]

    def _extend(self, root: Node) -> None:
        new = [n for n in backward_nodes([root]) if n not in self.ids]
        self._order += new
        self.ids = node_ids(self._order)
        self._saved.update((n, n.saved_summary()) for n in new)
        self.leaves += [
            {
                "id": self.ids[n],
                "shape": list(n.variable.shape),
                "grad": tensor_payload(n.variable.grad),
            }
            for n in new
            if type(n) is AccumulateGrad
        ]


@contextlib.contextmanager
def _unobserved() -> Iterator[None]:
    """Run with no op observer (Tape, profiler, anomaly mode) active; restored in order."""
    observers = _state.observers
    for observer in observers:
        _state.remove_observer(observer)
    try:
        yield
    finally:
        for observer in observers:
            _state.add_observer(observer)


# ---------------------------------------------------------------------------- replay models
def replay_passes(backward_steps: list[dict], backward_passes: list[dict]) -> list[dict]:
    """One replay model per recorded pass with described steps: ``pass`` (its number),
    ``graph`` (the backward graph
    those steps ran, in :func:`~tensorkit.notebook.build_graph`'s format), ``steps``, ``leaves``
    (ids, shapes and ``.grad`` before the pass) and ``total_steps`` (steps the pass ran,
    described or not)."""
    models = []
    for number, recorded in enumerate(backward_passes):
        mine = [s for s in backward_steps if s.get("pass") == number]
        steps = [s["step"] for s in mine if s.get("step") is not None]
        if not steps:
            continue
        models.append(
            {
                "pass": number,
                "graph": replay_graph(steps),
                "steps": steps,
                "leaves": recorded["leaves"],
                "total_steps": len(mine),
            }
        )
    return models


def replay_graph(steps: list[dict]) -> dict:
    """The backward graph of ``steps``: a node per step (and per gradient target that did not
    run), an edge from each target to the node whose rule sent it a gradient."""
    nodes: dict[str, dict] = {}
    edges = []
    for step in steps:
        node_id = step["node"]["id"]
        leaf = (step.get("rule") or {}).get("op") == "accumulate_grad"
        grads_in = step["grads_in"]
        nodes[node_id] = _graph_node(
            node_id,
            kind="leaf" if leaf else "grad_fn",
            op=None if leaf else (step.get("rule") or {}).get("op"),
            name=step["node"]["name"],
            shapes_in=[_shape(g["grad"]) for g in step["grads_out"]],
            shapes_out=[_shape(g) for g in grads_in],
            dtypes=[None if g is None else g.get("dtype") for g in grads_in],
        )
        for out in step["grads_out"]:
            if out["to"] is not None:
                shape = _shape(out["grad"])
                edges.append(
                    {
                        "source": out["to"],
                        "target": node_id,
                        "position": out["position"],
                        "shape": shape,
                    }
                )
    for edge in edges:  # targets that did not run (no gradient reached them)
        if edge["source"] not in nodes:
            kind = "leaf" if edge["source"].startswith("leaf") else "grad_fn"
            nodes[edge["source"]] = _graph_node(
                edge["source"], kind, None, None, [], [edge["shape"]], [None]
            )
    listed = list(nodes.values())
    layout = layer_bands(listed, edges)
    for node in listed:
        node["depth"] = layout["depth"][node["id"]]
    bands = layout["bands"]
    return {
        "source": "grad_fn",
        "nodes": listed,
        "edges": edges,
        "links": [],
        "groups": {},
        "collapsed": [],
        "layout": {"layers": bands[0] if bands else [], "bands": bands},
        "omitted": 0,
    }


def _graph_node(
    node_id: str,
    kind: str,
    op: str | None,
    name: str | None,
    shapes_in: list,
    shapes_out: list,
    dtypes: list,
) -> dict:
    return {
        "id": node_id,
        "kind": kind,
        "op": op,
        "shapes": {"in": shapes_in, "out": shapes_out},
        "dtypes": dtypes,
        "device": None,
        "module": "",
        "call_site": None,
        "summary": None,
        "records": {},
        "grad_fn": name,
        "band": 0,
        "metrics": {},
    }


def _shape(payload: dict | None) -> list | None:
    return None if payload is None else payload["shape"]


# ------------------------------------------------------------------------------ validation
Fail = Callable[[str], None]


def validate_replay(data: dict, fail: Fail) -> None:
    """Check a recording's ``backward_passes`` and the replay fields of ``backward_steps``
    (types and references, not values); ``fail(problem)`` raises."""
    if "backward_passes" not in data:
        fail("missing key(s): backward_passes")
    passes = data["backward_passes"]
    if not isinstance(passes, list):
        fail(f"'backward_passes' must be a list, got {type(passes).__name__}")
    for p, recorded in enumerate(passes):
        where = f"backward_passes[{p}]"
        if not isinstance(recorded, dict) or not isinstance(recorded.get("leaves"), list):
            fail(f"{where} must be an object with a 'leaves' list")
        for i, leaf in enumerate(recorded["leaves"]):
            lw = f"{where}.leaves[{i}]"
            if not isinstance(leaf, dict) or not isinstance(leaf.get("id"), str):
                fail(f"{lw} must be an object with a string 'id'")
            _check_shape(leaf.get("shape"), f"{lw}.shape", fail)
            _check_payload(leaf.get("grad"), f"{lw}.grad", fail)
    for s, recorded in enumerate(data["backward_steps"]):
        where = f"backward_steps[{s}]"
        if not isinstance(recorded, dict):
            fail(f"{where} must be an object")
        number = recorded.get("pass")
        if not _is_int(number) or not 0 <= number < len(passes):
            fail(f"{where}.pass must be the index of a backward pass, got {number!r}")
        if recorded.get("step") is not None:
            _check_step(recorded["step"], f"{where}.step", fail)


def _check_step(step: Any, where: str, fail: Fail) -> None:
    if not isinstance(step, dict):
        fail(f"{where} must be an object or null")
    node = step.get("node")
    if not (isinstance(node, dict) and _all_str(node.get("id"), node.get("name"))):
        fail(f"{where}.node must be an object with string 'id' and 'name'")
    if not _is_int(step.get("index")):
        fail(f"{where}.index must be an int")
    if step.get("rule") is not None and not isinstance(step["rule"], dict):
        fail(f"{where}.rule must be an object or null")
    for key in ("grads_in", "grads_out", "saved"):
        if not isinstance(step.get(key), list):
            fail(f"{where}.{key} must be a list")
    for i, grad in enumerate(step["grads_in"]):
        _check_payload(grad, f"{where}.grads_in[{i}]", fail)
    for i, out in enumerate(step["grads_out"]):
        ow = f"{where}.grads_out[{i}]"
        if not isinstance(out, dict) or not _is_int(out.get("position")):
            fail(f"{ow} must be an object with an int 'position'")
        if out.get("to") is not None and not isinstance(out["to"], str):
            fail(f"{ow}.to must be a node id or null")
        _check_payload(out.get("grad"), f"{ow}.grad", fail)
    for i, saved in enumerate(step["saved"]):
        ok = isinstance(saved, dict) and _all_str(saved.get("role"), saved.get("dtype"))
        if not ok or not _is_int(saved.get("bytes")):
            fail(f"{where}.saved[{i}] must be an object with role, dtype, shape and bytes")
        _check_shape(saved.get("shape"), f"{where}.saved[{i}].shape", fail)
    if step.get("chain") is not None and not isinstance(step["chain"], list):
        fail(f"{where}.chain must be a list or null")
    if "leaf_grad" in step:
        _check_payload(step["leaf_grad"], f"{where}.leaf_grad", fail)


def _check_payload(payload: Any, where: str, fail: Fail) -> None:
    """A tensor payload (see :func:`tensor_payload`) or null."""
    if payload is None:
        return
    if not isinstance(payload, dict) or not isinstance(payload.get("dtype"), str):
        fail(f"{where} must be a tensor payload (an object with 'shape' and 'dtype') or null")
    _check_shape(payload.get("shape"), f"{where}.shape", fail)
    if "values" in payload and not isinstance(payload["values"], list | int | float | str):
        fail(f"{where}.values must be a number or a nested list of numbers")
    histogram = payload.get("histogram")
    if "values" not in payload and not isinstance(histogram, dict):
        fail(f"{where} must have 'values' or a 'histogram'")
    if histogram is not None:
        lists = isinstance(histogram, dict) and all(
            isinstance(histogram.get(k), list) for k in ("edges", "counts")
        )
        if not lists:
            fail(f"{where}.histogram must be an object with 'edges' and 'counts' lists")
    for key in ("summary", "heatmap"):
        if payload.get(key) is not None and not isinstance(payload[key], dict):
            fail(f"{where}.{key} must be an object or null")


def _check_shape(shape: Any, where: str, fail: Fail) -> None:
    if not isinstance(shape, list) or not all(_is_int(n) and n >= 0 for n in shape):
        fail(f"{where} must be a list of sizes (ints >= 0), got {shape!r}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _all_str(*values: Any) -> bool:
    return all(isinstance(v, str) for v in values)
