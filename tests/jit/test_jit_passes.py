"""The IR passes, one at a time, and the generated plan."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import tensorkit as tk
from tensorkit.jit.capture import capture
from tensorkit.jit.ir import CONSTANT, Ref
from tensorkit.jit.passes import optimize
from tensorkit.jit.passes.constant_fold import fold_constants
from tensorkit.jit.passes.cse import eliminate_common_subexpressions
from tensorkit.jit.passes.dce import eliminate_dead_code
from tensorkit.jit.passes.memory import in_place_writes, last_uses, peak_bytes
from tensorkit.jit.plan import lower
from tensorkit.jit.runtime import CompiledGraph


def _graph(fn, *args):
    return capture(fn, args, {}).graph


def _ops(graph) -> list[str]:
    return [node.op for node in graph.nodes]


def test_dead_code_elimination_drops_what_no_output_needs() -> None:
    def f(x):
        x.cos()  # computed, never used
        return x.exp()

    graph = eliminate_dead_code(_graph(f, tk.ones(3)))
    assert _ops(graph) == ["exp"]


def test_dead_code_elimination_keeps_random_draws_and_writes() -> None:
    def f(x, state):
        tk.rand(3)  # advances the generator, as eager does
        state.add_(1.0)
        return x * 2

    graph = eliminate_dead_code(_graph(f, tk.ones(3), tk.zeros(3)))
    assert [n.kind for n in graph.nodes].count("random") == 1
    assert "add" in _ops(graph)


def test_cse_merges_equal_computations_only() -> None:
    def f(x, n):
        return x.exp() + x.exp() + n * 1 + n * 1.0

    graph = eliminate_common_subexpressions(_graph(f, tk.ones(3), tk.ones(3, dtype=tk.int64)))
    ops = _ops(graph)
    assert ops.count("exp") == 1
    assert ops.count("mul") == 2  # n * 1 stays int64, n * 1.0 is float: not the same
    out = CompiledGraph(optimize(graph)).run([tk.zeros(3), tk.full((3,), 2, dtype=tk.int64)])
    np.testing.assert_array_equal(out.numpy(), [6.0, 6.0, 6.0])


def test_constant_folding_computes_constant_subgraphs_once() -> None:
    def f(x):
        scale = tk.arange(3.0).exp() * 2.0  # depends on nothing the call receives
        return x * scale

    graph = fold_constants(_graph(f, tk.ones(3)))
    assert _ops(graph) == ["mul"]
    folded = [p for p in graph.placeholders if p.kind == CONSTANT and p.name.startswith("folded")]
    assert folded
    out = CompiledGraph(eliminate_dead_code(graph)).run([tk.ones(3), None])
    np.testing.assert_allclose(out.numpy(), np.exp(np.arange(3.0)) * 2.0, rtol=1e-6)


def test_memory_plan_frees_each_value_after_its_last_use() -> None:
    def f(x):
        a = x.exp()
        b = a.sin()
        c = b.cos()
        return c + x

    graph = _graph(f, tk.ones(1000))
    result = graph.outputs[0].id
    dying = last_uses(graph.nodes, {result})
    exp = graph.nodes[0]
    assert dying[1] == [exp.outputs[0].id]  # a dies once sin has read it
    assert all(result not in values for values in dying.values())
    assert peak_bytes(graph.nodes, {result}) == 2 * 4000  # never more than two live arrays
    plan = lower(graph.nodes, [graph.placeholders[0].value.id], [result], {})
    assert f"del v{exp.outputs[0].id}" in plan.source


def test_plan_source_holds_identifiers_only() -> None:
    graph = _graph(lambda x: (x + 3.5).reshape(2, 2).sum(dim=0), tk.ones(4))
    plan = lower(graph.nodes, [0], [graph.outputs[0].id], {})
    assert "3.5" not in plan.source and "reshape" not in plan.source
    (out,) = plan(np.arange(4.0, dtype=np.float32))
    np.testing.assert_array_equal(out, [9.0, 11.0])


def test_view_simplification_removes_transposes_and_gradient_copies() -> None:
    from tensorkit import nn
    from tensorkit.jit.passes.views import simplify_views

    # Without a bias, a linear layer is ``x @ weight.T``: the weight's gradient is the
    # transpose of a product, which the engine copies (with a bias, the one linear op makes
    # it in the weight's layout already).
    model = nn.Linear(5, 3, bias=False)

    def step(x):
        model.zero_grad()
        model(x).pow(2).sum().backward()

    x = tk.randn(4, 5)
    graph = eliminate_common_subexpressions(eliminate_dead_code(_graph(step, x)))
    assert _ops(graph).count("clone") == 1  # the weight's gradient
    assert _ops(graph).count("permute") == 4
    graph = eliminate_dead_code(simplify_views(graph))
    assert "clone" not in _ops(graph)
    assert _ops(graph).count("permute") == 2  # the forward's weight.T and one in the product
    step(x)
    expected = model.weight.grad.numpy().copy()
    compiled = CompiledGraph(graph)
    compiled.run([x, model.weight])
    np.testing.assert_allclose(model.weight.grad.numpy(), expected, rtol=1e-6)
    assert model.weight.grad.numpy().flags.writeable


def test_decomposition_writes_a_linear_op_as_permute_matmul_and_add() -> None:
    """Eager's one addmm node (a linear layer) becomes the three ops the other passes know where an
    elementwise op reads its result, so the bias add fuses with it; values stay eager's."""
    from tensorkit import nn
    from tensorkit.jit.passes.decompose import decompose

    model = nn.Sequential(nn.Linear(5, 3), nn.ReLU())
    x = tk.randn(4, 5)
    with tk.no_grad():
        graph = _graph(model, x)
    assert _ops(graph) == ["addmm", "relu"]
    graph = decompose(graph)
    assert _ops(graph) == ["permute", "matmul", "add", "relu"]
    permute, matmul, add, _ = graph.nodes
    assert permute.outputs[0].shape == (5, 3) and matmul.args[1].id == permute.outputs[0].id
    assert add.args[0].id == matmul.outputs[0].id and add.module == "Sequential.0"
    assert len({v.id for node in graph.nodes for v in node.outputs}) == 4
    out = CompiledGraph(graph).run([x, model[0].bias, model[0].weight])  # in reading order
    np.testing.assert_allclose(out.numpy(), model(x).detach().numpy(), rtol=1e-6)
    with tk.no_grad():
        alone = decompose(_graph(model[0], x))  # its result is the output: an add on its own
        reshaped = decompose(_graph(lambda x: model[0](x).reshape(-1).relu(), x))
        fused = optimize(_graph(model, x))
    assert _ops(alone) == ["addmm"]  # would cost more than the in-place add
    assert _ops(reshaped) == ["addmm", "view", "relu"]  # the view's reader is no activation
    assert [n.op if n.kind == "op" else [m.op for m in n.members] for n in fused.nodes] == [
        "permute",
        "matmul",
        ["add", "relu"],
    ]


