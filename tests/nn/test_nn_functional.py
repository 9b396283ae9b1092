"""tk.nn.functional against PyTorch (values and gradients) and gradcheck/gradgradcheck."""

from __future__ import annotations

import numpy as np
import pytest
from harness import check_grads, check_torch
from nn_parity import compare_modules

import tensorkit as tk
import tensorkit.nn as nn
import tensorkit.nn.functional as F  # noqa: N812

# Inputs that include the kinks (0, +-1, +-3, 6) and large magnitudes (overflow guards).
SPECIAL = np.array([-30.0, -6.0, -3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0, 6.0, 25.0, 800.0])
RNG = np.random.default_rng(0)
SMOOTH = RNG.standard_normal((3, 4)) * 2  # away from kinks, for gradcheck

ACTIVATIONS = {
    "relu": ({}, {}),
    "relu6": ({}, {}),
    "hardtanh": ({"min_val": -0.5, "max_val": 1.0}, {"min_val": -0.5, "max_val": 1.0}),
    "elu": ({"alpha": 0.7}, {"alpha": 0.7}),
    "selu": ({}, {}),
    "celu": ({"alpha": 2.0}, {"alpha": 2.0}),
    "leaky_relu": ({"negative_slope": 0.2}, {"negative_slope": 0.2}),
    "gelu": ({}, {}),
    "gelu_tanh": ({"approximate": "tanh"}, {"approximate": "tanh"}),
    "logsigmoid": ({}, {}),
    "hardshrink": ({"lambd": 1.0}, {"lambd": 1.0}),
    "softshrink": ({"lambd": 0.5}, {"lambd": 0.5}),
    "tanhshrink": ({}, {}),
    "softsign": ({}, {}),
    "softplus": ({}, {}),
    "softplus_beta": ({"beta": 2.0, "threshold": 5.0}, {"beta": 2.0, "threshold": 5.0}),
    "sigmoid": ({}, {}),
    "tanh": ({}, {}),
    "hardsigmoid": ({}, {}),
    "silu": ({}, {}),
    "mish": ({}, {}),
    "hardswish": ({}, {}),
    "threshold": ({"threshold": 0.5, "value": -2.0}, {"threshold": 0.5, "value": -2.0}),
}


def _function(lib, name):
    base = name.split("_")[0] if name in ("gelu_tanh", "softplus_beta") else name
    return getattr(lib, base)


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_activation_matches_torch_including_kinks(name, dtype):
    torch_f = pytest.importorskip("torch.nn.functional")
    tk_kwargs, torch_kwargs = ACTIVATIONS[name]
    x = SPECIAL.astype(dtype)
    check_torch(
        lambda t: _function(F, name)(t, **tk_kwargs),
        lambda t: _function(torch_f, name)(t, **torch_kwargs),
        x,
        atol=1e-6,
        rtol=1e-5 if dtype == np.float32 else 1e-7,
    )


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_gradgradcheck(name):
    tk_kwargs, _ = ACTIVATIONS[name]
    check_grads(lambda t: _function(F, name)(t, **tk_kwargs), SMOOTH)


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_family(name, dim):
    torch_f = pytest.importorskip("torch.nn.functional")
    x = RNG.standard_normal((3, 4, 2))
    x[0, 0, 0] = 1000.0  # no overflow
    check_torch(lambda t: getattr(F, name)(t, dim), lambda t: getattr(torch_f, name)(t, dim), x)
    check_grads(lambda t: getattr(F, name)(t, dim), RNG.standard_normal((2, 3)))


def test_softmax_with_minus_inf_and_dtype_and_implicit_dim():
    torch = pytest.importorskip("torch")
    x = np.array([[0.0, -np.inf, 1.0], [-np.inf, -np.inf, 2.0]], dtype=np.float32)
    check_torch(lambda t: F.softmax(t, 1), lambda t: torch.softmax(t, 1), x)
    out = F.log_softmax(tk.tensor(x), 1, dtype=tk.float64)
    assert out.dtype == tk.float64
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        implicit = F.softmax(tk.tensor(x))
    expected = torch.softmax(torch.tensor(x), 1).numpy()
    np.testing.assert_allclose(implicit.numpy(), expected, rtol=1e-6)  # float32: a few ulps


def test_softmin_casts_before_negating_and_all_three_warn_at_the_caller():
    torch = pytest.importorskip("torch")
    x = np.array([1, 2, 250], dtype=np.uint8)  # negated as uint8 it would wrap around
    got = F.softmin(tk.tensor(x), 0, dtype=tk.float32)
    expected = torch.nn.functional.softmin(torch.tensor(x), 0, dtype=torch.float32)
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6)
    for name in ("softmax", "log_softmax", "softmin"):
        with pytest.warns(UserWarning, match=f"Implicit dimension choice for {name}") as caught:
            getattr(F, name)(tk.ones(3))
        assert caught[0].filename == __file__


