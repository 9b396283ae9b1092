"""The autograd engine: accumulation, graphs, higher order, hooks, grad modes, safety checks."""

from __future__ import annotations

import gc
import re
import weakref

import numpy as np
import pytest

import tensorkit as tk


def leaf(values, dtype=tk.float64):
    return tk.tensor(values, dtype=dtype, requires_grad=True)


# ---------------------------------------------------------------------------- basics
def test_backward_accumulates_into_leaves():
    x = leaf([1.0, 2.0, 3.0])
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2, 4, 6])
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [5, 7, 9])


def test_grad_fn_and_next_functions_describe_the_graph():
    x = leaf([1.0, 2.0])
    y = leaf([3.0, 4.0])
    z = x * y + x
    assert z.grad_fn.name() == "AddBackward0"
    (mul_node, _), (accumulate, _) = z.grad_fn.next_functions
    assert mul_node.name() == "MulBackward0"
    assert accumulate.name() == "AccumulateGrad"
    assert accumulate.variable is x
    assert x.is_leaf and not z.is_leaf
    assert repr(z).endswith("grad_fn=<AddBackward0>)")


def test_non_leaf_grad_is_none_unless_retained():
    x = leaf([1.0, 2.0])
    y = x * 2
    y.retain_grad()
    z = x * 3
    (y.sum() + z.sum()).backward()
    np.testing.assert_allclose(y.grad.numpy(), [1, 1])
    assert z.grad is None


def test_backward_with_gradient_for_non_scalar():
    x = leaf([1.0, 2.0])
    y = x * x
    y.backward(tk.tensor([1.0, 10.0], dtype=tk.float64))
    np.testing.assert_allclose(x.grad.numpy(), [2, 40])


def test_backward_inputs_only_accumulates_those():
    x, y = leaf([1.0]), leaf([2.0])
    (x * y).sum().backward(inputs=[x])
    np.testing.assert_allclose(x.grad.numpy(), [2])
    assert y.grad is None


def test_autograd_grad_returns_without_accumulating():
    x = leaf([1.0, 2.0])
    (g,) = tk.autograd.grad((x**3).sum(), x)
    np.testing.assert_allclose(g.numpy(), [3, 12])
    assert x.grad is None


def test_autograd_grad_allow_unused():
    x, y = leaf([1.0]), leaf([2.0])
    with pytest.raises(RuntimeError, match=r"inputs\[1\].*not have been used"):
        tk.autograd.grad((x * 2).sum(), [x, y])
    gx, gy = tk.autograd.grad((x * 2).sum(), [x, y], allow_unused=True)
    assert gy is None and gx.item() == 2
    gx, gy = tk.autograd.grad((x * 2).sum(), [x, y], materialize_grads=True)
    assert gy.item() == 0


def test_grad_of_intermediate_input():
    x = leaf([1.0, 2.0])
    h = x * 3
    out = (h * h).sum()
    gh, gx = tk.autograd.grad(out, [h, x])
    np.testing.assert_allclose(gh.numpy(), 2 * h.detach().numpy())
    np.testing.assert_allclose(gx.numpy(), 18 * x.detach().numpy())


def test_shared_subexpression_gradients_add_up():
    x = leaf([2.0])
    y = x * x
    z = y + y * y  # dz/dx = 2x + 4x^3
    z.backward()
    assert x.grad.item() == pytest.approx(2 * 2 + 4 * 8)


# ------------------------------------------------------------------------ higher order
def test_double_backward_hessian_vector_product():
    x = leaf([1.0, 2.0, 3.0])
    f = (x**3).sum()
    (g,) = tk.autograd.grad(f, x, create_graph=True)
    v = tk.tensor([1.0, 0.5, 0.25], dtype=tk.float64)
    (hv,) = tk.autograd.grad((g * v).sum(), x)
    np.testing.assert_allclose(hv.numpy(), 6 * x.detach().numpy() * v.numpy())


