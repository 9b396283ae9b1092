"""The namespaces gradient rules are written over, so each rule's math exists once.

A rule declared with ``OpDef(..., rule=...)`` is ``rule(ctx, space, saved, *grads)``: ``space`` is a
namespace of the few functions rules use, ``saved`` the node's saved values and ``grads`` the
incoming gradients. The engine's plain runner calls it with an :class:`ArraySpace` on raw
arrays (``ctx.saved_arrays()``, only when every gradient and saved array shares one real
floating dtype, so no promotion or conjugation is involved); everywhere else (``create_graph``,
observers, complex or mixed dtypes, double backward) the same rule runs with ``TENSORS`` on
Tensors (``ctx.saved_tensors``), through tensorkit ops, so it is recorded and differentiable.
Operators (``+ - * /``, unary minus) work on both kinds of value as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._backend.threads import ascontiguousarray

__all__ = ["ArraySpace", "TENSORS", "tensor_rule"]


class ArraySpace:
    """Rule functions on the raw real-valued arrays of one array module (NumPy or CuPy)."""

    def __init__(self, xp: Any) -> None:
        self.xp = xp
        self.matmul = xp.matmul
        self.cos = xp.cos
        self.sin = xp.sin

    @staticmethod
    def conj(x: Any) -> Any:
        return x  # the plain runner runs rules on real arrays only

    def mH(self, x: Any) -> Any:
        return self.xp.swapaxes(x, -1, -2)

    @staticmethod
    def sum(x: Any, axis: Any, keepdims: bool = False) -> Any:
        return x.sum(axis=axis, keepdims=keepdims)

    @staticmethod
    def reshape(x: Any, shape: tuple) -> Any:
        return x.reshape(shape)

    def swapaxes(self, x: Any, axis0: int, axis1: int) -> Any:
        return self.xp.swapaxes(x, axis0, axis1)

    @staticmethod
    def permute(x: Any, axes: tuple) -> Any:
        return x.transpose(axes)

    @staticmethod
    def column_major(x: Any) -> bool:
        return _column_major(x)

    def contiguous(self, x: Any) -> Any:
        return ascontiguousarray(self.xp, x)

    def expand_reduced(self, g: Any, shape: tuple, axis: Any, keepdims: bool) -> Any:
        """A reduced gradient broadcast back to ``shape`` (as ``reduction.expand_reduced``)."""
        if not keepdims and shape:
            g = g.reshape(tuple(1 if axis is None or i in axis else n for i, n in enumerate(shape)))
        return self.xp.broadcast_to(g, shape)

    def op(self, opdef: Any, *args: Any, **attrs: Any) -> Any:
        """``opdef`` applied: its forward on the arrays."""
        return opdef.forward(self.xp, *args, **attrs)


class _TensorSpace:
    """Rule functions on Tensors, as tensorkit ops (recorded under ``create_graph``). Bound on
    first use: the ops modules import this one."""

    def __getattr__(self, name: str) -> Any:
        self._bind()
        return object.__getattribute__(self, name)

    def _bind(self) -> None:
        from . import _apply, binary, matmul, reduction, shape, unary

        self.conj = binary._conj
        self.matmul = matmul.matmul
        self.cos = unary.cos
        self.sin = unary.sin
        self.mH = lambda x: x.mH
        self.sum = lambda x, axis, keepdims=False: reduction.sum(x, axis, keepdims)
        self.reshape = shape.reshape
        self.swapaxes = shape.transpose
        self.permute = shape.permute
        self.contiguous = lambda x: x.contiguous()
        self.column_major = lambda x: _column_major(x._data)
        self.expand_reduced = reduction.expand_reduced
        self.op = _apply.apply


TENSORS = _TensorSpace()


def _column_major(array: Any) -> bool:
    """Whether ``array`` is a matrix laid out by columns (a transposed C-ordered one, as
    ``weight.T`` in a linear layer is): its gradient is best made in the same layout."""
    flags = array.flags
    return array.ndim == 2 and flags.f_contiguous and not flags.c_contiguous


def tensor_rule(rule: Callable) -> Callable:
    """The Tensor form of a namespaced ``rule``: ``backward(ctx, *grads)``, as ops declare it."""

    def backward(ctx: Any, *grads: Any) -> Any:
        return rule(ctx, TENSORS, ctx.saved_tensors, *grads)

    backward.__name__ = getattr(rule, "__name__", "rule")
    backward.__qualname__ = getattr(rule, "__qualname__", "rule")
    return backward
