"""Guarded graph breaks: a path per value read, switching without effects, trace and save."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import tensorkit as tk
import tensorkit.nn as nn
from tensorkit import jit
from tensorkit.jit.guards import GuardFailure, same


def _entry(compiled: jit.CompiledFunction) -> Any:
    (entry,) = compiled.entries.values()
    return entry


def _branchy(x, w):
    if x.sum() > 0:
        return (x * w).tanh().sum()
    return (x * w * w).sum()


def test_both_branches_compile_once_and_give_eager_values_and_gradients() -> None:
    compiled = tk.compile(_branchy)
    rng = np.random.default_rng(0)
    signs = [1, 1, -1, -1, 1, -1, 1, -1, -1, 1]
    for number, sign in enumerate(signs):
        x = tk.tensor(sign * np.abs(rng.standard_normal(5)), dtype=tk.float64)
        w_compiled = tk.tensor(rng.standard_normal(5), dtype=tk.float64, requires_grad=True)
        w_eager = w_compiled.detach().requires_grad_()
        out, expected = compiled(x, w_compiled), _branchy(x, w_eager)
        out.backward()
        expected.backward()
        np.testing.assert_allclose(out.item(), expected.item(), rtol=1e-12)
        np.testing.assert_allclose(w_compiled.grad.numpy(), w_eager.grad.numpy(), rtol=1e-12)
        if number >= 4:  # both paths compiled: a replay, not a recording
            assert out.grad_fn.name() == "CompiledFunctionBackward"
    entry = _entry(compiled)
    assert [p.values for p in entry.paths] == [(True,), (False,)]
    assert entry.recordings == 4  # two per branch, then flipping back and forth replays
    assert entry.path.values == (True,)  # the path that ran last is tried first


def test_int_of_a_count_selects_a_path_per_count() -> None:
    def f(x):
        n = int((x > 0).sum())
        return x[:n] * 2 if n else x * 0

    compiled = tk.compile(f)
    for data in [[1, 2, -3], [1, 2, -3], [1, -2, -3], [1, -2, -3], [1, 2, -3], [-1, -2, -3]]:
        x = tk.tensor(data, dtype=tk.float32)
        np.testing.assert_array_equal(compiled(x).numpy(), f(x).numpy())
    entry = _entry(compiled)
    assert sorted(p.values for p in entry.paths) == [(1,), (2,)]
    assert entry.recordings == 5  # (2,) twice, (1,) twice, (0,) once so far


def test_a_value_changing_every_call_hits_the_limit_warns_and_runs_eagerly(monkeypatch) -> None:
    monkeypatch.setattr(jit.config, "cache_size_limit", 3)

    def scaled(x):
        return x * x.mean().item()

    compiled = tk.compile(scaled)
    line = scaled.__code__.co_firstlineno + 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(1, 8):
            np.testing.assert_allclose(compiled(tk.full((2,), float(step))).numpy(), [step**2] * 2)
    (message,) = [str(w.message) for w in caught]
    assert "hit config.cache_size_limit (3) paths for one guard set" in message
    assert (
        f"Tensor.item() at tests/jit/test_jit_guards.py:{line} read 1.0, 2.0, 3.0, 4.0;" in message
    )
    entry = _entry(compiled)
    assert entry.eager and entry.paths == [] and entry.recordings == 4


def _step_model() -> tuple[nn.Module, Any]:
    tk.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 1))
    opt = tk.optim.SGD(model.parameters(), lr=0.1)
    return model, opt


def _training_step(model: nn.Module, opt: Any):
    def step(x):
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        if x.abs().mean() > 1:  # after the backward: a big input steps, a small one scales
            opt.step()
        else:
            for p in model.parameters():
                p.grad.mul_(0.5)
        return loss.detach()

    return step


def test_a_compiled_training_step_with_a_branch_follows_eager() -> None:
    inputs = [tk.randn(8, 3) * (3.0 if n % 3 else 0.1) for n in range(12)]
    results = []
    for compiled in (True, False):
        model, opt = _step_model()
        step = _training_step(model, opt)
        run = tk.compile(step) if compiled else step
        losses = [float(run(x)) for x in inputs]
        results.append((losses, [t.detach().numpy().copy() for t in model.state_dict().values()]))
        if compiled:
            assert len(_entry(run).paths) == 2, _entry(run).unstable or _entry(run).breaks
    (compiled_losses, compiled_state), (eager_losses, eager_state) = results
    np.testing.assert_allclose(compiled_losses, eager_losses, rtol=1e-5)
    for a, b in zip(compiled_state, eager_state, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_a_failed_guard_leaves_parameters_buffers_inputs_and_grads_untouched() -> None:
    model, opt = _step_model()
    compiled = tk.compile(_training_step(model, opt))
    big, small = tk.randn(8, 3) * 3.0, tk.randn(8, 3) * 0.01
    for x in (big, big, small, small):
        compiled(x)
    entry = _entry(compiled)
    stepping = next(p for p in entry.paths if p.values == (True,))
    before = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    grads = [p.grad for p in model.parameters()]
    given = small.numpy().copy()
    tensors = list(stepping.tensors)
    for index, position in stepping.inputs:
        tensors[index] = [small][position]
    with pytest.raises(GuardFailure) as failure:
        stepping.compiled.run(tensors)
    assert (failure.value.number, failure.value.value) == (0, False)
    for key, value in model.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), before[key])  # running stats too
    assert all(p.grad is g for p, g in zip(model.parameters(), grads, strict=True))
    np.testing.assert_array_equal(small.numpy(), given)


def test_numpy_keeps_the_call_eager_and_explain_says_why() -> None:
    def f(x):
        return x * float(x.sum().numpy())

    compiled = tk.compile(f)
    for _ in range(3):
        np.testing.assert_array_equal(compiled(tk.ones(2)).numpy(), [2.0, 2.0])
    entry = _entry(compiled)
    assert entry.eager and entry.compiled is None and entry.recordings == 1
    explained = jit.explain(f, tk.ones(2))
    assert explained.graph_count == 0 and explained.graph_break_count == 1
    assert "numpy() hands out the tensor's memory" in str(explained)
    assert str(explained).count("the call runs eagerly") == 1


def test_explain_counts_regions_and_says_what_each_break_does() -> None:
    def f(x):
        y = x * 2
        if y.sum() > 0:
            y = y + 1
        return y * int(y.max())

    explained = jit.explain(f, tk.ones(3))
    assert (explained.graph_break_count, explained.graph_count) == (2, 3)
    text = str(explained)
    first, second = (f.__code__.co_firstlineno + n for n in (2, 4))
    assert (
        f"1. Tensor.__bool__() reads a tensor's value into Python (at tests/jit/test_jit_guards"
        f".py:{first}): guarded: the compiled call checks it reads True again" in text
    )
    assert f"py:{second}): guarded: the compiled call checks it reads 3.0 again" in text
    assert f"Tensor.__bool__() at tests/jit/test_jit_guards.py:{first} == True" in explained.guards


def test_reads_no_replay_can_check_in_time_stay_eager_with_their_reason() -> None:
    def hooked(x):
        y = x * 2
        y.register_hook(lambda g: g * float(g.sum()))  # read in the captured backward
        return y.sum()

    explained = jit.explain(hooked, tk.ones(3, requires_grad=True))
    assert explained.graph_count == 0
    assert "it runs in the backward tk.jit captures ahead of time" in str(explained)

    def drawn(x):
        noise = tk.rand(3)
        return x * 2 if noise.sum() > 0 else x  # the draw came first

    explained = jit.explain(drawn, tk.ones(3))
    assert explained.graph_count == 0
    assert "it follows a random draw" in str(explained)

    def listed(x):
        return x * len([v for v in x.tolist() if v > 0])

    assert jit.explain(listed, tk.ones(3)).graph_count == 2  # a small tolist() is guarded
    explained = jit.explain(listed, tk.ones(65))
    assert explained.graph_count == 0
    assert "tolist() of 65 elements (tk.compile guards at most 64)" in str(explained)


def test_fullgraph_still_raises_at_a_guarded_break() -> None:
    compiled = tk.compile(_branchy, fullgraph=True)
    with pytest.raises(jit.TracingError, match=r"fullgraph=True\): graph break: Tensor\.__bool__"):
        compiled(tk.ones(2), tk.ones(2))


def test_guard_values_compare_by_type_and_match_nan() -> None:
    assert same(float("nan"), float("nan")) and same([1.0, float("nan")], [1.0, float("nan")])
    assert not same(True, 1) and not same(1, 1.0) and not same([1, 2], [1, 2, 3])
    assert same(0.5, 0.5) and not same(0.5, 0.25)

    def f(x):
        return x * 0 if x.max().item() != x.max().item() else x  # NaN: the first branch

    compiled = tk.compile(f)
    nan = tk.tensor([float("nan"), 1.0])
    for _ in range(4):
        np.testing.assert_array_equal(compiled(nan).numpy(), f(nan).numpy())
    entry = _entry(compiled)
    assert entry.recordings == 2 and entry.compiled is not None


def test_a_traced_guard_raises_naming_the_site_and_both_values(tmp_path) -> None:
    line = _branchy.__code__.co_firstlineno + 1
    with pytest.warns(jit.TracerWarning, match="a replay reading another value raises"):
        traced = jit.trace(_branchy, (tk.ones(3), tk.ones(3)))
    assert float(traced(tk.ones(3) * 2, tk.ones(3))) == pytest.approx(3 * np.tanh(2.0))
    expected = (
        rf"_branchy: Tensor\.__bool__\(\) at tests/jit/test_jit_guards\.py:{line} read False, "
        r"but the graph was traced when it read True"
    )
    with pytest.raises(jit.GuardError, match=expected):
        traced(-tk.ones(3), tk.ones(3))
    jit.save(traced, tmp_path / "branch.tkjit")
    loaded = jit.load(tmp_path / "branch.tkjit")
    assert [n.attrs for n in loaded.graph.nodes if n.kind == "guard"] == [
        {"value": True, "number": 0}
    ]
    assert float(loaded(tk.ones(3) * 2, tk.ones(3))) == pytest.approx(3 * np.tanh(2.0))
    named = expected.replace("_branchy", r"_branchy \(loaded from .*branch\.tkjit\)")
    with pytest.raises(jit.GuardError, match=named):
        loaded(-tk.ones(3), tk.ones(3))


def test_a_compiled_path_saves_with_its_guard(tmp_path) -> None:
    compiled = tk.compile(_branchy)
    for _ in range(2):
        compiled(-tk.ones(3), tk.ones(3))
    jit.save(compiled, tmp_path / "path.tkjit")
    loaded = jit.load(tmp_path / "path.tkjit")
    assert float(loaded(-tk.ones(3), tk.ones(3) * 2)) == pytest.approx(-12.0)
    with pytest.raises(jit.GuardError, match=r"read True, but the graph was traced when it read"):
        loaded(tk.ones(3), tk.ones(3))


def test_a_path_that_reads_another_value_than_eager_code_warns_and_runs_eagerly() -> None:
    compiled = tk.compile(_branchy)
    x, w = tk.ones(3), tk.ones(3)
    compiled(x, w)
    compiled(x, w)
    entry = _entry(compiled)
    (guard,) = [n for n in entry.compiled.graph.nodes if n.kind == "guard"]
    guard.attrs["value"] = False  # as if the compiled graph computed the read differently
    line = _branchy.__code__.co_firstlineno + 1
    with pytest.warns(
        UserWarning,
        match=rf"test_jit_guards\.py:{line} the compiled graph read "
        r"True where eager code reads True",
    ) as caught:
        assert float(compiled(x, w)) == pytest.approx(3 * np.tanh(1.0))
    assert len(caught) == 1 and entry.eager and entry.recordings == 3
    assert float(compiled(-x, w)) == pytest.approx(-3.0)  # eager from now on
    assert entry.recordings == 3


def _attention(q, k, v, mask):
    return nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask).sum()


def test_attention_compiles_without_the_blocked_row_masking_until_a_row_is_blocked() -> None:
    """Eager attention masks fully blocked rows only when some score is -inf; under tk.compile
    that check is a guard, so the usual path compiles without the masking, and a call whose
    mask blocks a whole row takes a path with it: eager's values and gradients (no NaN)."""
    rng = np.random.default_rng(3)
    q, k, v = (tk.tensor(rng.standard_normal(s)) for s in ((2, 3, 4), (2, 5, 4), (2, 5, 4)))
    q.requires_grad_()
    open_mask = tk.ones(3, 5, dtype=tk.bool)
    row_blocked = open_mask.clone()
    row_blocked[1] = False
    compiled = tk.compile(_attention)
    for mask in (None, None, None, row_blocked, row_blocked, row_blocked, None):
        out = compiled(q, k, v, mask)
        (grad,) = tk.autograd.grad(out, q)
        expected = _attention(q, k, v, mask)
        (expected_grad,) = tk.autograd.grad(expected, q)
        np.testing.assert_allclose(out.item(), expected.item(), rtol=1e-12)
        np.testing.assert_allclose(grad.numpy(), expected_grad.numpy(), rtol=1e-12)
        assert not np.isnan(grad.numpy()).any()
    ops = [
        [n.op for n in path.compiled.graph.nodes]
        for entry in compiled.entries.values()
        for path in entry.paths
    ]
    assert any("where" not in path for path in ops)  # the usual path: no masking
    assert any("where" in path for path in ops)  # the blocked row's path
    report = str(tk.jit.explain(_attention, q, k, v, None))
    assert "scaled_dot_product_attention reads whether some attention score is -inf" in report
    assert "Tensor.__bool__() reads" not in report  # the read is the library's, named so
    with warnings.catch_warnings():
        warnings.simplefilter("error", tk.jit.TracerWarning)
        traced = tk.jit.trace(_attention, (q, k, v, row_blocked))  # the masking, no read
    expected = _attention(q, k, v, row_blocked)
    np.testing.assert_allclose(traced(q, k, v, row_blocked).item(), expected.item(), rtol=1e-12)