def test_gradient_penalty_trains_through_the_gradient():
    w = leaf([[0.5, -1.0], [2.0, 0.1]])
    x = leaf([[1.0, 2.0]])
    out = (x @ w).tanh().sum()
    (gx,) = tk.autograd.grad(out, x, create_graph=True)
    penalty = (gx**2).sum()
    penalty.backward()
    assert w.grad is not None and np.all(np.isfinite(w.grad.numpy()))

    def penalty_of(w_value):
        x2 = tk.tensor([[1.0, 2.0]], dtype=tk.float64, requires_grad=True)
        (g,) = tk.autograd.grad((x2 @ w_value).tanh().sum(), x2, create_graph=True)
        return (g**2).sum()

    assert tk.autograd.gradcheck(penalty_of, (leaf(w.detach().numpy()),))


def test_third_derivative():
    x = leaf([0.7])
    (g1,) = tk.autograd.grad(x.sin().sum(), x, create_graph=True)
    (g2,) = tk.autograd.grad(g1.sum(), x, create_graph=True)
    (g3,) = tk.autograd.grad(g2.sum(), x)
    assert g3.item() == pytest.approx(-np.cos(0.7))


# ------------------------------------------------------------------------- safety
def test_second_backward_without_retain_graph_raises():
    x = leaf([1.0, 2.0])
    y = (x.exp() * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_retain_graph_allows_second_backward():
    x = leaf([1.0, 2.0])
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    first = x.grad.numpy().copy()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * first)


def test_backward_on_non_scalar_without_gradient_names_shape():
    x = leaf([[1.0, 2.0]])
    with pytest.raises(RuntimeError, match=r"only for scalar outputs.*shape \[1, 2\]"):
        (x * 2).backward()


def test_backward_on_tensor_without_grad_raises():
    with pytest.raises(RuntimeError, match="does not require grad"):
        tk.tensor([1.0]).sum().backward()


def test_gradient_shape_mismatch_is_reported():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"Mismatch in shape.*\[3\].*\[2\]"):
        (x * 2).backward(tk.ones(3, dtype=tk.float64))


def test_requires_grad_on_integer_tensor_raises():
    with pytest.raises(RuntimeError, match=r"floating point and complex dtype.*int64.*\[3\]"):
        tk.tensor([1, 2, 3], requires_grad=True)


def test_modified_saved_tensor_names_op_and_versions():
    x = leaf([1.0, 2.0])
    y = x.exp()
    z = (y * 2).sum()
    out = (y.exp()).sum() + z
    y.add_(1)
    message = r"(Mul|Exp)Backward0.*version 1; expected version 0.*add_"
    with pytest.raises(RuntimeError, match=message):
        out.backward()


def test_modified_saved_tensor_through_a_view_is_detected():
    x = leaf([1.0, 2.0, 3.0])
    y = x * 1
    z = (y * y).sum()  # saves y
    view = y[1:]
    with tk.no_grad():
        view.mul_(10)  # changes y's storage through the view
    with pytest.raises(RuntimeError, match=r"MulBackward0.*version 1; expected version 0"):
        z.backward()


def test_in_place_on_leaf_requiring_grad_raises():
    x = leaf([1.0])
    with pytest.raises(RuntimeError, match=r"leaf Variable that requires grad.*in-place.*add_"):
        x.add_(1)
    with tk.no_grad():
        x.add_(1)  # allowed when not recording
    assert x.item() == 2


def test_in_place_dtype_that_cannot_be_cast_raises():
    x = tk.tensor([1, 2])
    with pytest.raises(RuntimeError, match=r"result type Float.*can't be cast.*Long"):
        x.add_(0.5)
    x.add_(3)
    assert x.tolist() == [4, 5]


def test_in_place_shape_must_not_grow():
    x = tk.zeros(3)
    with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match.*\[2, 3\]"):
        x.add_(tk.ones(2, 3))


def test_in_place_op_gradient_is_correct():
    x = leaf([1.0, 2.0])
    w = leaf([3.0, 4.0])
    y = x * 1
    y.mul_(w)  # y = x * w, rule needs the old y
    y.exp_()
    y.sum().backward()
    expected = np.exp(np.array([3.0, 8.0]))
    np.testing.assert_allclose(x.grad.numpy(), expected * [3, 4])
    np.testing.assert_allclose(w.grad.numpy(), expected * [1, 2])
    assert y._version == 2


def test_in_place_on_view_rewrites_base_history():
    x = leaf([1.0, 2.0, 3.0])
    y = x * 2
    y[1:].mul_(x[1:])  # y = [2, 2*2*2, 2*3*3]
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2, 4 * 2, 4 * 3])
    assert y.grad_fn.name() == "CopySlices"


