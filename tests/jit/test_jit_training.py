"""Training through compiled code: eager's gradients, any order, and whole steps."""

from __future__ import annotations

import numpy as np
import pytest

import tensorkit as tk
import tensorkit.nn as nn
import tensorkit.nn.functional as F  # noqa: N812
from tensorkit import jit


def _grads(model: nn.Module) -> list[np.ndarray]:
    return [p.grad.numpy().copy() for p in model.parameters()]


def _compiled_and_eager_grads(model: nn.Module, x: tk.Tensor, loss_fn) -> tuple:
    compiled = tk.compile(model)
    for _ in range(3):  # two recordings, then a replay
        model.zero_grad()
        out = compiled(x)
        compiled_loss = loss_fn(out)
        compiled_loss.backward()
    (entry,) = compiled.entries.values()
    assert entry.compiled is not None, entry.unstable or entry.breaks
    assert out.grad_fn.name() == "CompiledFunctionBackward"
    got = _grads(model)
    model.zero_grad()
    eager_loss = loss_fn(model(x))
    eager_loss.backward()
    return float(compiled_loss), float(eager_loss), got, _grads(model)


def _assert_close(result: tuple) -> None:
    compiled_loss, eager_loss, got, expected = result
    assert compiled_loss == pytest.approx(eager_loss, rel=1e-6)
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_mlp_gradients_equal_eager() -> None:
    model = nn.Sequential(
        nn.Linear(20, 16), nn.ReLU(), nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 4)
    )
    x, y = tk.randn(12, 20), tk.randint(0, 4, (12,))
    _assert_close(_compiled_and_eager_grads(model, x, lambda out: F.cross_entropy(out, y)))


def test_cnn_gradients_equal_eager() -> None:
    model = nn.Sequential(
        nn.Conv2d(1, 4, 3),
        nn.ReLU(),
        nn.Conv2d(4, 8, 3),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(8 * 4 * 4, 10),
    )
    x, y = tk.randn(6, 1, 12, 12), tk.randint(0, 10, (6,))
    _assert_close(_compiled_and_eager_grads(model, x, lambda out: F.cross_entropy(out, y)))


def test_transformer_layer_gradients_equal_eager() -> None:
    layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True)
    x = tk.randn(3, 5, 16)
    _assert_close(_compiled_and_eager_grads(layer, x, lambda out: out.pow(2).mean()))


def test_gradcheck_and_gradgradcheck_through_a_compiled_function() -> None:
    compiled = tk.compile(lambda x, w: (x @ w).tanh().sum(dim=1) * x[:, 0])
    x = tk.randn(4, 3, dtype=tk.float64, requires_grad=True)
    w = tk.randn(3, 2, dtype=tk.float64, requires_grad=True)
    assert tk.autograd.gradcheck(compiled, (x, w))
    assert tk.autograd.gradgradcheck(compiled, (x, w))
    (entry,) = compiled.entries.values()
    assert entry.compiled is not None and entry.compiled.backward_plan is not None


def test_second_derivative_through_compiled_code_matches_eager() -> None:
    def f(x):
        return (x.sin() * x).sum()

    compiled = tk.compile(f)
    x = tk.randn(5, dtype=tk.float64, requires_grad=True)
    for _ in range(3):
        (g,) = tk.autograd.grad(compiled(x), x, create_graph=True)
    (gg,) = tk.autograd.grad(g.sum(), x)
    (g_eager,) = tk.autograd.grad(f(x), x, create_graph=True)
    (gg_eager,) = tk.autograd.grad(g_eager.sum(), x)
    np.testing.assert_allclose(g.detach().numpy(), g_eager.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(gg.numpy(), gg_eager.numpy(), rtol=1e-12)


def test_saved_input_changed_in_place_before_backward_is_refused() -> None:
    compiled = tk.compile(lambda x, w: (x * w).sum())
    x, w = tk.ones(3), tk.randn(3, requires_grad=True)
    for _ in range(3):
        loss = compiled(x, w)  # w's gradient needs x
    x.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def _sgd_run(compile_step: bool, steps: int = 5) -> tuple[list[float], list[np.ndarray]]:
    tk.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 8), nn.Tanh(), nn.Linear(8, 3))
    opt = tk.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x, y = tk.randn(16, 10), tk.randint(0, 3, (16,))

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()

    run = tk.compile(step) if compile_step else step
    losses = [float(run(x, y)) for _ in range(steps)]
    if compile_step:
        (entry,) = run.entries.values()
        assert entry.compiled is not None, entry.unstable or entry.breaks
    return losses, [p.detach().numpy().copy() for p in model.parameters()]


def test_whole_sgd_step_compiled_follows_the_eager_trajectory() -> None:
    compiled_losses, compiled_params = _sgd_run(True)
    eager_losses, eager_params = _sgd_run(False)
    np.testing.assert_allclose(compiled_losses, eager_losses, rtol=1e-6)
    for a, b in zip(compiled_params, eager_params, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def test_a_step_that_reads_its_step_count_guards_on_it() -> None:
    model = nn.Linear(3, 1)
    opt = tk.optim.Adagrad(model.parameters(), lr=0.01)  # reads its step count with item()

    def step(x):
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        return loss.detach()

    explained = jit.explain(step, tk.ones(4, 3))
    assert explained.graph_break_count >= 1
    assert any("item()" in str(b) for b in explained.break_reasons)
    assert all(b.guarded for b in explained.break_reasons)  # a path per step count


def test_whole_adam_step_compiles_and_follows_eager() -> None:
    def run(compiled: bool) -> tuple[list[float], list[np.ndarray]]:
        tk.manual_seed(0)
        model = nn.Sequential(nn.Linear(10, 8), nn.Tanh(), nn.Linear(8, 3))
        opt = tk.optim.Adam(model.parameters(), lr=0.01)
        x, y = tk.randn(16, 10), tk.randint(0, 3, (16,))

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss.detach()

        run_step = tk.compile(step) if compiled else step
        losses = [float(run_step(x, y)) for _ in range(6)]
        if compiled:
            (entry,) = run_step.entries.values()
            assert entry.compiled is not None, entry.unstable or entry.breaks
        return losses, [p.detach().numpy().copy() for p in model.parameters()]

    (compiled_losses, compiled_params), (eager_losses, eager_params) = run(True), run(False)
    np.testing.assert_allclose(compiled_losses, eager_losses, rtol=1e-5)
    for a, b in zip(compiled_params, eager_params, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
