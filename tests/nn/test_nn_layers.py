"""Layers against their PyTorch twins with identical weights: outputs, input and parameter
gradients, running statistics; plus each layer's own behaviour and misuse errors."""

from __future__ import annotations

import numpy as np
import pytest
from nn_parity import compare_modules

import tensorkit as tk
import tensorkit.nn as nn

RNG = np.random.default_rng(0)


def _torch():
    return pytest.importorskip("torch")


def _f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


# -------------------------------------------------------------------------------- linear
@pytest.mark.parametrize("bias", [True, False])
def test_linear(bias):
    torch = _torch()
    compare_modules(nn.Linear(3, 4, bias=bias), torch.nn.Linear(3, 4, bias=bias), _f32(2, 5, 3))


def test_bilinear_and_identity():
    torch = _torch()
    compare_modules(nn.Bilinear(3, 2, 4), torch.nn.Bilinear(3, 2, 4), _f32(5, 3), _f32(5, 2))
    compare_modules(nn.Identity(7, unused=True), torch.nn.Identity(), _f32(2, 3))


def test_linear_misuse_names_shapes():
    layer = nn.Linear(3, 4)
    with pytest.raises(
        RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x5 and 3x4\)"
    ):
        layer(tk.ones(2, 5))


def test_linear_default_init_bounds_and_dtype():
    layer = nn.Linear(16, 32, dtype=tk.float64)
    bound = 1 / np.sqrt(16)
    weight = layer.weight.detach().numpy()
    assert weight.dtype == np.float64 and np.abs(weight).max() <= bound
    assert np.abs(weight).max() > 0.8 * bound  # kaiming_uniform(a=sqrt(5)) spans the bound
    assert np.abs(layer.bias.detach().numpy()).max() <= bound
    tk.manual_seed(4)
    first = nn.Linear(2, 2).weight.tolist()
    tk.manual_seed(4)
    assert nn.Linear(2, 2).weight.tolist() == first


# ------------------------------------------------------------------------ batch norm
@pytest.mark.parametrize(
    "options",
    [
        {},
        {"momentum": None},
        {"momentum": 0.5, "affine": False},
        {"track_running_stats": False},
        {"bias": False},
    ],
)
def test_batch_norm_training_steps_track_running_stats(options):
    torch = _torch()
    x = _f32(6, 3, 4)
    compare_modules(
        nn.BatchNorm1d(3, **options), torch.nn.BatchNorm1d(3, **options), x, steps=3, atol=1e-5
    )


def test_batch_norm_eval_uses_running_stats():
    torch = _torch()
    mine, theirs = nn.BatchNorm2d(2), torch.nn.BatchNorm2d(2)
    with tk.no_grad():
        mine.running_mean.copy_(tk.tensor([0.5, -1.0]))
        mine.running_var.copy_(tk.tensor([2.0, 0.25]))
        mine.weight.copy_(tk.tensor([1.5, -0.5]))
    mine.eval()
    theirs.eval()
    compare_modules(mine, theirs, _f32(2, 2, 3, 3), atol=1e-5)
    assert mine.num_batches_tracked.item() == 0


def test_batch_norm_without_running_stats_uses_batch_stats_in_eval():
    torch = _torch()
    mine = nn.BatchNorm1d(3, track_running_stats=False).eval()
    theirs = torch.nn.BatchNorm1d(3, track_running_stats=False).eval()
    assert mine.running_mean is None and list(mine.state_dict()) == ["weight", "bias"]
    compare_modules(mine, theirs, _f32(4, 3), atol=1e-5)


def test_batch_norm_counter_and_input_checks():
    bn = nn.BatchNorm1d(3)
    bn(tk.randn(4, 3))
    bn(tk.randn(4, 3, 2))
    assert bn.num_batches_tracked.item() == 2
    assert [n for n, _ in bn.named_buffers()] == [
        "running_mean",
        "running_var",
        "num_batches_tracked",
    ]
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        bn(tk.randn(2, 3, 2, 2))
    with pytest.raises(ValueError, match=r"expected 4D input \(got 2D input\)"):
        nn.BatchNorm2d(3)(tk.randn(2, 3))
    with pytest.raises(ValueError, match="Expected more than 1 value per channel"):
        bn(tk.randn(1, 3))
    bn.reset_running_stats()
    assert bn.num_batches_tracked.item() == 0 and bn.running_var.tolist() == [1.0, 1.0, 1.0]


