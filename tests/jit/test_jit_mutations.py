"""Writes compiled code makes to tensors from outside (an optimizer's ``p.add_``, an input
changed in place): eager's values in every case, and arguments sharing memory with a
written tensor handled as eager code handles them."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tensorkit as tk
import tensorkit.nn as nn


def _entry(compiled: Any) -> Any:
    (entry,) = compiled.entries.values()
    return entry


def _mlp_step(seed: int, momentum: float = 0.0) -> tuple[Any, Any, Any, Any]:
    tk.manual_seed(seed)
    model = nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 3))
    opt = tk.optim.SGD(model.parameters(), lr=0.1, momentum=momentum)
    x = tk.randn(4, 6)
    y = tk.tensor([0, 2, 1, 2])

    def step(x, y):
        opt.zero_grad()
        loss = tk.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()

    return model, step, x, y


def test_an_sgd_step_updates_each_parameter_with_eagers_values() -> None:
    model, step, x, y = _mlp_step(0)
    eager_model, eager_step, _, _ = _mlp_step(0)
    compiled = tk.compile(step)
    arrays = [p._data for p in model.parameters()]
    for _ in range(5):
        got, expected = compiled(x, y), eager_step(x, y)
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6)
    plan = _entry(compiled).compiled
    assert len(plan.writes) == 4  # each p.add_ computed straight into the parameter's array
    for array, p, q in zip(arrays, model.parameters(), eager_model.parameters(), strict=True):
        assert p._data is array  # the parameter's own array holds the update
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-7)


def test_momentum_buffers_and_parameters_match_eager() -> None:
    model, step, x, y = _mlp_step(1, momentum=0.9)
    eager_model, eager_step, _, _ = _mlp_step(1, momentum=0.9)
    compiled = tk.compile(step)
    for _ in range(6):
        compiled(x, y)
        eager_step(x, y)
    for p, q in zip(model.parameters(), eager_model.parameters(), strict=True):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-7)
        assert p._version > 0  # the write bumped the version, as p.add_ does


def test_an_old_value_read_after_the_update_is_the_old_one() -> None:

    def f(p, g):
        old = p * 1.0
        p.add_(g, alpha=-0.5)
        return old * 2 + p

    compiled = tk.compile(f)
    p, g = tk.randn(8), tk.randn(8)
    q = p.clone()
    for _ in range(4):
        got, expected = compiled(p, g), f(q, g)
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6)
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-6)


def test_a_view_read_after_its_base_was_written_matches_eager() -> None:
    def f(p, g):
        view = p.reshape(2, 4)
        p.mul_(0.5)
        return view.sum(0), p + g

    p, g = tk.randn(8), tk.randn(8)
    with pytest.warns(tk.jit.TracerWarning, match="a view is read after the tensor it views"):
        tk.jit.trace(f, (p.clone(), g))
    compiled = tk.compile(f)
    q = p.clone()
    for _ in range(4):
        got, expected = compiled(p, g), f(q, g)
        for a, b in zip(got, expected, strict=True):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-6)


def test_a_write_before_a_guard_waits_for_the_guard() -> None:
    """A write the plan made in place could not be undone when a later guard fails and the
    call runs eagerly (which writes again): such a write is copied in after the replay."""

    def f(p, g, x):
        p.add_(g, alpha=-0.5)
        if x.sum() > 0:
            return x * 2
        return x * 3

    compiled = tk.compile(f)
    p, g, x = tk.randn(5), tk.randn(5), tk.rand(5)
    q = p.clone()
    for _ in range(3):
        compiled(p, g, x)
        f(q, g, x)
    paths = _entry(compiled).paths
    assert paths and all(not path.compiled.writes for path in paths)
    got, expected = compiled(p, g, -x), f(q, g, -x)  # the guard fails: eager, one write
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6)
    np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-6)


def test_an_argument_sharing_a_written_tensors_memory_runs_eagerly() -> None:
    """The graph writes ``p``; a call whose other argument is a view of ``p`` reads the write
    in eager code (the same memory), so tk.compile runs that call eagerly; a traced graph
    refuses it, naming both arguments."""

    def f(p, g, x):
        p.add_(g, alpha=-0.1)
        return x * 3

    compiled = tk.compile(f)
    p, g = tk.randn(6), tk.randn(6)
    for _ in range(3):
        compiled(p, g, tk.randn(6))
    assert _entry(compiled).compiled.written  # the graph writes p
    q = p.clone()
    got, expected = compiled(p, g, p[:]), f(q, g, q[:])
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6)
    np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-6)
    traced = tk.jit.trace(f, (tk.randn(6), g, tk.randn(6)))
    with pytest.raises(RuntimeError, match="'input 2' shares memory with 'input 0'"):
        traced(p, g, p[:])


@pytest.mark.parametrize("observed", [False, True])
def test_the_profiled_plan_updates_the_parameters_alike(observed: bool) -> None:
    model, step, x, y = _mlp_step(2)
    _, eager_step, _, _ = _mlp_step(2)
    compiled = tk.compile(step)
    for _ in range(3):
        compiled(x, y)
        eager_step(x, y)
    arrays = [p._data for p in model.parameters()]
    if observed:
        with tk.profiler.profile() as prof:
            got = compiled(x, y)
        assert any(e.name == "matmul" for e in prof.key_averages())
    else:
        got = compiled(x, y)
    np.testing.assert_allclose(got.numpy(), eager_step(x, y).numpy(), rtol=1e-6)
    assert all(p._data is a for p, a in zip(model.parameters(), arrays, strict=True))