def test_prelu_and_glu():
    torch_f = pytest.importorskip("torch.nn.functional")
    x = RNG.standard_normal((2, 3, 4))
    x[0, 0, 0] = 0.0
    w = np.array([0.1, 0.2, 0.3])
    check_torch(F.prelu, torch_f.prelu, x, w)
    check_torch(F.prelu, torch_f.prelu, x, np.array([0.25]))
    check_grads(F.prelu, RNG.standard_normal((2, 3, 2)), w)
    with pytest.raises(RuntimeError, match="Found parameter numbers = 2 and channel size = 3"):
        F.prelu(tk.tensor(x), tk.ones(2, dtype=tk.float64))
    check_torch(lambda t: F.glu(t, 1), lambda t: torch_f.glu(t, 1), RNG.standard_normal((2, 4)))
    check_grads(lambda t: F.glu(t, -1), RNG.standard_normal((2, 4)))
    with pytest.raises(RuntimeError, match="Halving dimension must be even"):
        F.glu(tk.ones(2, 3))


def test_inplace_activations_write_into_the_input_and_keep_gradients():
    torch = pytest.importorskip("torch")
    data = RNG.standard_normal(5)
    x = tk.tensor(data, requires_grad=True)
    h = x * 1.0
    out = F.elu(h, inplace=True)
    assert out is h
    out.sum().backward()
    tx = torch.tensor(data, requires_grad=True)
    torch.nn.functional.elu(tx * 1.0, inplace=True).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())
    leaf = tk.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        F.relu(leaf, inplace=True)


def test_gelu_rejects_unknown_approximation():
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        F.gelu(tk.ones(1), approximate="erf")


# -------------------------------------------------------------------------------- linear
def test_linear_and_bilinear():
    torch_f = pytest.importorskip("torch.nn.functional")
    x, w, b = RNG.standard_normal((2, 5, 3)), RNG.standard_normal((4, 3)), RNG.standard_normal(4)
    check_torch(F.linear, torch_f.linear, x, w, b)
    check_torch(F.linear, torch_f.linear, RNG.standard_normal(3), w)
    check_grads(F.linear, RNG.standard_normal((2, 3)), w, b)
    x1, x2 = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 2))
    wb, bb = RNG.standard_normal((4, 3, 2)), RNG.standard_normal(4)
    check_torch(F.bilinear, torch_f.bilinear, x1, x2, wb, bb)
    check_grads(F.bilinear, x1, x2, wb, bb)


def test_linear_shape_error_names_both_shapes():
    with pytest.raises(
        RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(14x3 and 4x5\)"
    ):
        F.linear(tk.ones(2, 7, 3), tk.ones(5, 4))
    with pytest.raises(
        RuntimeError, match=r"size mismatch, got input \(2\), mat \(2x3\), vec \(4\)"
    ):
        F.linear(tk.ones(2, 3), tk.ones(4))
    with pytest.raises(RuntimeError, match="need to be at least 1D, but they are 0D and 2D"):
        F.linear(tk.tensor(1.0), tk.ones(4, 3))
    with pytest.raises(RuntimeError, match="input1 size does not match weight size: got 3"):
        F.bilinear(tk.ones(2, 3), tk.ones(2, 2), tk.ones(4, 5, 2))


# ------------------------------------------------------------------------- normalization
def test_batch_norm_training_updates_running_stats_like_torch():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((4, 3, 2))
    w, b = RNG.standard_normal(3), RNG.standard_normal(3)
    rm, rv = tk.zeros(3, dtype=tk.float64), tk.ones(3, dtype=tk.float64)
    trm, trv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    check_torch(
        lambda t, w_, b_: F.batch_norm(t, rm, rv, w_, b_, training=True, momentum=0.3),
        lambda t, w_, b_: torch.nn.functional.batch_norm(t, trm, trv, w_, b_, True, 0.3),
        x,
        w,
        b,
    )
    np.testing.assert_allclose(rm.numpy(), trm.numpy())
    np.testing.assert_allclose(rv.numpy(), trv.numpy())
    check_torch(
        lambda t: F.batch_norm(t, rm, rv, training=False),
        lambda t: torch.nn.functional.batch_norm(t, trm, trv, training=False),
        x,
    )
    check_grads(lambda t, w_, b_: F.batch_norm(t, None, None, w_, b_, True), x, w, b)


def test_batch_norm_errors():
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        F.batch_norm(tk.ones(1, 5), tk.zeros(5), tk.ones(5), training=True)
    with pytest.raises(RuntimeError, match="running_mean should contain 5 elements not 4"):
        F.batch_norm(tk.ones(2, 5), tk.zeros(4), tk.ones(4), training=True)


