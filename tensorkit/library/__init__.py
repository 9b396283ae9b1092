"""``tk.library``: declare your own ops, as ``torch.library`` does.

``@custom_op("mylib::name", mutates_args=())`` turns a typed function into an op of the
table every built-in op is in: the Tape, the stepper and the profiler see it by its
qualified name, tk.jit keeps it as a named node (and ``tk.jit.save`` by that name), tk.onnx
writes it in the domain "mylib". ``register_fake`` gives its output shapes and dtypes
without running it, ``register_autograd`` its gradient, and ``opcheck`` tests all of it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._custom_op import CustomOpDef, custom_op, get_op
from ._opcheck import DEFAULT_TEST_UTILS, OpCheckError, opcheck

__all__ = [
    "DEFAULT_TEST_UTILS",
    "CustomOpDef",
    "OpCheckError",
    "custom_op",
    "opcheck",
    "register_autograd",
    "register_fake",
]


def register_fake(op: str | CustomOpDef, fn: Callable | None = None, /) -> Any:
    """Register ``fn`` as the fake function of ``op`` (a decorator without ``fn``): it
    returns tensors of the outputs' shapes, dtypes and devices without computing them."""
    custom = get_op(op)
    if fn is None:
        return custom.register_fake
    return custom.register_fake(fn)


def register_autograd(
    op: str | CustomOpDef, backward: Callable, /, *, setup_context: Callable | None = None
) -> None:
    """Register ``backward(ctx, *grads)`` (and ``setup_context(ctx, inputs, output)``) as
    the gradient of ``op``; see :meth:`CustomOpDef.register_autograd`."""
    get_op(op).register_autograd(backward, setup_context=setup_context)
