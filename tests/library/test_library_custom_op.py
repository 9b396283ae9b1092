"""tk.library.custom_op: schema inference, calling, autograd, and the errors of misuse."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tensorkit as tk
from tensorkit import Tensor
from tensorkit.library import custom_op, register_autograd, register_fake


def _scaled_tanh(name: str = "libtest::scaled_tanh") -> tk.library.CustomOpDef:
    @custom_op(name, mutates_args=())
    def op(x: Tensor, alpha: float = 2.0) -> Tensor:
        return tk.tanh(x) * alpha

    @op.register_fake
    def _(x, alpha=2.0):
        return tk.empty_like(x)

    def setup_context(ctx, inputs, output):
        x, alpha = inputs
        ctx.save_for_backward(x)
        ctx.alpha = alpha

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * ctx.alpha * (1 - tk.tanh(x) ** 2), None

    register_autograd(name, backward, setup_context=setup_context)
    return op


def test_the_schema_is_inferred_from_the_annotations() -> None:
    @custom_op("libtest::many", mutates_args=["out"])
    def many(
        x: Tensor,
        out: Tensor,
        bias: Tensor | None = None,
        *,
        dims: list[int] = (0, 1),
        scale: float = 1.0,
        mode: str = "a",
        flag: bool = False,
    ) -> None:
        out.copy_(x)

    assert many.schema.text() == (
        "(Tensor x, Tensor(a0!) out, Tensor? bias=None, *, SymInt[] dims=[0, 1], "
        'float scale=1.0, str mode="a", bool flag=False) -> ()'
    )
    assert "libtest::many" in repr(many)

    @custom_op("libtest::pair", mutates_args=())
    def pair(x: Tensor) -> tuple[Tensor, Tensor]:
        return x + 1, x * 2

    _, b = pair(tk.ones(2))
    assert pair.schema.text() == "(Tensor x) -> (Tensor, Tensor)"
    np.testing.assert_array_equal(b.numpy(), [2.0, 2.0])


@pytest.mark.parametrize(
    ("define", "error", "message"),
    [
        (
            lambda: custom_op("noname", lambda x: x, mutates_args=()),
            ValueError,
            "Expected there to be a namespace in noname, i.e. The operator name should look "
            "something like ns::foo",
        ),
        (
            lambda: custom_op("a::b-c", lambda x: x, mutates_args=()),
            ValueError,
            "'a::b-c' is not of the form 'namespace::name'",
        ),
        (
            lambda: custom_op("libtest::f", lambda x: x, mutates_args=()),
            ValueError,
            "infer_schema(func): Parameter x must have a type annotation.",
        ),
    ],
)
def test_bad_names_and_signatures_are_refused(define, error, message) -> None:
    with pytest.raises(error, match=re.escape(message)):
        define()


def test_unsupported_types_and_mutates_args_are_refused() -> None:
    def takes_array(x: np.ndarray) -> Tensor: ...

    with pytest.raises(
        ValueError,
        match=(
            r"Parameter x has unsupported type <class 'numpy\.ndarray'>\. The valid types are: "
            r"Tensor"
        ),
    ):
        custom_op("libtest::f", takes_array, mutates_args=())

    def returns_int(x: Tensor) -> int: ...

    with pytest.raises(ValueError, match=r"Return has unsupported type <class 'int'>"):
        custom_op("libtest::f", returns_int, mutates_args=())

    def identity(x: Tensor, k: int) -> Tensor: ...

    with pytest.raises(ValueError, match=r"mutates_args names \['y'\], which are not parameters"):
        custom_op("libtest::f", identity, mutates_args=("y",))
    with pytest.raises(
        ValueError, match=r"mutates_args names 'k', which is a SymInt, not a Tensor"
    ):
        custom_op("libtest::f", identity, mutates_args=("k",))
    with pytest.raises(TypeError, match=r"must be an iterable of argument names, got the str 'x'"):
        custom_op("libtest::f", identity, mutates_args="x")
    with pytest.raises(ValueError, match=r'mutates_args="unknown" is not supported'):
        custom_op("libtest::f", identity, mutates_args="unknown")


def test_re_registering_a_name_is_an_error() -> None:
    _scaled_tanh()
    with pytest.raises(
        RuntimeError,
        match=re.escape(
            "Tried to register an operator (libtest::scaled_tanh(Tensor x, float alpha=2.0) -> "
            "Tensor) with the same name and overload name multiple times"
        ),
    ):
        _scaled_tanh()


def test_a_name_of_the_op_table_cannot_be_taken() -> None:
    from tensorkit.ops._apply import OPS

    def fn(x: Tensor) -> Tensor: ...

    OPS["libtest::taken"] = OPS["add"]
    try:
        with pytest.raises(RuntimeError, match=r"libtest::taken\(built-in\)"):
            custom_op("libtest::taken", fn, mutates_args=())
    finally:
        del OPS["libtest::taken"]


def test_forward_backward_and_double_backward() -> None:
    op = _scaled_tanh()
    x = tk.randn(4, dtype=tk.float64, requires_grad=True)
    y = op(x, alpha=3.0)
    assert type(y.grad_fn).__name__ == "GeneratedBackwardFor_libtest_scaled_tanh_defaultBackward"
    np.testing.assert_allclose(y.detach().numpy(), 3 * np.tanh(x.detach().numpy()))
    (g,) = tk.autograd.grad(y.sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), 3 * (1 - np.tanh(x.detach().numpy()) ** 2))
    assert tk.autograd.gradcheck(lambda t: op(t, 1.5), (x,))
    assert tk.autograd.gradgradcheck(lambda t: op(t, 1.5), (x,))


def test_arguments_are_bound_and_checked() -> None:
    op = _scaled_tanh()
    np.testing.assert_allclose(op(alpha=1.0, x=tk.zeros(2)).numpy(), [0.0, 0.0])
    with pytest.raises(
        TypeError, match=r"libtest::scaled_tanh\(\): missing a required argument: 'x'"
    ):
        op(alpha=1.0)
    with pytest.raises(TypeError, match=r"argument 'x' must be a Tensor, got list"):
        op([1.0, 2.0])


def test_without_autograd_the_backward_says_how_to_register_it() -> None:
    @custom_op("libtest::plain", mutates_args=())
    def plain(x: Tensor) -> Tensor:
        return x * 2

    y = plain(tk.ones(2, requires_grad=True))
    with pytest.raises(
        RuntimeError,
        match=r"Trying to backward through libtest::plain but no autograd formula was registered\. "
        r"Please use register_autograd to add one \(tk\.library\.register_autograd\("
        r"'libtest::plain', backward, setup_context=\.\.\.\)\), or call the op under tk\.no_grad",
    ):
        y.sum().backward()


def test_a_backward_returning_the_wrong_gradients_is_reported() -> None:
    @custom_op("libtest::twice", mutates_args=())
    def twice(x: Tensor, k: int) -> Tensor:
        return x * k

    twice.register_autograd(lambda ctx, g: g * 2)  # one gradient, two arguments
    x = tk.ones(2, requires_grad=True)
    with pytest.raises(
        RuntimeError,
        match=(
            r"the backward returned 1 gradients, expected one per argument of the op \(2: "
            r"\['x', 'k'\]"
        ),
    ):
        twice(x, 2).sum().backward()
    twice.register_autograd(lambda ctx, g: (g * 2, g))
    with pytest.raises(
        RuntimeError, match=r"returned a gradient for 'k', which is a SymInt, not a Tensor"
    ):
        twice(x, 2).sum().backward()


def test_outputs_must_be_new_tensors_of_the_schema() -> None:
    @custom_op("libtest::echo", mutates_args=())
    def echo(x: Tensor) -> Tensor:
        return x

    with pytest.raises(RuntimeError, match=r"libtest::echo: output 0 is one of the op's inputs"):
        echo(tk.ones(2))

    @custom_op("libtest::lies", mutates_args=())
    def lies(x: Tensor) -> tuple[Tensor, Tensor]:
        return x + 1

    with pytest.raises(RuntimeError, match=r"must return \(Tensor, Tensor\), got Tensor"):
        lies(tk.ones(2))


def test_a_mutating_op_bumps_versions_and_breaks_a_jit_capture() -> None:
    @custom_op("libtest::fill", mutates_args=("out",))
    def fill(out: Tensor, value: float) -> None:
        out.fill_(value)

    out = tk.zeros(3)
    version = out._version
    assert fill(out, 2.0) is None
    assert out._version > version
    np.testing.assert_array_equal(out.numpy(), [2.0, 2.0, 2.0])
    with pytest.warns(
        tk.jit.TracerWarning,
        match=r"custom op libtest::fill writes its arguments \['out'\] in place",
    ):
        tk.jit.trace(lambda t: fill(t, 1.0), (tk.zeros(2),))
    with pytest.raises(
        RuntimeError, match=r"argument 'out' requires grad and the op writes it in place"
    ):
        fill(tk.zeros(2, requires_grad=True), 1.0)
    with pytest.raises(
        RuntimeError, match=r"tensorkit supports autograd only for functional custom ops"
    ):
        fill.register_autograd(lambda ctx, g: None)


def test_register_helpers_take_names_and_check_their_arguments() -> None:
    op = _scaled_tanh()
    with pytest.raises(ValueError, match=r"no custom op named 'libtest::missing'"):
        register_fake("libtest::missing", lambda x: x)
    with pytest.raises(TypeError, match=r"expected the backward to be a function, got 3"):
        register_autograd(op, 3)
    with pytest.raises(TypeError, match=r"expected a function, got 'x'"):
        op.register_fake("x")
    decorated = register_fake("libtest::scaled_tanh")(lambda x, alpha=2.0: tk.empty_like(x))
    assert op.fake_fn is decorated


def test_optional_tensors_and_several_outputs_differentiate() -> None:
    @custom_op("libtest::affine_pair", mutates_args=())
    def affine_pair(x: Tensor, bias: Tensor | None = None) -> tuple[Tensor, Tensor]:
        shifted = x if bias is None else x + bias
        return shifted * 2, shifted.exp()

    def setup_context(ctx, inputs, output):
        ctx.has_bias = inputs[1] is not None
        ctx.save_for_backward(output[1])

    def backward(ctx, grad_double, grad_exp):
        (exp,) = ctx.saved_tensors
        grad = grad_double * 2 + grad_exp * exp
        return grad, grad if ctx.has_bias else None

    affine_pair.register_autograd(backward, setup_context=setup_context)
    x = tk.randn(3, dtype=tk.float64, requires_grad=True)
    bias = tk.randn(3, dtype=tk.float64, requires_grad=True)
    assert tk.autograd.gradcheck(lambda a, b: affine_pair(a, b), (x, bias))
    assert tk.autograd.gradgradcheck(lambda a, b: affine_pair(a, b), (x, bias))
    assert tk.autograd.gradcheck(lambda a: affine_pair(a), (x,))
    double, exp = affine_pair(x)
    assert double.grad_fn is exp.grad_fn
    np.testing.assert_allclose(exp.detach().numpy(), np.exp(x.detach().numpy()))