def test_batch_norm_loads_state_dict_without_counter():
    """Old checkpoints lack ``num_batches_tracked``: PyTorch keeps the current count."""
    net = nn.Sequential(nn.BatchNorm1d(3))
    net(tk.randn(4, 3))
    state = {k: v for k, v in net.state_dict().items() if not k.endswith("num_batches_tracked")}
    result = net.load_state_dict(state)
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert net[0].num_batches_tracked.item() == 1


# --------------------------------------------------------------- other normalizations
def test_layer_group_rms_norm_modules():
    torch = _torch()
    x = _f32(2, 4, 3)
    compare_modules(nn.LayerNorm(3), torch.nn.LayerNorm(3), x, atol=1e-5)
    compare_modules(
        nn.LayerNorm([4, 3], bias=False), torch.nn.LayerNorm([4, 3], bias=False), x, atol=1e-5
    )
    compare_modules(
        nn.LayerNorm(3, elementwise_affine=False),
        torch.nn.LayerNorm(3, elementwise_affine=False),
        x,
        atol=1e-5,
    )
    compare_modules(nn.GroupNorm(2, 4), torch.nn.GroupNorm(2, 4), x, atol=1e-5)
    compare_modules(
        nn.GroupNorm(4, 4, affine=False), torch.nn.GroupNorm(4, 4, affine=False), x, atol=1e-5
    )
    compare_modules(nn.RMSNorm(3), torch.nn.RMSNorm(3), x, atol=1e-5)
    compare_modules(nn.RMSNorm([4, 3], eps=1e-3), torch.nn.RMSNorm([4, 3], eps=1e-3), x, atol=1e-5)
    with pytest.raises(ValueError, match="num_channels must be divisible by num_groups"):
        nn.GroupNorm(3, 4)


@pytest.mark.parametrize(
    "options", [{}, {"affine": True}, {"track_running_stats": True, "momentum": 0.3}]
)
def test_instance_norm_2d(options):
    torch = _torch()
    compare_modules(
        nn.InstanceNorm2d(3, **options),
        torch.nn.InstanceNorm2d(3, **options),
        _f32(2, 3, 4, 4),
        steps=2,
        atol=1e-5,
    )


def test_instance_norm_unbatched_eval_and_errors():
    torch = _torch()
    mine = nn.InstanceNorm2d(3, track_running_stats=True)
    theirs = torch.nn.InstanceNorm2d(3, track_running_stats=True)
    compare_modules(mine, theirs, _f32(3, 4, 4), atol=1e-5)
    mine.eval()
    theirs.eval()
    compare_modules(mine, theirs, _f32(2, 3, 4, 4), atol=1e-5)
    compare_modules(nn.InstanceNorm1d(2), torch.nn.InstanceNorm1d(2), _f32(3, 2, 5), atol=1e-5)
    with pytest.raises(ValueError, match=r"expected 3D or 4D input \(got 2D input\)"):
        nn.InstanceNorm2d(3)(tk.ones(3, 4))
    with pytest.raises(ValueError, match="to match num_features"):
        nn.InstanceNorm2d(3, affine=True)(tk.randn(2, 4, 3, 3))
    with pytest.warns(UserWarning, match="does not match num_features"):
        nn.InstanceNorm2d(3)(tk.randn(2, 4, 3, 3))


# ---------------------------------------------------------------------------- embedding
def test_embedding_padding_row_is_zero_and_gets_no_gradient():
    torch = _torch()
    idx = np.array([[0, 2, 4], [2, 1, 1]])
    mine = nn.Embedding(5, 3, padding_idx=2)
    assert not mine.weight[2].any()
    compare_modules(mine, torch.nn.Embedding(5, 3, padding_idx=2), idx)
    assert not mine.weight.grad[2].any()
    compare_modules(
        nn.Embedding(5, 3, max_norm=0.5), torch.nn.Embedding(5, 3, max_norm=0.5), idx, atol=1e-5
    )
    assert nn.Embedding(5, 3, padding_idx=-1).padding_idx == 4
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(5, 3, padding_idx=5)


def test_embedding_from_pretrained():
    weights = tk.tensor([[1.0, 2.0], [3.0, 4.0]])
    frozen = nn.Embedding.from_pretrained(weights)
    assert not frozen.weight.requires_grad
    assert frozen(tk.tensor([1])).tolist() == [[3.0, 4.0]]
    trainable = nn.Embedding.from_pretrained(weights, freeze=False, padding_idx=0)
    assert trainable.weight.requires_grad and trainable.weight[0].tolist() == [1.0, 2.0]
    with pytest.raises(AssertionError, match="expected to be 2-dimensional"):
        nn.Embedding.from_pretrained(tk.ones(3))


