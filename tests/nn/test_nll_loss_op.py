"""nll_loss as one op (NllLossBackward0, as PyTorch): values and gradients against PyTorch for
every reduction, class weights, ignored targets or none (the op's path without weights) and
N-d inputs; float64 gradcheck and gradgradcheck; nothing counted; a weight that needs its own
gradient; targets changed in place before backward."""

from __future__ import annotations

import numpy as np
import pytest

import tensorkit as tk

F = tk.nn.functional
CASES = [((6, 5), (6,)), ((3, 4, 2, 2), (3, 2, 2)), ((5,), ())]


def _case(shape, target_shape, weighted, seed=0, ignored=True):
    rng = np.random.default_rng(seed)
    classes = shape[1] if len(shape) > 1 else shape[0]
    x = rng.standard_normal(shape)
    t = rng.integers(0, classes, target_shape)
    if t.ndim and ignored:
        t.flat[0] = -100  # one ignored target
    w = rng.uniform(0.5, 2.0, classes) if weighted else None
    return x, t, w


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shapes", CASES)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignored", [True, False])
def test_cross_entropy_matches_torch(reduction, shapes, weighted, ignored) -> None:
    torch = pytest.importorskip("torch")
    x, t, w = _case(*shapes, weighted, ignored=ignored)
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
@pytest.mark.parametrize("weighted", [True, False])
def test_gradcheck_and_gradgradcheck(reduction, shapes, weighted) -> None:
    x, t, w = _case(*shapes, weighted, seed=1, ignored=weighted)  # unweighted: all count
    X, T = tk.tensor(x, requires_grad=True), tk.tensor(t)
    W = None if w is None else tk.tensor(w)
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


@pytest.mark.parametrize("dtype", [np.int64, np.uint8])
def test_targets_changed_in_place_before_backward_raise_as_in_torch(dtype) -> None:
    """The op saves the targets themselves, as PyTorch's nll_loss_forward does."""
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(3).standard_normal((3, 5))

    def run(lib):
        logits = lib.tensor(x, requires_grad=True)
        target = lib.tensor(np.array([1, 0, 4], dtype=dtype))
        loss = lib.nn.functional.cross_entropy(logits, target)
        target[0] = 2
        loss.backward()

    with pytest.raises(RuntimeError, match="saved by NllLossBackward0 \\(argument 1\\)"):
        run(tk)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        run(torch)


def test_the_op_reads_uint8_targets_as_classes() -> None:
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(4).standard_normal((4, 3))
    t = np.array([2, 0, 1, 2], dtype=np.uint8)
    got = F.cross_entropy(tk.tensor(x, requires_grad=True), tk.tensor(t))
    expected = torch.nn.functional.cross_entropy(torch.tensor(x), torch.tensor(t).long())
    np.testing.assert_allclose(got.item(), expected.item(), rtol=1e-12)
