"""Fused gradient ops (tanh/sigmoid/relu backward) agree with the composite formulas they
replace, to first and second order; lerp reproduces PyTorch's fused multiply-add bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import tensorkit as tk


def _values():
    return tk.tensor(np.linspace(-2.5, 2.5, 11), dtype=tk.float64, requires_grad=True)


@pytest.mark.parametrize(
    ("function", "composite_derivative"),
    [
        (tk.tanh, lambda x: 1 - x.tanh() ** 2),
        (tk.sigmoid, lambda x: x.sigmoid() * (1 - x.sigmoid())),
        (tk.relu, lambda x: (x > 0).double()),
    ],
    ids=["tanh", "sigmoid", "relu"],
)
def test_fused_first_and_second_derivatives_match_composites(function, composite_derivative):
    x = _values()
    (fused,) = tk.autograd.grad(function(x).sum(), x, create_graph=True)
    np.testing.assert_allclose(fused.detach().numpy(), composite_derivative(x).detach().numpy())
    composite = composite_derivative(x)
    if not composite.requires_grad:  # relu: the derivative is piecewise constant
        (second,) = tk.autograd.grad(fused.sum(), x, allow_unused=True)
        assert second is None
        return
    (fused_second,) = tk.autograd.grad(fused.sum(), x)
    (composite_second,) = tk.autograd.grad(composite.sum(), x)
    np.testing.assert_allclose(fused_second.numpy(), composite_second.numpy(), atol=1e-12)


@pytest.mark.parametrize("function", [tk.tanh, tk.sigmoid, tk.relu], ids=lambda f: f.__name__)
def test_fused_rules_pass_gradgradcheck(function):
    x = tk.tensor([-1.3, -0.2, 0.4, 2.0], dtype=tk.float64, requires_grad=True)
    assert tk.autograd.gradgradcheck(function, (x,))


def test_backward_uses_one_op_per_activation():
    x = tk.tensor([0.5, -0.5], requires_grad=True)
    y = x.tanh().sigmoid().relu().sum()
    with tk.autograd.Tape() as tape:
        y.backward()
    names = [e.name for e in tape if e.phase == "backward"]
    assert "tanh_backward" in names and "sigmoid_backward" in names
    assert "threshold_backward" in names


@pytest.mark.parametrize("weight", [0.1, 0.3, 0.5, 0.9, "tensor"])
def test_lerp_matches_pytorch_bit_for_bit_in_float32(weight):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    start, end = (rng.standard_normal(4096).astype(np.float32) for _ in range(2))
    if weight == "tensor":
        w = rng.random(4096).astype(np.float32)
        mine = tk.lerp(tk.tensor(start), tk.tensor(end), tk.tensor(w)).numpy()
        theirs = torch.lerp(torch.tensor(start), torch.tensor(end), torch.tensor(w)).numpy()
    else:
        mine = tk.lerp(tk.tensor(start), tk.tensor(end), weight).numpy()
        theirs = torch.lerp(torch.tensor(start), torch.tensor(end), weight).numpy()
    np.testing.assert_array_equal(mine, theirs)


@pytest.mark.parametrize(
    ("dtype", "weight"),
    [
        (dtype, weight)
        for dtype in (tk.float16, tk.float32, tk.float64, tk.complex64)
        for weight in (0.25, 0.49999999, 0.5, 1.75, -0.5)
    ]
    + [(tk.complex64, 0.3 - 0.4j), (tk.complex128, 0.4 + 0.3j)],
)
def test_lerp_with_a_number_takes_the_branch_of_its_rounded_weight(dtype, weight):
    """A Python-number weight computes only its branch of the formula; the branch is chosen
    by the weight rounded to the tensor's dtype (0.49999999 is 0.5 in float32), as a 0-d
    tensor weight does."""
    rng = np.random.default_rng(1)
    start, end = (tk.tensor(rng.standard_normal(257) * 50, dtype=dtype) for _ in range(2))
    number = tk.lerp(start, end, weight)
    tensor = tk.lerp(start, end, tk.tensor(weight, dtype=dtype))
    np.testing.assert_array_equal(number.numpy(), tensor.numpy())


def test_relu_backward_blocks_nan_and_inf_where_the_input_was_negative():
    x = tk.tensor([-1.0, 2.0, -3.0, 4.0], requires_grad=True)
    x.relu().backward(tk.tensor([float("nan"), 1.0, float("inf"), float("inf")]))
    assert x.grad.tolist() == [0.0, 1.0, 0.0, float("inf")]


@pytest.mark.parametrize("dtype", [tk.float16, tk.float32, tk.float64])
def test_threshold_backward_is_the_select_of_torch_for_every_float_dtype(dtype):
    """The masked-bits select gives ``where(out > 0, g, 0)`` exactly: inf and NaN pass where
    the output is positive, +0.0 elsewhere (a NaN or -0.0 output blocks), in every width."""
    rng = np.random.default_rng(3)
    out = np.maximum(rng.standard_normal(300), 0)
    out[:4] = [np.nan, -0.0, 0.0, 1.0]
    g = rng.standard_normal(300) * 100
    g[4:8] = [np.inf, -np.inf, np.nan, -0.0]
    out[4:8] = 2.0
    got = tk.ops.unary._THRESHOLD_BACKWARD(
        tk.tensor(g, dtype=dtype), tk.tensor(out, dtype=dtype)
    ).numpy()
    expected = np.where(out.astype(got.dtype) > 0, g.astype(got.dtype), 0).astype(got.dtype)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got.view(f"i{got.itemsize}"), expected.view(f"i{got.itemsize}"))
