"""Pooling and interpolation: values, indices and gradients against PyTorch, float64
gradcheck/gradgradcheck, PyTorch's errors, and the layer modules."""

from __future__ import annotations

import re

import numpy as np
import pytest
from harness import check_grads, check_torch

import tensorkit as tk
import tensorkit.nn.functional as F  # noqa: N812
from tensorkit.nn.modules import pooling, upsampling

torch = pytest.importorskip("torch")
TF = torch.nn.functional

LAYERS = {name: getattr(m, name) for m in (pooling, upsampling) for name in m.__all__}
RNG = np.random.default_rng(1)


def randn(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


def bind(fn, **kwargs):
    """``fn`` with keyword options fixed, for check_torch / check_grads."""
    return lambda *args: fn(*args, **kwargs)


def check_both(name: str, x: np.ndarray, grad: bool = True, **options) -> None:
    """F.<name> and torch's agree on values (and indices) and input gradients."""
    check_torch(bind(getattr(F, name), **options), bind(getattr(TF, name), **options), x, grad=grad)


# ------------------------------------------------------------------------ max pooling
MAX_POOL2D_CASES = [
    {"kernel_size": 2},
    {"kernel_size": 3, "stride": 2, "padding": 1},
    {"kernel_size": (3, 2), "stride": (2, 1), "padding": (1, 1), "dilation": (2, 1)},
    {"kernel_size": 2, "ceil_mode": True},
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True, "dilation": 2},
]


@pytest.mark.parametrize("options", MAX_POOL2D_CASES, ids=str)
def test_max_pool2d_matches_torch(options: dict) -> None:
    x = randn(2, 3, 7, 6)
    check_both("max_pool2d", x, **options)
    check_both("max_pool2d", x, return_indices=True, **options)
    check_both("max_pool2d", x[0], return_indices=True, **options)


@pytest.mark.parametrize(
    "options",
    [*MAX_POOL2D_CASES, {"kernel_size": 3, "stride": 1}, {"kernel_size": 2, "dilation": (2, 1)}],
    ids=str,
)
def test_max_pool2d_keeps_a_channels_last_layout_with_the_same_values(options: dict) -> None:
    """An input laid out (N, H, W, C) in memory (what tk.jit's channels-last convolutions
    make) gives the C-order input's values, indices and gradient bit for bit, and the
    indices, values and gradient come out channels last too, as PyTorch's do. Windows
    without padding take the compiled loops (``_backend.max_pool``), the rest the array
    form."""
    from tensorkit.nn.functional.pooling import channels_last

    data = randn(2, 3, 9, 8)
    data[0, 0, :3, :3] = np.nan
    data[1, 1] = 0.0  # ties everywhere
    results = []
    for last in (False, True):
        x = tk.tensor(data, requires_grad=True)
        seen = x.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2) if last else x
        assert channels_last(seen._data) is last
        values, indices = F.max_pool2d(seen, **options, return_indices=True)
        (values * tk.arange(float(values.numel())).reshape(values.shape)).sum().backward()
        results.append((values, indices, x.grad))
        if last:
            for array in (values._data, indices._data):
                assert channels_last(array) or array.shape[1] == 1
    for a, b in zip(*results, strict=True):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


