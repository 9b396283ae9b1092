"""``opcheck``: the checks a custom op should pass, as ``torch.library.opcheck`` runs them.

- ``test_schema``: the op writes only the tensors named in ``mutates_args`` and returns what
  its schema says (new tensors, none of them an input).
- ``test_autograd_registration``: an op called with inputs that require grad has a gradient
  rule (``register_autograd``).
- ``test_faketensor``: the ``register_fake`` function gives the real outputs' shapes, dtypes
  and devices.
- ``test_gradcheck``: the gradient rule matches finite differences (``gradcheck`` on the
  float64 tensor arguments), and so does its own gradient (``gradgradcheck``) when the rule
  is itself differentiable (its gradients require grad under ``create_graph``).
- ``test_jit_capture``: ``tk.jit.trace`` keeps the op as one node named by its qualified
  name, and the replay gives the eager values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..tensor import Tensor
from ._custom_op import CustomOpDef, get_op
from ._fake import describe, fake_outputs, meta

__all__ = ["DEFAULT_TEST_UTILS", "OpCheckError", "opcheck"]

DEFAULT_TEST_UTILS = (
    "test_schema",
    "test_autograd_registration",
    "test_faketensor",
    "test_gradcheck",
    "test_jit_capture",
)
SUCCESS = "SUCCESS"


class OpCheckError(Exception):
    """A check of ``opcheck`` failed (the message names the op and the check)."""


class _Skip(Exception):  # noqa: N818 - a check's outcome, not an error
    pass


def opcheck(
    op: CustomOpDef | str,
    args: tuple,
    kwargs: dict | None = None,
    *,
    test_utils: str | Sequence[str] = DEFAULT_TEST_UTILS,
    raise_exception: bool = True,
    atol: float | None = None,
    rtol: float | None = None,
) -> dict[str, Any]:
    """Run the checks ``test_utils`` names on ``op(*args, **kwargs)``; returns
    ``{check: "SUCCESS" | "SKIPPED (why)" | the exception}``. With ``raise_exception`` the
    first failure raises :class:`OpCheckError` naming the op and the check."""
    op = get_op(op)
    kwargs = kwargs or {}
    names = (test_utils,) if isinstance(test_utils, str) else tuple(test_utils)
    unknown = [n for n in names if n not in _CHECKS]
    if unknown:
        raise ValueError(f"opcheck: unknown test_utils {unknown}; expected some of {list(_CHECKS)}")
    results: dict[str, Any] = {}
    for name in names:
        try:
            _CHECKS[name](op, args, kwargs, atol, rtol)
        except _Skip as skip:
            results[name] = f"SKIPPED ({skip})"
            continue
        except Exception as error:
            failure = OpCheckError(f"opcheck({op.qualname}): {name} failed: {error}")
            if raise_exception:
                raise failure from error
            results[name] = failure
            continue
        results[name] = SUCCESS
    return results


def _copied(op: CustomOpDef, args: tuple, kwargs: dict) -> dict[str, Any]:
    """The call's arguments by name, tensors copied (detached, same requires_grad)."""
    arguments = op.bind(args, kwargs)
    return {
        name: value.detach().clone().requires_grad_(value.requires_grad)
        if isinstance(value, Tensor)
        else value
        for name, value in arguments.items()
    }


def _outputs(op: CustomOpDef, result: Any) -> tuple:
    if op.schema.returns == 0:
        return ()
    return tuple(result) if op.schema.returns_tuple else (result,)


def _test_schema(op: CustomOpDef, args: tuple, kwargs: dict, atol: Any, rtol: Any) -> None:
    arguments = _copied(op, args, kwargs)
    before = {
        name: np.array(_host(value))
        for name, value in arguments.items()
        if isinstance(value, Tensor)
    }
    from ..autograd.grad_mode import no_grad

    with no_grad():
        result = op(**arguments)
    for p in op.schema.tensor_params:
        value = arguments[p.name]
        if value is None or p.mutated:
            continue
        if not np.array_equal(before[p.name], _host(value), equal_nan=True):
            raise RuntimeError(
                f"argument '{p.name}' was written in place but is not in mutates_args "
                f"(declare mutates_args=({p.name!r},))"
            )
    for nr, out in enumerate(_outputs(op, result)):
        if not isinstance(out, Tensor):
            raise RuntimeError(f"output {nr} is a {type(out).__name__}, not a Tensor")


