"""tk.nn.init (gains, fans, distributions, errors) and tk.nn.utils (clipping, vectors)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tensorkit as tk
import tensorkit.nn as nn
from tensorkit.nn import init


def _torch():
    return pytest.importorskip("torch")


@pytest.mark.parametrize(
    "nonlinearity, param",
    [
        ("linear", None),
        ("conv2d", None),
        ("sigmoid", None),
        ("tanh", None),
        ("relu", None),
        ("leaky_relu", None),
        ("leaky_relu", 0.2),
        ("selu", None),
    ],
)
def test_calculate_gain_matches_torch(nonlinearity, param):
    torch = _torch()
    assert init.calculate_gain(nonlinearity, param) == pytest.approx(
        torch.nn.init.calculate_gain(nonlinearity, param)
    )


def test_gain_and_fan_errors():
    with pytest.raises(ValueError, match="Unsupported nonlinearity softsign"):
        init.calculate_gain("softsign")
    with pytest.raises(ValueError, match="negative_slope True not a valid number"):
        init.calculate_gain("leaky_relu", True)
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(tk.empty(3))
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_uniform_(tk.empty(3, 3), mode="fan_avg")
    assert init._calculate_fan_in_and_fan_out(tk.empty(8, 4, 3, 3)) == (36, 72)


def test_uniform_normal_constant_fills():
    t = tk.empty(200, 200)
    init.uniform_(t, -2.0, 3.0)
    values = t.numpy()
    assert values.min() >= -2.0 and values.max() < 3.0 and abs(values.mean() - 0.5) < 0.05
    init.normal_(t, 1.0, 0.5)
    assert abs(t.numpy().mean() - 1.0) < 0.01 and abs(t.numpy().std() - 0.5) < 0.01
    assert init.constant_(t, 0.3) is t and np.all(t.numpy() == np.float32(0.3))
    assert not init.zeros_(t).any() and init.ones_(t).all()


def test_init_works_on_parameters_without_recording():
    param = nn.Parameter(tk.empty(3, 3))
    init.kaiming_normal_(param)
    assert param.grad_fn is None and param.is_leaf and param.requires_grad


def test_xavier_and_kaiming_scales():
    t = tk.empty(300, 200)
    init.xavier_uniform_(t, gain=2.0)
    bound = 2.0 * math.sqrt(6.0 / 500)
    assert np.abs(t.numpy()).max() <= bound and np.abs(t.numpy()).max() > 0.95 * bound
    init.xavier_normal_(t)
    assert t.numpy().std() == pytest.approx(math.sqrt(2.0 / 500), rel=0.03)
    init.kaiming_uniform_(t, mode="fan_out", nonlinearity="relu")
    bound = math.sqrt(2.0) * math.sqrt(3.0 / 300)
    assert np.abs(t.numpy()).max() <= bound and np.abs(t.numpy()).max() > 0.95 * bound
    init.kaiming_normal_(t, a=0.1)
    assert t.numpy().std() == pytest.approx(math.sqrt(2 / 1.01) / math.sqrt(200), rel=0.03)
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        init.kaiming_uniform_(tk.empty(0, 3))


def test_trunc_normal_stays_in_bounds():
    t = tk.empty(100, 100, dtype=tk.float64)
    init.trunc_normal_(t, mean=0.5, std=1.0, a=0.0, b=1.0)
    values = t.numpy()
    assert values.min() >= 0.0 and values.max() <= 1.0
    assert values.mean() == pytest.approx(0.5, abs=0.02)
    assert values.std() == pytest.approx(0.2826, abs=0.01)  # a truncated, not clipped, normal


def test_eye_dirac_orthogonal():
    torch = _torch()
    assert init.eye_(tk.empty(2, 3)).tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.eye_(tk.empty(2, 2, 2))
    mine = init.dirac_(tk.empty(4, 2, 3, 3), groups=2).numpy()
    expected = torch.nn.init.dirac_(torch.empty(4, 2, 3, 3), groups=2).numpy()
    np.testing.assert_array_equal(mine, expected)
    for shape in [(3, 5), (5, 3), (4, 2, 2)]:
        t = init.orthogonal_(tk.empty(*shape, dtype=tk.float64), gain=2.0)
        flat = t.numpy().reshape(shape[0], -1)
        gram = flat @ flat.T if shape[0] <= flat.shape[1] else flat.T @ flat
        np.testing.assert_allclose(gram, 4.0 * np.eye(gram.shape[0]), atol=1e-10)
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions"):
        init.orthogonal_(tk.empty(3))


def test_generator_makes_fills_reproducible():
    first = init.normal_(tk.empty(4), generator=tk.Generator().manual_seed(3)).tolist()
    again = init.normal_(tk.empty(4), generator=tk.Generator().manual_seed(3)).tolist()
    assert first == again


# ---------------------------------------------------------------------------- utils
def _grads_pair(torch):
    rng = np.random.default_rng(0)
    grads = [rng.standard_normal((3, 2)), rng.standard_normal(4) * 5]
    mine = [nn.Parameter(tk.zeros(g.shape, dtype=tk.float64)) for g in grads]
    theirs = [torch.zeros(g.shape, dtype=torch.float64, requires_grad=True) for g in grads]
    for p, q, g in zip(mine, theirs, grads, strict=True):
        p.grad = tk.tensor(g)
        q.grad = torch.tensor(g)
    return mine, theirs


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf"), "inf", 3.0])
@pytest.mark.parametrize("max_norm", [0.5, 1000.0])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    torch = _torch()
    mine, theirs = _grads_pair(torch)
    total = nn.utils.clip_grad_norm_(mine, max_norm, norm_type)
    expected = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type)
    assert total.item() == pytest.approx(expected.item())
    for p, q in zip(mine, theirs, strict=True):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-12)


def test_clip_grad_norm_edge_cases():
    p = nn.Parameter(tk.zeros(2))
    assert nn.utils.clip_grad_norm_(p, 1.0).item() == 0.0
    p.grad = tk.tensor([float("nan"), 1.0])
    with pytest.raises(RuntimeError, match="is non-finite, so it cannot be clipped"):
        nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    p.grad = tk.tensor([3.0, 4.0])
    assert nn.utils.clip_grad_norm_(iter([p]), 1.0, foreach=True).item() == 5.0
    np.testing.assert_allclose(p.grad.numpy(), [0.6, 0.8], rtol=1e-5)


def test_clip_grad_value():
    torch = _torch()
    mine, theirs = _grads_pair(torch)
    nn.utils.clip_grad_value_(mine, 0.7)
    torch.nn.utils.clip_grad_value_(theirs, 0.7)
    for p, q in zip(mine, theirs, strict=True):
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())


def test_parameters_to_vector_and_back():
    model = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1))
    vector = nn.utils.parameters_to_vector(model.parameters())
    assert vector.shape == (9 + 4,)
    nn.utils.vector_to_parameters(tk.arange(13, dtype=tk.float32), model.parameters())
    assert model[0].weight.tolist() == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
    assert model[1].bias.tolist() == [12.0]
    assert isinstance(model[0].weight, nn.Parameter)
    with pytest.raises(TypeError, match=r"expected tensorkit\.Tensor, but got: list"):
        nn.utils.vector_to_parameters([1.0], model.parameters())  # type: ignore[arg-type]


@pytest.mark.parametrize("norm_type", [2.0, 1.0, "inf"])
def test_get_total_norm_and_clip_grads_with_norm_match_torch(norm_type):
    torch = _torch()
    mine, theirs = _grads_pair(torch)
    total = nn.utils.get_total_norm([p.grad for p in mine], norm_type)
    expected = torch.nn.utils.get_total_norm([q.grad for q in theirs], norm_type)
    assert total.item() == pytest.approx(expected.item(), rel=1e-12)
    nn.utils.clip_grads_with_norm_(mine, 0.5, total)
    torch.nn.utils.clip_grads_with_norm_(theirs, 0.5, expected)
    for p, q in zip(mine, theirs, strict=True):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-12)


def test_get_total_norm_edge_cases():
    assert nn.utils.get_total_norm([]).item() == 0.0
    assert nn.utils.get_total_norm(tk.tensor([3.0, 4.0])).item() == 5.0
    with pytest.raises(RuntimeError, match=r"The total norm of order 2\.0 for gradients"):
        nn.utils.get_total_norm([tk.tensor([float("inf")])], error_if_nonfinite=True)
    p = nn.Parameter(tk.ones(2))
    nn.utils.clip_grads_with_norm_(p, 1.0, tk.tensor(10.0))  # no gradient: nothing to do
    assert p.grad is None
    with pytest.warns(UserWarning, match="`parameters` is an empty generator"):
        nn.utils.clip_grad_norm_((q for q in []), 1.0)


def test_skip_init():
    layer = nn.utils.skip_init(nn.Linear, 3, 4, dtype=tk.float64)
    assert isinstance(layer.weight, nn.Parameter) and layer.weight.requires_grad
    assert layer.weight.shape == (4, 3) and layer.weight.dtype == tk.float64
    with pytest.raises(RuntimeError, match="Expected a Module; got <class 'int'>"):
        nn.utils.skip_init(int)
    with pytest.raises(RuntimeError, match="Module must support a 'device' arg to skip init"):
        nn.utils.skip_init(nn.ReLU)


def _trained_bn(bn, shape):
    """A batch norm with non-trivial running statistics and affine parameters, in eval."""
    for _ in range(3):
        bn(tk.randn(*shape) * 2 + 1)
    with tk.no_grad():
        bn.weight.copy_(tk.randn(bn.num_features))
        bn.bias.copy_(tk.randn(bn.num_features))
    return bn.eval()


@pytest.mark.parametrize(
    ("conv", "transpose"),
    [
        (nn.Conv2d(2, 4, 3), False),
        (nn.Conv2d(2, 4, 3, bias=False), False),
        (nn.ConvTranspose2d(2, 4, 3), True),
    ],
)
def test_fuse_conv_bn_eval_matches_the_pair(conv, transpose):
    bn = _trained_bn(nn.BatchNorm2d(4), (5, 4, 3, 3))
    conv.eval()
    fused = nn.utils.fuse_conv_bn_eval(conv, bn, transpose=transpose)
    x = tk.randn(2, 2, 5, 5)
    np.testing.assert_allclose(fused(x).detach().numpy(), bn(conv(x)).detach().numpy(), atol=1e-5)
    assert fused is not conv and isinstance(fused.bias, nn.Parameter)
    assert conv.bias is None or fused.bias is not conv.bias


def test_fuse_weights_match_torch():
    torch = _torch()
    rng = np.random.default_rng(0)
    w, b, mean, w_bn, b_bn = (rng.standard_normal(s) for s in [(4, 2, 3), 4, 4, 4, 4])
    var = rng.uniform(0.5, 2.0, 4)
    mine = nn.utils.fuse_conv_bn_weights(*map(tk.tensor, (w, b, mean, var)), 1e-5, None, None)
    theirs = torch.nn.utils.fuse_conv_bn_weights(
        *map(torch.tensor, (w, b, mean, var)), 1e-5, None, None
    )
    linear = nn.utils.fuse_linear_bn_weights(
        tk.tensor(w[:, :, 0]),
        None,
        *map(tk.tensor, (mean, var)),
        1e-3,
        tk.tensor(w_bn),
        tk.tensor(b_bn),
    )
    linear_theirs = torch.nn.utils.fuse_linear_bn_weights(
        torch.tensor(w[:, :, 0]),
        None,
        *map(torch.tensor, (mean, var)),
        1e-3,
        torch.tensor(w_bn),
        torch.tensor(b_bn),
    )
    for got, expected in zip([*mine, *linear], [*theirs, *linear_theirs], strict=True):
        assert isinstance(got, nn.Parameter) and got.requires_grad == expected.requires_grad
        np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), rtol=1e-12)


def test_fuse_linear_bn_eval_and_errors():
    linear, bn = nn.Linear(3, 4).eval(), _trained_bn(nn.BatchNorm1d(4), (6, 4))
    fused = nn.utils.fuse_linear_bn_eval(linear, bn)
    x = tk.randn(5, 3)
    np.testing.assert_allclose(fused(x).detach().numpy(), bn(linear(x)).detach().numpy(), atol=1e-5)
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        nn.utils.fuse_linear_bn_eval(nn.Linear(3, 4), bn)
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        nn.utils.fuse_conv_bn_eval(nn.Conv1d(1, 4, 1).eval(), nn.BatchNorm1d(4))
    with pytest.raises(AssertionError, match=r"linear\.out_features=3 and bn\.num_features=4"):
        nn.utils.fuse_linear_bn_eval(nn.Linear(3, 3).eval(), bn)
    no_stats = nn.BatchNorm1d(4, track_running_stats=False).eval()
    with pytest.raises(
        AssertionError, match=r"bn\.running_mean and bn\.running_var must not be None"
    ):
        nn.utils.fuse_linear_bn_eval(linear, no_stats)
