"""nll_loss as one op (NllLossBackward0, as PyTorch): values and gradients against PyTorch for
every reduction, class weights, ignored targets and N-d inputs; float64 gradcheck and
gradgradcheck; nothing counted; a weight that needs its own gradient."""

from __future__ import annotations

import numpy as np
import pytest

import tensorkit as tk

F = tk.nn.functional
CASES = [((6, 5), (6,)), ((3, 4, 2, 2), (3, 2, 2)), ((5,), ())]


def _case(shape, target_shape, weighted, seed=0):
    rng = np.random.default_rng(seed)
    classes = shape[1] if len(shape) > 1 else shape[0]
    x = rng.standard_normal(shape)
    t = rng.integers(0, classes, target_shape)
    if t.ndim:
        t.flat[0] = -100  # one ignored target
    w = rng.uniform(0.5, 2.0, classes) if weighted else None
    return x, t, w


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shapes", CASES)
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_matches_torch(reduction, shapes, weighted) -> None:
    torch = pytest.importorskip("torch")
    x, t, w = _case(*shapes, weighted)
    X = tk.tensor(x, requires_grad=True)
    W = None if w is None else tk.tensor(w)
    got = F.cross_entropy(X, tk.tensor(t), weight=W, reduction=reduction)
    assert got.grad_fn.name() == "NllLossBackward0"
    Xt = torch.tensor(x, requires_grad=True)
    Wt = None if w is None else torch.tensor(w)
    expected = torch.nn.functional.cross_entropy(
        Xt, torch.tensor(t), weight=Wt, reduction=reduction
    )
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), rtol=1e-12)
    got.sum().backward()
    expected.sum().backward()
    np.testing.assert_allclose(X.grad.numpy(), Xt.grad.numpy(), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shapes", CASES)
def test_gradcheck_and_gradgradcheck(reduction, shapes) -> None:
    x, t, w = _case(*shapes, True, seed=1)
    X, T, W = tk.tensor(x, requires_grad=True), tk.tensor(t), tk.tensor(w)
    dim = 1 if X.ndim > 1 else 0

    def loss(logits):
        return F.nll_loss(F.log_softmax(logits, dim), T, weight=W, reduction=reduction)

    assert tk.autograd.gradcheck(loss, (X,))
    assert tk.autograd.gradgradcheck(loss, (X,))


def test_nothing_counted_gives_nan_and_a_zero_gradient() -> None:
    x = tk.randn(4, 3, requires_grad=True)
    loss = F.cross_entropy(x, tk.tensor([-100] * 4))
    assert np.isnan(loss.item())
    loss.backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((4, 3), np.float32))


def test_a_weight_that_requires_grad_gets_its_gradient() -> None:
    x, t, w = _case((6, 5), (6,), True, seed=2)
    X, W = tk.tensor(x, requires_grad=True), tk.tensor(w, requires_grad=True)
    F.nll_loss(X, tk.tensor(t), weight=W).backward()
    assert W.grad is not None and X.grad is not None
    assert tk.autograd.gradcheck(
        lambda weight: F.nll_loss(X.detach(), tk.tensor(t), weight=weight), (W,)
    )
