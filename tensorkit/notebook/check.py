"""Check a node's gradient rule against central finite differences of its op's forward.

The op is re-run on float64 copies of the node's inputs (saved by the node, captured during
the forward, or passed in); the rule's vector-Jacobian product for a random upstream gradient
``v`` is compared with the finite differences of ``sum(v * op(inputs))``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..autograd.engine import grad
from ..autograd.grad_mode import enable_grad, no_grad
from ..autograd.graph import AccumulateGrad, Node
from ..tensor import Tensor
from .capture import ForwardCapture
from .stepper import BackwardStepper

__all__ = ["check_graph", "check_node"]

MAX_ELEMENTS = 256


def check_node(
    target: BackwardStepper | Node,
    *,
    inputs: Sequence[Any] | None = None,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    seed: int = 0,
) -> dict:
    """Compare the node's analytical gradient with finite differences.

    ``target`` is a node, or a stepper (its current node). ``inputs`` are the op's forward
    arguments, needed only when the node neither saved them nor is a custom Function.
    Returns plain data: node name, ``max_abs_error``, ``max_rel_error``, ``ok`` and
    ``verdict``. At most 256 elements per input are perturbed (a seeded sample beyond).
    """
    node = _current_node(target)
    forward, args = _forward_of(node, inputs)
    rng = np.random.default_rng(seed)
    args64 = [_float64(a) for a in args]
    positions = [
        i
        for i, a in enumerate(args64)
        if isinstance(a, Tensor) and a.dtype.is_floating_point and _differentiable(node, args, i)
    ]
    for i in positions:
        args64[i] = args64[i].detach().requires_grad_(True)
    with enable_grad():
        outputs = _outputs(forward(*args64))
        upstream = [Tensor(rng.standard_normal(tuple(o.shape))) for o in outputs]
        analytical = grad(outputs, [args64[i] for i in positions], upstream, allow_unused=True)
    worst_abs = worst_rel = 0.0
    per_input = []
    for i, g in zip(positions, analytical, strict=True):
        numeric, analytic, index = _numerical(forward, args64, i, upstream, eps, g, rng)
        abs_err = float(np.max(np.abs(numeric - analytic), initial=0.0))
        rel_err = float(np.max(np.abs(numeric - analytic) / (np.abs(numeric) + atol), initial=0.0))
        ok = bool(np.allclose(analytic, numeric, atol=atol, rtol=rtol))
        per_input.append(
            {
                "position": i,
                "elements": int(index.size),
                "max_abs_error": abs_err,
                "max_rel_error": rel_err,
                "ok": ok,
            }
        )
        worst_abs, worst_rel = max(worst_abs, abs_err), max(worst_rel, rel_err)
    ok = all(p["ok"] for p in per_input)
    return {
        "node": node.name(),
        "max_abs_error": worst_abs,
        "max_rel_error": worst_rel,
        "ok": ok,
        "verdict": "ok" if ok else "gradient mismatch",
        "inputs": per_input,
    }


def check_graph(loss_fn: Callable[..., Tensor], inputs: Sequence[Any], **options: Any) -> dict:
    """Check every node of ``loss_fn(*inputs)`` in backward order; report the first mismatch.

    Returns ``{"ok", "checked", "first_failure", "error"}``: ``first_failure`` is
    ``check_node``'s result plus the node's ``id`` and backward ``step``; ``error`` is the
    stepper's error report if backward failed. Leaves' ``.grad`` are left as they were.
    """
    with ForwardCapture() as capture:
        loss = loss_fn(*inputs)
    stepper = BackwardStepper(loss)
    checked = 0
    error = None
    try:
        while True:
            stepper.next()
            if stepper.done or stepper.error is not None:
                error = stepper.error
                break
            node = stepper.current_step.node
            if type(node) is AccumulateGrad:
                continue
            captured = capture.inputs.get(node)
            result = check_node(node, inputs=None if captured is None else captured[0], **options)
            checked += 1
            if not result["ok"]:
                failure = {**result, "id": stepper.ids[node], "step": stepper.position - 1}
                return {"ok": False, "checked": checked, "first_failure": failure, "error": None}
    finally:
        stepper.reset()
    return {"ok": error is None, "checked": checked, "first_failure": None, "error": error}


def _current_node(target: BackwardStepper | Node) -> Node:
    if isinstance(target, Node):
        return target
    step = target.current_step
    if step is None:
        raise ValueError("the stepper has not run a step yet")
    return step.node


def _forward_of(node: Node, inputs: Sequence[Any] | None) -> tuple[Callable, list]:
    """The node's forward as a function of its arguments, and those arguments."""
    if type(node) is AccumulateGrad:
        raise ValueError("an AccumulateGrad node has no gradient rule to check")
    function_class = getattr(node.op, "function_class", None)
    if function_class is not None:
        args = inputs if inputs is not None else node.attrs["all_inputs"]
        return function_class.apply, list(args)
    op, attrs = node.op, node.attrs
    if inputs is None:
        if node._saved_inputs is None or len(node._saved_inputs) != len(node.edges):
            raise ValueError(f"{node.name()} did not save its inputs: pass inputs=")
        inputs = [e[0] if type(e) is tuple else e for e in node._saved_inputs]
    return (lambda *args: op(*args, **attrs)), list(inputs)


def _differentiable(node: Node, args: Sequence[Any], index: int) -> bool:
    """Whether argument ``index`` had a gradient edge in the recorded node."""
    positions = node.attrs.get("tensor_positions") if hasattr(node.op, "function_class") else None
    if positions is not None:
        return index in positions and node.edges[positions.index(index)] is not None
    return index < len(node.edges) and node.edges[index] is not None


def _float64(value: Any) -> Any:
    if isinstance(value, Tensor):
        copy = value.detach().clone()
        return copy.double() if copy.dtype.is_floating_point else copy
    return value


def _outputs(result: Any) -> list[Tensor]:
    items = result if isinstance(result, tuple) else (result,)
    return [o for o in items if isinstance(o, Tensor) and o.dtype.is_floating_point]


def _numerical(
    forward: Callable, args: list, i: int, upstream: list, eps: float, g: Tensor | None, rng: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Central differences of ``sum(v * forward)`` w.r.t. elements of ``args[i]``."""
    base = args[i].detach()
    flat = np.asarray(base.cpu()._data).reshape(-1)
    index = np.arange(flat.size)
    if flat.size > MAX_ELEMENTS:
        index = np.sort(rng.choice(flat.size, MAX_ELEMENTS, replace=False))
    weights = [np.asarray(v._data) for v in upstream]
    numeric = np.empty(index.size)
    for k, j in enumerate(index):
        values = []
        for delta in (eps, -eps):
            shifted = flat.copy()
            shifted[j] += delta
            trial = list(args)
            trial[i] = Tensor(shifted.reshape(base.shape))
            with no_grad():
                outs = _outputs(forward(*trial))
            values.append(
                sum(
                    float((np.asarray(o._data) * w).sum())
                    for o, w in zip(outs, weights, strict=True)
                )
            )
        numeric[k] = (values[0] - values[1]) / (2 * eps)
    analytic = np.zeros(index.size) if g is None else np.asarray(g._data).reshape(-1)[index]
    return numeric, analytic, index
