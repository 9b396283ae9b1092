"""Helpers every op test uses: float64 gradchecks and a one-line parity check against PyTorch.

``check_grads(fn, *arrays)`` runs gradcheck and gradgradcheck on float64 leaves made from
NumPy arrays. ``check_torch(fn_tk, fn_torch, *arrays)`` runs the same inputs through both
libraries (PyTorch is an optional oracle: the test skips without it) and compares forward
values and the gradients of ``sum(out * w)`` for a fixed random ``w``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

import tensorkit as tk

# The device the op suite runs on; scripts/gpu_check.sh sets it to "cuda".
TEST_DEVICE = os.environ.get("TENSORKIT_TEST_DEVICE", "cpu")


def leaves(arrays: Sequence[Any], device: str = TEST_DEVICE, requires_grad: bool = True) -> list:
    """tk leaf tensors from arrays: float arrays require grad, others (indices, masks) don't."""
    out = []
    for a in arrays:
        if isinstance(a, np.ndarray):
            floating = a.dtype.kind == "f"
            t = tk.from_numpy(a) if device == "cpu" else tk.tensor(a, device=device)
            out.append(t.requires_grad_(requires_grad) if floating else t)
        else:
            out.append(a)
    return out


def noncontiguous(a: np.ndarray) -> np.ndarray:
    """The same values in a strided (non-C-contiguous) layout: every other element of a
    twice-as-large buffer for vectors, Fortran order for matrices."""
    if a.ndim == 0:
        return a
    if a.ndim == 1:
        buffer = np.zeros(a.shape[0] * 2, a.dtype)
        buffer[::2] = a
        return buffer[::2]
    return np.asfortranarray(a)


def check_grads(
    fn: Callable,
    *arrays: Any,
    gradgrad: bool = True,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    eps: float = 1e-6,
    device: str = TEST_DEVICE,
) -> None:
    """gradcheck (and gradgradcheck) of ``fn`` at float64 copies of ``arrays``."""
    converted = [
        a.astype(np.float64) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a
        for a in arrays
    ]
    inputs = leaves(converted, device)
    assert tk.autograd.gradcheck(fn, inputs, eps=eps, atol=atol, rtol=rtol)
    if gradgrad:
        assert tk.autograd.gradgradcheck(fn, inputs, eps=eps, atol=atol, rtol=rtol)


def _to_torch(torch: Any, value: Any, requires_grad: bool) -> Any:
    if isinstance(value, np.ndarray):
        t = torch.tensor(value)
        if requires_grad and value.dtype.kind == "f":
            t.requires_grad_(True)
        return t
    return value


def _outputs(value: Any) -> list:
    if isinstance(value, tuple | list):
        return list(value)
    return [value]


def check_torch(
    fn_tk: Callable,
    fn_torch: Callable,
    *arrays: Any,
    grad: bool = True,
    atol: float = 1e-6,
    rtol: float = 1e-5,
    device: str = TEST_DEVICE,
) -> None:
    """Forward values and input gradients of tensorkit and PyTorch agree on the same inputs."""
    torch = pytest.importorskip("torch")
    tk_inputs = leaves(arrays, device, requires_grad=grad)
    torch_inputs = [_to_torch(torch, a, grad) for a in arrays]
    tk_out = _outputs(fn_tk(*tk_inputs))
    torch_out = _outputs(fn_torch(*torch_inputs))
    assert len(tk_out) == len(torch_out)
    for mine, theirs in zip(tk_out, torch_out, strict=True):
        expected = theirs.detach().numpy()
        got = np.asarray(mine.detach().cpu())
        assert got.shape == expected.shape, f"shape {got.shape} != torch {expected.shape}"
        assert got.dtype == expected.dtype, f"dtype {got.dtype} != torch {expected.dtype}"
        np.testing.assert_allclose(got, expected, atol=atol, rtol=rtol)
    if not grad:
        return
    weights = np.random.default_rng(1)
    tk_loss, torch_loss = 0, 0
    for mine, theirs in zip(tk_out, torch_out, strict=True):
        if not theirs.requires_grad:
            continue
        w = weights.standard_normal(tuple(theirs.shape)).astype(theirs.detach().numpy().dtype)
        tk_loss = tk_loss + (mine * tk.tensor(w, device=device)).sum()
        torch_loss = torch_loss + (theirs * torch.tensor(w)).sum()
    if isinstance(torch_loss, int):
        return
    tk_loss.backward()
    torch_loss.backward()
    for a, mine, theirs in zip(arrays, tk_inputs, torch_inputs, strict=True):
        if not (isinstance(a, np.ndarray) and a.dtype.kind == "f"):
            continue
        if theirs.grad is None:
            assert mine.grad is None or not np.any(np.asarray(mine.grad.cpu())), (
                "tk has a gradient torch lacks"
            )
            continue
        assert mine.grad is not None, "torch has a gradient tk lacks"
        np.testing.assert_allclose(
            np.asarray(mine.grad.cpu()), theirs.grad.numpy(), atol=atol, rtol=rtol
        )


def create_graph_tape() -> tk.autograd.Tape:
    """A Tape of x**3 differentiated twice (``grad(create_graph=True)``, then backward): its
    gradient ops form a second and a third band."""
    x = tk.tensor([1.5, 2.0], requires_grad=True)
    with tk.autograd.Tape() as tape:
        y = (x**3).sum()
        (g,) = tk.autograd.grad(y, x, create_graph=True)
        g.sum().backward()
    return tape
