"""The strong-Wolfe line search LBFGS uses: bracketing, then zooming with cubic interpolation.

The same algorithm as minFunc's and Lua torch's ``lswolfe`` (Nocedal & Wright, algorithms 3.5
and 3.6), step for step, so trajectories match PyTorch's. Slopes are 0-d tensors of the
parameters' dtype (and so is any arithmetic that touches them), as in PyTorch, so float32
searches round as PyTorch's do.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from ..tensor import Tensor

Scalar = float | Tensor


@dataclass
class _Point:
    """A trial step ``t`` with the loss, gradient and directional derivative there."""

    t: Scalar
    f: float
    g: Tensor
    gtd: Tensor


def cubic_minimizer(
    x1: Scalar,
    f1: float,
    g1: Scalar,
    x2: Scalar,
    f2: float,
    g2: Scalar,
    bounds: tuple[Scalar, Scalar] | None = None,
) -> Scalar:
    """The minimizer of the cubic through ``(x1, f1)`` and ``(x2, f2)`` with slopes ``g1`` and
    ``g2``, clipped to ``bounds`` (default: between the two points); the middle of the bounds
    when the cubic has no minimizer."""
    low, high = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    discriminant = d1 * d1 - g1 * g2
    if discriminant < 0:
        return (low + high) / 2.0
    d2 = discriminant.sqrt() if isinstance(discriminant, Tensor) else math.sqrt(discriminant)
    if x1 <= x2:
        position = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        position = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(position, low), high)


def strong_wolfe(
    evaluate: Callable[[Scalar], tuple[float, Tensor]],
    t: Scalar,
    d: Tensor,
    loss: float,
    grad: Tensor,
    gtd: Tensor,
    c1: float = 1e-4,
    c2: float = 0.9,
    tolerance_change: float = 1e-9,
    max_ls: int = 25,
) -> tuple[float, Tensor, Scalar, int]:
    """Search along ``d`` from the point with ``loss``, ``grad`` and slope ``gtd`` for a step
    satisfying the strong Wolfe conditions, starting at ``t``; ``evaluate(t)`` gives the loss
    and flat gradient at that step. Returns the loss, gradient and step found and the number
    of evaluations."""
    d_norm = d.abs().max()
    start = _Point(0.0, loss, grad, gtd)

    def probe(step: Scalar) -> _Point:
        f_new, g_new = evaluate(step)
        return _Point(step, f_new, g_new, g_new.dot(d))

    # Bracketing: grow the step until an interval is known to hold an acceptable point.
    previous, new = start, probe(t)
    evaluations, iteration, done = 1, 0, False
    bracket: list[_Point] = []
    while iteration < max_ls:
        if new.f > loss + c1 * new.t * gtd or (iteration > 1 and new.f >= previous.f):
            bracket = [previous, new]
            break
        if abs(new.gtd) <= -c2 * gtd:
            bracket, done = [new], True
            break
        if new.gtd >= 0:
            bracket = [previous, new]
            break
        bounds = (new.t + 0.01 * (new.t - previous.t), new.t * 10)
        step = cubic_minimizer(previous.t, previous.f, previous.gtd, new.t, new.f, new.gtd, bounds)
        previous, new = new, probe(step)
        evaluations += 1
        iteration += 1
    if iteration == max_ls:
        bracket = [start, new]

    # Zoom: shrink the bracket until a point satisfies the conditions.
    low, high = (0, 1) if bracket[0].f <= bracket[-1].f else (1, 0)
    insufficient_progress = False
    while not done and iteration < max_ls:
        a, b = bracket
        if abs(b.t - a.t) * d_norm < tolerance_change:
            break
        step = cubic_minimizer(a.t, a.f, a.gtd, b.t, b.f, b.gtd)
        top, bottom = max(a.t, b.t), min(a.t, b.t)
        margin = 0.1 * (top - bottom)
        if min(top - step, step - bottom) < margin:  # too close to an end of the bracket
            if insufficient_progress or step >= top or step <= bottom:
                step = top - margin if abs(step - top) < abs(step - bottom) else bottom + margin
                insufficient_progress = False
            else:
                insufficient_progress = True
        else:
            insufficient_progress = False
        new = probe(step)
        evaluations += 1
        iteration += 1
        if new.f > loss + c1 * new.t * gtd or new.f >= bracket[low].f:
            bracket[high] = new
            low, high = (0, 1) if bracket[0].f <= bracket[1].f else (1, 0)
        else:
            if abs(new.gtd) <= -c2 * gtd:
                done = True
            elif new.gtd * (bracket[high].t - bracket[low].t) >= 0:
                bracket[high] = bracket[low]
            bracket[low] = new
    best = bracket[low]
    return best.f, best.g, best.t, evaluations
