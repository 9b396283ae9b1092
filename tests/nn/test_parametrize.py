"""tk.nn.utils.parametrize against PyTorch: registration, stacking, right_inverse, caching,
removal, and the checks' error texts; orthogonal, weight_norm and spectral_norm (values,
gradients, gradcheck)."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from harness import check_grads

import tensorkit as tk
import tensorkit.nn as nn
from tensorkit.nn.utils import parametrizations
from tensorkit.nn.utils import parametrize as P  # noqa: N812


def _torch():
    return pytest.importorskip("torch")


def _symmetric(lib):
    """A Module class of ``lib`` (tk.nn or torch.nn) that makes a matrix symmetric."""

    class Symmetric(lib.Module):
        def forward(self, x):
            return x.triu() + x.triu(1).transpose(-1, -2)

        def right_inverse(self, a):
            return a.triu()

    return Symmetric


def _scale(lib):
    class Scale(lib.Module):
        def forward(self, x):
            return x * 2

        def right_inverse(self, a):
            return a / 2

    return Scale


def _pair(torch):
    weight = np.random.default_rng(0).standard_normal((3, 3))
    mine, theirs = nn.Linear(3, 3).double(), torch.nn.Linear(3, 3).double()
    with tk.no_grad():
        mine.weight.copy_(tk.tensor(weight))
        mine.bias.zero_()
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(weight))
        theirs.bias.zero_()
    return mine, theirs


def test_registered_parametrization_matches_torch():
    torch = _torch()
    mine, theirs = _pair(torch)
    original = mine.weight
    P.register_parametrization(mine, "weight", _symmetric(nn)())
    P.register_parametrization(mine, "weight", _scale(nn)())
    torch.nn.utils.parametrize.register_parametrization(theirs, "weight", _symmetric(torch.nn)())
    torch.nn.utils.parametrize.register_parametrization(theirs, "weight", _scale(torch.nn)())
    assert type(mine).__name__ == "ParametrizedLinear"
    assert P.type_before_parametrizations(mine) is nn.Linear
    assert P.is_parametrized(mine) and P.is_parametrized(mine, "weight")
    assert not P.is_parametrized(mine, "bias") and not P.is_parametrized(nn.Linear(1, 1))
    assert mine.parametrizations.weight.original is original
    assert sorted(mine.state_dict()) == sorted(theirs.state_dict())
    assert repr(mine) == repr(theirs).replace("torch.nn", "tensorkit.nn")
    np.testing.assert_allclose(mine.weight.detach().numpy(), theirs.weight.detach().numpy())
    np.testing.assert_allclose(
        original.detach().numpy(), theirs.parametrizations.weight.original.detach().numpy()
    )
    x = np.random.default_rng(1).standard_normal((2, 3))
    mine(tk.tensor(x)).pow(2).sum().backward()
    theirs(torch.tensor(x)).pow(2).sum().backward()
    np.testing.assert_allclose(
        original.grad.numpy(), theirs.parametrizations.weight.original.grad.numpy(), rtol=1e-12
    )


def test_assignment_goes_through_right_inverse():
    torch = _torch()
    mine, theirs = _pair(torch)
    P.register_parametrization(mine, "weight", _symmetric(nn)())
    P.register_parametrization(mine, "weight", _scale(nn)())
    torch.nn.utils.parametrize.register_parametrization(theirs, "weight", _symmetric(torch.nn)())
    torch.nn.utils.parametrize.register_parametrization(theirs, "weight", _scale(torch.nn)())
    value = np.arange(9.0).reshape(3, 3)
    original = mine.parametrizations.weight.original
    mine.weight = tk.tensor(value)
    theirs.weight = torch.tensor(value)
    assert mine.parametrizations.weight.original is original
    np.testing.assert_allclose(
        original.detach().numpy(), theirs.parametrizations.weight.original.detach().numpy()
    )
    np.testing.assert_allclose(mine.weight.detach().numpy(), theirs.weight.detach().numpy())
    with pytest.raises(KeyError, match="attribute 'weight' already exists"):
        mine.weight = nn.Parameter(tk.ones(3, 3))


def test_cached_computes_each_parametrized_tensor_once():
    m = P.register_parametrization(nn.Linear(3, 3), "weight", _symmetric(nn)())
    assert m.weight is not m.weight
    with P.cached():
        first = m.weight
        with P.cached():
            assert m.weight is first
        assert m.weight is first
    assert m.weight is not first


def test_remove_parametrizations_leaves_value_or_original():
    torch = _torch()
    for leave in (True, False):
        mine, theirs = _pair(torch)
        original = mine.weight
        P.register_parametrization(mine, "weight", _scale(nn)())
        torch.nn.utils.parametrize.register_parametrization(theirs, "weight", _scale(torch.nn)())
        P.remove_parametrizations(mine, "weight", leave_parametrized=leave)
        torch.nn.utils.parametrize.remove_parametrizations(
            theirs, "weight", leave_parametrized=leave
        )
        assert type(mine) is nn.Linear and not hasattr(mine, "parametrizations")
        assert mine.weight is original and isinstance(mine.weight, nn.Parameter)
        assert sorted(mine.state_dict()) == ["bias", "weight"]
        np.testing.assert_allclose(mine.weight.detach().numpy(), theirs.weight.detach().numpy())


def test_parametrized_buffer_and_two_tensors_on_one_module():
    m = nn.BatchNorm1d(3)
    P.register_parametrization(m, "running_var", _scale(nn)())
    P.register_parametrization(m, "weight", _scale(nn)())
    assert sorted(m.parametrizations) == ["running_var", "weight"]
    assert "parametrizations.running_var.original" in dict(m.named_buffers())
    assert m.running_var.tolist() == [1.0, 1.0, 1.0]
    assert m.parametrizations.running_var.original.tolist() == [0.5, 0.5, 0.5]
    P.remove_parametrizations(m, "running_var")
    assert type(m).__name__ == "ParametrizedBatchNorm1d"
    assert "running_var" in dict(m.named_buffers())
    P.remove_parametrizations(m, "weight")
    assert type(m) is nn.BatchNorm1d


def test_right_inverse_returning_several_tensors():
    class Product(nn.Module):
        def forward(self, a, b):
            return a * b

        def right_inverse(self, x):
            return [x, tk.ones_like(x)]

    m = P.register_parametrization(nn.Linear(2, 2), "weight", Product())
    names = sorted(name for name, _ in m.named_parameters())
    assert names == [
        "bias",
        "parametrizations.weight.original0",
        "parametrizations.weight.original1",
    ]
    value = m.weight.detach().clone()
    with pytest.raises(ValueError, match="Cannot leave unparametrized"):
        P.remove_parametrizations(m, "weight", leave_parametrized=False)
    P.remove_parametrizations(m, "weight")
    assert m.weight.tolist() == value.tolist() and isinstance(m.weight, nn.Parameter)


def test_parametrized_modules_deepcopy_but_do_not_pickle():
    m = P.register_parametrization(nn.Linear(2, 2), "weight", _scale(nn)())
    twin = copy.deepcopy(m)
    assert type(twin) is type(m) and twin.weight.tolist() == m.weight.tolist()
    assert twin.parametrizations.weight.original is not m.parametrizations.weight.original
    with pytest.raises(RuntimeError, match="only supported through state_dict"):
        pickle.dumps(m)


def test_registration_checks():
    class Row(nn.Module):
        def forward(self, x):
            return x[0]

    class Half(nn.Module):
        def forward(self, x):
            return x.half()

    class NoInverse(nn.Module):
        def forward(self, x):
            return x

    with pytest.raises(
        ValueError, match=r"may not change the shape of the tensor, unless `unsafe`"
    ):
        P.register_parametrization(nn.Linear(3, 3), "weight", Row())
    with pytest.raises(ValueError, match=r"unparametrized dtype: tensorkit\.float32\n"):
        P.register_parametrization(nn.Linear(3, 3), "weight", Half())
    m = P.register_parametrization(nn.Linear(3, 3), "weight", Row(), unsafe=True)
    assert m.weight.shape == (3,)
    m = P.register_parametrization(nn.Linear(3, 3), "weight", NoInverse())
    with pytest.raises(ValueError, match=r"module\.weight\.shape: tensorkit\.Size\(\[3, 3\]\)"):
        P.register_parametrization(m, "weight", Row())
    with pytest.raises(RuntimeError, match="parametrization NoInverse does not implement right_"):
        m.weight = tk.ones(3, 3)
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a parametrized"):
        P.register_parametrization(m, "foo", NoInverse())
    with pytest.raises(ValueError, match="does not have a parametrization on bias"):
        P.remove_parametrizations(m, "bias")
    with pytest.raises(ValueError, match=r"ParametrizationList requires one or more modules\."):
        P.ParametrizationList([], tk.ones(2))


def _twins(torch, make_mine, make_theirs):
    """A float64 tensorkit module and its torch twin with the same state."""
    mine, theirs = make_mine().double(), make_theirs().double()
    theirs.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in mine.state_dict().items()})
    return mine, theirs


def _compare_grads(mine, theirs, x):
    torch = _torch()
    out_mine, out_theirs = mine(tk.tensor(x)), theirs(torch.tensor(x))
    np.testing.assert_allclose(out_mine.detach().numpy(), out_theirs.detach().numpy(), rtol=1e-10)
    out_mine.pow(2).sum().backward()
    out_theirs.pow(2).sum().backward()
    theirs_params = dict(theirs.named_parameters())
    for name, param in mine.named_parameters():
        np.testing.assert_allclose(
            param.grad.numpy(), theirs_params[name].grad.numpy(), rtol=1e-9, atol=1e-12
        )


@pytest.mark.parametrize("dim", [0, 1, None, -1])
def test_weight_norm_matches_torch(dim):
    torch = _torch()
    mine, theirs = _twins(torch, lambda: nn.Linear(3, 4), lambda: torch.nn.Linear(3, 4))
    parametrizations.weight_norm(mine, dim=dim)
    torch.nn.utils.parametrizations.weight_norm(theirs, dim=dim)
    assert sorted(mine.state_dict()) == sorted(theirs.state_dict())
    g = mine.parametrizations.weight.original0
    assert g.shape == theirs.parametrizations.weight.original0.shape
    assert repr(mine) == repr(theirs)
    _compare_grads(mine, theirs, np.random.default_rng(2).standard_normal((2, 3)))


def test_weight_norm_loads_old_state_dict_keys_and_gradchecks():
    m = parametrizations.weight_norm(nn.Linear(2, 3))
    v = tk.tensor([[2.0, 0.0], [0.0, 2.0], [3.0, 4.0]])
    m.load_state_dict({"weight_g": tk.ones(3, 1), "weight_v": v, "bias": tk.zeros(3)})
    np.testing.assert_allclose(m.weight.detach().numpy(), [[1, 0], [0, 1], [0.6, 0.8]], rtol=1e-6)
    norm = parametrizations._WeightNorm(1)
    rng = np.random.default_rng(3)
    check_grads(norm, rng.uniform(1, 2, (1, 3)), rng.standard_normal((4, 3)))
    check_grads(parametrizations._WeightNorm(None), np.array(1.5), rng.standard_normal((4, 3)))


@pytest.mark.parametrize("kind", ["linear", "conv_transpose"])
def test_spectral_norm_matches_torch(kind):
    torch = _torch()
    if kind == "linear":
        mine, theirs = _twins(torch, lambda: nn.Linear(5, 4), lambda: torch.nn.Linear(5, 4))
        x = np.random.default_rng(4).standard_normal((2, 5))
    else:
        mine, theirs = _twins(
            torch, lambda: nn.ConvTranspose1d(3, 4, 2), lambda: torch.nn.ConvTranspose1d(3, 4, 2)
        )
        x = np.random.default_rng(4).standard_normal((2, 3, 5))
    parametrizations.spectral_norm(mine, n_power_iterations=2)
    torch.nn.utils.parametrizations.spectral_norm(theirs, n_power_iterations=2)
    state = theirs.state_dict()
    assert sorted(mine.state_dict()) == sorted(state)
    mine.load_state_dict({k: tk.tensor(v.numpy()) for k, v in state.items()})  # same u, v
    _compare_grads(mine, theirs, x)
    np.testing.assert_allclose(
        mine.parametrizations.weight[0]._u.numpy(), theirs.parametrizations.weight[0]._u.numpy()
    )
    for _ in range(30):
        weight = mine.weight.detach().numpy()
    matrix = weight.reshape(4, -1) if kind == "linear" else weight.swapaxes(0, 1).reshape(4, -1)
    assert np.linalg.svd(matrix, compute_uv=False)[0] == pytest.approx(1.0)
    mine.eval()
    u = mine.parametrizations.weight[0]._u.clone()
    mine(tk.tensor(x))
    assert mine.parametrizations.weight[0]._u.tolist() == u.tolist()


def test_spectral_norm_gradchecks_and_errors():
    norm = parametrizations._SpectralNorm(tk.randn(3, 4, dtype=tk.float64)).eval()
    check_grads(norm, np.random.default_rng(5).standard_normal((3, 4)))
    check_grads(parametrizations._SpectralNorm(tk.randn(3)), np.random.default_rng(6).random(3))
    with pytest.raises(IndexError, match=r"expected to be in range of \[-2, 1\] but got 2\)"):
        parametrizations.spectral_norm(nn.Linear(2, 2), dim=2)
    with pytest.raises(ValueError, match="but got n_power_iterations=0"):
        parametrizations.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)
    with pytest.raises(ValueError, match="has no parameter or buffer with name 'kernel'"):
        parametrizations.spectral_norm(nn.Linear(2, 2), "kernel")


ORTHOGONAL_CASES = [
    (shape, orthogonal_map, trivialization)
    for shape in [(4, 4), (5, 3), (3, 5)]
    for orthogonal_map in ["matrix_exp", "cayley", "householder"]
    for trivialization in [True, False]
    if trivialization or orthogonal_map == "householder"
]


@pytest.mark.parametrize(("shape", "orthogonal_map", "trivialization"), ORTHOGONAL_CASES)
def test_orthogonal_matches_torch(shape, orthogonal_map, trivialization):
    torch = _torch()
    rows, cols = shape
    mine, theirs = _twins(torch, lambda: nn.Linear(cols, rows), lambda: torch.nn.Linear(cols, rows))
    kwargs = {"orthogonal_map": orthogonal_map, "use_trivialization": trivialization}
    parametrizations.orthogonal(mine, **kwargs)
    torch.nn.utils.parametrizations.orthogonal(theirs, **kwargs)
    assert sorted(mine.state_dict()) == sorted(theirs.state_dict())
    if trivialization and rows != cols:  # the base's completion is random: use torch's
        mine.parametrizations.weight[0].base = tk.tensor(
            theirs.parametrizations.weight[0].base.numpy()
        )
    np.testing.assert_allclose(
        mine.weight.detach().numpy(), theirs.weight.detach().numpy(), atol=1e-12
    )
    weight = mine.weight.detach().numpy()
    small = weight.T @ weight if rows >= cols else weight @ weight.T
    np.testing.assert_allclose(small, np.eye(min(shape)), atol=1e-12)
    step = np.random.default_rng(7).standard_normal(shape) * 0.3
    with tk.no_grad():
        mine.parametrizations.weight.original.add_(tk.tensor(step))
    with torch.no_grad():
        theirs.parametrizations.weight.original.add_(torch.tensor(step))
    _compare_grads(mine, theirs, np.random.default_rng(8).standard_normal((2, cols)))


def test_orthogonal_maps_gradcheck():
    rng = np.random.default_rng(9)
    for orthogonal_map in ("cayley", "householder"):
        orth = parametrizations._Orthogonal(tk.ones(4, 3), orthogonal_map, use_trivialization=False)
        check_grads(orth, rng.standard_normal((4, 3)) + 2 * np.eye(4, 3))


def test_orthogonal_errors():
    with pytest.raises(ValueError, match=r"Got a tensor of 1 dimensions\."):
        parametrizations.orthogonal(nn.Linear(2, 2), "bias")
    with pytest.raises(ValueError, match='has to be one of "matrix_exp", "cayley", "householder"'):
        parametrizations.orthogonal(nn.Linear(2, 2), orthogonal_map="qr")
    m = parametrizations.orthogonal(nn.Linear(2, 2), use_trivialization=False)
    with pytest.raises(NotImplementedError, match="when use_trivialization=False"):
        m.weight = tk.eye(2)
    m = parametrizations.orthogonal(nn.Linear(2, 3))
    with pytest.raises(ValueError, match=r"of shape tensorkit\.Size\(\[3, 2\]\)\. Got a tensor"):
        m.weight = tk.eye(2)
    m.weight = tk.eye(3, 2)
    np.testing.assert_allclose(m.weight.detach().numpy(), np.eye(3, 2), atol=1e-6)
