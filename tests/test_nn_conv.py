"""Convolutions, transposed convolutions, unfold/fold and pad: values and gradients against
PyTorch, float64 gradcheck/gradgradcheck, PyTorch's errors, and the layer modules."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from harness import check_grads, check_torch

import tensorkit as tk
import tensorkit.nn as nn
import tensorkit.nn.functional as F  # noqa: N812
from tensorkit.nn.modules import conv, fold, padding, pooling

LAYERS = {name: getattr(m, name) for m in (conv, fold, padding, pooling) for name in m.__all__}

torch = pytest.importorskip("torch")
TF = torch.nn.functional

RNG = np.random.default_rng(0)


def randn(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


def bind(fn, **kwargs):
    """``fn`` with keyword options fixed, for check_torch / check_grads."""
    return lambda *args: fn(*args, **kwargs)


# ------------------------------------------------------------------------ convolutions
CONV2D_CASES = [
    {},
    {"stride": 2},
    {"stride": (2, 1), "padding": (1, 2)},
    {"padding": 1, "dilation": 2},
    {"padding": "same", "dilation": (2, 1)},
    {"padding": "valid", "stride": 3},
    {"groups": 2, "stride": 2, "padding": 1},
    {"groups": 4, "dilation": (1, 2), "padding": "same"},
]


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("options", CONV2D_CASES, ids=str)
@pytest.mark.parametrize("with_bias", [True, False])
def test_conv2d_matches_torch(options: dict, with_bias: bool) -> None:
    groups = options.get("groups", 1)
    x, w = randn(2, 4, 7, 6), randn(8, 4 // groups, 3, 2)
    arrays = (x, w, randn(8)) if with_bias else (x, w)
    check_torch(bind(F.conv2d, **options), bind(TF.conv2d, **options), *arrays)


@pytest.mark.parametrize(
    "options", [{}, {"stride": 2, "padding": 2}, {"dilation": 3, "groups": 2}, {"padding": "same"}]
)
def test_conv1d_matches_torch(options: dict) -> None:
    groups = options.get("groups", 1)
    arrays = randn(3, 4, 11), randn(6, 4 // groups, 3), randn(6)
    check_torch(bind(F.conv1d, **options), bind(TF.conv1d, **options), *arrays)


@pytest.mark.parametrize("options", [{}, {"stride": (1, 2, 2), "padding": 1, "groups": 2}])
def test_conv3d_matches_torch(options: dict) -> None:
    groups = options.get("groups", 1)
    arrays = randn(2, 2, 4, 5, 5), randn(4, 2 // groups, 2, 3, 2), randn(4)
    check_torch(bind(F.conv3d, **options), bind(TF.conv3d, **options), *arrays)


def test_conv_unbatched_float32_and_empty_batch() -> None:
    x, w, b = (a.astype(np.float32) for a in (randn(3, 6, 6), randn(5, 3, 3, 3), randn(5)))
    check_torch(F.conv2d, TF.conv2d, x, w, b, atol=1e-5, rtol=1e-4)
    empty = F.conv2d(tk.zeros(0, 3, 6, 6), tk.tensor(w))
    assert tuple(empty.shape) == (0, 5, 4, 4)


def test_conv_bias_is_added_while_laying_out_the_batch() -> None:
    # The bias joins the (channels, N * L) product while it is laid out as (N, C, *out): the
    # same values and gradients as torch, for groups, an empty batch and integer inputs.
    x, w, b = randn(3, 4, 5, 5), randn(6, 2, 3, 3), randn(6)
    check_torch(bind(F.conv2d, groups=2), bind(TF.conv2d, groups=2), x, w, b)
    x_empty = tk.zeros(0, 4, 5, 5, dtype=tk.float64, requires_grad=True)
    weight, bias = tk.tensor(w, requires_grad=True), tk.tensor(b, requires_grad=True)
    empty = F.conv2d(x_empty, weight, bias, groups=2)
    assert tuple(empty.shape) == (0, 6, 3, 3)
    empty.sum().backward()
    assert not bias.grad.numpy().any() and not weight.grad.numpy().any()
    ints = [RNG.integers(-3, 4, shape) for shape in ((2, 2, 4, 4), (3, 2, 2, 2), (3,))]
    got = F.conv2d(*(tk.tensor(a) for a in ints))
    np.testing.assert_array_equal(got.numpy(), TF.conv2d(*(torch.tensor(a) for a in ints)))


def test_conv_integer_inputs() -> None:
    x, w = RNG.integers(-3, 4, (1, 2, 5, 5)), RNG.integers(-3, 4, (3, 2, 3, 3))
    got = F.conv2d(tk.tensor(x), tk.tensor(w))
    expected = TF.conv2d(torch.tensor(x), torch.tensor(w))
    np.testing.assert_array_equal(got.numpy(), expected.numpy())


def test_conv2d_gradgradcheck() -> None:
    x, w, b = randn(2, 2, 5, 5), randn(4, 1, 3, 3), randn(4)
    check_grads(bind(F.conv2d, stride=2, dilation=2, padding=1, groups=2), x, w, b)
    check_grads(bind(F.conv2d, padding="same"), x, randn(3, 2, 2, 3), randn(3))


def test_conv1d_conv3d_gradcheck() -> None:
    check_grads(bind(F.conv1d, stride=2, padding=1), randn(2, 2, 6), randn(3, 2, 3), randn(3))
    check_grads(F.conv3d, randn(1, 2, 3, 3, 3), randn(2, 2, 2, 2, 2), gradgrad=False)


# --------------------------------------------------------------- transposed convolutions
CONV_TRANSPOSE2D_CASES = [
    {},
    {"stride": 2},
    {"stride": 2, "output_padding": 1, "padding": 1},
    {"stride": (2, 3), "output_padding": (1, 2), "dilation": (1, 2)},
    {"stride": 1, "dilation": 2, "output_padding": 1},
    {"groups": 2, "stride": 2, "padding": (0, 1)},
]


@pytest.mark.parametrize("options", CONV_TRANSPOSE2D_CASES, ids=str)
def test_conv_transpose2d_matches_torch(options: dict) -> None:
    groups = options.get("groups", 1)
    arrays = randn(2, 4, 5, 4), randn(4, 3, 3, 2), randn(3 * groups)
    check_torch(bind(F.conv_transpose2d, **options), bind(TF.conv_transpose2d, **options), *arrays)


@pytest.mark.parametrize("options", [{}, {"stride": 3, "padding": 1, "output_padding": 2}])
def test_conv_transpose1d_matches_torch(options: dict) -> None:
    arrays = randn(2, 3, 6), randn(3, 2, 4), randn(2)
    check_torch(bind(F.conv_transpose1d, **options), bind(TF.conv_transpose1d, **options), *arrays)
    unbatched = arrays[0][0], *arrays[1:]
    check_torch(
        bind(F.conv_transpose1d, **options), bind(TF.conv_transpose1d, **options), *unbatched
    )


def test_conv_transpose_gradgradcheck() -> None:
    options = {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2, "dilation": 2}
    check_grads(bind(F.conv_transpose2d, **options), randn(2, 2, 3, 3), randn(2, 2, 2, 3), randn(4))


def test_conv_transpose_is_the_input_gradient_of_conv() -> None:
    x = tk.tensor(randn(2, 3, 7, 7), requires_grad=True)
    w, g = tk.tensor(randn(4, 3, 3, 3)), tk.tensor(randn(2, 4, 3, 3))
    (grad,) = tk.autograd.grad(F.conv2d(x, w, stride=2), x, g)
    expected = F.conv_transpose2d(g, w, stride=2)
    np.testing.assert_allclose(grad.numpy(), expected.numpy(), atol=1e-12)


# ------------------------------------------------------------------------ unfold, fold
FOLD_CASES = [
    {"kernel_size": 2},
    {"kernel_size": (2, 3), "stride": 2, "padding": 1, "dilation": (1, 2)},
    {"kernel_size": 3, "stride": (1, 2), "padding": (2, 0)},
]


@pytest.mark.parametrize("options", FOLD_CASES, ids=str)
def test_unfold_fold_match_torch(options: dict) -> None:
    x = randn(2, 3, 6, 7)
    check_torch(bind(F.unfold, **options), bind(TF.unfold, **options), x)
    check_torch(bind(F.unfold, **options), bind(TF.unfold, **options), x[0])
    columns = TF.unfold(torch.tensor(x), **options).numpy()
    fold = {"output_size": (6, 7), **options}
    check_torch(bind(F.fold, **fold), bind(TF.fold, **fold), columns)
    check_torch(bind(F.fold, **fold), bind(TF.fold, **fold), columns[0])


def test_unfold_fold_gradgradcheck() -> None:
    options = {"kernel_size": 2, "stride": 2, "padding": 1, "dilation": 2}
    check_grads(bind(F.unfold, **options), randn(1, 2, 5, 4))
    check_grads(bind(F.fold, output_size=(5, 4), **options), randn(1, 8, 6))


# --------------------------------------------------------------------------------- pad
PAD_CASES = [
    ("constant", (1, 2)),
    ("constant", (-1, 2, 0, -2)),
    ("constant", (1, 1, 2, 0, 1, 1)),
    ("reflect", (2, 3)),
    ("reflect", (-1, 3)),
    ("reflect", (3, 0, 1, 2)),
    ("replicate", (4, 1)),
    ("replicate", (2, -1, 1, 3)),
    ("circular", (2, 3)),
    ("circular", (-1, 2, 1, -2)),
]


@pytest.mark.parametrize(("mode", "amounts"), PAD_CASES, ids=str)
def test_pad_matches_torch(mode: str, amounts: tuple) -> None:
    x = randn(2, 3, 4, 5) if len(amounts) > 2 else randn(2, 3, 5)
    check_torch(bind(F.pad, pad=amounts, mode=mode), bind(TF.pad, pad=amounts, mode=mode), x)


def test_pad_value_and_integer_input() -> None:
    x = randn(2, 3)
    check_torch(bind(F.pad, pad=(1, 2), value=3.5), bind(TF.pad, pad=(1, 2), value=3.5), x)
    ints = RNG.integers(0, 9, (2, 3, 4))
    got = F.pad(tk.tensor(ints), (1, 1), value=2.5)
    np.testing.assert_array_equal(got.numpy(), TF.pad(torch.tensor(ints), (1, 1), value=2.5))
    got = F.pad(tk.tensor(ints), (2, 1), mode="reflect")
    np.testing.assert_array_equal(got.numpy(), TF.pad(torch.tensor(ints), (2, 1), mode="reflect"))


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_gradgradcheck(mode: str) -> None:
    check_grads(bind(F.pad, pad=(2, -1, 1, 2), mode=mode), randn(1, 2, 3, 4))


# ------------------------------------------------------------------------------ errors
ERROR_CASES = [
    (
        lambda: F.conv2d(tk.zeros(2, 3), tk.zeros(3, 2, 3, 3)),
        "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [2, 3]",
    ),
    (
        lambda: F.conv1d(tk.zeros(2, 3, 4, 5), tk.zeros(3, 3, 3)),
        "Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of size: "
        "[2, 3, 4, 5]",
    ),
    (
        lambda: F.conv2d(tk.zeros(2, 4, 5, 5), tk.zeros(3, 2, 3, 3)),
        "Given groups=1, weight of size [3, 2, 3, 3], expected input[2, 4, 5, 5] to have 2 "
        "channels, but got 4 channels instead",
    ),
    (
        lambda: F.conv2d(tk.zeros(2, 4, 5, 5), tk.zeros(3, 2, 3, 3), groups=2),
        "Given groups=2, expected weight to be divisible by 2 at dimension 0, but got weight of "
        "size [3, 2, 3, 3] instead",
    ),
    (
        lambda: F.conv2d(tk.zeros(2, 4, 2, 2), tk.zeros(4, 4, 3, 3)),
        "Calculated padded input size per channel: (2 x 2). Kernel size: (3 x 3). Kernel size "
        "can't be greater than actual input size",
    ),
    (
        lambda: F.conv2d(tk.zeros(2, 4, 5, 5), tk.zeros(4, 4, 3, 3), dilation=3),
        "Calculated padded input size per channel: (5 x 5). Kernel size: (7 x 7).",
    ),
    (
        lambda: F.conv2d(tk.zeros(2, 4, 5, 5), tk.zeros(4, 4, 3, 3), padding="same", stride=2),
        "padding='same' is not supported for strided convolutions",
    ),
    (
        lambda: F.conv2d(tk.zeros(2, 4, 5, 5), tk.zeros(4, 4, 3, 3), padding="full"),
        "Invalid padding string: 'full'",
    ),
    (
        lambda: F.conv2d(tk.zeros(2, 4, 5, 5), tk.zeros(4, 4, 3, 3), stride=(1, 1, 1)),
        "expected stride to be a single integer value or a list of 2 values to match the "
        "convolution dimensions, but got stride=[1, 1, 1]",
    ),
    (
        lambda: F.conv2d(tk.zeros(2, 4, 5, 5), tk.zeros(4, 4, 3, 3), tk.zeros(3)),
        "Given weight of size [4, 4, 3, 3], expected bias to be 1-dimensional with 4 elements, "
        "but got bias of size [3] instead",
    ),
    (
        lambda: F.conv2d(tk.zeros(2, 4, 5, 5), tk.zeros(4, 4, 3, 3), stride=0),
        "non-positive stride is not supported",
    ),
    (
        lambda: F.conv2d(tk.zeros(2, 4, 5, 5), tk.zeros(4, 4, 3, 3), padding=-1),
        "negative padding is not supported",
    ),
    (
        lambda: F.conv2d(tk.zeros(2, 4, 5, 5), tk.zeros(4, 4, 3, 3), groups=0),
        "non-positive groups is not supported",
    ),
    (
        lambda: F.conv2d(tk.zeros(2, 4, 5, 5, dtype=tk.float64), tk.zeros(4, 4, 3, 3)),
        "Input type (tensorkit.float64) and weight type (tensorkit.float32) should be the same",
    ),
    (
        lambda: F.conv_transpose2d(tk.zeros(2, 4, 5, 5), tk.zeros(3, 2, 3, 3)),
        "Given transposed=1, weight of size [3, 2, 3, 3], expected input[2, 4, 5, 5] to have 3 "
        "channels, but got 4 channels instead",
    ),
    (
        lambda: F.conv_transpose2d(tk.zeros(2, 4, 5, 5), tk.zeros(4, 2, 3, 3), output_padding=1),
        "output padding must be smaller than either stride or dilation",
    ),
    (
        lambda: F.unfold(tk.zeros(1, 2, 3, 4, 5), 2),
        "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero "
        "dimensions for input, but got: [1, 2, 3, 4, 5]",
    ),
    (
        lambda: F.unfold(tk.zeros(2, 4, 5, 5), 7),
        "calculated shape of the array of sliding blocks as (-1, -1), but its components must "
        "be at least one.",
    ),
    (
        lambda: F.fold(tk.zeros(2, 12, 5), (4, 4), 2),
        "expected size of input's dimension 2 to match the calculated number of sliding blocks "
        "3 * 3 = 9, but got input.size(2)=5.",
    ),
    (
        lambda: F.fold(tk.zeros(2, 13, 9), (4, 4), 2),
        "Expected size of input's dimension 1 to be divisible by the product of kernel_size, but "
        "got input.size(1)=13 and kernel_size=(2, 2).",
    ),
    (lambda: F.pad(tk.zeros(2, 3), (1, 2, 3)), "Padding length must be divisible by 2"),
    (
        lambda: F.pad(tk.zeros(2, 4, 5), (5, 1), mode="reflect"),
        "Argument #4: Padding size should be less than the corresponding input dimension, but "
        "got: padding (5, 1) at dimension 2 of input [2, 4, 5]",
    ),
    (
        lambda: F.pad(tk.zeros(2, 4, 5), (6, 0), mode="circular"),
        "Padding value causes wrapping around more than once.",
    ),
    (
        lambda: F.pad(tk.zeros(2, 4, 5), (1, 1), mode="reflect", value=2),
        'Padding mode "reflect" doesn\'t take in value argument',
    ),
    (
        lambda: F.pad(tk.zeros(2, 4, 5), (0, -5), mode="replicate"),
        "input (W: 5) is too small. Calculated output W: 0",
    ),
]


@pytest.mark.parametrize(("call", "message"), ERROR_CASES)
def test_errors_match_torch(call, message: str) -> None:
    with pytest.raises(RuntimeError, match=re.escape(message)):
        call()


def test_pad_mode_errors() -> None:
    with pytest.raises(NotImplementedError, match="Padding size 2 is not supported for 4D input"):
        F.pad(tk.zeros(2, 4, 5, 5), (1, 1), mode="reflect")
    with pytest.raises(NotImplementedError, match="Unrecognised padding mode foo"):
        F.pad(tk.zeros(2, 4, 5), (1, 1), mode="foo")


# ----------------------------------------------------------------------------- modules
def copy_parameters(mine: nn.Module, theirs) -> None:
    for name, p in theirs.named_parameters():
        getattr(mine, name).data = tk.tensor(p.detach().numpy())


MODULE_CASES = [
    ("Conv1d", (4, 6, 3), {"stride": 2, "padding": 1, "bias": False}),
    ("Conv2d", (4, 6, (3, 2)), {"padding": "same", "dilation": 2, "groups": 2}),
    ("Conv2d", (4, 6, 3), {"padding": 1, "padding_mode": "reflect"}),
    ("Conv2d", (4, 6, 3), {"padding": (2, 1), "padding_mode": "replicate", "stride": 2}),
    ("Conv2d", (4, 6, 3), {"padding": "same", "padding_mode": "circular"}),
    ("Conv3d", (4, 2, 2), {"padding": 1}),
    ("ConvTranspose1d", (4, 6, 3), {"stride": 2, "output_padding": 1}),
    ("ConvTranspose2d", (4, 6, 3), {"stride": 2, "padding": 1, "groups": 2, "dilation": 2}),
]


def _module_input(name: str) -> np.ndarray:
    spatial = {"1d": (9,), "2d": (7, 8), "3d": (4, 5, 5)}[name[-2:]]
    return RNG.standard_normal((2, 4, *spatial)).astype(np.float32)


@pytest.mark.parametrize(("name", "args", "options"), MODULE_CASES, ids=str)
def test_conv_modules_match_torch(name: str, args: tuple, options: dict) -> None:
    mine, theirs = LAYERS[name](*args, **options), getattr(torch.nn, name)(*args, **options)
    assert repr(mine) == repr(theirs)
    assert [(n, tuple(p.shape)) for n, p in mine.named_parameters()] == [
        (n, tuple(p.shape)) for n, p in theirs.named_parameters()
    ]
    copy_parameters(mine, theirs)
    x = _module_input(name)
    check_torch(mine, theirs, x, atol=1e-5, rtol=1e-4)
    for n, p in theirs.named_parameters():
        np.testing.assert_allclose(getattr(mine, n).grad.numpy(), p.grad.numpy(), atol=1e-4)


def test_conv_transpose_output_size() -> None:
    mine, theirs = (
        LAYERS["ConvTranspose2d"](2, 3, 3, stride=2),
        torch.nn.ConvTranspose2d(2, 3, 3, stride=2),
    )
    copy_parameters(mine, theirs)
    x = randn(1, 2, 4, 4).astype(np.float32)
    got = mine(tk.tensor(x), output_size=[10, 9])
    expected = theirs(torch.tensor(x), output_size=[10, 9])
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), atol=1e-5)


def test_conv_default_initialization() -> None:
    """kaiming_uniform_(a=sqrt(5)) weights and U(-1/sqrt(fan_in), 1/sqrt(fan_in)) bias: both
    bounded by 1/sqrt(fan_in), with the variance of that uniform."""
    tk.manual_seed(0)
    conv = LAYERS["Conv2d"](16, 64, 5, groups=2)
    fan_in = 8 * 25
    bound = 1 / math.sqrt(fan_in)
    for p in (conv.weight, conv.bias):
        values = p.detach().numpy()
        assert values.dtype == np.float32
        assert np.abs(values).max() <= bound
    weights = conv.weight.detach().numpy()
    assert abs(weights.std() - bound / math.sqrt(3)) < 0.02 * bound
    transposed = LAYERS["ConvTranspose2d"](6, 4, 3)  # fan_in from weight dim 1: 4 * 9
    assert np.abs(transposed.weight.detach().numpy()).max() <= 1 / math.sqrt(36)
    assert tuple(transposed.weight.shape) == (6, 4, 3, 3)


def test_conv_module_errors() -> None:
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        LAYERS["Conv2d"](3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="out_channels must be divisible by groups"):
        LAYERS["Conv2d"](4, 3, 3, groups=2)
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        LAYERS["Conv2d"](4, 4, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match="padding='same' is not supported for strided"):
        LAYERS["Conv2d"](4, 4, 3, padding="same", stride=2)
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported'):
        LAYERS["ConvTranspose2d"](4, 4, 3, padding_mode="reflect")


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("ZeroPad2d", ((1, 2, 0, 3),)),
        ("ConstantPad1d", (2, 1.5)),
        ("ConstantPad2d", ((1, -1, 2, 0), -2.0)),
        ("ReflectionPad2d", (2,)),
        ("ReflectionPad2d", ((1, 0, 2, 1),)),
    ],
    ids=str,
)
def test_padding_modules_match_torch(name: str, args: tuple) -> None:
    mine, theirs = LAYERS[name](*args), getattr(torch.nn, name)(*args)
    assert repr(mine) == repr(theirs)
    check_torch(mine, theirs, randn(2, 3, 4, 5))


@pytest.mark.parametrize(
    "options",
    [{"kernel_size": 2}, {"kernel_size": (2, 3), "stride": 2, "padding": 1, "dilation": 2}],
)
def test_fold_modules_match_torch(options: dict) -> None:
    unfold, unfold_torch = LAYERS["Unfold"](**options), torch.nn.Unfold(**options)
    assert repr(unfold) == repr(unfold_torch)
    x = randn(2, 3, 6, 7)
    check_torch(unfold, unfold_torch, x)
    fold, fold_torch = LAYERS["Fold"]((6, 7), **options), torch.nn.Fold((6, 7), **options)
    assert repr(fold) == repr(fold_torch)
    check_torch(fold, fold_torch, unfold_torch(torch.tensor(x)).numpy())


def test_conv_network_trains_under_the_tape() -> None:
    """A small CNN runs forward and backward while a Tape records it."""
    model = nn.Sequential(
        LAYERS["Conv2d"](1, 4, 3, padding=1),
        nn.ReLU(),
        LAYERS["MaxPool2d"](2),
        LAYERS["Conv2d"](4, 2, 3),
    )
    x = tk.tensor(randn(2, 1, 8, 8).astype(np.float32))
    with tk.autograd.Tape() as tape:
        model(x).square().mean().backward()
    names = {entry.name for entry in tape}
    assert {"im2col", "col2im", "window_argmax", "max_pool", "max_pool_backward"} <= names
    assert all(p.grad is not None for p in model.parameters())
