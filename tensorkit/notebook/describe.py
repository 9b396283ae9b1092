"""Plain-data descriptions of backward nodes: the rule, saved tensors, failures, chain rule."""

from __future__ import annotations

import inspect
from typing import Any

from .._callsite import display_site
from ..autograd.grad_mode import no_grad
from ..autograd.graph import AccumulateGrad, Node
from .docstring import inline_runs
from .values import finite_or_label, tensor_payload

__all__ = ["chain_products", "describe_error", "describe_rule", "modified_saved"]


LEAF_DOC = "Adds the incoming gradient into the leaf's ``.grad``."


def describe_rule(node: Node) -> dict:
    """The node's name, its op, and the rule's function: name, file:line and its docstring's
    first paragraph, as plain text (``doc``) and as inline runs (``doc_runs``, see
    :func:`~tensorkit.notebook.docstring.inline_runs`)."""
    if type(node) is AccumulateGrad:
        return {
            "node": node.name(),
            "op": "accumulate_grad",
            "function": None,
            **_doc(LEAF_DOC),
            "where": None,
        }
    op = node.op
    function_class = getattr(op, "function_class", None)
    rule = function_class.backward if function_class is not None else op.backward
    doc = inspect.getdoc(rule)
    code = getattr(inspect.unwrap(rule), "__code__", None)  # a tk.library op's: the user's
    return {
        "node": node.name(),
        "op": op.name,
        "function": f"{getattr(rule, '__module__', '?')}.{getattr(rule, '__qualname__', '?')}",
        **_doc(doc),
        "where": None if code is None else f"{code.co_filename}:{code.co_firstlineno}",
    }


def _doc(doc: str | None) -> dict:
    """``doc``: the first paragraph as plain text (None without one); ``doc_runs``: parsed."""
    runs = inline_runs(doc)
    return {
        "doc": "".join(run["text"] for run in runs) if runs else None,
        "doc_runs": runs,
    }


def describe_step(
    step: Any, targets: list[str | None], node_id: str, saved: list[dict], chain: Any
) -> dict:
    """One backward step as plain data (what the stepper's panel shows): the node, its rule,
    the gradients in and out (bounded payloads; ``targets`` names the node each output flows
    to), its saved tensors (``saved``, with whether the node has freed them) and ``chain``."""
    node = step.node
    return {
        "index": step.index,
        "node": {"id": node_id, "name": node.name()},
        "rule": describe_rule(node),
        "grads_in": [tensor_payload(g) for g in step.grads_in],
        "grads_out": [
            {"position": i, "to": targets[i], "grad": tensor_payload(g)}
            for i, g in enumerate(step.grads_out)
        ],
        "saved": [{**s, "freed": node._freed} for s in saved],
        "chain": chain,
    }


def modified_saved(node: Node, ids: dict[Node, str]) -> dict | None:
    """Which saved tensor of ``node`` changed in place since it was saved, by what op, where,
    and (when it is in the graph ``ids`` names) the node that op recorded: an in-place op
    moves a saved input onto its own node; a saved output is consumed by it."""
    for index, entry in enumerate(node._saved_inputs or ()):
        if type(entry) is tuple:
            tensor, expected = entry
            counter = tensor._version_counter
            if counter is not None and counter.value != expected:
                culprit = tensor.grad_fn
                return _change(counter, expected, f"input {index}", culprit, ids)
    for _data, _dev, counter, expected, nr in node._saved_outputs or ():
        if counter.value != expected:
            culprit = _inplace_consumer(node, nr, counter.last_op, ids)
            return _change(counter, expected, f"output {nr}", culprit, ids)
    return None


def _inplace_consumer(node: Node, nr: int, op: str | None, ids: dict[Node, str]) -> Node | None:
    """The latest node of the graph that consumed output ``nr`` of ``node`` through ``op``."""
    name = (op or "").removesuffix("_")
    consumers = [
        n
        for n in ids
        if getattr(n.op, "name", None) == name and any(e == (node, nr) for e in n.edges)
    ]
    return max(consumers, key=lambda n: n.seq, default=None)


def _change(
    counter: Any, expected: int, which: str, culprit: Node | None, ids: dict[Node, str]
) -> dict:
    return {
        "saved": which,
        "op": counter.last_op,
        "site": display_site(counter.last_site),
        "version": counter.value,
        "expected_version": expected,
        "node": None if culprit is None else {"id": ids.get(culprit), "name": culprit.name()},
    }


def describe_error(error: BaseException, node: Node | None, ids: dict[Node, str]) -> dict:
    """The error, the node whose rule was running and, for an in-place change, its culprit."""
    info: dict[str, Any] = {
        "type": type(error).__name__,
        "message": str(error),
        "node": None,
        "inplace": None,
        "forward_trace": None,
    }
    if node is not None:
        info["node"] = {"id": ids.get(node), "name": node.name()}
        info["inplace"] = modified_saved(node, ids)
        if node._metadata:
            info["forward_trace"] = node._metadata.get("traceback_")
    return info


def chain_products(node: Node, grads_in: tuple, grads_out: tuple) -> list[dict] | None:
    """For a scalar node: per input, local derivative x upstream gradient (micrograd style).

    The local derivative is the node's rule applied to an upstream gradient of exactly 1, so
    it needs the saved values (None once they are freed, or for non-scalar nodes). Non-finite
    numbers become labels (``"inf"``, ``"nan"``), as in tensor payloads."""
    if type(node) is AccumulateGrad or node._freed or len(grads_in) != 1:
        return None
    upstream = grads_in[0]
    if upstream is None or upstream.numel() != 1:
        return None
    if any(g is not None and g.numel() != 1 for g in grads_out):
        return None
    with no_grad():
        local = node.apply(upstream.new_ones(upstream.shape))
    up = float(upstream.item())
    result = []
    for position, (d, g) in enumerate(zip(local, grads_out, strict=True)):
        if g is None or d is None:
            continue
        value = float(d.item())
        numbers = {"local": value, "upstream": up, "product": value * up, "grad": float(g.item())}
        result.append({"position": position, **{k: finite_or_label(v) for k, v in numbers.items()}})
    return result