@pytest.mark.parametrize("affine", [False, True])
def test_layer_group_instance_rms_norm(affine):
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    x = RNG.standard_normal((2, 4, 3))
    shape_w = RNG.standard_normal((4, 3)) if affine else None
    shape_b = RNG.standard_normal((4, 3)) if affine else None
    channel_w = RNG.standard_normal(4) if affine else None
    channel_b = RNG.standard_normal(4) if affine else None

    check_torch(
        lambda t, *p: F.layer_norm(t, (4, 3), *p),
        lambda t, *p: tf.layer_norm(t, (4, 3), *p),
        *[a for a in (x, shape_w, shape_b) if a is not None],
    )
    check_torch(
        lambda t, *p: F.group_norm(t, 2, *p),
        lambda t, *p: tf.group_norm(t, 2, *p),
        *[a for a in (x, channel_w, channel_b) if a is not None],
    )
    check_torch(
        lambda t, *p: F.instance_norm(t, None, None, *p),
        lambda t, *p: tf.instance_norm(t, None, None, *p),
        *[a for a in (x, channel_w, channel_b) if a is not None],
    )
    check_torch(
        lambda t, *p: F.rms_norm(t, [3], *p),
        lambda t, *p: tf.rms_norm(t, [3], *p),
        *[a for a in (x, RNG.standard_normal(3) if affine else None) if a is not None],
    )


def test_norm_gradgradchecks():
    x = RNG.standard_normal((2, 4, 3))
    w, b = RNG.standard_normal(4), RNG.standard_normal(4)
    check_grads(lambda t: F.layer_norm(t, [3]), x)
    check_grads(lambda t, w_, b_: F.group_norm(t, 2, w_, b_), x, w, b)
    check_grads(lambda t, w_, b_: F.instance_norm(t, weight=w_, bias=b_), x, w, b)
    check_grads(lambda t: F.rms_norm(t, [3], eps=1e-6), x)
    check_grads(lambda t: F.normalize(t, dim=1), x)


def test_instance_norm_running_stats_and_errors():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((3, 2, 5))
    rm, rv = tk.zeros(2, dtype=tk.float64), tk.ones(2, dtype=tk.float64)
    trm, trv = torch.zeros(2, dtype=torch.float64), torch.ones(2, dtype=torch.float64)
    F.instance_norm(tk.tensor(x), rm, rv, momentum=0.2)
    torch.nn.functional.instance_norm(torch.tensor(x), trm, trv, momentum=0.2)
    np.testing.assert_allclose(rm.numpy(), trm.numpy())
    np.testing.assert_allclose(rv.numpy(), trv.numpy())
    with pytest.raises(ValueError, match="Expected more than 1 spatial element when training"):
        F.instance_norm(tk.ones(2, 3, 1))
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[4\], expected input"):
        F.layer_norm(tk.ones(2, 3), [4])
    with pytest.raises(RuntimeError, match="divisible by num_groups, but got input of shape"):
        F.group_norm(tk.ones(2, 5, 3), 2)


def test_normalize_matches_torch():
    torch_f = pytest.importorskip("torch.nn.functional")
    x = RNG.standard_normal((3, 4))
    x[1] = 0.0
    check_torch(F.normalize, torch_f.normalize, x)
    check_torch(
        lambda t: F.normalize(t, p=1.0, dim=0), lambda t: torch_f.normalize(t, p=1.0, dim=0), x
    )


# ---------------------------------------------------------------------- dropout
def test_dropout_statistics_scaling_and_modes():
    tk.manual_seed(0)
    x = tk.ones(200, 50)
    out = F.dropout(x, 0.3)
    kept = out.numpy() != 0
    assert abs(kept.mean() - 0.7) < 0.02
    np.testing.assert_allclose(out.numpy()[kept], 1 / 0.7, rtol=1e-6)
    assert F.dropout(x, 0.3, training=False) is x
    assert not F.dropout(x, 1.0).any()
    tk.manual_seed(1)
    first = F.dropout(x, 0.5)
    tk.manual_seed(1)
    np.testing.assert_array_equal(first.numpy(), F.dropout(x, 0.5).numpy())
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got"):
        F.dropout(x, 1.5)


def test_dropout_gradient_uses_the_same_mask():
    x = tk.randn(20, 30, requires_grad=True)
    out = F.dropout(x, 0.4)
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), (out.detach() / x.detach()).numpy(), rtol=1e-5)


def test_channel_dropout_zeroes_whole_channels():
    tk.manual_seed(3)
    out = F.dropout2d(tk.ones(8, 16, 3, 3), 0.5).numpy()
    per_channel = out.reshape(8, 16, -1)
    assert np.all((per_channel == 0).all(-1) | (per_channel == 2.0).all(-1))
    out1 = F.dropout1d(tk.ones(4, 6, 5), 0.5).numpy()
    assert np.all((out1 == 0).all(-1) | (out1 == 2.0).all(-1))
    assert F.dropout3d(tk.ones(2, 3, 2, 2, 2), 0.5).shape == (2, 3, 2, 2, 2)
    with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
        F.dropout2d(tk.ones(2, 3, 4))
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input"):
        F.dropout1d(tk.ones(2))