def test_setitem_is_differentiable_for_value_and_base():
    base = leaf([1.0, 2.0, 3.0, 4.0])
    value = leaf([10.0])
    y = base * 1
    y[tk.tensor([0, 2])] = value * 2
    y[3] = value
    (y * tk.tensor([1.0, 2.0, 3.0, 4.0], dtype=tk.float64)).sum().backward()
    np.testing.assert_allclose(base.grad.numpy(), [0, 2, 0, 0])
    np.testing.assert_allclose(value.grad.numpy(), [2 * (1 + 3) + 4])


def test_view_of_leaf_in_place_raises():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="view of a leaf Variable"):
        x[0:1].add_(1)


def test_deep_chain_does_not_hit_the_recursion_limit():
    x = leaf([1.0])
    y = x
    for _ in range(10_000):
        y = y * 1.0001
    y.sum().backward()
    assert x.grad.item() == pytest.approx(1.0001**10_000)


def test_graph_is_freed_when_output_dies():
    x = leaf(np.ones(1000))
    y = (x * 2).exp()
    node_ref = weakref.ref(y.grad_fn)
    del y
    gc.collect()
    assert node_ref() is None


# ---------------------------------------------------------------------------- hooks
def test_tensor_hook_can_replace_gradient():
    x = leaf([1.0, 2.0])
    y = x * 2
    seen = []
    handle = y.register_hook(lambda g: seen.append(g.numpy().copy()) or g * 10)
    y.sum().backward()
    np.testing.assert_allclose(seen[0], [1, 1])
    np.testing.assert_allclose(x.grad.numpy(), [20, 20])
    handle.remove()
    x.grad = None
    (x * 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2, 2])


def test_leaf_hook_runs_before_accumulation():
    x = leaf([1.0])
    x.register_hook(lambda g: g * 0.5)
    (x * 4).sum().backward()
    assert x.grad.item() == 2


def test_node_pre_and_post_hooks():
    x = leaf([1.0, 2.0])
    y = x.exp()
    calls = []
    y.grad_fn.register_prehook(lambda grads_out: calls.append("pre") or (grads_out[0] * 2,))
    y.grad_fn.register_hook(lambda grads_in, grads_out: calls.append("post"))
    y.sum().backward()
    assert calls == ["pre", "post"]
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp([1.0, 2.0]))


# ------------------------------------------------------------------------ grad modes
def test_no_grad_context_and_decorator():
    x = leaf([1.0])
    with tk.no_grad():
        assert not (x * 2).requires_grad
        with tk.enable_grad():
            assert (x * 2).requires_grad

    @tk.no_grad()
    def doubled(t):
        return t * 2

    assert not doubled(x).requires_grad
    assert tk.is_grad_enabled()


def test_set_grad_enabled_as_call_and_context():
    x = leaf([1.0])
    with tk.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert tk.is_grad_enabled()
    tk.set_grad_enabled(False)
    assert not tk.is_grad_enabled()
    tk.set_grad_enabled(True)
    assert (x * 2).requires_grad


def test_inference_mode_marks_tensors():
    x = leaf([1.0])
    with tk.inference_mode():
        y = x * 2
    assert y.is_inference() and not y.requires_grad and not x.is_inference()
    with pytest.raises(RuntimeError, match="inference tensor"):
        y.requires_grad_()


def inference_tensor() -> tk.Tensor:
    with tk.inference_mode():
        return tk.ones(3, dtype=tk.float64)


SAVED_TEXT = "Inference tensors cannot be saved for backward"
INPLACE_TEXT = "Inplace update to inference tensor outside InferenceMode is not allowed"


