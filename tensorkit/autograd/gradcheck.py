"""Finite-difference checks of gradients: ``gradcheck`` and ``gradgradcheck``.

Both follow PyTorch: central differences with step ``eps`` on each input element, compared
with the analytical Jacobian built one output element at a time by ``autograd.grad``;
elements agree when ``|analytical - numerical| <= atol + rtol * |numerical|``. A complex
input or output counts as its real and imaginary parts: each part of an input is perturbed,
and each part of an output is seeded (with 1 and 1j, which under PyTorch's conjugate
Wirtinger convention give the gradients of the real and the imaginary part).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..tensor import Tensor, wrap
from .engine import grad

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by gradcheck when analytical and numerical gradients disagree."""


def _as_tuple(value: Any) -> tuple:
    if isinstance(value, tuple):
        return value
    if isinstance(value, list):
        return tuple(value)
    return (value,)


def _differentiable_outputs(func: Callable, inputs: tuple) -> tuple[Tensor, ...]:
    outputs = _as_tuple(func(*inputs))
    return tuple(o for o in outputs if isinstance(o, Tensor) and o.requires_grad)


def _real_size(t: Tensor) -> int:
    """How many real numbers ``t`` holds (two per complex element)."""
    return t.numel() * (2 if t.is_complex() else 1)


def _numerical_jacobian(func: Callable, inputs: tuple, eps: float) -> list[list[np.ndarray]]:
    """jacobians[i][j]: (real size of input i) x (real size of output j), by central
    differences (a complex element's real part, then its imaginary part)."""
    reference = tuple(o for o in _as_tuple(func(*inputs)) if isinstance(o, Tensor))
    out_sizes = [_real_size(o) for o in reference]
    jacobians = []
    for x in inputs:
        if not (isinstance(x, Tensor) and x.requires_grad):
            jacobians.append(None)
            continue
        data = x._data
        steps = (eps, eps * 1j) if x.is_complex() else (eps,)
        per_output = [np.zeros((_real_size(x), n)) for n in out_sizes]
        row = 0
        for position in np.ndindex(*data.shape):
            original = data[position].item()
            for step in steps:
                data[position] = original + step
                plus = [_host(o) for o in _as_tuple(func(*inputs)) if isinstance(o, Tensor)]
                data[position] = original - step
                minus = [_host(o) for o in _as_tuple(func(*inputs)) if isinstance(o, Tensor)]
                data[position] = original
                for j, (p, m) in enumerate(zip(plus, minus, strict=True)):
                    per_output[j][row] = (p - m) / (2 * eps)
                row += 1
        jacobians.append(per_output)
    return jacobians


def _host(t: Tensor) -> np.ndarray:
    """The values of ``t`` as flat float64 (complex ones as real, imaginary pairs)."""
    values = np.array(t.detach().cpu()._data, copy=True)
    if values.dtype.kind == "c":
        values = np.stack([values.real, values.imag], axis=-1)
    return values.astype(np.float64).reshape(-1)


def _analytical_jacobian(outputs: tuple[Tensor, ...], inputs: tuple) -> list[list[np.ndarray]]:
    """jacobians[i][j]: (real size of input i) x (real size of output j), one backward per
    column (two for a complex output element: seeds 1 and 1j)."""
    diff_inputs = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]
    jacobians: list[list[np.ndarray]] = [[] for _ in diff_inputs]
    for out in outputs:
        rows = [np.zeros((_real_size(x), _real_size(out))) for x in diff_inputs]
        flat_size = out.numel()
        units = (1, 1j) if out.is_complex() else (1,)
        for j in range(flat_size):
            for part, unit in enumerate(units):
                seed = np.zeros(flat_size, dtype=out._data.dtype)
                seed[j] = unit
                seed_tensor = wrap(out.device.xp.asarray(seed.reshape(out._data.shape)), out.device)
                grads = grad(out, diff_inputs, seed_tensor, retain_graph=True, allow_unused=True)
                for i, g in enumerate(grads):
                    if g is not None:
                        rows[i][:, j * len(units) + part] = _host(g)
        for i, row in enumerate(rows):
            jacobians[i].append(row)
    return jacobians


def gradcheck(
    func: Callable,
    inputs: Any,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    fast_mode: bool = False,
    masked: bool | None = None,
) -> bool:
    """True when ``func``'s analytical gradients match finite differences at ``inputs``."""
    inputs = _as_tuple(inputs)
    for i, x in enumerate(inputs):
        if (
            isinstance(x, Tensor)
            and x.requires_grad
            and x.dtype.itemsize < 8
            and x.is_floating_point()
        ):
            warnings.warn(
                f"Input #{i} requires gradient and is not a double precision floating point. "
                "This check will likely fail if all the inputs are not of double precision "
                "floating point.",
                UserWarning,
                stacklevel=2,
            )
    diff_positions = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not diff_positions:
        raise ValueError(
            "gradcheck expects at least one input tensor to require gradient, but none of "
            "them have requires_grad=True."
        )
    outputs = _differentiable_outputs(func, inputs)
    numerical = _numerical_jacobian(func, inputs, eps)
    analytical = _analytical_jacobian(outputs, inputs)
    numerical = [numerical[i] for i in diff_positions]
    for slot, position in enumerate(diff_positions):
        for j, (a, n) in enumerate(zip(analytical[slot], numerical[slot], strict=False)):
            if a.shape != n.shape or not np.allclose(a, n, rtol=rtol, atol=atol):
                if not raise_exception:
                    return False
                worst = np.unravel_index(np.argmax(np.abs(a - n)), a.shape) if a.size else ()
                raise GradcheckError(
                    f"Jacobian mismatch for output {j} with respect to input {position},\n"
                    f"numerical:{n}\nanalytical:{a}\n"
                    "largest difference at (input element, output element) "
                    f"{tuple(map(int, worst))}"
                )
    return True


def gradgradcheck(
    func: Callable,
    inputs: Any,
    grad_outputs: Sequence[Tensor] | Tensor | None = None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    gen_non_contig_grad_outputs: bool = False,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    fast_mode: bool = False,
    masked: bool = False,
) -> bool:
    """gradcheck of the gradient itself: checks second derivatives (backward of backward)."""
    from ..random import randn

    inputs = _as_tuple(inputs)
    outputs = _differentiable_outputs(func, inputs)
    if grad_outputs is None:
        grad_outputs = tuple(
            randn(o.shape, dtype=o.dtype, device=o.device, requires_grad=True) for o in outputs
        )
    else:
        grad_outputs = _as_tuple(grad_outputs)
    diff_positions = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    count = len(inputs)

    def first_derivatives(*args: Any) -> tuple:
        ins, seeds = args[:count], args[count:]
        outs = _differentiable_outputs(func, ins)
        diff_ins = [ins[i] for i in diff_positions]
        grads = grad(outs, diff_ins, seeds, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(
        first_derivatives,
        inputs + tuple(grad_outputs),
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
    )
