"""Check a node's gradient rule against central finite differences of its op's forward.

The op is re-run on float64 copies of the node's inputs (saved by the node, captured during
the forward, or passed in); the rule's vector-Jacobian product for a random upstream gradient
``v`` is compared with the finite differences of ``sum(v * op(inputs))``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from ..autograd.engine import grad
from ..autograd.grad_mode import enable_grad, no_grad
from ..autograd.graph import AccumulateGrad, Node
from ..tensor import Tensor
from .stepper import BackwardStepper
from .values import finite_or_label, tensor_payload

__all__ = ["check_graph", "check_node", "difference_map"]

MAX_ELEMENTS = 256
GRID = 32


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

    ``target`` is a node, or a stepper (its current node; ``inputs`` default to the stepper's
    ``forward_inputs`` for it). ``inputs`` are the op's forward arguments, needed only when
    the node neither saved them nor is a custom Function.
    Returns plain data: node name, ``max_abs_error``, ``max_rel_error``, ``ok``,
    ``verdict``, the tolerances and ``inputs``, one per checked input (see
    :func:`_compare`): its errors, and the gradient the rule ``produced`` beside the
    finite-difference one (``expected``) as value payloads, with a ``difference`` map for
    inputs of two or more dimensions. At most 256 elements per input are perturbed (a seeded
    sample beyond; then ``produced`` and ``expected`` hold the sampled elements only).
    """
    node = _current_node(target)
    if inputs is None and isinstance(target, BackwardStepper):
        inputs = target.forward_inputs.get(node)
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
    per_input = []
    for i, g in zip(positions, analytical, strict=True):
        numeric, analytic, index = _numerical(forward, args64, i, upstream, eps, g, rng)
        shape = tuple(args64[i].shape)
        per_input.append(_compare(i, shape, analytic, numeric, index, atol, rtol))
    ok = all(p["ok"] for p in per_input)
    return {
        "node": node.name(),
        "max_abs_error": _worst(p["max_abs_error"] for p in per_input),
        "max_rel_error": _worst(p["max_rel_error"] for p in per_input),
        "ok": ok,
        "verdict": "ok" if ok else "gradient mismatch",
        "atol": atol,
        "rtol": rtol,
        "inputs": per_input,
    }


def _compare(
    position: int,
    shape: tuple[int, ...],
    analytic: np.ndarray,
    numeric: np.ndarray,
    index: np.ndarray,
    atol: float,
    rtol: float,
) -> dict:
    """One input's check: ``elements`` compared (at flat ``index`` of an input of ``shape``),
    the errors, ``ok``, ``sampled``, ``produced`` and ``expected`` payloads (shaped like the
    input unless sampled) and the ``difference`` map (None below two dimensions)."""
    difference = analytic - numeric
    sampled = index.size < math.prod(shape)
    as_shown = (lambda a: a) if sampled else (lambda a: a.reshape(shape))
    return {
        "position": position,
        "shape": list(shape),
        "elements": int(index.size),
        "sampled": sampled,
        "max_abs_error": float(np.max(np.abs(difference), initial=0.0)),
        "max_rel_error": float(np.max(np.abs(difference) / (np.abs(numeric) + atol), initial=0.0)),
        "ok": bool(np.allclose(analytic, numeric, atol=atol, rtol=rtol)),
        "produced": tensor_payload(Tensor(as_shown(analytic))),
        "expected": tensor_payload(Tensor(as_shown(numeric))),
        "difference": difference_map(shape, index, difference) if len(shape) >= 2 else None,
    }