# ----------------------------------------------------------------- embedding, one_hot
def test_embedding_padding_idx_and_scale_grad_by_freq_match_torch():
    torch_f = pytest.importorskip("torch.nn.functional")
    idx = np.array([[0, 2, 1], [2, 2, 3]])
    weight = RNG.standard_normal((4, 3))
    check_torch(
        lambda i, w: F.embedding(i, w, padding_idx=2),
        lambda i, w: torch_f.embedding(i, w, padding_idx=2),
        idx,
        weight,
    )
    check_torch(
        lambda i, w: F.embedding(i, w, scale_grad_by_freq=True),
        lambda i, w: torch_f.embedding(i, w, scale_grad_by_freq=True),
        idx,
        weight,
    )
    check_grads(lambda w: F.embedding(tk.tensor(idx), w), weight)


def test_embedding_max_norm_renormalizes_looked_up_rows():
    torch = pytest.importorskip("torch")
    weight = RNG.standard_normal((5, 3)) * 3
    mine, theirs = tk.tensor(weight), torch.tensor(weight)
    idx = np.array([0, 3, 3])
    out = F.embedding(tk.tensor(idx), mine, max_norm=1.0)
    expected = torch.nn.functional.embedding(torch.tensor(idx), theirs, max_norm=1.0)
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-6)
    np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-6)


def test_embedding_errors():
    with pytest.raises(RuntimeError, match="'indices' to have one of the following scalar types"):
        F.embedding(tk.tensor([0.0, 1.0]), tk.ones(3, 2))
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(tk.tensor([0, 3]), tk.ones(3, 2))


# ------------------------------------------------------------------------ embedding_bag
BAG_INPUT = np.array([0, 2, 1, 5, 5, 3, 0, 4])
BAG_OFFSETS = np.array([0, 2, 2, 5])


def _bag_case(lib, flat, include_last_offset):
    """Bags of BAG_INPUT as 1-D input with offsets (with the CSR end when asked) or 2-D."""
    if flat:
        offsets = np.append(BAG_OFFSETS, len(BAG_INPUT)) if include_last_offset else BAG_OFFSETS
        return lib.tensor(BAG_INPUT), lib.tensor(offsets)
    return lib.tensor(BAG_INPUT.reshape(2, 4)), None


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 5, -1])
@pytest.mark.parametrize(("flat", "last"), [(True, False), (True, True), (False, False)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_embedding_bag_matches_torch(mode, padding_idx, flat, last, dtype):
    torch = pytest.importorskip("torch")
    weight = RNG.standard_normal((6, 3)).astype(dtype)
    kwargs = {"mode": mode, "padding_idx": padding_idx, "include_last_offset": last}
    (i_tk, o_tk), (i_torch, o_torch) = _bag_case(tk, flat, last), _bag_case(torch, flat, last)
    check_torch(
        lambda w: F.embedding_bag(i_tk, w, o_tk, **kwargs),
        lambda w: torch.nn.functional.embedding_bag(i_torch, w, o_torch, **kwargs),
        weight,
    )


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_embedding_bag_scale_grad_by_freq_and_max_norm_match_torch(mode):
    torch = pytest.importorskip("torch")
    (i_tk, o_tk), (i_torch, o_torch) = _bag_case(tk, True, False), _bag_case(torch, True, False)
    bag_of = torch.tensor([0, 0, 2, 2, 2, 3, 3, 3])
    sizes = torch.tensor([2.0, 1.0, 3.0, 3.0]).double().unsqueeze(1) if mode == "mean" else 1.0

    def reference(w):
        # torch's embedding_bag divides by the wrong index's count (torch 2.13); F.embedding
        # scales each row's gradient by its own frequency, as the documentation says.
        rows = torch.nn.functional.embedding(i_torch, w, scale_grad_by_freq=True)
        return torch.zeros(4, 3, dtype=w.dtype).index_add(0, bag_of, rows) / sizes

    check_torch(
        lambda w: F.embedding_bag(i_tk, w, o_tk, mode=mode, scale_grad_by_freq=True),
        reference,
        RNG.standard_normal((6, 3)),
    )
    weight = RNG.standard_normal((6, 3)) * 3
    mine, theirs = tk.tensor(weight), torch.tensor(weight)
    out = F.embedding_bag(i_tk, mine, o_tk, max_norm=1.0, norm_type=3.0, mode=mode)
    expected = torch.nn.functional.embedding_bag(
        i_torch, theirs, o_torch, max_norm=1.0, norm_type=3.0, mode=mode
    )
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-6)
    np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-6)


