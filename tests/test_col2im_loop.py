"""col2im's compiled loop (numba) gives the NumPy form's sums bit for bit, on every layout a
convolution makes; the switch, the dtypes it leaves to NumPy and a numba that fails to import
fall back to the NumPy form."""

from __future__ import annotations

import itertools
import sys

import numpy as np
import pytest

import tensorkit as tk
from tensorkit._backend import col2im as module
from tensorkit._backend.threads import splits
from tensorkit.nn.functional import conv

pytest.importorskip("numba")


def _config_cases() -> list[tuple]:
    cases = []
    for dims, stride, dilation, pad, batch_first in itertools.product(
        (1, 2, 3), (1, 2), (1, 2), ((0, 0), (1, 1), (2, 0), (1, -1)), (False, True)
    ):
        cases.append((dims, stride, dilation, pad, batch_first))
    return cases


def _columns(rng, dims, stride, dilation, pad, batch_first, dtype):
    size = (9, 8, 7)[:dims]
    kernel = (3, 2, 3)[:dims]
    full = [n + pad[0] + max(pad[1], 0) for n in size]
    out = [conv.window_count(n, k, stride, dilation) for n, k in zip(full, kernel, strict=True)]
    samples, channels = 2, 3
    shape = (
        (samples, channels, *kernel, *out) if batch_first else (channels, *kernel, samples, *out)
    )
    attrs = {
        "size": size,
        "kernel": kernel,
        "stride": (stride,) * dims,
        "padding": (pad,) * dims,
        "dilation": (dilation,) * dims,
        "batch_first": batch_first,
    }
    return rng.standard_normal(shape).astype(dtype), attrs


def _numpy_form(cols, attrs):
    module.set_enabled(False)
    try:
        return conv._col2im_forward(np, cols, **attrs)
    finally:
        module.set_enabled(True)


@pytest.mark.parametrize("case", _config_cases(), ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_loop_sums_equal_the_numpy_form(case, dtype):
    cols, attrs = _columns(np.random.default_rng(0), *case, dtype)
    assert module.usable(np, cols)
    looped = conv._col2im_forward(np, cols, **attrs)
    reference = _numpy_form(cols, attrs)
    assert looped.dtype == reference.dtype and looped.shape == reference.shape
    assert looped.flags.c_contiguous
    np.testing.assert_array_equal(looped, reference)


def _rows_of(cols, attrs):
    """The same windows in im2col's channels-last layout, (N, *out, *kernel, C)."""
    d = len(attrs["kernel"])
    if attrs["batch_first"]:  # (N, C, *kernel, *out)
        order = (0, *range(2 + d, 2 + 2 * d), *range(2, 2 + d), 1)
    else:  # (C, *kernel, N, *out)
        order = (1 + d, *range(2 + d, 2 + 2 * d), *range(1, 1 + d), 0)
    rows = {**attrs, "batch_first": False, "channels_last": True}
    return np.ascontiguousarray(cols.transpose(order)), rows


@pytest.mark.parametrize("case", _config_cases()[::2], ids=str)
def test_the_channels_last_loop_sums_equal_its_numpy_form_and_the_channel_major_sums(case):
    """The rows loop adds each sum's taps in the same order as the array form of its layout
    (bit for bit), and gives the standard layout's sums up to rounding, in (N, *S, C)
    memory; im2col's rows are the standard windows transposed, bit for bit."""
    cols, attrs = _columns(np.random.default_rng(2), *case, np.float64)
    rows, rows_attrs = _rows_of(cols, attrs)
    looped = conv._col2im_forward(np, rows, **rows_attrs)
    numpy_form = _numpy_form(rows, rows_attrs)
    np.testing.assert_array_equal(looped, numpy_form)
    np.testing.assert_allclose(looped, _numpy_form(cols, attrs), rtol=1e-13, atol=1e-13)
    d = len(attrs["kernel"])
    assert looped.transpose(0, *range(2, 2 + d), 1).flags.c_contiguous  # channels last
    x = np.random.default_rng(3).standard_normal(looped.shape)
    im2col_attrs = {k: v for k, v in attrs.items() if k != "size"}
    windows = conv._im2col_forward(np, x, **im2col_attrs)
    expected, _ = _rows_of(windows, im2col_attrs | {"size": None})
    got = conv._im2col_forward(np, x, **{**im2col_attrs, "channels_last": True})
    np.testing.assert_array_equal(got, expected)


def test_a_non_contiguous_input_and_threads_give_the_same_sums():
    rng = np.random.default_rng(1)
    cols, attrs = _columns(rng, 2, 1, 1, (1, 1), False, np.float32)
    big = np.repeat(cols, 160, axis=0)  # 480 channels: enough work to split over threads
    transposed = np.ascontiguousarray(big.swapaxes(0, 3)).swapaxes(0, 3)
    assert not transposed.flags.c_contiguous
    reference = _numpy_form(big, attrs)
    before = tk.get_num_threads()
    tk.set_num_threads(2)
    try:
        assert splits(big.shape[0], big.size, big)  # the loop runs in two parts
        np.testing.assert_array_equal(conv._col2im_forward(np, transposed, **attrs), reference)
    finally:
        tk.set_num_threads(before)


def test_conv_gradients_are_the_same_with_the_loop_switched_off():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 3, 11, 10)).astype(np.float32)
    w = rng.standard_normal((5, 3, 3, 3)).astype(np.float32)

    def input_grad() -> np.ndarray:
        xt = tk.tensor(x, requires_grad=True)
        out = tk.nn.functional.conv2d(xt, tk.tensor(w), stride=2, padding=1, dilation=(1, 2))
        out.pow(2).sum().backward()
        return xt.grad.numpy()

    looped = input_grad()
    tk.backends.numba.enabled = False
    try:
        assert not module.usable(np, x)
        reference = input_grad()
    finally:
        tk.backends.numba.enabled = True
    np.testing.assert_array_equal(looped, reference)


