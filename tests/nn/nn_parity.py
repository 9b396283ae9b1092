"""Run a tensorkit module and its PyTorch twin (same weights) and compare everything:
outputs, input gradients, parameter gradients and buffers (running statistics)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tensorkit as tk


def same_error(make_mine: Any, make_theirs: Any) -> None:
    """Both raise the same exception type with the same message (modulo the library name)."""
    with pytest.raises(Exception) as theirs:
        make_theirs()
    expected = str(theirs.value).replace("torch.", "tensorkit.")
    with pytest.raises(theirs.type) as mine:
        make_mine()
    assert str(mine.value) == expected


def copy_state_to_torch(mine: Any, theirs: Any) -> None:
    """Load tensorkit's parameters and buffers into the torch module (names must match)."""
    torch = pytest.importorskip("torch")
    state = {name: torch.tensor(np.asarray(value)) for name, value in mine.state_dict().items()}
    theirs.load_state_dict(state)


def compare_modules(
    mine: Any,
    theirs: Any,
    *arrays: np.ndarray,
    atol: float = 1e-6,
    rtol: float = 1e-5,
    steps: int = 1,
) -> None:
    """Forward ``steps`` times and backward once through both modules; everything agrees."""
    torch = pytest.importorskip("torch")
    copy_state_to_torch(mine, theirs)
    for _ in range(steps):
        tk_inputs = [_tk_leaf(a) for a in arrays]
        torch_inputs = [_torch_leaf(torch, a) for a in arrays]
        out_mine = mine(*tk_inputs)
        out_theirs = theirs(*torch_inputs)
        _close(out_mine, out_theirs, atol, rtol, "output")
    w = np.random.default_rng(7).standard_normal(tuple(out_theirs.shape))
    w = w.astype(out_theirs.detach().numpy().dtype)
    (out_mine * tk.tensor(w)).sum().backward()
    (out_theirs * torch.tensor(w)).sum().backward()
    for index, (a, t_mine, t_theirs) in enumerate(
        zip(arrays, tk_inputs, torch_inputs, strict=True)
    ):
        if a.dtype.kind == "f":
            _close(t_mine.grad, t_theirs.grad, atol, rtol, f"grad of input {index}")
    torch_params = dict(theirs.named_parameters())
    for name, param in mine.named_parameters():
        _close(param.grad, torch_params[name].grad, atol, rtol, f"grad of {name}")
    torch_buffers = dict(theirs.named_buffers())
    for name, buffer in mine.named_buffers():
        _close(buffer, torch_buffers[name], atol, rtol, f"buffer {name}")


def _tk_leaf(a: np.ndarray) -> tk.Tensor:
    t = tk.tensor(a)
    return t.requires_grad_() if a.dtype.kind == "f" else t


def _torch_leaf(torch: Any, a: np.ndarray) -> Any:
    t = torch.tensor(a)
    return t.requires_grad_() if a.dtype.kind == "f" else t


def _close(mine: Any, theirs: Any, atol: float, rtol: float, what: str) -> None:
    if theirs is None:
        assert mine is None or not np.any(np.asarray(mine)), f"{what}: torch has none"
        return
    assert mine is not None, f"{what}: tensorkit has none"
    expected = theirs.detach().numpy()
    got = np.asarray(mine.detach())
    assert got.shape == expected.shape, f"{what}: shape {got.shape} != {expected.shape}"
    np.testing.assert_allclose(got, expected, atol=atol, rtol=rtol, err_msg=what)