# -------------------------------------------------------------------------- activations
ACTIVATION_MODULES = [
    ("ReLU", {}),
    ("ReLU6", {}),
    ("LeakyReLU", {"negative_slope": 0.1}),
    ("ELU", {"alpha": 0.5}),
    ("CELU", {"alpha": 1.5}),
    ("SELU", {}),
    ("GELU", {"approximate": "tanh"}),
    ("SiLU", {}),
    ("Mish", {}),
    ("Softplus", {"beta": 2.0, "threshold": 3.0}),
    ("Sigmoid", {}),
    ("Tanh", {}),
    ("Hardtanh", {"min_val": -0.5, "max_val": 0.5}),
    ("Hardsigmoid", {}),
    ("Hardswish", {}),
    ("Softsign", {}),
    ("Tanhshrink", {}),
    ("Threshold", {"threshold": 0.1, "value": 5.0}),
    ("LogSigmoid", {}),
    ("Hardshrink", {"lambd": 0.3}),
    ("Softshrink", {"lambd": 0.3}),
    ("Softmax", {"dim": 1}),
    ("LogSoftmax", {"dim": -1}),
    ("Softmin", {"dim": 0}),
    ("GLU", {"dim": 1}),
    ("PReLU", {"num_parameters": 4, "init": 0.1}),
]


@pytest.mark.parametrize("name, kwargs", ACTIVATION_MODULES)
def test_activation_modules(name, kwargs):
    torch = _torch()
    mine, theirs = getattr(nn, name)(**kwargs), getattr(torch.nn, name)(**kwargs)
    assert repr(mine) == repr(theirs)
    # The tanh GELU's float32 gradient loses about 1.2e-6 to cancellation in its tail, in
    # torch as in ours (each against float64), so the two may differ by twice that.
    atol = 3e-6 if name == "GELU" else 1e-6
    compare_modules(mine, theirs, _f32(3, 4) * 3, atol=atol)


def test_inplace_relu_module_changes_its_input():
    x = tk.tensor([-1.0, 2.0])
    assert nn.ReLU(inplace=True)(x) is x and x.tolist() == [0.0, 2.0]
    with pytest.raises(ValueError, match="must be greater than min_val"):
        nn.Hardtanh(1.0, 0.0)


# ----------------------------------------------------------------------- dropout, shape
def test_dropout_modules_train_and_eval():
    layer = nn.Dropout(0.5)
    x = tk.ones(64, 64)
    out = layer(x).numpy()
    assert set(np.unique(out)) == {0.0, 2.0}
    layer.eval()
    assert layer(x) is x
    x4 = tk.ones(2, 3, 2, 2)
    assert nn.Dropout2d(0.5).eval()(x4) is x4
    tk.manual_seed(0)
    channels = nn.Dropout2d(0.5)(tk.ones(4, 8, 2, 2)).numpy().reshape(4, 8, -1)
    assert np.all(channels.min(-1) == channels.max(-1))
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        nn.Dropout(-0.1)


def test_flatten_and_unflatten():
    torch = _torch()
    compare_modules(nn.Flatten(), torch.nn.Flatten(), _f32(2, 3, 4))
    compare_modules(nn.Flatten(0, 1), torch.nn.Flatten(0, 1), _f32(2, 3, 4))
    compare_modules(nn.Unflatten(1, (2, -1)), torch.nn.Unflatten(1, (2, -1)), _f32(3, 6))
    with pytest.raises(
        TypeError, match="unflattened_size must be tuple of ints, but found type int"
    ):
        nn.Unflatten(1, 3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="found element of type float at pos 1"):
        nn.Unflatten(1, (2, 3.0))  # type: ignore[arg-type]


def test_a_small_network_trains_like_torch():
    torch = _torch()

    def build(lib):
        return lib.Sequential(
            lib.Linear(4, 8),
            lib.BatchNorm1d(8),
            lib.GELU(),
            lib.LayerNorm(8),
            lib.Linear(8, 3),
            lib.LogSoftmax(dim=1),
        )

    compare_modules(build(nn), build(torch.nn), _f32(6, 4), steps=2, atol=1e-5, rtol=1e-4)