@pytest.mark.parametrize("dtype", [np.float16, np.complex64, np.int64])
def test_other_dtypes_use_the_numpy_form(dtype):
    cols = np.ones((2, 3, 3, 1, 4, 4), dtype)
    assert not module.usable(np, cols)
    attrs = {
        "size": (6, 6),
        "kernel": (3, 3),
        "stride": (1, 1),
        "padding": ((0, 0),) * 2,
        "dilation": (1, 1),
        "batch_first": False,
    }
    out = conv._col2im_forward(np, cols, **attrs)
    assert out.dtype == dtype and out.shape == (1, 2, 6, 6)
    assert out[0, 0, 2, 2] == 9  # the centre is covered by all nine taps


def test_a_numba_that_fails_to_import_warns_once_and_falls_back(monkeypatch):
    monkeypatch.setattr(module, "_loop", None)
    monkeypatch.setattr(module, "_available", True)
    monkeypatch.setitem(sys.modules, "tensorkit._backend._col2im_loop", None)
    cols, attrs = _columns(np.random.default_rng(3), 2, 1, 1, (0, 0), False, np.float32)
    with pytest.warns(RuntimeWarning, match="numba did not import .*col2im runs through NumPy"):
        out = conv._col2im_forward(np, cols, **attrs)
    assert not module.usable(np, cols)  # decided once: no second warning
    np.testing.assert_array_equal(out, _numpy_form(cols, attrs))


def test_the_switch_takes_bools_only():
    assert tk.backends.numba.enabled is True
    assert tk.backends.numba.is_available() is True
    with pytest.raises(RuntimeError, match="set_enabled_numba expects a bool, but got int"):
        tk.backends.numba.enabled = 1
    with pytest.raises(AttributeError, match="Unknown attribute enable"):
        tk.backends.numba.enable = False


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_the_channels_last_pair_are_each_other_s_gradients(dims):
    """im2col and col2im with ``channels_last`` (what tk.jit's layout pass records) pass
    float64 gradcheck and gradgradcheck: each one's gradient is the other."""
    from tensorkit.ops._apply import apply

    kernel, stride, dilation = (2,) * dims, (2, 1, 1)[:dims], (1, 2, 1)[:dims]
    padding = ((1, 0), (0, 1), (1, 1))[:dims]
    attrs = {"kernel": kernel, "stride": stride, "padding": padding, "dilation": dilation}
    attrs |= {"batch_first": False, "channels_last": True}
    x = tk.randn(2, 3, *(5, 4, 3)[:dims], dtype=tk.float64, requires_grad=True)

    def windows(x):
        return apply(conv._IM2COL, x, **attrs)

    assert tk.autograd.gradcheck(windows, (x,))
    assert tk.autograd.gradgradcheck(windows, (x,))
    cols = windows(x).detach().requires_grad_()

    def summed(cols):
        return apply(conv._COL2IM, cols, size=tuple(x.shape[2:]), **attrs)

    assert tk.autograd.gradcheck(summed, (cols,))
    assert tk.autograd.gradgradcheck(summed, (cols,))
