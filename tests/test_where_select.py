"""tk.where's NumPy bit select (``ops.binary._where_forward``): large float selects go
through bit masks; every result is NumPy's ``where``, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import tensorkit as tk
from tensorkit.ops.binary import _BITWISE_SELECT_MIN, _bitwise_select_type, _where_forward

SHAPES = [
    ((200, 300), (200, 300), (200, 300)),
    ((200, 300), (300,), (200, 1)),
    ((70000,), (), (70000,)),
    ((128, 512), (128, 512), ()),
]


def _specials(array: np.ndarray) -> np.ndarray:
    if array.ndim:
        array.flat[:5] = [np.nan, np.inf, -np.inf, -0.0, 0.0]
    return array


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("shapes", SHAPES)
def test_the_bit_select_gives_numpys_bits(dtype, shapes) -> None:
    rng = np.random.default_rng(0)
    shape, x_shape, y_shape = shapes
    condition = rng.standard_normal(shape) > 0
    x = _specials(np.asarray(rng.standard_normal(x_shape) * 1e3, dtype))
    y = _specials(np.asarray(rng.standard_normal(y_shape) * 1e3, dtype))
    for a, b in ((x, y), (x, 0.0), (0, y), (x, -3)):
        assert _bitwise_select_type(np, a, b, condition) is not None
        got, expected = _where_forward(np, a, b, condition), np.where(condition, a, b)
        assert got.dtype == expected.dtype and got.shape == expected.shape
        assert got.tobytes() == expected.tobytes()


def test_other_selects_keep_numpys_where() -> None:
    big = np.ones(_BITWISE_SELECT_MIN, np.float32)
    mask = big > 0
    assert _bitwise_select_type(np, big, big, mask[:10].reshape(10, 1)[:1]) is None  # broadcast
    assert _bitwise_select_type(np, big[:100], big[:100], mask[:100]) is None  # small
    assert _bitwise_select_type(np, big, big.astype(np.float64), mask) is None  # two dtypes
    assert _bitwise_select_type(np, big, float("nan"), mask) is None  # a NaN literal
    assert _bitwise_select_type(np, big, 1e300, mask) is None  # beyond float32
    assert _bitwise_select_type(np, big.astype(np.int32), 0, mask) is None  # integers


def test_tk_where_and_its_gradient_on_large_tensors() -> None:
    rng = np.random.default_rng(1)
    x = tk.tensor(rng.standard_normal((150, 200)), requires_grad=True)
    y = tk.tensor(rng.standard_normal((150, 200)), requires_grad=True)
    out = tk.where(x > y, x, y)
    np.testing.assert_array_equal(
        out.detach().numpy(), np.maximum(x.detach().numpy(), y.detach().numpy())
    )
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy() + y.grad.numpy(), np.ones((150, 200)))