def test_training_steps_with_an_optimizer_match_torch():
    torch = _torch()
    mine = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2))
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2))
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in mine.state_dict().items()})
    x, y = _f32(8, 3), RNG.integers(0, 2, 8)
    opt_mine = tk.optim.SGD(mine.parameters(), lr=0.5, momentum=0.9)
    opt_theirs = torch.optim.SGD(theirs.parameters(), lr=0.5, momentum=0.9)
    losses = []
    for _ in range(5):
        opt_mine.zero_grad()
        loss = nn.functional.cross_entropy(mine(tk.tensor(x)), tk.tensor(y))
        loss.backward()
        opt_mine.step()
        opt_theirs.zero_grad()
        torch.nn.functional.cross_entropy(theirs(torch.tensor(x)), torch.tensor(y)).backward()
        opt_theirs.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    for (name, p), q in zip(mine.named_parameters(), theirs.parameters(), strict=True):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), atol=1e-5, err_msg=name)


# ------------------------------------------------------ padding, pixel shuffle, distance
PADDING_MODULES = [
    ("ZeroPad1d", (2,), (2, 3, 5)),
    ("ZeroPad2d", ((1, 0, 2, 1),), (2, 3, 4, 5)),
    ("ZeroPad3d", ((1, 2, 0, 1, 2, 0),), (1, 2, 3, 4, 5)),
    ("ConstantPad1d", ((3, 1), 1.5), (3, 4)),
    ("ConstantPad2d", (1, -2.0), (3, 4, 5)),
    ("ConstantPad3d", ((1, 0, 2, 1, 0, 3), 0.5), (2, 2, 3, 4, 5)),
    ("ReflectionPad1d", ((2, 3),), (2, 3, 5)),
    ("ReflectionPad2d", (2,), (2, 3, 4, 5)),
    ("ReflectionPad3d", ((1, 2, 2, 1, 1, 0),), (2, 3, 3, 4, 5)),
    ("ReplicationPad1d", ((4, 1),), (3, 5)),
    ("ReplicationPad2d", ((1, 3, 0, 2),), (2, 3, 4, 5)),
    ("ReplicationPad3d", (2,), (3, 3, 4, 5)),
    ("CircularPad1d", ((2, 3),), (2, 3, 5)),
    ("CircularPad2d", ((1, 2, 3, 0),), (3, 4, 5)),
    ("CircularPad3d", (1,), (1, 2, 3, 4, 5)),
]


@pytest.mark.parametrize("name, args, shape", PADDING_MODULES)
def test_padding_modules_match_torch(name, args, shape):
    torch = _torch()
    mine, theirs = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(mine) == repr(theirs)
    compare_modules(mine, theirs, _f32(*shape))


@pytest.mark.parametrize(
    "name, ndim, expected", [("CircularPad1d", 4, "2D or 3D"), ("CircularPad3d", 3, "4D or 5D")]
)
def test_circular_pad_modules_check_the_rank(name, ndim, expected):
    with pytest.raises(ValueError, match=f"expected {expected} input \\(got {ndim}D input\\)"):
        getattr(nn, name)(1)(tk.ones(*[3] * ndim))


def test_pixel_shuffle_modules_match_torch():
    torch = _torch()
    pairs = [
        (nn.PixelShuffle(2), torch.nn.PixelShuffle(2), (2, 12, 3, 4)),
        (nn.PixelShuffle(3), torch.nn.PixelShuffle(3), (9, 2, 3)),
        (nn.PixelUnshuffle(2), torch.nn.PixelUnshuffle(2), (2, 3, 4, 6)),
        (nn.PixelUnshuffle(3), torch.nn.PixelUnshuffle(3), (2, 1, 2, 3, 6)),
    ]
    for mine, theirs, shape in pairs:
        assert repr(mine) == repr(theirs)
        compare_modules(mine, theirs, _f32(*shape))


def test_distance_modules_match_torch():
    torch = _torch()
    pairs = [
        (nn.CosineSimilarity(), torch.nn.CosineSimilarity(), (4, 5), (4, 5)),
        (nn.CosineSimilarity(0, 1e-3), torch.nn.CosineSimilarity(0, 1e-3), (4, 1), (4, 3)),
        (nn.PairwiseDistance(), torch.nn.PairwiseDistance(), (4, 5), (4, 5)),
        (
            nn.PairwiseDistance(p=1.0, eps=1e-3, keepdim=True),
            torch.nn.PairwiseDistance(p=1.0, eps=1e-3, keepdim=True),
            (2, 3, 5),
            (3, 5),
        ),
    ]
    for mine, theirs, shape1, shape2 in pairs:
        assert repr(mine) == repr(theirs)
        compare_modules(mine, theirs, _f32(*shape1), _f32(*shape2))