def difference_map(
    shape: Sequence[int], index: np.ndarray, difference: np.ndarray, *, grid: int = GRID
) -> dict:
    """The differences (produced - expected) at flat ``index`` of a tensor of ``shape`` on a
    grid of at most ``grid`` x ``grid`` cells over its matrix view (rows: all leading
    dimensions, columns: the last). A cell holds the difference of largest magnitude among
    its elements, None where none was compared; non-finite ones as labels (``"nan"``).
    Also ``rows``, ``cols``, ``block`` (elements per cell, rows x cols) and the finite
    ``min``/``max``."""
    cols = int(shape[-1])
    rows = math.prod(shape[:-1])
    cell_rows, cell_cols = min(rows, grid), min(cols, grid)
    cells: list[list[float | None]] = [[None] * cell_cols for _ in range(cell_rows)]
    for flat, value in zip(index.tolist(), difference.tolist(), strict=True):
        r = (flat // cols) * cell_rows // rows
        c = (flat % cols) * cell_cols // cols
        held = cells[r][c]
        if held is None or math.isnan(value) or abs(value) > abs(held):  # NaN wins
            cells[r][c] = value
    finite = [v for row in cells for v in row if v is not None and math.isfinite(v)]
    return {
        "rows": rows,
        "cols": cols,
        "block": [math.ceil(rows / cell_rows), math.ceil(cols / cell_cols)],
        "values": [[None if v is None else finite_or_label(v) for v in row] for row in cells],
        "min": min(finite, default=0.0),
        "max": max(finite, default=0.0),
    }


def check_graph(
    target: BackwardStepper | Callable[..., Tensor],
    inputs: Sequence[Any] | None = None,
    **options: Any,
) -> dict:
    """Check every node of a backward pass in backward order; report each node's result and
    the first mismatch.

    ``target`` is a loss function, run on ``inputs`` under a forward capture (so every node
    can be re-run), or a stepper, whose pass is replayed by a fresh stepper (its position is
    left alone; nodes that saved no inputs and have no ``forward_inputs`` are skipped).
    ``options`` go to :func:`check_node`. Returns ``{"ok", "checked", "nodes", "skipped",
    "first_failure", "error"}``: ``nodes`` lists every checked node's :func:`check_node`
    result plus its ``id`` and backward ``step``, in backward order; ``skipped`` lists
    ``{"id", "node", "reason"}``; ``first_failure`` is the first disagreeing entry of
    ``nodes``; ``error`` is the stepper's error report if backward failed. Leaves' ``.grad``
    are left as they were.
    """
    if isinstance(target, BackwardStepper):
        if inputs is not None:
            raise TypeError("check_graph(stepper) takes no inputs: they were captured already")
        stepper = BackwardStepper(
            target.loss, gradient=target.gradient, forward_inputs=target.forward_inputs
        )
    elif callable(target):
        if inputs is None:
            raise TypeError("check_graph(loss_fn, inputs) needs the inputs to run loss_fn on")
        stepper = BackwardStepper.from_function(target, inputs)
    else:
        raise TypeError(
            f"check_graph expects a BackwardStepper or a loss function, got {type(target).__name__}"
        )
    results: list[dict] = []
    skipped: list[dict] = []
    try:
        while True:
            stepper.next()
            if stepper.done or stepper.error is not None:
                break
            node = stepper.current_step.node
            if type(node) is AccumulateGrad:
                continue
            node_id = stepper.ids[node]
            try:
                result = check_node(node, inputs=stepper.forward_inputs.get(node), **options)
            except ValueError as reason:
                skipped.append({"id": node_id, "node": node.name(), "reason": str(reason)})
                continue
            results.append({**result, "id": node_id, "step": stepper.position - 1})
        error = stepper.error
    finally:
        stepper.reset()
    failure = next((r for r in results if not r["ok"]), None)
    return {
        "ok": failure is None and error is None,
        "checked": len(results),
        "nodes": results,
        "skipped": skipped,
        "first_failure": failure,
        "error": error,
    }


def _worst(errors: Iterable[float]) -> float:
    """The largest error; NaN (a non-finite difference) wins."""
    return float(np.max(np.fromiter(errors, float), initial=0.0))


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
        if node._freed:
            raise ValueError(
                f"{node.name()}'s saved tensors were freed (retain_graph=False): pass inputs="
            )
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