def test_a_linear_read_through_a_view_by_an_activation_adds_its_bias_after_the_view() -> None:
    """A transformer's feed-forward layer: linear on (batch * seq, features), viewed back to
    (batch, seq, features), then ReLU. The bias add moves after the view, where fusion joins
    it to the activation; values and gradients stay eager's."""
    from tensorkit import nn
    from tensorkit.jit.passes.decompose import decompose

    linear = nn.Linear(5, 6).double()

    def f(x):
        return linear(x.reshape(-1, 5)).reshape(2, 3, 6).relu()

    x = tk.randn(2, 3, 5, dtype=tk.float64, requires_grad=True)
    with tk.no_grad():
        graph = decompose(_graph(f, x))
    assert _ops(graph)[-5:] == ["permute", "matmul", "view", "add", "relu"]
    view, add = graph.nodes[-3], graph.nodes[-2]
    assert view.outputs[0].shape == (2, 3, 6) and add.args[0] == Ref(view.outputs[0].id)
    compiled = tk.compile(lambda x: f(x).pow(2).sum())
    for _ in range(3):
        linear.zero_grad()
        x.grad = None
        compiled(x).backward()
    got = [t.grad.numpy().copy() for t in (x, linear.weight, linear.bias)]
    linear.zero_grad()
    x.grad = None
    f(x).pow(2).sum().backward()
    for a, t in zip(got, (x, linear.weight, linear.bias), strict=True):
        np.testing.assert_allclose(a, t.grad.numpy(), rtol=1e-12)