def test_embedding_bag_per_sample_weights_match_torch():
    torch = pytest.importorskip("torch")
    (i_tk, o_tk), (i_torch, o_torch) = _bag_case(tk, True, False), _bag_case(torch, True, False)
    check_torch(
        lambda w, p: F.embedding_bag(i_tk, w, o_tk, mode="sum", per_sample_weights=p),
        lambda w, p: torch.nn.functional.embedding_bag(
            i_torch, w, o_torch, mode="sum", per_sample_weights=p, padding_idx=None
        ),
        RNG.standard_normal((6, 3)),
        RNG.standard_normal(8),
    )
    check_torch(
        lambda w, p: F.embedding_bag(
            tk.tensor([[1, 0], [2, 2]]), w, mode="sum", per_sample_weights=p
        ),
        lambda w, p: torch.nn.functional.embedding_bag(
            torch.tensor([[1, 0], [2, 2]]), w, mode="sum", per_sample_weights=p
        ),
        RNG.standard_normal((3, 2)).astype(np.float32),
        RNG.standard_normal((2, 2)).astype(np.float32),
    )


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_gradcheck(mode):
    inputs, offsets = tk.tensor(BAG_INPUT), tk.tensor(BAG_OFFSETS)
    weight = RNG.standard_normal((6, 3))
    check_grads(lambda w: F.embedding_bag(inputs, w, offsets, mode=mode, padding_idx=3), weight)
    check_grads(
        lambda w, p: F.embedding_bag(inputs, w, offsets, mode="sum", per_sample_weights=p),
        weight,
        RNG.standard_normal(8),
    )


def test_embedding_bag_empty_and_int32():
    out = F.embedding_bag(tk.tensor([0, 1], dtype=tk.int32), tk.ones(3, 2), tk.tensor([0, 2, 2]))
    assert out.tolist() == [[1.0, 1.0], [0.0, 0.0], [0.0, 0.0]]
    empty = tk.tensor([], dtype=tk.int64)
    assert F.embedding_bag(empty, tk.ones(3, 2), tk.tensor([0, 0]), mode="max").shape == (2, 2)
    assert F.embedding_bag(tk.tensor([1]), tk.ones(3, 2), empty).shape == (0, 2)


def test_embedding_bag_errors():
    w, idx, offsets = tk.ones(4, 3), tk.tensor([0, 1, 2, 3]), tk.tensor([0, 2])
    with pytest.raises(ValueError, match=r"If per_sample_weights \(tensorkit.Size\(\[2\]\)\)"):
        F.embedding_bag(tk.tensor([[0, 1]]), w, mode="sum", per_sample_weights=tk.ones(2))
    with pytest.raises(
        ValueError, match="weight has to be a 2D Tensor, but got Tensor of dimension 1"
    ):
        F.embedding_bag(idx, tk.ones(3), offsets)
    with pytest.raises(ValueError, match="if input is 2D, then offsets has to be None"):
        F.embedding_bag(tk.tensor([[0, 1]]), w, offsets)
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        F.embedding_bag(idx, w)
    with pytest.raises(ValueError, match=r"offsets has to be a 1D Tensor$"):
        F.embedding_bag(idx, w, tk.tensor([[0]]))
    with pytest.raises(ValueError, match="input has to be 1D or 2D Tensor, but got Tensor of dim"):
        F.embedding_bag(tk.tensor([[[0]]]), w)
    with pytest.raises(ValueError, match="mode has to be one of sum, mean or max"):
        F.embedding_bag(idx, w, offsets, mode="min")
    with pytest.raises(ValueError, match="max mode does not support scaling the gradient"):
        F.embedding_bag(idx, w, offsets, mode="max", scale_grad_by_freq=True)
    with pytest.raises(ValueError, match="max mode does not support sparse weights"):
        F.embedding_bag(idx, w, offsets, mode="max", sparse=True)
    with pytest.raises(
        NotImplementedError, match=r"only supported for mode='sum' \(got mode='mean'\)"
    ):
        F.embedding_bag(idx, w, offsets, per_sample_weights=tk.ones(4))
    with pytest.raises(RuntimeError, match="'weight' to have the same type as tensor for argument"):
        F.embedding_bag(idx, w, offsets, mode="sum", per_sample_weights=tk.ones(4).double())
    with pytest.raises(RuntimeError, match="'indices' to have one of the following scalar types"):
        F.embedding_bag(idx.float(), w, offsets)
    with pytest.raises(RuntimeError, match="-4 through 3, but got 4"):
        F.embedding_bag(idx, w, offsets, padding_idx=4)
    with pytest.raises(RuntimeError, match=r"offsets\[0\] has to be 0, i\.e\., the first sequence"):
        F.embedding_bag(idx, w, tk.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="can not be greater than input's length 4 but got"):
        F.embedding_bag(idx, w, tk.tensor([0, 5]))
    with pytest.raises(RuntimeError, match=r"Index 1 of input takes value 4 which is not in the"):
        F.embedding_bag(tk.tensor([[0, 4]]), w)