def test_upsampling_modules_match_torch():
    torch = _torch()
    pairs = [
        (nn.UpsamplingNearest2d(scale_factor=2), torch.nn.UpsamplingNearest2d(scale_factor=2)),
        (nn.UpsamplingNearest2d(size=(5, 7)), torch.nn.UpsamplingNearest2d(size=(5, 7))),
        (nn.UpsamplingBilinear2d(scale_factor=3), torch.nn.UpsamplingBilinear2d(scale_factor=3)),
        (nn.UpsamplingBilinear2d((6, 5)), torch.nn.UpsamplingBilinear2d((6, 5))),
    ]
    for mine, theirs in pairs:
        assert repr(mine) == repr(theirs)
        assert mine.align_corners == theirs.align_corners
        compare_modules(mine, theirs, _f32(2, 3, 4, 3))


# ------------------------------------------------------------ rarer layers, PyTorch's reprs
NEW_LAYERS = [
    ("RReLU", (0.1, 0.3), (2, 5)),
    ("AlphaDropout", (0.3,), (2, 5)),
    ("LocalResponseNorm", (3, 0.2, 0.5, 2.0), (2, 6, 3, 3)),
    ("Softmax2d", (), (2, 3, 4, 4)),
    ("Softmax2d", (), (3, 4, 4)),
    ("LPPool1d", (2, 3, 2), (2, 3, 8)),
    ("LPPool2d", (1.5, (2, 3), None, True), (2, 3, 5, 7)),
    ("LPPool3d", (2, (2, 3, 2), 1, True), (2, 3, 4, 5, 3)),
    ("MaxPool3d", (2,), (2, 3, 4, 5, 4)),
    ("AvgPool3d", (3, 2, 1), (3, 4, 5, 4)),
    ("AdaptiveMaxPool3d", ((2, None, 3),), (2, 3, 4, 5, 4)),
    ("AdaptiveAvgPool3d", (2,), (2, 3, 4, 5, 4)),
    ("AdaptiveMaxPool1d", (3,), (2, 3, 8)),
    ("ConvTranspose3d", (2, 3, (2, 3, 2), (2, 1, 1), 1), (2, 2, 3, 4, 3)),
    ("ConvTranspose3d", ((2, 4, 3), {"groups": 2, "bias": False, "dilation": 2}), (1, 2, 3, 3, 3)),
]


@pytest.mark.parametrize("name, args, shape", NEW_LAYERS)
def test_new_layers_match_torch_in_eval(name, args, shape):
    torch = _torch()
    args, kwargs = args if len(args) == 2 and isinstance(args[1], dict) else (args, {})
    mine, theirs = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert repr(mine) == repr(theirs)
    x = RNG.random(shape).astype(np.float32) + (0.1 if name.startswith("LP") else -0.5)
    compare_modules(mine.eval(), theirs.eval(), x, atol=1e-5)


def test_new_layers_training_and_errors():
    tk.manual_seed(0)
    x = tk.randn(1000, 100)
    out = nn.AlphaDropout(0.5)(x)
    assert abs(out.mean().item()) < 0.02 and abs(out.var().item() - 1) < 0.02
    negative = -tk.rand(1000) - 1
    slopes = (nn.RReLU(0.2, 0.4)(negative) / negative).numpy()
    assert slopes.min() >= 0.2 and slopes.max() <= 0.4 and len(np.unique(slopes)) > 900
    assert (
        repr(nn.RReLU(inplace=True)) == "RReLU(lower=0.125, upper=0.3333333333333333, inplace=True)"
    )
    y = tk.tensor([-2.0, 1.0])
    assert nn.RReLU(0.25, 0.25, inplace=True)(y) is y and y.tolist() == [-0.5, 1.0]
    with pytest.raises(ValueError, match="Softmax2d: expected input to be 3D or 4D, got 2D"):
        nn.Softmax2d()(tk.ones(2, 3))
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        nn.AlphaDropout(-0.1)
    layer = nn.AdaptiveMaxPool1d(2, return_indices=True)
    _, indices = layer(tk.tensor([[[1.0, 3.0, 2.0, 0.0]]]))
    assert indices.tolist() == [[[1, 2]]]
