"""tk.jit.trace: what a capture records, and replays that match eager."""

from __future__ import annotations

import numpy as np
import pytest

import tensorkit as tk
import tensorkit.nn as nn
from tensorkit import jit
from tensorkit.jit.ir import CONSTANT, EXTERNAL, GRAD_OUTPUT, INPUT, PARAMETER, Ref


def test_trace_records_ops_sites_and_module_paths() -> None:
    model = nn.Sequential(nn.Linear(4, 3), nn.Tanh())
    traced = jit.trace(model, (tk.randn(2, 4),))
    ops = [m.op for node in traced.graph.nodes for m in node.members or [node]]
    assert "tanh" in ops and any(op in ("linear", "addmm", "matmul") for op in ops)
    # the parameters require grad, so the gradient rules were captured too
    assert {p.kind for p in traced.graph.placeholders} == {INPUT, PARAMETER, GRAD_OUTPUT}
    assert traced.graph.backward and set(traced.graph.grads) == {1, 2}
    assert {p.name for p in traced.graph.placeholders if p.kind == PARAMETER} == {
        "0.weight",
        "0.bias",
    }
    assert all(node.module.startswith("Sequential") for node in traced.graph.nodes)
    members = [m for node in traced.graph.nodes for m in node.members or [node]]
    tanh = next(node for node in members if node.op == "tanh")
    assert tanh.module == "Sequential.1"


def test_trace_site_is_the_users_line() -> None:
    def f(x):
        return x.exp() * 2.0  # the line the nodes name

    traced = jit.trace(f, (tk.randn(3),))
    line = f.__code__.co_firstlineno + 1
    assert all(node.site.endswith(f"test_jit_capture.py:{line}") for node in traced.graph.nodes)


def test_replay_equals_eager_on_new_inputs() -> None:
    def f(x, y):
        return (x @ y).relu().sum(dim=0), x.mean()

    x, y = tk.randn(5, 4), tk.randn(4, 3)
    traced = jit.trace(f, (x, y))
    x2, y2 = tk.randn(5, 4), tk.randn(4, 3)
    got, expected = traced(x2, y2), f(x2, y2)
    assert isinstance(got, tuple) and len(got) == 2
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_nested_outputs_keep_their_structure() -> None:
    def f(x):
        return {"double": x * 2, "pair": [x + 1, 7]}

    traced = jit.trace(f, (tk.ones(2),))
    out = traced(tk.zeros(2))
    assert out["pair"][1] == 7
    np.testing.assert_array_equal(out["double"].numpy(), [0.0, 0.0])
    np.testing.assert_array_equal(out["pair"][0].numpy(), [1.0, 1.0])


def test_a_call_with_other_shapes_is_refused_with_both_shapes() -> None:
    traced = jit.trace(lambda x: x * 2, (tk.ones(2, 3),))
    with pytest.raises(ValueError, match=r"float32\[2, 3\] on cpu, got float32\[4, 3\]"):
        traced(tk.ones(4, 3))
    with pytest.raises(TypeError, match="argument 0 was a Tensor when traced, got int"):
        traced(3)


def test_value_read_warns_with_the_call_site() -> None:
    def f(x):
        if x.sum() > 0:  # a value read
            return x * 2
        return x * 3

    line = f.__code__.co_firstlineno + 1
    with pytest.warns(jit.TracerWarning, match=rf"__bool__\(\).*test_jit_capture.py:{line}"):
        traced = jit.trace(f, (tk.ones(2),))
    assert [b.kind for b in traced.graph.breaks] == ["value_read"]
    for pattern, call in [
        (r"Tensor\.item\(\)", tk.Tensor.item),
        (r"Tensor\.tolist", tk.Tensor.tolist),
    ]:
        with pytest.warns(jit.TracerWarning, match=pattern):
            jit.trace(lambda x, call=call: x * call(x.sum()), (tk.ones(2),))


def test_constants_made_inside_are_values_and_outside_tensors_are_read_live() -> None:
    offset = tk.tensor([10.0, 20.0])

    def f(x):
        return x + tk.ones(2) + offset

    traced = jit.trace(f, (tk.zeros(2),))
    kinds = sorted(p.kind for p in traced.captured.placeholders)
    assert CONSTANT in kinds and EXTERNAL in kinds
    offset.add_(1.0)  # the replay reads the tensor's value now, as eager would
    np.testing.assert_array_equal(traced(tk.zeros(2)).numpy(), [12.0, 22.0])


