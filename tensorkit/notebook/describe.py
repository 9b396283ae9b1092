"""Plain-data descriptions of backward nodes: the rule, saved tensors, failures, chain rule."""

from __future__ import annotations

import inspect
from typing import Any

from ..autograd.grad_mode import no_grad
from ..autograd.graph import AccumulateGrad, Node

__all__ = ["chain_products", "describe_error", "describe_rule", "modified_saved"]


def describe_rule(node: Node) -> dict:
    """The node's name, its op, and the rule's function: name, docstring's first line, file:line."""
    if type(node) is AccumulateGrad:
        return {
            "node": node.name(),
            "op": "accumulate_grad",
            "function": None,
            "doc": "adds the incoming gradient into the leaf's .grad",
            "where": None,
        }
    op = node.op
    function_class = getattr(op, "function_class", None)
    rule = function_class.backward if function_class is not None else op.backward
    doc = inspect.getdoc(rule)
    code = getattr(rule, "__code__", None)
    return {
        "node": node.name(),
        "op": op.name,
        "function": f"{getattr(rule, '__module__', '?')}.{getattr(rule, '__qualname__', '?')}",
        "doc": doc.splitlines()[0] if doc else None,
        "where": None if code is None else f"{code.co_filename}:{code.co_firstlineno}",
    }


def modified_saved(node: Node) -> dict | None:
    """Which saved tensor of ``node`` changed in place since it was saved, and by what."""
    for index, entry in enumerate(node._saved_inputs or ()):
        if type(entry) is tuple:
            counter = entry[0]._version_counter
            if counter is not None and counter.value != entry[1]:
                return _change(counter, entry[1], f"input {index}")
    for _data, _dev, counter, version, nr in node._saved_outputs or ():
        if counter.value != version:
            return _change(counter, version, f"output {nr}")
    return None


def _change(counter: Any, expected: int, which: str) -> dict:
    return {
        "saved": which,
        "op": counter.last_op,
        "site": counter.last_site,
        "version": counter.value,
        "expected_version": expected,
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
        info["inplace"] = modified_saved(node)
        if node._metadata:
            info["forward_trace"] = node._metadata.get("traceback_")
    return info


def chain_products(node: Node, grads_in: tuple, grads_out: tuple) -> list[dict] | None:
    """For a scalar node: per input, local derivative x upstream gradient (micrograd style).

    The local derivative is the node's rule applied to an upstream gradient of exactly 1, so
    it needs the saved values (None once they are freed, or for non-scalar nodes)."""
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
        result.append(
            {
                "position": position,
                "local": value,
                "upstream": up,
                "product": value * up,
                "grad": float(g.item()),
            }
        )
    return result