@pytest.mark.parametrize(
    "use",
    [
        lambda w, x: w * x,  # mul saves x for w's gradient
        lambda w, x: (w + 1) @ x.unsqueeze(1),
        lambda w, x: w / x,
    ],
    ids=["mul", "matmul", "div"],
)
def test_an_inference_tensor_cannot_be_saved_for_backward(use) -> None:
    x, w = inference_tensor(), leaf([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match=SAVED_TEXT + r".*\(a tensor of shape \[3(, 1)?\]\)"):
        use(w, x)
    with tk.no_grad():
        use(w, x)  # nothing is saved
    assert use(w, x.clone()).requires_grad  # a clone is a normal tensor
    assert (w + x).requires_grad  # add saves nothing
    assert tk.where(x > 0, w, x).requires_grad  # where saves only the condition, as in torch


def test_a_custom_function_cannot_save_an_inference_tensor() -> None:
    class Scale(tk.autograd.Function):
        @staticmethod
        def forward(ctx, w, x):
            ctx.save_for_backward(x)
            return w * x

        @staticmethod
        def backward(ctx, g):
            return g * ctx.saved_tensors[0], None

    with pytest.raises(RuntimeError, match=SAVED_TEXT):
        Scale.apply(leaf([1.0, 2.0, 3.0]), inference_tensor())


@pytest.mark.parametrize(
    "change",
    [
        lambda x: x.add_(1),  # the direct path
        lambda x: x.mul_(tk.ones(3)),  # the general path (the dtypes differ)
        lambda x: x[0].add_(1),  # a view of an inference tensor is one too
        lambda x: x.zero_(),
        lambda x: x.__setitem__(0, 5.0),
        lambda x: x.t_(),
        lambda x: tk.nn.functional.relu(x, inplace=True),
    ],
    ids=["add_", "mul_", "view", "zero_", "setitem", "t_", "relu_"],
)
def test_an_inference_tensor_cannot_change_in_place_outside_inference_mode(change) -> None:
    x = inference_tensor()
    with pytest.raises(RuntimeError, match=INPLACE_TEXT):
        change(x)
    assert x.tolist() == [1.0, 1.0, 1.0]  # refused before anything was written
    with tk.inference_mode():
        change(x)  # inside inference mode it may
    assert x.is_inference() and x[0].is_inference()


def test_detach_shares_storage_and_version():
    x = leaf([1.0, 2.0])
    d = x.detach()
    assert not d.requires_grad
    d[0] = 5.0
    assert x[0].item() == 5.0
    assert x._version == 1


# ------------------------------------------------------------------ custom Function
class Cube(tk.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.scale = scale
        return x**3 * scale

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x**2 * ctx.scale, None


def test_custom_function_forward_backward_and_gradcheck():
    x = leaf([1.0, -2.0])
    y = Cube.apply(x, 2.0)
    assert y.grad_fn.name() == "CubeBackward"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6, 24])
    assert tk.autograd.gradcheck(lambda t: Cube.apply(t, 2.0), (leaf([0.3, 0.7]),))
    assert tk.autograd.gradgradcheck(lambda t: Cube.apply(t, 2.0), (leaf([0.3, 0.7]),))


def test_custom_function_needs_input_grad_and_non_differentiable():
    class SortWithIndex(tk.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            assert ctx.needs_input_grad == (True, False)
            values, indices = x.sort()
            ctx.mark_non_differentiable(indices)
            ctx.save_for_backward(indices)
            return values, indices

        @staticmethod
        def backward(ctx, grad_values, grad_indices):
            (indices,) = ctx.saved_tensors
            return grad_values.new_zeros(grad_values.shape).scatter(0, indices, grad_values), None

    x = leaf([3.0, 1.0, 2.0])
    values, indices = SortWithIndex.apply(x, tk.tensor([0.0]))
    assert values.requires_grad and not indices.requires_grad
    (values * tk.tensor([1.0, 2.0, 3.0], dtype=tk.float64)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3, 1, 2])


