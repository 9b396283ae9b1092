"""tk.library.opcheck: each check passes for a correct op and reports a broken one."""

from __future__ import annotations

import pytest

import tensorkit as tk
from tensorkit import Tensor
from tensorkit.library import OpCheckError, custom_op, opcheck

ALL = (
    "test_schema",
    "test_autograd_registration",
    "test_faketensor",
    "test_gradcheck",
    "test_jit_capture",
)


def _square(name: str, *, fake=None, backward=None) -> tk.library.CustomOpDef:
    @custom_op(name, mutates_args=())
    def op(x: Tensor) -> Tensor:
        return x * x

    op.register_fake(fake or (lambda x: tk.empty_like(x)))

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    op.register_autograd(
        backward or (lambda ctx, g: 2 * g * ctx.saved_tensors[0]), setup_context=setup_context
    )
    return op


def test_a_correct_op_passes_every_check() -> None:
    op = _square("check::square")
    x = tk.randn(3, 2, dtype=tk.float64, requires_grad=True)
    assert opcheck(op, (x,)) == dict.fromkeys(ALL, "SUCCESS")
    assert opcheck("check::square", (x,), test_utils="test_faketensor") == {
        "test_faketensor": "SUCCESS"
    }


def test_a_fake_that_disagrees_with_the_real_output_is_reported() -> None:
    op = _square("check::bad_fake", fake=lambda x: tk.empty(x.shape[0], dtype=tk.float32))
    x = tk.randn(3, 2, dtype=tk.float64)
    with pytest.raises(
        OpCheckError,
        match=r"opcheck\(check::bad_fake\): test_faketensor failed: output 0: the fake function "
        r"gives shape \[3\], dtype float32, device cpu, the real function shape \[3, 2\], "
        r"dtype float64, device cpu",
    ):
        opcheck(op, (x,))
    results = opcheck(op, (x,), raise_exception=False)
    assert isinstance(results["test_faketensor"], OpCheckError)
    assert results["test_schema"] == "SUCCESS"


def test_a_missing_fake_is_reported() -> None:
    @custom_op("check::no_fake", mutates_args=())
    def op(x: Tensor) -> Tensor:
        return x + 1

    with pytest.raises(
        OpCheckError,
        match=(
            r"test_faketensor failed: the op has no fake function \(register one with "
            r"@tk\.library\.register_fake\('check::no_fake'\)\)"
        ),
    ):
        opcheck(op, (tk.ones(2),), test_utils=["test_faketensor"])


def test_a_wrong_gradient_fails_gradcheck() -> None:
    op = _square("check::bad_grad", backward=lambda ctx, g: 3 * g * ctx.saved_tensors[0])
    x = tk.randn(4, dtype=tk.float64, requires_grad=True)
    with pytest.raises(
        OpCheckError,
        match=r"test_gradcheck failed: Jacobian mismatch for output 0 with respect to input 0",
    ):
        opcheck(op, (x,))


def test_a_non_differentiable_backward_skips_gradgradcheck_and_float32_skips_gradcheck() -> None:
    op = _square(
        "check::flat_grad", backward=lambda ctx, g: (2 * g * ctx.saved_tensors[0]).detach()
    )
    x64 = tk.randn(4, dtype=tk.float64, requires_grad=True)
    assert opcheck(op, (x64,))["test_gradcheck"] == "SUCCESS"
    result = opcheck(op, (tk.randn(4, requires_grad=True),), test_utils="test_gradcheck")
    assert result == {
        "test_gradcheck": "SKIPPED (gradcheck needs every floating-point tensor argument in "
        "float64)"
    }


def test_an_undeclared_write_and_a_missing_autograd_are_reported() -> None:
    @custom_op("check::sneaky", mutates_args=())
    def sneaky(x: Tensor) -> Tensor:
        x.add_(1)
        return x * 2

    sneaky.register_fake(lambda x: tk.empty_like(x))
    with pytest.raises(
        OpCheckError,
        match=(
            r"test_schema failed: argument 'x' was written in place but is not in mutates_args "
            r"\(declare mutates_args=\('x',\)\)"
        ),
    ):
        opcheck(sneaky, (tk.ones(2),))
    with pytest.raises(
        OpCheckError,
        match=(
            r"test_autograd_registration failed: the arguments \['x'\] require grad but the op "
            r"has no autograd formula"
        ),
    ):
        opcheck(sneaky, (tk.ones(2, requires_grad=True),), test_utils="test_autograd_registration")


def test_unknown_checks_are_refused() -> None:
    op = _square("check::square2")
    with pytest.raises(ValueError, match=r"opcheck: unknown test_utils \['test_aot'\]"):
        opcheck(op, (tk.ones(2),), test_utils=["test_aot"])