def test_embedding_bag_module_matches_torch_and_prints_like_it():
    torch = pytest.importorskip("torch")
    idx = BAG_INPUT.reshape(2, 4)
    for kwargs in ({}, {"mode": "max", "padding_idx": 2}, {"mode": "sum", "max_norm": 1.0}):
        compare_modules(nn.EmbeddingBag(6, 3, **kwargs), torch.nn.EmbeddingBag(6, 3, **kwargs), idx)
    bag = nn.EmbeddingBag(6, 3, mode="sum", include_last_offset=True)
    out = bag(tk.tensor([1, 2, 3]), tk.tensor([0, 1, 3]), tk.ones(3))
    np.testing.assert_allclose(out.detach().numpy()[1], (bag.weight[2] + bag.weight[3]).tolist())
    assert repr(nn.EmbeddingBag(4, 3)) == "EmbeddingBag(4, 3, mode='mean')"
    full = nn.EmbeddingBag(4, 3, 1.0, 3.0, True, "sum", include_last_offset=True, padding_idx=-1)
    assert repr(full) == (
        "EmbeddingBag(4, 3, max_norm=1.0, norm_type=3.0, scale_grad_by_freq=True, mode='sum', "
        "padding_idx=3)"
    )
    assert full.weight[3].tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(AssertionError, match="padding_idx must be within num_embeddings"):
        nn.EmbeddingBag(4, 3, padding_idx=4)
    with pytest.raises(AssertionError, match="Shape of weight does not match"):
        nn.EmbeddingBag(4, 3, _weight=tk.ones(2, 2))


def test_embedding_bag_from_pretrained():
    weights = tk.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    frozen = nn.EmbeddingBag.from_pretrained(weights, mode="max", padding_idx=2)
    assert not frozen.weight.requires_grad
    assert repr(frozen) == "EmbeddingBag(3, 2, mode='max', padding_idx=2)"
    assert frozen(tk.tensor([[0, 1, 2]])).tolist() == [[3.0, 4.0]]
    assert nn.EmbeddingBag.from_pretrained(weights, freeze=False).weight.requires_grad
    with pytest.raises(AssertionError, match="Embeddings parameter is expected to be 2-dim"):
        nn.EmbeddingBag.from_pretrained(tk.ones(3))


def test_one_hot():
    torch_f = pytest.importorskip("torch.nn.functional")
    import torch

    labels = np.array([[0, 2], [1, 3]])
    expected = torch_f.one_hot(torch.tensor(labels)).numpy()
    got = F.one_hot(tk.tensor(labels))
    assert got.dtype == tk.int64
    np.testing.assert_array_equal(got.numpy(), expected)
    assert F.one_hot(tk.tensor([1]), 5).shape == (1, 5)
    with pytest.raises(RuntimeError, match="one_hot is only applicable to index tensor"):
        F.one_hot(tk.tensor([0.0]))
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes"):
        F.one_hot(tk.tensor([3]), 2)


# ------------------------------------------------------------------------- attention
@pytest.mark.parametrize("mask", ["none", "bool", "float", "causal"])
def test_scaled_dot_product_attention_matches_torch(mask):
    torch = pytest.importorskip("torch")
    q = RNG.standard_normal((2, 3, 4, 5))
    k = RNG.standard_normal((2, 3, 6, 5))
    v = RNG.standard_normal((2, 3, 6, 2))
    bool_mask = RNG.random((4, 6)) > 0.3
    bool_mask[:, 0] = True
    float_mask = RNG.standard_normal((4, 6))

    def call(fn, lib):
        def run(q_, k_, v_):
            if mask == "bool":
                return fn(q_, k_, v_, attn_mask=lib.tensor(bool_mask))
            if mask == "float":
                return fn(q_, k_, v_, attn_mask=lib.tensor(float_mask), scale=0.3)
            return fn(q_, k_, v_, is_causal=mask == "causal")

        return run

    check_torch(
        call(F.scaled_dot_product_attention, tk),
        call(torch.nn.functional.scaled_dot_product_attention, torch),
        q,
        k,
        v,
    )


def test_attention_grouped_query_heads_and_gradgradcheck():
    torch = pytest.importorskip("torch")
    q = RNG.standard_normal((1, 4, 3, 2))
    k = RNG.standard_normal((1, 2, 3, 2))
    v = RNG.standard_normal((1, 2, 3, 2))
    check_torch(
        lambda *t: F.scaled_dot_product_attention(*t, enable_gqa=True),
        lambda *t: torch.nn.functional.scaled_dot_product_attention(*t, enable_gqa=True),
        q,
        k,
        v,
    )
    check_grads(
        lambda *t: F.scaled_dot_product_attention(*t, is_causal=True),
        q[:, :2],
        k,
        v,
    )
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set"):
        F.scaled_dot_product_attention(
            tk.tensor(q), tk.tensor(q), tk.tensor(q), attn_mask=tk.ones(3, 3), is_causal=True
        )


