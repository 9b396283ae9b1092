"""Autograd behaviour that PyTorch users rely on, checked against PyTorch where it is installed:
custom Functions (setup_context, keyword arguments, extra None gradients), hook results,
batched ``grad``, grad-mode decorators and error texts."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from harness import check_grads, check_torch

import tensorkit as tk

RNG = np.random.default_rng(3)
X = RNG.standard_normal(4)


def leaf(values: Any = X) -> tk.Tensor:
    return tk.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


@pytest.fixture
def torch() -> Any:
    return pytest.importorskip("torch")


def scaled_exp(lib: Any) -> type:
    """exp(x) * scale as a setup_context-style Function of ``lib`` (tensorkit or torch)."""

    class ScaledExp(lib.autograd.Function):
        @staticmethod
        def forward(x: Any, scale: float = 2.0) -> Any:
            return x.exp() * scale

        @staticmethod
        def setup_context(ctx: Any, inputs: tuple, output: Any) -> None:
            ctx.scale = inputs[1]
            ctx.save_for_backward(output)

        @staticmethod
        def backward(ctx: Any, g: Any) -> tuple:
            (out,) = ctx.saved_tensors
            return g * out, None

    return ScaledExp


# ------------------------------------------------------------------- custom Functions
def test_setup_context_function_gradients():
    op = scaled_exp(tk)
    check_grads(lambda x: op.apply(x, 3.0), X)
    check_grads(lambda x: op.apply(x), X)  # the default of scale is bound


def test_setup_context_function_matches_torch(torch):
    mine, theirs = scaled_exp(tk), scaled_exp(torch)
    check_torch(lambda x: mine.apply(x, scale=3.0), lambda x: theirs.apply(x, scale=3.0), X)
    check_torch(lambda x: mine.apply(x), lambda x: theirs.apply(x), X)


def scale_by(lib: Any, extra: int) -> type:
    """x * scale with a ctx-style forward; backward returns ``extra`` trailing Nones."""

    class Scale(lib.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any, scale: float = 1.0, *, shift: Any = None) -> Any:
            ctx.scale = scale
            return x * scale

        @staticmethod
        def backward(ctx: Any, g: Any) -> tuple:
            return (g * ctx.scale,) + (None,) * extra

    return Scale


@pytest.mark.parametrize("extra", [1, 2])
@pytest.mark.parametrize("call", ["positional", "keyword"])
def test_apply_keywords_and_trailing_none_gradients_match_torch(torch, extra, call):
    def run(lib: Any, x: Any) -> Any:
        op = scale_by(lib, extra)
        return op.apply(x, 3.0) if call == "positional" else op.apply(x, scale=3.0)

    check_torch(lambda x: run(tk, x), lambda x: run(torch, x), X)
    check_grads(lambda x: run(tk, x), X)


def test_apply_keyword_count_as_inputs():
    with pytest.raises(RuntimeError, match=r"incorrect number of gradients \(expected 2, got 1\)"):
        scale_by(tk, 0).apply(leaf(), scale=2.0).sum().backward()


def test_apply_rejects_keyword_only_arguments():
    with pytest.raises(TypeError, match="forward\\(\\) got an unexpected keyword argument 'shift'"):
        scale_by(tk, 1).apply(leaf(), 2.0, shift=1.0)


def test_extra_gradients_must_be_none():
    class Twice(tk.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: tk.Tensor) -> tk.Tensor:
            return x * 2

        @staticmethod
        def backward(ctx: Any, g: tk.Tensor) -> tuple:
            return g * 2, g

    with pytest.raises(RuntimeError, match=r"incorrect number of gradients \(expected 1, got 2\)"):
        Twice.apply(leaf()).sum().backward()


def test_save_for_backward_names_the_argument_index():
    class Bad(tk.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: tk.Tensor) -> tk.Tensor:
            ctx.save_for_backward(x, 3)
            return x * 2

    with pytest.raises(
        TypeError, match="save_for_backward can only save variables, but argument 1 is of type int"
    ):
        Bad.apply(leaf())


def test_missing_backward_error_text():
    class NoBackward(tk.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: tk.Tensor) -> tk.Tensor:
            return x * 2

    with pytest.raises(NotImplementedError, match="implement either the backward or vjp method"):
        NoBackward.apply(leaf()).sum().backward()


def test_mark_dirty_on_a_leaf_that_requires_grad_raises():
    class AddOne(tk.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: tk.Tensor) -> tk.Tensor:
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx: Any, g: tk.Tensor) -> tk.Tensor:
            return g

    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad has been used in"):
        AddOne.apply(leaf())
    x = leaf()
    y = AddOne.apply(x * 1)
    (y * y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * (X + 1))


# --------------------------------------------------------------------------- grad()
def test_is_grads_batched_matches_torch(torch):
    a = RNG.standard_normal((3, 4))
    seeds = RNG.standard_normal((5, 3))
    x, xt = leaf(a), torch.tensor(a, requires_grad=True)
    (mine,) = tk.autograd.grad(x.sin() @ x.T.sum(1), x, leaf(seeds), is_grads_batched=True)
    (theirs,) = torch.autograd.grad(
        xt.sin() @ xt.T.sum(1), xt, torch.tensor(seeds), is_grads_batched=True
    )
    np.testing.assert_allclose(mine.numpy(), theirs.numpy(), atol=1e-12)


def test_is_grads_batched_is_differentiable():
    def batched(x: tk.Tensor, seeds: tk.Tensor) -> tk.Tensor:
        (g,) = tk.autograd.grad(x.exp() * x, x, seeds, create_graph=True, is_grads_batched=True)
        return g

    check_grads(batched, X, RNG.standard_normal((2, 4)))


def test_is_grads_batched_needs_batched_grad_outputs():
    x = leaf()
    with pytest.raises(RuntimeError, match="interpret the first dimension of each grad_output"):
        tk.autograd.grad((x * 2).sum(), x, is_grads_batched=True)


def test_backward_inputs_with_a_retained_non_leaf_counts_once(torch):
    def run(lib: Any, x: Any) -> Any:
        z = x * 2
        z.retain_grad()
        (z * z).sum().backward(inputs=[z])
        return z.grad

    np.testing.assert_allclose(
        run(tk, leaf()).numpy(), run(torch, torch.tensor(X, requires_grad=True)).numpy()
    )


def test_argument_error_texts():
    x = leaf()
    with pytest.raises(RuntimeError, match=r"^`inputs` argument to `backward\(\)` cannot be empty"):
        (x * 2).sum().backward(inputs=[])
    with pytest.raises(ValueError, match=r"but got: allow_unused=False\.$"):
        tk.autograd.grad((x * 2).sum(), x, materialize_grads=True, allow_unused=False)


# ----------------------------------------------------------------------------- hooks
def test_tensor_hook_must_keep_the_gradient_shape_and_type():
    x = leaf()
    y = x * 2
    y.register_hook(lambda g: g[:2])
    with pytest.raises(RuntimeError, match="hook '<lambda>' has changed the size of value"):
        y.sum().backward()
    x = leaf()
    x.register_hook(lambda g: g.float())
    with pytest.raises(RuntimeError, match="hook '<lambda>' has changed the type of value"):
        (x * 2).sum().backward()
    x = leaf()
    x.register_hook(lambda g: 3.0)
    with pytest.raises(TypeError, match="expected Variable or None \\(got float\\)"):
        (x * 2).sum().backward()


def test_node_hook_results_are_checked():
    x = leaf()
    y = x * x
    y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: (grad_inputs[0],) * 3)
    with pytest.raises(RuntimeError, match=r"returned an incorrect number of values \(got 3, but"):
        y.sum().backward()
    x = leaf()
    y = x * x
    y.grad_fn.register_prehook(lambda grad_outputs: grad_outputs[0])
    with pytest.raises(TypeError, match="expected tuple, but hook returned 'Tensor'"):
        y.sum().backward()


def test_node_hooks_must_return_tuples(torch):
    def run(lib: Any, x: Any) -> Any:
        y = x.exp()
        y.grad_fn.register_prehook(lambda grad_outputs: [grad_outputs[0] * 3])
        with pytest.raises(TypeError) as info:
            y.sum().backward()
        return str(info.value)

    mine = run(tk, leaf())
    assert mine == run(torch, torch.tensor(X, requires_grad=True))
    assert mine == "expected tuple, but hook returned 'list'"


# ------------------------------------------------------------------------- grad modes
def test_grad_mode_decorators_on_generators_match_torch(torch):
    def run(lib: Any) -> list:
        @lib.no_grad()
        def numbers() -> Any:
            received = yield lib.is_grad_enabled()
            yield (received, lib.is_grad_enabled())

        seen = []
        generator = numbers()
        seen.append((next(generator), lib.is_grad_enabled()))
        seen.append((generator.send(7), lib.is_grad_enabled()))
        return seen

    assert run(tk) == run(torch) == [(False, True), ((7, False), True)]


def test_grad_mode_generator_sees_thrown_errors_and_returns():
    @tk.no_grad()
    def numbers() -> Any:
        try:
            yield 1
        except ValueError:
            yield tk.is_grad_enabled()
        return "done"

    generator = numbers()
    next(generator)
    assert generator.throw(ValueError()) is False
    with pytest.raises(StopIteration) as stop:
        next(generator)
    assert stop.value.value == "done"
    assert tk.is_grad_enabled()


def test_bare_decorators():
    @tk.no_grad
    def off() -> bool:
        return tk.is_grad_enabled()

    @tk.autograd.enable_grad
    def on() -> bool:
        return tk.is_grad_enabled()

    @tk.inference_mode
    def inference() -> bool:
        return tk.autograd.is_inference_mode_enabled()

    assert off() is False and inference() is True
    with tk.no_grad():
        assert on() is True
    assert tk.is_grad_enabled() and not tk.autograd.is_inference_mode_enabled()


# ------------------------------------------------------------------ anomaly, gradcheck
def test_anomaly_check_nan_flag():
    assert tk.autograd.is_anomaly_check_nan_enabled()
    with tk.autograd.detect_anomaly(check_nan=False):
        assert not tk.autograd.is_anomaly_check_nan_enabled()


def test_gradcheck_without_differentiable_inputs_error_text():
    with pytest.raises(ValueError, match=r"but none of them have requires_grad=True\.$"):
        tk.autograd.gradcheck(lambda x: x * 2, (tk.ones(2, dtype=tk.float64),))


def post_accumulate_log(lib: Any, values: np.ndarray) -> list:
    """What post-accumulate hooks on two leaves see over two backward passes (one with
    ``inputs=``), in ``lib`` (tensorkit or torch)."""
    a = lib.tensor(values, requires_grad=True)
    b = lib.tensor(values, requires_grad=True)
    log: list = []
    a.register_post_accumulate_grad_hook(lambda t: log.append(("a", t.grad.tolist())))
    handle = b.register_post_accumulate_grad_hook(lambda t: log.append(("b", t.grad.tolist())))
    (a * b).sum().backward()
    handle.remove()
    (a * a).sum().backward(inputs=[a, b])
    return sorted(log[:2]) + log[2:]


def test_post_accumulate_grad_hooks_see_the_accumulated_grad():
    log = post_accumulate_log(tk, X)
    assert log[0] == ("a", X.tolist()) and log[1] == ("b", X.tolist())
    assert log[2:] == [("a", (3 * X).tolist())]  # X from the first pass plus 2X


def test_post_accumulate_grad_hooks_match_torch(torch):
    assert post_accumulate_log(tk, X) == post_accumulate_log(torch, X)


def test_post_accumulate_grad_hook_errors():
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        tk.ones(2).register_post_accumulate_grad_hook(print)
    with pytest.raises(RuntimeError, match="cannot be registered on non-leaf tensors"):
        (leaf() * 2).register_post_accumulate_grad_hook(print)


def node_class_names(lib: Any) -> list[str]:
    x = lib.tensor(X, requires_grad=True)
    y = (x * 2).exp().sum()
    names = [type(y.grad_fn).__name__]
    node = y.grad_fn
    while node.next_functions and node.next_functions[0][0] is not None:
        node = node.next_functions[0][0]
        names.append(type(node).__name__)
    return names


def test_node_classes_carry_pytorch_names():
    assert node_class_names(tk) == [
        "SumBackward0",
        "ExpBackward0",
        "MulBackward0",
        "AccumulateGrad",
    ]


def test_node_class_names_match_torch(torch):
    assert node_class_names(tk) == node_class_names(torch)


def index_node_names(lib: Any) -> list[str]:
    x = lib.ones(3, 4, requires_grad=True)
    views = (x[0], x[1:], x[None], x[:, 1], x[0, 1:], x[..., 0], x[1:, None], x[:])
    return [type(v.grad_fn).__name__ for v in (*views, x[lib.tensor([0, 1])])]


def test_basic_indexing_records_select_slice_or_unsqueeze():
    names = index_node_names(tk)
    assert names[:3] == ["SelectBackward0", "SliceBackward0", "UnsqueezeBackward0"]


def test_indexing_node_names_match_torch(torch):
    assert index_node_names(tk) == index_node_names(torch)