def test_decomposition_writes_a_conv_bias_as_views_and_an_add_fused_with_the_activation() -> None:
    """A convolution's bias add (its product laid out by channel, copied into (N, C, H, W))
    becomes a transposed view of the product plus the bias as a column where an activation
    reads it: fusion joins the add to the ReLU, whose kernel writes (N, C, H, W) in C order.
    Values and gradients stay eager's; read otherwise, conv_bias stays one op."""
    from tensorkit import nn
    from tensorkit.jit.passes.decompose import decompose

    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU())
    x = tk.randn(2, 3, 7, 6)
    with tk.no_grad():
        graph = _graph(model, x)
        assert _ops(graph)[-2:] == ["conv_bias", "relu"]
        graph = decompose(graph)
        assert _ops(graph)[-5:] == ["view", "permute", "view", "add", "relu"]
        rows, transposed, column, add, _ = graph.nodes[-5:]
        assert rows.outputs[0].shape == (4, 2, 5, 4) and transposed.attrs["axes"] == (1, 0, 2, 3)
        assert column.outputs[0].shape == (4, 1, 1) and add.outputs[0].shape == (2, 4, 5, 4)
        assert add.args == (Ref(transposed.outputs[0].id), Ref(column.outputs[0].id))
        alone = decompose(_graph(model[0], x))
        fused = optimize(_graph(model, x))
    assert _ops(alone)[-1] == "conv_bias"
    (kernel,) = [n for n in fused.nodes if n.kind == "fused"]
    assert [m.op for m in kernel.members] == ["add", "relu"]
    compiled = tk.compile(lambda x: model(x))
    for _ in range(3):
        out = compiled(x).detach().numpy()
    assert out.flags.c_contiguous
    np.testing.assert_allclose(out, model(x).detach().numpy(), rtol=1e-6, atol=1e-6)
    xs = tk.randn(2, 3, 6, 5, dtype=tk.float64, requires_grad=True)
    model64 = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU()).double()
    step = tk.compile(lambda x: model64(x).pow(2).sum())
    for _ in range(3):
        model64.zero_grad()
        xs.grad = None
        step(xs).backward()
    got = [xs.grad.numpy().copy(), *(p.grad.numpy().copy() for p in model64.parameters())]
    model64.zero_grad()
    xs.grad = None
    model64(xs).pow(2).sum().backward()
    want = [xs.grad.numpy(), *(p.grad.numpy() for p in model64.parameters())]
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    ("kernel", "stride"), [(2, 2), (3, 2)], ids=["disjoint windows", "overlapping windows"]
)
def test_a_relu_s_gradient_mask_runs_before_the_max_pool_s_scatter_bit_for_bit(
    kernel: int, stride: int
) -> None:
    """threshold_backward(max_pool_backward(g, index), x) becomes
    max_pool_backward(threshold_backward(g, pooled), index): the mask at the pooled size.
    The gradient is eager's bit for bit, with NaNs, zeros and ties in the input."""
    from tensorkit.jit.passes.pool_mask import mask_before_scatter

    pool = tk.nn.MaxPool2d(kernel, stride)
    data = tk.randn(2, 3, 9, 9).numpy()
    data[0, 0, :3, :3] = np.nan
    data[1, 1] = 0.0  # every window ties at 0 after the ReLU
    data[0, 2, 4:, 4:] = -1.0

    def loss(x):
        return (pool(x.relu()) * tk.arange(48.0).reshape(3, 4, 4)).sum()

    x = tk.tensor(data, requires_grad=True)
    graph = capture(lambda x: tk.autograd.grad(loss(x), x), (x,), {}).graph
    before = [n.op for n in [*graph.nodes, *graph.backward]]
    graph = mask_before_scatter(graph)
    after = [n.op for n in [*graph.nodes, *graph.backward]]
    assert before.index("max_pool_backward") < before.index("threshold_backward")
    assert after.index("threshold_backward") < after.index("max_pool_backward")
    (mask,) = [n for n in [*graph.nodes, *graph.backward] if n.op == "threshold_backward"]
    assert mask.outputs[0].shape == (2, 3, 4, 4)  # the pooled size
    compiled = tk.compile(lambda x: tk.autograd.grad(loss(x), x))
    for _ in range(3):
        (got,) = compiled(x)
    (want,) = tk.autograd.grad(loss(x), x)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_the_mask_stays_after_a_scatter_that_something_else_reads() -> None:
    from tensorkit.jit.passes.pool_mask import mask_before_scatter

    pool = tk.nn.MaxPool2d(2)
    x = tk.randn(1, 2, 4, 4, requires_grad=True)
    graph = capture(lambda x: tk.autograd.grad(pool(x.relu()).sum(), x), (x,), {}).graph
    everything = [*graph.nodes, *graph.backward]
    (scatter,) = [n for n in everything if n.op == "max_pool_backward"]
    (mask,) = [n for n in everything if n.op == "threshold_backward"]
    assert mask.args[0] == Ref(scatter.outputs[0].id)
    graph.outputs.append(Ref(scatter.outputs[0].id))  # the scatter is also a result
    graph = mask_before_scatter(graph)
    ops = [n.op for n in [*graph.nodes, *graph.backward]]
    assert ops.index("max_pool_backward") < ops.index("threshold_backward")
    assert mask in [*graph.nodes, *graph.backward]