def test_inplace_writes_to_inputs_happen_on_replay() -> None:
    def f(x, counter):
        counter.add_(1)
        x.mul_(2.0)
        return x + counter

    traced = jit.trace(f, (tk.ones(3), tk.zeros((), dtype=tk.int64)))
    x, counter = tk.ones(3), tk.zeros((), dtype=tk.int64)
    version = x._version
    out = traced(x, counter)
    np.testing.assert_array_equal(x.numpy(), [2.0, 2.0, 2.0])
    assert int(counter) == 1 and x._version > version
    np.testing.assert_array_equal(out.numpy(), [3.0, 3.0, 3.0])


def test_inplace_write_into_a_view_is_a_graph_break() -> None:
    def f(x):
        x[0] = 5.0
        return x * 1

    with pytest.warns(jit.TracerWarning, match="writes in place into a view"):
        traced = jit.trace(f, (tk.zeros(3),))
    assert [b.kind for b in traced.graph.breaks] == ["inplace_view"]
    assert "writes in place into a view" in str(traced.graph.breaks[0])


def test_dropout_redraws_on_each_replay_from_the_generator() -> None:
    layer = nn.Dropout(0.5)
    traced = jit.trace(layer, (tk.ones(1000),))
    assert any(node.kind == "random" for node in traced.graph.nodes)
    tk.manual_seed(3)
    expected = layer(tk.ones(1000))
    tk.manual_seed(3)
    got = traced(tk.ones(1000))
    np.testing.assert_array_equal(got.numpy(), expected.numpy())
    assert not np.array_equal(traced(tk.ones(1000)).numpy(), got.numpy())


def test_a_sampler_tk_jit_does_not_capture_is_a_break() -> None:
    with pytest.warns(jit.TracerWarning, match="sampler tk.jit does not capture"):
        traced = jit.trace(lambda x: x + tk.randint(0, 5, (3,)), (tk.zeros(3),))
    assert [b.kind for b in traced.graph.breaks] == ["random"]
    assert "randint" in str(traced.graph.breaks[0]) or "rand, randn" in str(traced.graph.breaks[0])


class Scale(tk.autograd.Function):
    @staticmethod
    def forward(ctx, x, factor):
        ctx.factor = factor
        return x * factor

    @staticmethod
    def backward(ctx, g):
        return g * ctx.factor, None


def test_custom_function_is_an_opaque_node_called_on_replay() -> None:
    traced = jit.trace(lambda x: Scale.apply(x, 3.0) + 1, (tk.ones(2),))
    (node,) = [n for n in traced.graph.nodes if n.kind == "function"]
    assert node.op == "Scale" and node.args[1] == 3.0
    assert traced.graph.breaks == []  # nothing needs its backward
    np.testing.assert_array_equal(traced(tk.full((2,), 2.0)).numpy(), [7.0, 7.0])


def test_custom_function_that_must_differentiate_is_a_break() -> None:
    with pytest.warns(jit.TracerWarning, match="Scale needs its backward"):
        traced = jit.trace(lambda x: Scale.apply(x, 3.0).sum(), (tk.ones(2, requires_grad=True),))
    assert [b.kind for b in traced.graph.breaks] == ["function"]
    assert "Scale needs its backward" in str(traced.graph.breaks[0])


def test_mixed_dtypes_are_promoted_as_eager_does() -> None:
    def f(a, b):
        return a + b

    traced = jit.trace(f, (tk.ones(2, dtype=tk.int32), tk.ones(2, dtype=tk.float64)))
    node = traced.graph.nodes[0]
    assert node.cast == "float64"
    out = traced(tk.full((2,), 3, dtype=tk.int32), tk.full((2,), 0.5, dtype=tk.float64))
    assert out.dtype == tk.float64
    np.testing.assert_array_equal(out.numpy(), [3.5, 3.5])


def test_graph_text_lists_placeholders_nodes_and_backward(monkeypatch) -> None:
    monkeypatch.setattr(jit.config, "fuse_elementwise", False)  # the ops as written
    x = tk.randn(3, requires_grad=True)
    traced = jit.trace(lambda x: (x * x).sum(), (x,))
    text = str(traced.graph)
    assert "<- input input 0" in text and "mul(%0, %0)" in text
    assert "backward:" in text and "gradients {0:" in text
    assert all(
        type(a) is Ref or not hasattr(a, "shape") for n in traced.graph.nodes for a in n.args
    )
