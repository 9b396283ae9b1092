"""tk.compile: guards, the cache, graph breaks, explain, and bad input."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import tensorkit as tk
import tensorkit.nn as nn
from tensorkit import jit


def _entry(compiled: jit.CompiledFunction) -> Any:
    (entry,) = compiled.entries.values()
    return entry


def test_second_agreeing_recording_compiles_and_replays() -> None:
    calls = []

    def f(x):
        calls.append(1)  # Python effects run in the recorded calls only
        return (x * 3).exp()

    compiled = tk.compile(f)
    x = tk.randn(4)
    for _ in range(4):
        np.testing.assert_allclose(compiled(x).numpy(), f(x).numpy())
    assert _entry(compiled).compiled is not None
    assert len(calls) == 2 + 4  # two recordings, then replays; plus the eager f(x) calls


def test_compile_as_decorator_with_and_without_arguments() -> None:
    @tk.compile
    def f(x):
        return x + 1

    @tk.compile(fullgraph=True)
    def g(x):
        return x - 1

    assert isinstance(f, jit.CompiledFunction) and isinstance(g, jit.CompiledFunction)
    assert float(f(tk.zeros(()))) == 1.0 and float(g(tk.zeros(()))) == -1.0
    assert tk.compile(f.fn, disable=True) is f.fn
    with pytest.raises(TypeError, match=r"unexpected keyword arguments \['fusion'\]"):
        tk.compile(f.fn, fusion=True)


def test_each_guard_set_has_its_own_entry() -> None:
    compiled = tk.compile(lambda x: x * 2)
    for shape in [(2,), (3,), (2,)]:
        for _ in range(3):
            out = compiled(tk.ones(shape))
        assert tuple(out.shape) == shape
    compiled(tk.ones(2, dtype=tk.float64))
    compiled(tk.ones(2, requires_grad=True))
    with tk.no_grad():
        compiled(tk.ones(2, requires_grad=True))
    assert len(compiled.entries) == 5


def test_python_number_changing_every_call_is_never_frozen() -> None:
    state = {"scale": 1.0}

    def f(x):
        state["scale"] += 1.0
        return x * state["scale"]

    compiled = tk.compile(f)
    for step in range(2, 8):
        assert float(compiled(tk.ones(()))) == step  # recorded each time, never replayed
    entry = _entry(compiled)
    assert entry.compiled is None
    assert "mul ran with other arguments (6.0 then 7.0)" in entry.unstable


def test_fullgraph_raises_at_a_graph_break() -> None:
    compiled = tk.compile(lambda x: x * x.sum().item(), fullgraph=True)
    with pytest.raises(jit.TracingError, match=r"fullgraph=True\): graph break: Tensor\.item"):
        compiled(tk.ones(2))


def test_shapes_changing_every_call_warn_at_the_limit_then_run_eagerly(monkeypatch) -> None:
    monkeypatch.setattr(jit.config, "cache_size_limit", 3)
    compiled = tk.compile(lambda x: x + 1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(1, 7):
            out = compiled(tk.zeros(n))
            np.testing.assert_array_equal(out.numpy(), np.ones(n))
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1
    assert "hit config.cache_size_limit (3)" in messages[0]
    assert "argument 0's shape changed from [1] to [4]" in messages[0]
    assert len(compiled.entries) == 3


def test_module_attributes_and_training_mode_guard() -> None:
    model = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5))
    compiled = tk.compile(model)
    assert compiled.parameters is not None and list(compiled.parameters())
    model.eval()
    x = tk.randn(2, 3)
    with tk.no_grad():
        for _ in range(3):
            np.testing.assert_array_equal(compiled(x).numpy(), model(x).numpy())
        model.train()
        compiled(x)
    assert len(compiled.entries) == 2


def test_replaced_parameter_is_read_after_recompiling() -> None:
    model = nn.Linear(2, 1, bias=False)
    compiled = tk.compile(model)
    x = tk.ones(1, 2)
    with tk.no_grad():
        for _ in range(3):
            compiled(x)
        model.weight = nn.Parameter(tk.full((1, 2), 5.0))
        outs = [float(compiled(x)) for _ in range(3)]
    assert outs == [10.0, 10.0, 10.0]


def test_inplace_on_inputs_matches_eager() -> None:
    def f(x, y):
        x.add_(y)
        y.mul_(2)
        return x * y

    compiled = tk.compile(f)
    a, b = tk.ones(3), tk.full((3,), 2.0)
    c, d = tk.ones(3), tk.full((3,), 2.0)
    for _ in range(4):
        got, expected = compiled(a, b), f(c, d)
        np.testing.assert_array_equal(got.numpy(), expected.numpy())
        np.testing.assert_array_equal(a.numpy(), c.numpy())
        np.testing.assert_array_equal(b.numpy(), d.numpy())
    assert _entry(compiled).compiled is not None


def test_compiled_inside_a_capture_runs_as_plain_ops() -> None:
    inner = tk.compile(lambda x: x.sin())
    traced = jit.trace(lambda x: inner(x) * 2, (tk.ones(2),))
    (node,) = traced.graph.nodes  # the inner function's ops, fused with the outer's
    assert [m.op for m in node.members] == ["sin", "mul"]


def test_explain_lists_guards_and_op_counts() -> None:
    def f(x):
        a = x.exp()
        b = x.exp()  # merged by CSE
        unused = x.cos()  # noqa: F841  (dropped by DCE)
        return a + b  # exp and add: one fused kernel

    explained = jit.explain(f, tk.ones(2, 3))
    assert explained.graph_count == 1 and explained.graph_break_count == 0
    assert explained.ops_captured == 4 and explained.ops_optimized == 1
    (node,) = explained.graph.nodes
    assert node.kind == "fused" and [m.op for m in node.members] == ["exp", "add"]
    assert "input 0: float32[2, 3] on cpu, requires_grad=False" in explained.guards
    assert explained.rewrites == ["fused kernels: 1"]
    assert str(explained).endswith("Rewrites:\n  fused kernels: 1")


def test_tensors_passed_as_indices_are_inputs_of_the_replay() -> None:
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(18, 4))
    compiled = tk.compile(lambda x, y: nn.functional.cross_entropy(model(x), y))
    for _ in range(4):  # new images and labels every call: indices, argmaxes and masks change
        x, y = tk.randn(3, 1, 8, 8), tk.randint(0, 4, (3,))
        model.zero_grad()
        compiled(x, y).backward()
        got = [p.grad.numpy().copy() for p in model.parameters()]
        model.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        for a, p in zip(got, model.parameters(), strict=True):
            np.testing.assert_allclose(a, p.grad.numpy(), rtol=1e-6, atol=1e-7)
    assert _entry(compiled).compiled is not None


def test_advanced_index_and_where_condition_follow_their_tensors() -> None:
    def f(x, i, mask):
        return tk.where(mask, x[i], 0.0)

    compiled = tk.compile(f)
    for _ in range(4):
        x = tk.randn(5, 3)
        i, mask = tk.randint(0, 5, (2,)), tk.randn(2, 3) > 0
        np.testing.assert_array_equal(compiled(x, i, mask).numpy(), f(x, i, mask).numpy())
    assert _entry(compiled).compiled is not None


def test_every_target_ignored_gives_nan_loss_and_zero_gradient_compiled() -> None:
    model = nn.Linear(3, 4)
    compiled = tk.compile(lambda x, y: nn.functional.cross_entropy(model(x), y))
    x = tk.randn(2, 3)
    for _ in range(2):
        compiled(x, tk.tensor([0, 1]))
    model.zero_grad()
    loss = compiled(x, tk.tensor([-100, -100]))
    loss.backward()
    assert np.isnan(float(loss)) and float(model.weight.grad.abs().sum()) == 0.0