def test_permutes_that_cancel_are_removed() -> None:
    from tensorkit.jit.passes.views import simplify_views

    graph = simplify_views(_graph(lambda x: x.t().t() * 2, tk.ones(2, 3)))
    assert _ops(eliminate_dead_code(graph)) == ["mul"]


# ---------------------------------------------------------------------- guard nodes
def _guards(graph) -> list:
    return [node for node in graph.nodes if node.kind == "guard"]


def test_dead_code_elimination_keeps_guards_and_what_they_read() -> None:
    def f(x):
        if x.exp().sum() > 0:  # nothing returned reads the sum: the guard alone needs it
            return x * 2
        return x * 3

    graph = eliminate_dead_code(_graph(f, tk.ones(3)))
    assert _ops(graph) == ["exp", "sum", "gt", "__bool__()", "mul"]
    (guard,) = _guards(graph)
    assert guard.attrs == {"value": True, "number": 0}


def test_cse_merges_a_repeated_guard_only_when_it_expects_the_same_value() -> None:
    def f(x):
        positive = x.sum() > 0
        first, again = bool(positive), bool(positive)  # one read, checked twice
        big = float(x.sum()) > 2.5  # another read of an equal value: one sum after CSE
        return x * (2 if first and again and big else 3)

    graph = eliminate_common_subexpressions(_graph(f, tk.ones(3)))
    assert [(g.op, g.attrs["value"]) for g in _guards(graph)] == [
        ("__bool__()", True),
        ("__float__() / __int__()", 3.0),
    ]
    assert _ops(graph).count("sum") == 1
    # Guards of one value expecting different Python values (True, then 1) are not merged.
    graph = _graph(lambda x: x * bool(x.sum() > 0), tk.ones(3))
    (guard,) = _guards(graph)
    graph.nodes.insert(
        graph.nodes.index(guard) + 1, replace(guard, attrs={"value": 1, "number": 1})
    )
    assert [g.attrs["value"] for g in _guards(eliminate_common_subexpressions(graph))] == [True, 1]