def _test_autograd_registration(
    op: CustomOpDef, args: tuple, kwargs: dict, atol: Any, rtol: Any
) -> None:
    arguments = op.bind(args, kwargs)
    wanting = [
        name
        for name, value in arguments.items()
        if isinstance(value, Tensor) and value.requires_grad
    ]
    if wanting and op.backward_fn is None:
        raise RuntimeError(
            f"the arguments {wanting} require grad but the op has no autograd formula "
            f"(register one with tk.library.register_autograd({op.qualname!r}, backward, "
            "setup_context=...))"
        )


def _test_faketensor(op: CustomOpDef, args: tuple, kwargs: dict, atol: Any, rtol: Any) -> None:
    if op.fake_fn is None:
        raise RuntimeError(
            f"the op has no fake function (register one with "
            f"@tk.library.register_fake({op.qualname!r})); tk.jit needs it to know the "
            "outputs' shapes without running the op"
        )
    arguments = _copied(op, args, kwargs)
    from ..autograd.grad_mode import no_grad

    with no_grad():
        real = [meta(out) for out in _outputs(op, op(**arguments))]
    fake = fake_outputs(op, arguments)
    if len(fake) != len(real):
        raise RuntimeError(f"the fake function gives {len(fake)} outputs, the op {len(real)}")
    for nr, (f, r) in enumerate(zip(fake, real, strict=True)):
        if f != r:
            raise RuntimeError(
                f"output {nr}: the fake function gives {describe(f)}, the real function "
                f"{describe(r)}"
            )


def _test_gradcheck(op: CustomOpDef, args: tuple, kwargs: dict, atol: Any, rtol: Any) -> None:
    from ..autograd import grad as autograd_grad
    from ..autograd.gradcheck import gradcheck, gradgradcheck

    if op.backward_fn is None:
        raise _Skip("the op has no autograd formula")
    arguments = _copied(op, args, kwargs)
    names = [
        name
        for name, value in arguments.items()
        if isinstance(value, Tensor) and value.dtype.is_floating_point
    ]
    if not names or any(arguments[n].dtype.itemsize != 8 for n in names):
        raise _Skip("gradcheck needs every floating-point tensor argument in float64")
    for name in names:
        arguments[name].requires_grad_(True)

    def call(*tensors: Tensor) -> Any:
        return op(**{**arguments, **dict(zip(names, tensors, strict=True))})

    inputs = tuple(arguments[n] for n in names)
    tolerances = {"atol": 1e-5 if atol is None else atol, "rtol": 1e-3 if rtol is None else rtol}
    gradcheck(call, inputs, **tolerances)
    outputs = [o for o in _outputs(op, call(*inputs)) if o.requires_grad]
    seeds = [o.detach() * 0 + 1 for o in outputs]
    grads = autograd_grad(outputs, list(inputs), seeds, create_graph=True, allow_unused=True)
    if any(g is not None and g.requires_grad for g in grads):
        gradgradcheck(call, inputs, **tolerances)


def _test_jit_capture(op: CustomOpDef, args: tuple, kwargs: dict, atol: Any, rtol: Any) -> None:
    from .. import jit
    from ..autograd.grad_mode import no_grad

    if any(p.mutated for p in op.schema.params):
        raise _Skip("tk.jit does not capture ops that write their arguments in place")
    arguments = _copied(op, args, kwargs)
    names = [name for name, value in arguments.items() if isinstance(value, Tensor)]
    tensors = tuple(arguments[n].detach() for n in names)

    def call(*tensors: Tensor) -> Any:
        return op(**{**arguments, **dict(zip(names, tensors, strict=True))})

    with no_grad():
        traced = jit.trace(call, tensors)
        replayed = _outputs(op, traced(*tensors))
        eager = _outputs(op, call(*tensors))
    ops = [node.op for node in traced.graph.nodes]
    if ops.count(op.qualname) != 1:
        raise RuntimeError(f"tk.jit captured the nodes {ops}, expected one {op.qualname!r} node")
    for nr, (r, e) in enumerate(zip(replayed, eager, strict=True)):
        np.testing.assert_allclose(
            _host(r),
            _host(e),
            rtol=1e-6 if rtol is None else rtol,
            atol=0 if atol is None else atol,
            err_msg=f"output {nr} of the tk.jit replay differs from the eager call",
        )


def _host(tensor: Tensor) -> np.ndarray:
    data = tensor._data
    return data if isinstance(data, np.ndarray) else data.get()


_CHECKS = {
    "test_schema": _test_schema,
    "test_autograd_registration": _test_autograd_registration,
    "test_faketensor": _test_faketensor,
    "test_gradcheck": _test_gradcheck,
    "test_jit_capture": _test_jit_capture,
}
