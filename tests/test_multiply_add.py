"""``add``/``sub`` with ``alpha`` (and so every SGD update) round ``a + alpha * b`` once, as
PyTorch's fused multiply-add kernel does, on every layout; other dtypes keep two roundings."""

from __future__ import annotations

import numpy as np
import pytest

import tensorkit as tk
from tensorkit._backend import multiply_add as module


def _fused_reference(a: np.ndarray, b: np.ndarray, alpha: float) -> np.ndarray:
    """float32 ``a + alpha * b`` rounded once: in float64 the product is exact, and the sum is
    rounded twice only on a tie (none in these samples)."""
    wide = a.astype(np.float64) + b.astype(np.float64) * float(np.float32(alpha))
    return wide.astype(np.float32)


LAYOUTS = {
    "same shape": ((5003,), (5003,)),  # saxpy, then a tail of 11 in float64
    "small": ((5,), (5,)),  # all in float64
    "row broadcast": ((300, 40), (40,)),
    "input broadcast": ((40,), (300, 40)),
    "0-d": ((), ()),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("alpha", [-0.01, 3.7])
def test_add_and_sub_with_alpha_round_once(layout, alpha):
    rng = np.random.default_rng(0)
    shape_a, shape_b = LAYOUTS[layout]
    a = rng.standard_normal(shape_a).astype(np.float32)
    b = rng.standard_normal(shape_b).astype(np.float32)
    added = tk.add(tk.tensor(a), tk.tensor(b), alpha=alpha).numpy()
    subtracted = tk.sub(tk.tensor(a), tk.tensor(b), alpha=alpha).numpy()
    np.testing.assert_array_equal(added, _fused_reference(a, b, alpha))
    np.testing.assert_array_equal(subtracted, _fused_reference(a, b, -alpha))
    two_roundings = a + b * np.float32(alpha)
    if a.size > 100:  # the difference this makes: about 2% of the elements
        assert np.mean(added != two_roundings) > 0.005


def test_in_place_updates_round_once_on_any_layout():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((40, 30)).astype(np.float32)
    b = rng.standard_normal((30, 40)).astype(np.float32)
    strided = tk.tensor(a.copy()).T  # not C-ordered: computed aside, then written back
    strided.add_(tk.tensor(b), alpha=0.3)
    np.testing.assert_array_equal(strided.numpy(), _fused_reference(a.T, b, 0.3))
    itself = tk.tensor(b.copy())
    itself.sub_(itself, alpha=0.3)
    np.testing.assert_array_equal(itself.numpy(), _fused_reference(b, b, -0.3))
    overlapping = tk.tensor(np.arange(8, dtype=np.float32))
    overlapping[1:].add_(overlapping[:-1], alpha=2.0)  # reads what it writes: copied first
    np.testing.assert_array_equal(overlapping.numpy(), [0, 1, 4, 7, 10, 13, 16, 19])


def test_sgd_updates_match_pytorch_bit_for_bit():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    weights = rng.standard_normal((64, 100)).astype(np.float32)
    grads = [rng.standard_normal((64, 100)).astype(np.float32) for _ in range(3)]
    ours = tk.nn.Parameter(tk.tensor(weights.copy()))
    theirs = torch.nn.Parameter(torch.from_numpy(weights.copy()))
    ours_opt = tk.optim.SGD([ours], lr=0.01)
    theirs_opt = torch.optim.SGD([theirs], lr=0.01)
    for g in grads:
        ours.grad = tk.tensor(g)
        theirs.grad = torch.from_numpy(g)
        ours_opt.step()
        theirs_opt.step()
    np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())


@pytest.mark.parametrize("layout", ["same shape", "small", "row broadcast"])
def test_add_with_alpha_matches_pytorch_bit_for_bit(layout):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    shape_a, shape_b = LAYOUTS[layout]
    a = rng.standard_normal(shape_a).astype(np.float32)
    b = rng.standard_normal(shape_b).astype(np.float32)
    expected = torch.add(torch.from_numpy(a), torch.from_numpy(b), alpha=3.7).numpy()
    np.testing.assert_array_equal(tk.add(tk.tensor(a), tk.tensor(b), alpha=3.7).numpy(), expected)


def test_other_dtypes_keep_two_roundings_and_float32_rounds_once_without_openblas(monkeypatch):
    rng = np.random.default_rng(4)
    for dtype in (np.float16, np.float64):
        a, b = (rng.standard_normal(300).astype(dtype) for _ in range(2))
        got = tk.add(tk.tensor(a), tk.tensor(b), alpha=3.7).numpy()
        np.testing.assert_array_equal(got, a + b * dtype(3.7))
    monkeypatch.setattr(module, "_saxpy", None)  # as where NumPy was built on another BLAS
    a, b = (rng.standard_normal(5003).astype(np.float32) for _ in range(2))
    got = tk.add(tk.tensor(a), tk.tensor(b), alpha=3.7).numpy()
    np.testing.assert_array_equal(got, _fused_reference(a, b, 3.7))


def test_saxpy_is_kept_only_where_it_rounds_once(monkeypatch):
    """The check on first use: a saxpy that rounds the product first is not used."""

    def unfused(n, alpha, x, incx, y, incy):
        import ctypes

        xs = np.ctypeslib.as_array(ctypes.cast(x, ctypes.POINTER(ctypes.c_float)), (n,))
        ys = np.ctypeslib.as_array(ctypes.cast(y, ctypes.POINTER(ctypes.c_float)), (n,))
        ys += xs * np.float32(alpha)

    monkeypatch.setattr(module, "_saxpy", False)
    monkeypatch.setattr(module, "_load_saxpy", lambda: unfused)
    assert module._saxpy_function() is None
    rng = np.random.default_rng(6)
    a, b = (rng.standard_normal(5003).astype(np.float32) for _ in range(2))
    got = tk.add(tk.tensor(a), tk.tensor(b), alpha=3.7).numpy()
    np.testing.assert_array_equal(got, _fused_reference(a, b, 3.7))  # then all in float64


def test_compiled_sgd_step_writes_eagers_values():
    """A compiled step's update is the same op as eager's (an add with alpha is not fused into
    a numba kernel, which could not spell the single rounding)."""
    rng = np.random.default_rng(5)
    start = rng.standard_normal((16, 8)).astype(np.float32)
    x = tk.tensor(rng.standard_normal((4, 8)).astype(np.float32))

    def run(compiled: bool) -> np.ndarray:
        weight = tk.nn.Parameter(tk.tensor(start.copy()))
        opt = tk.optim.SGD([weight], lr=0.37)

        def step(x: tk.Tensor) -> tk.Tensor:
            opt.zero_grad()
            loss = (x @ weight.T).tanh().sum()
            loss.backward()
            opt.step()
            return loss.detach()

        run_step = tk.compile(step) if compiled else step
        for _ in range(3):
            run_step(x)
        return weight.detach().numpy()

    np.testing.assert_array_equal(run(True), run(False))