def test_custom_function_wrong_number_of_gradients():
    class Bad(tk.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad, grad

    with pytest.raises(
        RuntimeError, match=r"BadBackward returned an incorrect number of gradients"
    ):
        Bad.apply(leaf([1.0])).sum().backward()


def test_custom_function_wrong_gradient_shape():
    class BadShape(tk.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return tk.ones(5, dtype=tk.float64)

    with pytest.raises(RuntimeError, match=r"invalid gradient at index 0 - got \[5\].*\[2\]"):
        BadShape.apply(leaf([1.0, 2.0])).sum().backward()


def test_set_materialize_grads_false_passes_none():
    seen = []

    class TwoOut(tk.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            seen.append((g1 is None, g2 is None))
            return g1 * 2

    a, _ = TwoOut.apply(leaf([1.0]))
    a.sum().backward()
    assert seen == [(False, True)]


# --------------------------------------------------------------------- anomaly mode
def test_detect_anomaly_points_at_the_forward_call():
    x = leaf([0.0, 1.0])
    with tk.autograd.detect_anomaly():
        y = x.sqrt()  # gradient at 0 is inf
        with pytest.raises(RuntimeError) as info:
            y.sum().backward()
    message = str(info.value)
    assert "SqrtBackward0" in message and "inf" in message
    assert re.search(r"test_autograd\.py.*\n.*x\.sqrt\(\)", message)


def test_without_anomaly_mode_nan_passes_silently():
    x = leaf([0.0])
    x.sqrt().sum().backward()
    assert np.isinf(x.grad.item())


# ----------------------------------------------------------------- the step iterator
def _tiny_graph():
    a = leaf([1.0, 2.0])
    b = leaf([3.0, 4.0])
    loss = ((a * b).exp() + a).sum()
    return a, b, loss


def test_backward_steps_pause_resume_and_match_backward():
    a, b, loss = _tiny_graph()
    steps = tk.autograd.backward_steps(loss)
    first = next(steps)
    assert first.name == "SumBackward0"
    assert a.grad is None  # nothing accumulated yet: paused after one node
    rest = list(steps)
    names = [first.name] + [s.name for s in rest]
    assert names == [
        "SumBackward0",
        "AddBackward0",
        "ExpBackward0",
        "MulBackward0",
        "AccumulateGrad",
        "AccumulateGrad",
    ]
    stepped_a, stepped_b = a.grad.numpy().copy(), b.grad.numpy().copy()

    a2, b2, loss2 = _tiny_graph()
    loss2.backward()
    np.testing.assert_allclose(stepped_a, a2.grad.numpy())
    np.testing.assert_allclose(stepped_b, b2.grad.numpy())


def test_backward_steps_report_gradients_in_and_out():
    a = leaf([2.0])
    y = a * 3
    steps = list(tk.autograd.backward_steps(y.sum()))
    mul = next(s for s in steps if s.name == "MulBackward0")
    assert mul.grads_in[0].item() == 1
    assert mul.grads_out[0].item() == 3 and mul.grads_out[1] is None
    accumulate = steps[-1]
    assert accumulate.leaf is a and accumulate.grads_in[0].item() == 3


def test_leaf_grad_owns_writable_memory():
    x = tk.ones(3, requires_grad=True)
    x.sum().backward()  # the rule returns a broadcast view
    x.grad.zero_()
    assert x.grad.tolist() == [0, 0, 0]


def test_direct_in_place_arithmetic_matches_the_general_path():
    base = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=np.float32)
    row = tk.tensor([1.0, 2.0, 4.0])
    column = tk.tensor([[0.3], [0.7]])
    for name, arguments, kwargs in [
        ("add_", (row,), {"alpha": 0.5}),
        ("sub_", (2.0,), {}),
        ("mul_", (row,), {}),
        ("div_", (row,), {}),
        ("addcmul_", (row, column), {"value": 0.1}),
        ("addcdiv_", (column, row), {"value": -0.37}),
        ("addcdiv_", (row, row), {}),
    ]:
        direct = tk.tensor(base)
        storage = direct.data_ptr()
        getattr(direct, name)(*arguments, **kwargs)
        assert direct.data_ptr() == storage and direct._version == 1
        reference = getattr(tk, name[:-1])(tk.tensor(base), *arguments, **kwargs)
        np.testing.assert_array_equal(direct.numpy(), reference.numpy())


def test_in_place_update_under_no_grad_keeps_views_in_sync():
    p = tk.ones(4, requires_grad=True)
    view = p.detach()[2:]
    with tk.no_grad():
        p -= 0.5 * tk.ones(4)
    assert view.tolist() == [0.5, 0.5] and p._version == 1


def test_paused_backward_leaves_grad_mode_to_the_user():
    a, _, loss = _tiny_graph()
    steps = tk.autograd.backward_steps(loss)
    next(steps)
    assert tk.is_grad_enabled()
    assert (a * 2).requires_grad  # user code between steps still records
    del steps  # closing the iterator early must not change the mode either
    assert tk.is_grad_enabled()


def test_backward_errors_name_the_failing_node():
    x = leaf([1.0, 2.0])
    y = x.exp()
    loss = (y * 2).sum()
    y.add_(1)
    with pytest.raises(RuntimeError) as info:
        loss.backward()
    assert info.value.backward_node.name() == "MulBackward0"