def test_attention_dropout_is_random_but_seeded():
    q = tk.randn(1, 4, 3)
    tk.manual_seed(5)
    first = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    tk.manual_seed(5)
    second = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    np.testing.assert_array_equal(first.numpy(), second.numpy())


# ------------------------------------------------------- distances and pixel shuffle
DISTANCE_CASES = [
    ("cosine_similarity", {}, (3, 4), (3, 4)),
    ("cosine_similarity", {"dim": 0, "eps": 1e-4}, (4, 1, 3), (4, 2, 1)),
    ("cosine_similarity", {"dim": -1}, (2, 5), (5,)),
    ("pairwise_distance", {}, (3, 4), (3, 4)),
    ("pairwise_distance", {"p": 1.0, "eps": 1e-3, "keepdim": True}, (2, 3, 4), (3, 4)),
    ("pairwise_distance", {"p": 3.0}, (4,), (2, 4)),
]


@pytest.mark.parametrize("name, kwargs, shape1, shape2", DISTANCE_CASES)
def test_distances_match_torch(name, kwargs, shape1, shape2):
    torch_f = pytest.importorskip("torch.nn.functional")
    x1, x2 = RNG.standard_normal(shape1), RNG.standard_normal(shape2)
    check_torch(
        lambda a, b: getattr(F, name)(a, b, **kwargs),
        lambda a, b: getattr(torch_f, name)(a, b, **kwargs),
        x1,
        x2,
    )


@pytest.mark.parametrize("name, kwargs, shape1, shape2", DISTANCE_CASES)
def test_distance_gradgradchecks(name, kwargs, shape1, shape2):
    x1, x2 = RNG.standard_normal(shape1), RNG.standard_normal(shape2)
    check_grads(lambda a, b: getattr(F, name)(a, b, **kwargs), x1, x2)


def test_cosine_similarity_of_tiny_vectors_clamps_like_torch():
    torch_f = pytest.importorskip("torch.nn.functional")
    x1, x2 = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    x1[0] = 0.0
    x1[1] = [1e-10, 0.0, -2e-10, 0.0]
    check_torch(F.cosine_similarity, torch_f.cosine_similarity, x1, x2, rtol=1e-6)


def test_distance_errors():
    with pytest.raises(
        RuntimeError,
        match=r"The size of tensor a \(3\) must match the size of tensor b \(4\) at "
        r"non-singleton dimension 1$",
    ):
        F.cosine_similarity(tk.ones(2, 3), tk.ones(2, 4))
    with pytest.raises(RuntimeError, match=r"size of tensor a \(3\) must match .* \(4\)"):
        F.pairwise_distance(tk.ones(2, 3), tk.ones(2, 4))
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of"):
        F.cosine_similarity(tk.ones(2, 3), tk.ones(2, 3), dim=2)


SHUFFLE_CASES = [
    ("pixel_shuffle", 2, (2, 8, 3, 4)),
    ("pixel_shuffle", 3, (9, 2, 2)),
    ("pixel_shuffle", 1, (2, 3, 2, 2)),
    ("pixel_unshuffle", 2, (2, 3, 4, 6)),
    ("pixel_unshuffle", 2, (2, 2, 1, 4, 2)),
]


@pytest.mark.parametrize("name, factor, shape", SHUFFLE_CASES)
def test_pixel_shuffle_matches_torch(name, factor, shape):
    torch_f = pytest.importorskip("torch.nn.functional")
    x = RNG.standard_normal(shape)
    check_torch(
        lambda t: getattr(F, name)(t, factor), lambda t: getattr(torch_f, name)(t, factor), x
    )
    check_grads(lambda t: getattr(F, name)(t, factor), x)


def test_pixel_shuffle_round_trip_and_integers():
    x = tk.arange(2 * 12 * 2 * 3).reshape(2, 12, 2, 3)
    assert F.pixel_unshuffle(F.pixel_shuffle(x, 2), 2).tolist() == x.tolist()
    assert F.pixel_shuffle(x, 2).dtype == tk.int64


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda: F.pixel_shuffle(tk.ones(2, 3), 2),
            "pixel_shuffle expects input to have at least 3 dimensions, but got input with 2 "
            "dimension(s)",
        ),
        (
            lambda: F.pixel_shuffle(tk.ones(2, 3, 4, 4), 0),
            "pixel_shuffle expects a positive upscale_factor, but got 0",
        ),
        (
            lambda: F.pixel_shuffle(tk.ones(1, 3, 4, 4), 2),
            "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
            "of upscale_factor, but input.size(-3)=3 is not divisible by 4",
        ),
        (
            lambda: F.pixel_unshuffle(tk.ones(2, 3), 2),
            "pixel_unshuffle expects input to have at least 3 dimensions, but got input with 2 "
            "dimension(s)",
        ),
        (
            lambda: F.pixel_unshuffle(tk.ones(1, 3, 4, 4), -1),
            "pixel_unshuffle expects a positive downscale_factor, but got -1",
        ),
        (
            lambda: F.pixel_unshuffle(tk.ones(1, 3, 3, 4), 2),
            "pixel_unshuffle expects height to be divisible by downscale_factor, but "
            "input.size(-2)=3 is not divisible by 2",
        ),
        (
            lambda: F.pixel_unshuffle(tk.ones(1, 3, 4, 3), 2),
            "pixel_unshuffle expects width to be divisible by downscale_factor, but "
            "input.size(-1)=3 is not divisible by 2",
        ),
    ],
)
def test_pixel_shuffle_errors(call, message):
    with pytest.raises(RuntimeError) as error:
        call()
    assert str(error.value) == message