@pytest.mark.parametrize(
    "options",
    [{"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}],
    ids=str,
)
def test_max_pool1d_matches_torch(options: dict) -> None:
    x = randn(2, 3, 9)
    check_both("max_pool1d", x, return_indices=True, **options)
    check_both("max_pool1d", x[0], **options)


def test_max_pool_ties_and_infinities_pick_the_first_as_torch() -> None:
    x = np.zeros((1, 1, 4, 5))
    x[0, 0, 1, 1:] = 1.0
    check_both("max_pool2d", x, kernel_size=3, stride=1, padding=1, return_indices=True)
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    x[0, 0, [0, 1, 2], [0, 1, 3]] = np.nan  # PyTorch keeps the last NaN of a window
    check_both("max_pool2d", x, kernel_size=3, stride=1, padding=1, return_indices=True, grad=False)
    check_both("adaptive_max_pool2d", x, output_size=3, return_indices=True, grad=False)
    x = np.full((1, 1, 3, 3), -np.inf)
    _, indices = F.max_pool2d(tk.tensor(x), 2, padding=1, return_indices=True)
    expected = TF.max_pool2d(torch.tensor(x), 2, padding=1, return_indices=True)[1]
    np.testing.assert_array_equal(indices.numpy(), expected.numpy())


def test_max_pool_without_padding_picks_the_first_tie_as_torch() -> None:
    # Windows with every tap real take the fast path (a maximum, then its first tap): ties
    # of two, three and all four values, overlapping windows, and a window of 144 taps
    # (more than the small per-window tap counter holds).
    x = np.zeros((2, 3, 6, 6))
    x[0, 0, 0, 1] = x[0, 0, 1, 0] = 1.0
    x[0, 1, 2:4, 2:4] = [[2.0, 0.0], [2.0, 2.0]]
    x[1] = RNG.integers(0, 2, (3, 6, 6))
    check_both("max_pool2d", x, kernel_size=2, return_indices=True)
    check_both("max_pool2d", x, kernel_size=3, stride=1, return_indices=True, grad=False)
    check_both("max_pool2d", x, kernel_size=(2, 3), stride=(1, 3), return_indices=True)
    big = RNG.integers(0, 3, (2, 2, 24, 24)).astype(np.float64)
    check_both("max_pool2d", big, kernel_size=12, return_indices=True)
    check_both("max_pool1d", big[0], kernel_size=5, stride=3, return_indices=True)


def test_max_pool_float32_and_integer_inputs() -> None:
    x = randn(2, 3, 6, 6).astype(np.float32)
    check_both("max_pool2d", x, kernel_size=2, return_indices=True)
    ints = RNG.integers(-5, 5, (2, 3, 6, 6))
    got = F.max_pool2d(tk.tensor(ints), 3, 2, 1)
    np.testing.assert_array_equal(got.numpy(), TF.max_pool2d(torch.tensor(ints), 3, 2, 1))


def test_max_pool_gradgradcheck() -> None:
    options = {"kernel_size": 3, "stride": 2, "padding": 1, "dilation": 2, "ceil_mode": True}
    check_grads(bind(F.max_pool2d, **options), randn(2, 2, 5, 5))
    check_grads(bind(F.max_pool1d, kernel_size=2), randn(2, 2, 5))


MAX_POOL3D_CASES = [
    {"kernel_size": 2},
    {"kernel_size": 3, "stride": 2, "padding": 1},
    {"kernel_size": (3, 2, 2), "stride": (2, 1, 2), "padding": (1, 1, 0), "dilation": (1, 2, 1)},
    {"kernel_size": 2, "stride": (2, 1, 2), "ceil_mode": True},
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True, "dilation": 2},
]


@pytest.mark.parametrize("options", MAX_POOL3D_CASES, ids=str)
def test_max_pool3d_matches_torch(options: dict) -> None:
    x = randn(2, 3, 6, 7, 5)
    check_both("max_pool3d", x, **options)
    check_both("max_pool3d", x, return_indices=True, **options)
    check_both("max_pool3d", x[0], return_indices=True, **options)


def test_max_pool3d_ties_float32_and_gradgradcheck() -> None:
    x = RNG.integers(0, 2, (2, 2, 4, 5, 4)).astype(np.float64)
    check_both("max_pool3d", x, kernel_size=2, return_indices=True)
    check_both("max_pool3d", x, kernel_size=3, stride=1, padding=1, return_indices=True, grad=False)
    check_both("max_pool3d", randn(2, 3, 5, 6, 4).astype(np.float32), kernel_size=2, stride=1)
    options = {"kernel_size": 3, "stride": 2, "padding": 1, "dilation": 2, "ceil_mode": True}
    check_grads(bind(F.max_pool3d, **options), randn(1, 2, 5, 4, 5))
    check_grads(bind(F.max_pool3d, kernel_size=(2, 1, 2)), randn(2, 4, 3, 4))


# ------------------------------------------------------------------- average pooling
AVG_POOL2D_CASES = [
    {"kernel_size": 2},
    {"kernel_size": 3, "stride": 2, "padding": 1},
    {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False},
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
    {
        "kernel_size": (3, 2),
        "stride": 2,
        "padding": (1, 1),
        "ceil_mode": True,
        "count_include_pad": False,
    },
    {"kernel_size": (3, 2), "stride": (2, 1), "padding": (1, 0), "divisor_override": 5},
]


@pytest.mark.parametrize("options", AVG_POOL2D_CASES, ids=str)
def test_avg_pool2d_matches_torch(options: dict) -> None:
    x = randn(2, 3, 7, 6)
    check_both("avg_pool2d", x, **options)
    check_both("avg_pool2d", x[0], **options)


@pytest.mark.parametrize(
    "options",
    [{"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}],
    ids=str,
)
def test_avg_pool1d_matches_torch(options: dict) -> None:
    check_both("avg_pool1d", randn(2, 3, 9), **options)
    check_both("avg_pool1d", randn(2, 3, 9), count_include_pad=False, **options)


AVG_POOL3D_CASES = [
    {"kernel_size": 2},
    {"kernel_size": 3, "stride": 2, "padding": 1},
    {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False},
    {"kernel_size": 3, "stride": (2, 1, 2), "padding": 1, "ceil_mode": True},
    {
        "kernel_size": (3, 2, 2),
        "stride": 2,
        "padding": (1, 1, 0),
        "ceil_mode": True,
        "count_include_pad": False,
    },
    {"kernel_size": (3, 2, 1), "stride": (2, 1, 1), "padding": (1, 0, 0), "divisor_override": 5},
]


@pytest.mark.parametrize("options", AVG_POOL3D_CASES, ids=str)
def test_avg_pool3d_matches_torch(options: dict) -> None:
    x = randn(2, 3, 6, 7, 5)
    check_both("avg_pool3d", x, **options)
    check_both("avg_pool3d", x[0], **options)


def test_avg_pool3d_float32_and_gradgradcheck() -> None:
    check_both("avg_pool3d", randn(2, 3, 6, 5, 4).astype(np.float32), kernel_size=3, padding=1)
    options = {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}
    check_grads(bind(F.avg_pool3d, count_include_pad=False, **options), randn(1, 2, 4, 5, 4))
    check_grads(bind(F.avg_pool3d, kernel_size=2, divisor_override=3), randn(2, 4, 3, 4))


@pytest.mark.parametrize("norm_type", [1.0, 2, 3.0])
@pytest.mark.parametrize("options", [{}, {"stride": 1}, {"ceil_mode": True, "stride": 2}], ids=str)
def test_lp_pool3d_matches_torch(norm_type, options: dict) -> None:
    x = RNG.random((2, 3, 5, 6, 4)) + 0.1
    for kernel in (2, (3, 2, 2)):
        check_both("lp_pool3d", x, norm_type=norm_type, kernel_size=kernel, **options)
    check_both("lp_pool3d", x[0], norm_type=norm_type, kernel_size=2, **options)
    check_grads(bind(F.lp_pool3d, norm_type=norm_type, kernel_size=2, **options), x[:1, :1])


def test_avg_pool_float32_and_gradgradcheck() -> None:
    x = randn(2, 3, 8, 8).astype(np.float32)
    check_both("avg_pool2d", x, kernel_size=3, stride=2, padding=1)
    options = {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}
    check_grads(bind(F.avg_pool2d, count_include_pad=False, **options), randn(2, 2, 5, 5))
    check_grads(bind(F.avg_pool1d, **options), randn(2, 2, 6))


# ------------------------------------------------------------------ adaptive pooling
@pytest.mark.parametrize("size", [(3, 4), (5, None), (10, 13), 1], ids=str)
def test_adaptive_pool2d_matches_torch(size) -> None:
    x = randn(2, 3, 7, 6)
    check_both("adaptive_avg_pool2d", x, output_size=size)
    check_both("adaptive_max_pool2d", x, output_size=size, return_indices=True)
    check_both("adaptive_max_pool2d", x[0], output_size=size)


@pytest.mark.parametrize("size", [(3, 4, 2), (5, None, 3), (8, 9, 11), 1], ids=str)
def test_adaptive_pool3d_matches_torch(size) -> None:
    x = randn(2, 3, 6, 7, 5)
    check_both("adaptive_avg_pool3d", x, output_size=size)
    check_both("adaptive_avg_pool3d", x[0], output_size=size)
    check_both("adaptive_max_pool3d", x, output_size=size, return_indices=True)
    check_both("adaptive_max_pool3d", x[0], output_size=size, return_indices=True)


def test_adaptive_pool3d_gradgradcheck() -> None:
    check_grads(bind(F.adaptive_avg_pool3d, output_size=(3, 2, 2)), randn(1, 2, 5, 4, 5))
    check_grads(bind(F.adaptive_max_pool3d, output_size=(2, 3, 2)), randn(2, 5, 4, 5))


ADAPTIVE_3D = ("adaptive_avg_pool3d", "adaptive_max_pool3d")


def test_adaptive_pool_to_an_empty_output() -> None:
    for name in ("adaptive_avg_pool2d", "adaptive_max_pool2d", *ADAPTIVE_3D):
        x, options = randn(2, 3, 7, 6), {"output_size": (0, 2)}
        if name.endswith("3d"):
            x, options = randn(2, 3, 7, 6, 5), {"output_size": (2, None, 0)}
        check_torch(
            bind(getattr(F, name), **options), bind(getattr(TF, name), **options), x, grad=False
        )
        leaf = tk.tensor(x, requires_grad=True)
        getattr(F, name)(leaf, **options).sum().backward()
        assert not leaf.grad.numpy().any()


@pytest.mark.parametrize("size", [4, 9, 13], ids=str)
def test_adaptive_pool1d_matches_torch(size: int) -> None:
    check_both("adaptive_avg_pool1d", randn(2, 3, 9), output_size=size)
    check_both("adaptive_max_pool1d", randn(2, 3, 9), output_size=size, return_indices=True)


def test_adaptive_pool_gradgradcheck() -> None:
    check_grads(bind(F.adaptive_avg_pool2d, output_size=(3, 2)), randn(2, 2, 5, 5))
    check_grads(bind(F.adaptive_max_pool2d, output_size=(2, 3)), randn(2, 2, 5, 5))


# --------------------------------------------------------------------- interpolation
INTERPOLATE_2D_CASES = [
    {"scale_factor": 2},
    {"size": (5, 9)},
    {"size": (13, 4)},
    {"scale_factor": 1.7},
    {"scale_factor": (0.6, 2.3)},
    {"scale_factor": 2, "mode": "bilinear"},
    {"size": (5, 9), "mode": "bilinear"},
    {"size": (13, 4), "mode": "bilinear", "align_corners": True},
    {"size": (1, 4), "mode": "bilinear", "align_corners": True},
    {"scale_factor": 1.7, "mode": "bilinear"},
    {"scale_factor": 1.7, "mode": "bilinear", "recompute_scale_factor": True},
    {"scale_factor": (0.4, 3), "mode": "bilinear", "align_corners": False},
    {"size": (3, 2), "mode": "area"},
]


@pytest.mark.parametrize("options", INTERPOLATE_2D_CASES, ids=str)
def test_interpolate_2d_matches_torch(options: dict) -> None:
    check_both("interpolate", randn(2, 3, 7, 6), **options)


@pytest.mark.parametrize(
    "options",
    [
        {"scale_factor": 2.5},
        {"size": 4},
        {"scale_factor": 2.5, "mode": "linear"},
        {"size": 13, "mode": "linear", "align_corners": True},
    ],
    ids=str,
)
def test_interpolate_1d_matches_torch(options: dict) -> None:
    check_both("interpolate", randn(2, 3, 9), **options)


def test_interpolate_float32_integer_and_3d() -> None:
    x = randn(2, 3, 7, 6).astype(np.float32)
    check_both("interpolate", x, scale_factor=1.5, mode="bilinear")
    check_both("interpolate", x, size=(9, 17), mode="bilinear", align_corners=True)
    check_both("interpolate", randn(1, 2, 3, 4, 5), size=(4, 3, 7), mode="trilinear")
    ints = RNG.integers(0, 255, (1, 2, 4, 5)).astype(np.uint8)
    got = F.interpolate(tk.tensor(ints), scale_factor=3)
    expected = TF.interpolate(torch.tensor(ints), scale_factor=3)
    np.testing.assert_array_equal(got.numpy(), expected.numpy())


def test_interpolate_gradgradcheck() -> None:
    x = randn(1, 2, 3, 4)
    check_grads(bind(F.interpolate, scale_factor=2, mode="bilinear"), x)
    check_grads(bind(F.interpolate, size=(5, 3), mode="bilinear", align_corners=True), x)
    check_grads(bind(F.interpolate, size=(7, 3)), x)


# ------------------------------------------------------------------------------ errors
ERROR_CASES = [
    (
        lambda: F.max_pool2d(tk.zeros(5, 5), 2),
        RuntimeError,
        "max_pool2d: Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for "
        "input, but got: [5, 5]",
    ),
    (
        lambda: F.max_pool1d(tk.zeros(2, 4, 5, 5), 2),
        RuntimeError,
        "max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for "
        "input, but got: [2, 4, 5, 5]",
    ),
    (
        lambda: F.max_pool2d(tk.zeros(2, 4, 5, 5), 3, padding=2),
        RuntimeError,
        "pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and "
        "dilation=1",
    ),
    (
        lambda: F.avg_pool2d(tk.zeros(2, 4, 5, 5), 7),
        RuntimeError,
        "Given input size: (4x5x5). Calculated output size: (4x0x0). Output size is too small",
    ),
    (
        lambda: F.max_pool2d(tk.zeros(2, 4, 5, 5), 2, stride=0),
        RuntimeError,
        "stride should not be zero",
    ),
    (
        lambda: F.max_pool2d(tk.zeros(2, 4, 5, 5), 2, padding=-1),
        RuntimeError,
        "pad must be non-negative, but got pad: -1",
    ),
    (
        lambda: F.avg_pool2d(tk.zeros(2, 4, 5, 5), 2, divisor_override=0),
        RuntimeError,
        "divisor must be not zero",
    ),
    (
        lambda: F.adaptive_avg_pool2d(tk.zeros(5), 2),
        RuntimeError,
        "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got [5]",
    ),
    (
        lambda: F.adaptive_avg_pool2d(tk.zeros(2, 0, 5), 2),
        RuntimeError,
        "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch dimensions, "
        "but input has sizes [2, 0, 5] with dimension 1 being empty",
    ),
    (
        lambda: F.adaptive_avg_pool2d(tk.zeros(2, 4, 5, 5), (2, 2, 2)),
        RuntimeError,
        "adaptive_avg_pool2d: output_size must be 2",
    ),
    (
        lambda: F.max_pool3d(tk.zeros(5, 5, 5), 2),
        RuntimeError,
        "non-empty 4D or 5D (batch mode) tensor expected for input",
    ),
    (
        lambda: F.avg_pool3d(tk.zeros(1, 2, 2, 4, 5, 5), 2),
        RuntimeError,
        "non-empty 4D or 5D (batch mode) tensor expected for input",
    ),
    (
        lambda: F.max_pool3d(tk.zeros(2, 4, 5, 5, 5), 3, padding=2),
        RuntimeError,
        "pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and "
        "dilation=1",
    ),
    (
        lambda: F.avg_pool3d(tk.zeros(2, 4, 5, 5, 5), (3, 4, 3), padding=(1, 3, 1)),
        RuntimeError,
        "pad should be at most half of effective kernel size, but got pad=3, kernel_size=4 and "
        "dilation=1",
    ),
    (
        lambda: F.max_pool3d(tk.zeros(2, 4, 5, 5, 5), 2, dilation=5),
        RuntimeError,
        "Given input size: (4x5x5x5). Calculated output size: (4x0x0x0). Output size is too small",
    ),
    (
        lambda: F.avg_pool3d(tk.zeros(2, 4, 5, 3, 5), 4, padding=1),
        RuntimeError,
        "input image (T: 5 H: 3 W: 5) smaller than kernel size (kT: 4 kH: 4 kW: 4)",
    ),
    (
        lambda: F.lp_pool3d(tk.zeros(4, 5, 5, 5), 2, (2, 7, 2)),
        RuntimeError,
        "input image (T: 5 H: 5 W: 5) smaller than kernel size (kT: 2 kH: 7 kW: 2)",
    ),
    (
        lambda: F.max_pool3d(tk.zeros(2, 4, 5, 5, 5), 0, stride=1),
        RuntimeError,
        "kernel size should be greater than zero, but got kT: 0 kH: 0 kW: 0",
    ),
    (
        lambda: F.max_pool3d(tk.zeros(2, 4, 5, 5, 5), 2, dilation=(1, 0, 1)),
        RuntimeError,
        "dilation should be greater than zero, but got dilationT: 1 dilationH: 0 dilationW: 1",
    ),
    (
        lambda: F.max_pool2d(tk.zeros(2, 4, 5, 5), 2, dilation=(0, 1)),
        RuntimeError,
        "dilation should be greater than zero, but got dilationH: 0 dilationW: 1",
    ),
    (
        lambda: F.avg_pool3d(tk.zeros(2, 4, 5, 5, 5), 2, stride=0),
        RuntimeError,
        "stride should not be zero",
    ),
    (
        lambda: F.avg_pool3d(tk.zeros(2, 4, 5, 5, 5), 2, divisor_override=0),
        RuntimeError,
        "divisor must be not zero",
    ),
    (
        lambda: F.max_pool3d(tk.zeros(2, 4, 5, 5, 5), (2, 2)),
        RuntimeError,
        "max_pool3d: kernel_size must either be a single int, or a tuple of three ints",
    ),
    (
        lambda: F.max_pool3d(tk.zeros(2, 4, 5, 5, 5), 2, (1, 1)),
        RuntimeError,
        "max_pool3d: stride must either be omitted, a single int, or a tuple of three ints",
    ),
    (
        lambda: F.max_pool3d(tk.zeros(2, 4, 5, 5, 5), 2, padding=(1, 1)),
        RuntimeError,
        "max_pool3d: padding must either be a single int, or a tuple of three ints",
    ),
    (
        lambda: F.max_pool3d(tk.zeros(2, 4, 5, 5, 5), 2, dilation=(1, 1)),
        RuntimeError,
        "max_pool3d: dilation must be either a single int, or a tuple of three ints",
    ),
    (
        lambda: F.avg_pool3d(tk.zeros(2, 4, 5, 5, 5), (2, 2)),
        RuntimeError,
        "avg_pool3d: kernel_size must be a single int, or a tuple of three ints",
    ),
    (
        lambda: F.avg_pool3d(tk.zeros(2, 4, 5, 5, 5), 2, (1, 1)),
        RuntimeError,
        "avg_pool3d: stride must be omitted, a single int, or a tuple of three ints",
    ),
    (
        lambda: F.avg_pool3d(tk.zeros(2, 4, 5, 5, 5), 2, padding=(1, 1)),
        RuntimeError,
        "avg_pool3d: padding must be a single int, or a tuple of three ints",
    ),
    (
        lambda: F.lp_pool3d(tk.zeros(2, 4, 5, 5, 5), 2, (2, 2)),
        ValueError,
        "not enough values to unpack (expected 3, got 2)",
    ),
    (
        lambda: F.avg_pool3d(tk.zeros(2, 4, 5, 5, 5, dtype=tk.int32), 2),
        NotImplementedError,
        "\"avg_pool3d_out_frame\" not implemented for 'Int'",
    ),
    (
        lambda: F.adaptive_avg_pool3d(tk.zeros(5, 5), 2),
        RuntimeError,
        "adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got [5, 5]",
    ),
    (
        lambda: F.adaptive_max_pool3d(tk.zeros(5, 5), 2),
        RuntimeError,
        "adaptive_max_pool3d(): Expected 4D or 5D tensor, but got: [5, 5]",
    ),
    (
        lambda: F.adaptive_max_pool2d(tk.zeros(5), 2),
        RuntimeError,
        "adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: [5]",
    ),
    (
        lambda: F.adaptive_max_pool3d(tk.zeros(2, 0, 5, 5), 2),
        RuntimeError,
        "adaptive_max_pool3d(): Expected input to have non-zero size for non-batch dimensions, "
        "but input has sizes [2, 0, 5, 5] with dimension 1 being empty",
    ),
    (
        lambda: F.adaptive_avg_pool3d(tk.zeros(2, 4, 5, 5, 5), (2, 2)),
        RuntimeError,
        "adaptive_avg_pool3d: output_size must be 3",
    ),
    (
        lambda: F.adaptive_max_pool3d(tk.zeros(2, 4, 5, 5, 5), (2, 2)),
        RuntimeError,
        "adaptive_max_pool3d(): internal error: output_size.size() must be 3",
    ),
    (
        lambda: F.adaptive_max_pool2d(tk.zeros(2, 4, 5, 5), (2, 2, 2)),
        RuntimeError,
        "adaptive_max_pool2d(): internal error: output_size.size() must be 2",
    ),
    (
        lambda: F.adaptive_avg_pool3d(tk.zeros(2, 4, 5, 5, 5), (2, -1, 2)),
        RuntimeError,
        "adaptive_avg_pool3d: elements of output_size must be greater than or equal to 0 but "
        "received {2, -1,2}",
    ),
    (
        lambda: F.adaptive_avg_pool2d(tk.zeros(2, 4, 5, 5), (2, -1)),
        RuntimeError,
        "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but "
        "received {2, -1}",
    ),
    (
        lambda: F.adaptive_max_pool3d(tk.zeros(4, 5, 5, 5), (2, -1, 2)),
        RuntimeError,
        "Trying to create tensor with negative dimension -1: [4, 2, -1, 2]",
    ),
    (
        lambda: F.adaptive_max_pool3d(tk.zeros(2, 4, 5, 5, 5, dtype=tk.int64), 2),
        NotImplementedError,
        "\"adaptive_max_pool3d_cpu\" not implemented for 'Long'",
    ),
    (
        lambda: F.adaptive_avg_pool3d(tk.zeros(2, 4, 5, 5, 5, dtype=tk.int64), 2),
        NotImplementedError,
        "\"adaptive_avg_pool3d_cpu\" not implemented for 'Long'",
    ),
    (
        lambda: F.interpolate(tk.zeros(2, 4, 5, 5), mode="bilinear"),
        ValueError,
        "either size or scale_factor should be defined",
    ),
    (
        lambda: F.interpolate(tk.zeros(2, 4, 5, 5), size=3, scale_factor=2),
        ValueError,
        "only one of size or scale_factor should be defined",
    ),
    (
        lambda: F.interpolate(tk.zeros(2, 4, 5, 5), size=3, align_corners=True),
        ValueError,
        "align_corners option can only be set with the interpolating modes",
    ),
    (
        lambda: F.interpolate(tk.zeros(2, 4, 5, 5), size=(3, 3, 3)),
        ValueError,
        "Input and output must have the same number of spatial dimensions, but got input with "
        "spatial dimensions of [5, 5] and output size of (3, 3, 3).",
    ),
    (
        lambda: F.interpolate(tk.zeros(2, 4, 5, 5), scale_factor=2, mode="linear"),
        NotImplementedError,
        "Got 4D input, but linear mode needs 3D input",
    ),
    (
        lambda: F.interpolate(tk.zeros(5, 5), size=3),
        NotImplementedError,
        "Input Error: Only 3D, 4D and 5D input Tensors supported (got 2D)",
    ),
    (
        lambda: F.interpolate(tk.zeros(2, 4, 5, 5), scale_factor=0.1),
        RuntimeError,
        "Input and output sizes should be greater than 0, but got input (H: 5, W: 5) output "
        "(H: 0, W: 0)",
    ),
]


@pytest.mark.parametrize(("call", "kind", "message"), ERROR_CASES)
def test_errors_match_torch(call, kind: type, message: str) -> None:
    with pytest.raises(kind, match=re.escape(message)):
        call()


# ----------------------------------------------------------------------------- modules
MODULE_CASES = [
    ("MaxPool1d", (3, 2, 1), {"return_indices": True}),
    ("MaxPool2d", (2,), {}),
    ("MaxPool2d", ((3, 2),), {"stride": 2, "padding": 1, "dilation": (1, 2), "ceil_mode": True}),
    ("AvgPool1d", (2,), {}),
    ("AvgPool1d", (3, 2, 1), {"ceil_mode": True, "count_include_pad": False}),
    ("AvgPool2d", (3, 2, 1), {"divisor_override": 2}),
    ("AvgPool2d", ((3, 2),), {}),
    ("AdaptiveAvgPool1d", (4,), {}),
    ("AdaptiveAvgPool2d", ((3, None),), {}),
    ("AdaptiveMaxPool2d", (2,), {"return_indices": True}),
    ("MaxPool3d", (2,), {}),
    (
        "MaxPool3d",
        ((3, 2, 2),),
        {"stride": 2, "padding": 1, "dilation": (1, 2, 1), "ceil_mode": True},
    ),
    ("MaxPool3d", (2, 1), {"return_indices": True}),
    ("AvgPool3d", (2,), {}),
    ("AvgPool3d", ((3, 2, 1), 2, (1, 1, 0)), {"ceil_mode": True, "count_include_pad": False}),
    ("AvgPool3d", (3, 2, 1), {"divisor_override": 2}),
    ("AdaptiveAvgPool3d", ((2, None, 3),), {}),
    ("AdaptiveMaxPool3d", (2,), {"return_indices": True}),
    ("LPPool3d", (2, 2), {}),
    ("LPPool3d", (1.5, (2, 3, 2), 1, True), {}),
    ("Upsample", (), {"scale_factor": 2}),
    ("Upsample", ((3, 4),), {"mode": "bilinear", "align_corners": True}),
    ("Upsample", (), {"scale_factor": (2, 3)}),
]


@pytest.mark.parametrize(("name", "args", "options"), MODULE_CASES, ids=str)
def test_modules_match_torch(name: str, args: tuple, options: dict) -> None:
    mine, theirs = LAYERS[name](*args, **options), getattr(torch.nn, name)(*args, **options)
    assert repr(mine) == repr(theirs)
    shapes = {"1d": (2, 3, 9), "3d": (2, 3, 6, 7, 5)}
    x = randn(*shapes.get(name[-2:], (2, 3, 7, 6)))
    check_torch(mine, theirs, abs(x) + 0.1 if name.startswith("LP") else x)