def test_attention_after_a_random_draw_compiles_with_the_masking() -> None:
    """After a dropout no read can be guarded: attention keeps the masking instead of
    reading the scores, so the call still compiles (no eager fallback) with eager's values."""

    def f(q, k, v):
        return _attention(nn.functional.dropout(q, 0.5), k, v, None)

    rng = np.random.default_rng(4)
    q, k, v = (tk.tensor(rng.standard_normal(s)) for s in ((2, 3, 4), (2, 5, 4), (2, 5, 4)))
    compiled = tk.compile(f)
    for seed in range(4):
        tk.manual_seed(seed)
        got = compiled(q, k, v)
        tk.manual_seed(seed)
        np.testing.assert_allclose(got.item(), f(q, k, v).item(), rtol=1e-12)
    entry = _entry(compiled)
    assert not entry.eager and entry.compiled is not None
    assert "where" in [n.op for n in entry.compiled.graph.nodes]


class _Gate(nn.Module):
    def forward(self, x):
        return x * 2 if x.sum() > 0 else x


def test_explain_names_the_module_whose_forward_read_a_guard() -> None:
    explained = tk.jit.explain(_Gate(), tk.ones(3))
    assert any(g.startswith("Tensor.__bool__() in _Gate at ") for g in explained.guards), (
        explained.guards
    )