# ---------------------------------------- rrelu, alpha dropout, local response norm, lp pool
def test_rrelu_eval_matches_torch_and_training_slopes_are_uniform():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((3, 5))
    for lower, upper in ((1 / 8, 1 / 3), (0.1, 0.1)):
        check_torch(
            lambda a, lo=lower, hi=upper: F.rrelu(a, lo, hi),
            lambda a, lo=lower, hi=upper: torch.nn.functional.rrelu(a, lo, hi),
            x,
        )
    check_grads(lambda a: F.rrelu(a, 0.1, 0.3), x)
    tk.manual_seed(0)
    negative = -tk.rand(200_000, dtype=tk.float64) - 0.5
    slopes = (F.rrelu(negative, 0.1, 0.3, training=True) / negative).numpy()
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3
    assert abs(slopes.mean() - 0.2) < 1e-3 and abs(slopes.var() - 0.2**2 / 12) < 1e-4
    positive = tk.rand(5) + 0.1
    assert np.array_equal(F.rrelu(positive, training=True).numpy(), positive.numpy())
    leaf = tk.tensor(-np.ones(4), requires_grad=True)
    out = F.rrelu(leaf, 0.1, 0.3, training=True)
    out.sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), -out.detach().numpy())  # the drawn slopes
    with pytest.raises(RuntimeError, match="Lower bound should be less than or equal to the upper"):
        F.rrelu(tk.ones(2), 0.5, 0.1)


def test_alpha_dropout_keeps_mean_and_variance():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((4, 5))
    check_torch(
        lambda a: F.alpha_dropout(a, 0.3, training=False),
        lambda a: torch.nn.functional.alpha_dropout(a, 0.3, training=False),
        x,
    )
    tk.manual_seed(0)
    big = tk.randn(400_000, dtype=tk.float64)
    out = F.alpha_dropout(big, 0.2, training=True).numpy()
    assert abs(out.mean()) < 1e-2 and abs(out.var() - 1.0) < 1e-2
    a = ((1.7580993408473766**2 * 0.2 + 1) * 0.8) ** -0.5
    dropped = np.isclose(out, -1.7580993408473766 * a * 0.8, rtol=0, atol=1e-12)
    assert abs(dropped.mean() - 0.2) < 5e-3
    assert np.all(F.alpha_dropout(big, 1.0, training=True).numpy() == 0)
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got"):
        F.alpha_dropout(big, 1.5)


@pytest.mark.parametrize("shape", [(2, 6, 5), (2, 5, 3, 4), (1, 4, 2, 3, 2)])
@pytest.mark.parametrize("size", [1, 2, 3])
def test_local_response_norm(shape, size):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal(shape)
    check_torch(
        lambda a: F.local_response_norm(a, size, alpha=0.3, beta=0.6, k=1.5),
        lambda a: torch.nn.functional.local_response_norm(a, size, alpha=0.3, beta=0.6, k=1.5),
        x,
    )
    check_grads(lambda a: F.local_response_norm(a, size, alpha=0.3, beta=0.6, k=1.5), x)
    with pytest.raises(ValueError, match=r"Expected 3D or higher dimensionality input \(got 2"):
        F.local_response_norm(tk.ones(2, 3), 2)


@pytest.mark.parametrize("norm_type", [1.0, 2, 3.0])
@pytest.mark.parametrize("options", [{}, {"stride": 1}, {"ceil_mode": True, "stride": 2}])
def test_lp_pool(norm_type, options):
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    x1, x2 = RNG.random((2, 3, 7)) + 0.1, RNG.random((2, 3, 5, 7)) + 0.1
    check_torch(
        lambda a: F.lp_pool1d(a, norm_type, 3, **options),
        lambda a: tf.lp_pool1d(a, norm_type, 3, **options),
        x1,
    )
    check_torch(
        lambda a: F.lp_pool2d(a, norm_type, (3, 2), **options),
        lambda a: tf.lp_pool2d(a, norm_type, (3, 2), **options),
        x2,
    )
    check_grads(lambda a: F.lp_pool1d(a, norm_type, 3, **options), x1)
    check_grads(lambda a: F.lp_pool2d(a, norm_type, 2, **options), x2[:1, :2])