def test_fusion_treats_a_guard_as_a_reader_outside_the_kernel() -> None:
    def f(x):
        y = (x * 2 + 1).tanh()
        if y.sum() > 0:  # reads the fused group's last value through the sum
            return y * 3
        return y

    graph = optimize(_graph(f, tk.ones(4, 3)))
    (guard,) = _guards(graph)
    assert all(node.kind != "guard" for n in graph.nodes for node in n.members)
    produced = {v.id: n for n in graph.nodes for v in n.outputs}
    read = produced[guard.args[0].id]
    assert read.kind != "guard" and read.outputs  # the kernel hands the value out
    out = CompiledGraph(graph).run([tk.ones(4, 3)])
    np.testing.assert_allclose(out.numpy(), np.tanh(np.full((4, 3), 3.0)) * 3, rtol=1e-6)


def test_memory_plan_keeps_what_a_guard_reads_until_it_ran() -> None:
    def f(x):
        s = x.sum()
        y = x * 2
        if s.item() > 0:  # s is read by nothing after this guard
            return y
        return -y

    graph = eliminate_dead_code(_graph(f, tk.ones(3)))
    guard_at = next(i for i, n in enumerate(graph.nodes) if n.kind == "guard")
    (total,) = (n.outputs[0].id for n in graph.nodes if n.op == "sum")
    dying = last_uses(graph.nodes, {v.id for v in graph.outputs})
    assert total in dying[guard_at]
    assert all(total not in dying.get(i, ()) for i in range(guard_at))
    source = lower(graph.nodes, [graph.placeholders[0].value.id], [graph.outputs[0].id], {}).source
    call = source.index(f"(v{total})")
    assert source.index(f"del v{total}") > call


def _writes(graph):
    """``in_place_writes`` of an unfused graph, as the runtime asks for it."""
    targets = {m.value: graph.placeholders[m.placeholder].value for m in graph.mutations}
    keep = {v.id for v in graph.outputs}
    return in_place_writes(graph.nodes, targets, keep)


def test_an_update_of_a_tensor_nothing_reads_later_is_written_in_place() -> None:
    def f(p, g):
        p.sub_(g, alpha=0.5)
        return g * 2

    graph = eliminate_dead_code(_graph(f, tk.ones(3), tk.ones(3)))
    (index,) = (i for i, n in enumerate(graph.nodes) if n.op == "sub")
    assert _writes(graph) == {index: graph.placeholders[0].value.id}
    source = lower(
        graph.nodes,
        [p.value.id for p in graph.placeholders],
        [graph.mutations[0].value],
        {},
        writes=_writes(graph),
    ).source
    assert f"v{graph.mutations[0].value} = v{graph.placeholders[0].value.id}" in source


def test_no_in_place_write_where_the_old_memory_is_still_read() -> None:
    def view_read_later(p, g):
        view = p.reshape(3, 1)
        p.add_(g)
        return view * 2

    def aliased_operand(p):
        return p.add_(p.t())  # a transposed view of the memory written

    def cast(p, g):
        return p.add_(g)  # a float64 g: the recorded add casts

    def kept_view(p, g):
        view = p.reshape(3, 1)
        p.add_(g)
        return view

    three = tk.arange(3.0)
    for fn, args in (
        (view_read_later, (three.clone(), tk.ones(3))),
        (aliased_operand, (tk.ones(3, 3),)),
        (cast, (three.clone(), tk.ones(3, dtype=tk.float64))),
        (kept_view, (three.clone(), tk.ones(3))),
    ):
        graph = eliminate_dead_code(_graph(fn, *args))
        assert graph.mutations, fn.__name__
        assert _writes(graph) == {}, fn.__name__
