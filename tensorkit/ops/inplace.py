"""In-place ops (``add_``, ``copy_``, ``t[i] = v``, ...), all through one mechanism.

An in-place op computes its out-of-place result, writes it into the tensor's storage, bumps
the (shared) version counter and moves the tensor to the result's place in the graph. When
the tensor is a view of a base that takes part in the graph, the base's history is rewritten
too (PyTorch's CopySlices): the base gets a node that routes the view's part of its gradient
through the in-place op and the rest around it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _state
from .._backend.multiply_add import multiply_add
from .._callsite import user_call_site
from ..autograd.grad_mode import enable_grad
from ..tensor import Tensor, wrap
from ._apply import OpDef, apply, make_node, replay_view, replay_view_on_array
from .binary import where


def _copy_forward(xp: Any, src: Any, shape: tuple, np_dtype: Any) -> Any:
    return xp.array(xp.broadcast_to(src, shape), dtype=np_dtype, copy=True)


_COPY = OpDef("copy", _copy_forward, lambda ctx, g: g, node_name="CopyBackwards")


def _copy_slices_rule(ctx: Any, g: Tensor) -> tuple:
    view_fn = ctx.attrs["view_fn"]
    xp = g.device.xp
    mask = xp.zeros(g.shape, dtype=bool)
    replay_view_on_array(view_fn, xp, mask)[...] = True
    grad_base = where(wrap(mask, g.device), 0.0, g) if ctx.edges[0] is not None else None
    grad_result = replay_view(view_fn, g) if ctx.edges[1] is not None else None
    return grad_base, grad_result


_COPY_SLICES = OpDef(
    "copy_slices", lambda xp, base, result: base, _copy_slices_rule, node_name="CopySlices"
)


INFERENCE_INPLACE = (
    "Inplace update to inference tensor outside InferenceMode is not allowed. You can make a "
    "clone to get a normal tensor before doing inplace update."
)


def _check_inference_write(tensor: Tensor, op_name: str) -> None:
    """Refuse to change an inference tensor (or a view of one) in place outside inference
    mode, as PyTorch does: it has no version counter that autograd could check."""
    if _state.inference_tensors_made and tensor._is_inference and not _state.inference_mode:
        shape = list(tensor.shape)
        raise RuntimeError(f"{INFERENCE_INPLACE} (in {op_name} on a tensor of shape {shape})")


def _check_target(tensor: Tensor, result: Tensor, op_name: str) -> None:
    _check_inference_write(tensor, op_name)
    if _state.grad_enabled and tensor._requires_grad and tensor.grad_fn is None:
        raise RuntimeError(
            f"a leaf Variable that requires grad is being used in an in-place operation "
            f"({op_name} on a tensor of shape {list(tensor.shape)}). Wrap it in "
            "`with tk.no_grad():` if you mean to change the parameter itself."
        )
    base = tensor._base
    differentiable_view = base is not None and tensor._view_fn is not None  # not a detach()
    if _state.grad_enabled and differentiable_view and base._requires_grad and base.grad_fn is None:
        raise RuntimeError(
            f"a view of a leaf Variable that requires grad is being used in an in-place "
            f"operation ({op_name} on a view of shape {list(tensor.shape)})."
        )
    data = tensor._data
    if data.size > 1 and any(
        stride == 0 and n > 1 for stride, n in zip(data.strides, data.shape, strict=True)
    ):  # an empty array may have zero strides: it has nothing to write
        raise RuntimeError(
            f"unsupported operation: more than one element of the written-to tensor refers to a "
            f"single memory location (in {op_name} on an expanded tensor of shape "
            f"{list(tensor.shape)}). Please clone() the tensor before performing the operation."
        )
    source, target = result._data.dtype, tensor._data.dtype
    if source != target and not np.can_cast(source, target, casting="same_kind"):
        raise RuntimeError(
            f"result type {_torch_name(source)} can't be cast to the desired output type "
            f"{_torch_name(target)} (in {op_name} on a tensor of dtype {tensor.dtype})"
        )
    if result._data.shape != tensor._data.shape:
        raise RuntimeError(
            f"output with shape {list(tensor.shape)} doesn't match the broadcast shape "
            f"{list(result.shape)} (in {op_name})"
        )


def _torch_name(np_dtype: Any) -> str:
    names = {"f": "Float", "c": "ComplexFloat", "i": "Long", "u": "Byte", "b": "Bool"}
    return f"{names[np_dtype.kind]} ({np_dtype})"


def inplace_update(tensor: Tensor, result: Tensor, op_name: str) -> Tensor:
    """Write ``result`` into ``tensor``'s storage and give ``tensor`` the result's history."""
    _check_target(tensor, result, op_name)
    if _state.tracer is not None:
        _state.tracer.before_inplace(tensor, result, op_name)
    base = tensor._base
    recording = _state.grad_enabled and (
        result._requires_grad or tensor._requires_grad or (base is not None and base._requires_grad)
    )
    differentiable_view = base is not None and tensor._view_fn is not None
    if recording and differentiable_view:
        _refuse_multi_output_view(tensor)
    tensor._data[...] = result._data
    site = user_call_site() if recording else None
    tensor.bump_version(op_name, site)
    if not recording:
        return tensor
    if differentiable_view:
        _rebase_view(tensor, base, result)
    elif result.grad_fn is not None:
        tensor.grad_fn = result.grad_fn
        tensor._output_nr = result._output_nr
        tensor._requires_grad = True
    else:  # overwritten by values that need no gradient: the old history no longer matters
        tensor.grad_fn = None
        tensor._requires_grad = False
    return tensor


def _refuse_multi_output_view(view: Tensor) -> None:
    """PyTorch forbids recorded in-place writes to views made by split, unbind, chunk..."""
    op, *_, output_nr = view._view_fn
    if output_nr is not None:
        name = "".join(part.capitalize() for part in op.name.split("_"))
        raise RuntimeError(
            f"Output {output_nr} of {name} is a view and is being modified inplace. This view is "
            "the output of a function that returns multiple views. Such functions do not allow "
            "the output views to be modified inplace. You should replace the inplace operation "
            "by an out-of-place one."
        )


def _rebase_view(view: Tensor, base: Tensor, result: Tensor) -> None:
    """Rewrite ``base``'s history so gradient through the view's region goes to ``result``."""
    old_base = _graph_alias(base, base._data)
    node = make_node(_COPY_SLICES, (old_base, result), {"view_fn": view._view_fn})
    base.grad_fn = node
    base._output_nr = 0
    base._requires_grad = True
    with enable_grad():
        replayed = replay_view(view._view_fn, base)
    view.grad_fn = replayed.grad_fn
    view._output_nr = replayed._output_nr
    view._requires_grad = True


def _graph_alias(tensor: Tensor, data: Any) -> Tensor:
    """A tensor standing where ``tensor`` stands in the graph, around ``data``."""
    alias = wrap(data, tensor._device)
    alias.grad_fn = tensor.grad_fn
    alias._output_nr = tensor._output_nr
    alias._requires_grad = tensor._requires_grad
    if tensor.grad_fn is None and tensor._requires_grad:
        alias._grad_accumulator = tensor._grad_accumulator
    return alias


def snapshot(tensor: Tensor, args: tuple) -> Tensor:
    """The tensor's current value as the input of an in-place op: itself when nothing will be
    recorded, else a copy standing at the same place in the graph (the gradient rule may need
    the value from before the change)."""
    if not _state.grad_enabled:
        return tensor
    if tensor._requires_grad or any(isinstance(a, Tensor) and a._requires_grad for a in args):
        return _graph_alias(tensor, tensor._data.copy())
    return tensor


def copy_(tensor: Tensor, src: Any, non_blocking: bool = False) -> Tensor:
    """Copy ``src`` (broadcast, cast, moved across devices) into ``tensor``."""
    if isinstance(src, Tensor):
        if src._device is not tensor._device:
            src = src.to(tensor._device)
        result = apply(_COPY, src, shape=tensor._data.shape, np_dtype=tensor._data.dtype)
    else:
        data = tensor._device.xp.full(tensor._data.shape, src, dtype=tensor._data.dtype)
        result = wrap(data, tensor._device)
    return inplace_update(tensor, result, "copy_")


def fill_(tensor: Tensor, value: Any) -> Tensor:
    if isinstance(value, Tensor) and value.ndim != 0:
        raise RuntimeError(
            f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} "
            "dimensions."
        )
    return copy_(tensor, value)


def zero_(tensor: Tensor) -> Tensor:
    return copy_(tensor, 0)


def _direct_add(xp: Any, target: Any, other: Any, alpha: Any = 1) -> None:
    if alpha == 1:
        xp.add(target, other, out=target)
    else:
        multiply_add(xp, target, other, alpha, inplace=True)


def _direct_sub(xp: Any, target: Any, other: Any, alpha: Any = 1) -> None:
    if alpha == 1:
        xp.subtract(target, other, out=target)
    else:
        multiply_add(xp, target, other, -alpha, inplace=True)


def _direct_mul(xp: Any, target: Any, other: Any) -> None:
    xp.multiply(target, other, out=target)


def _direct_div(xp: Any, target: Any, other: Any) -> None:
    xp.true_divide(target, other, out=target)


def _direct_addcmul(xp: Any, target: Any, first: Any, second: Any, value: Any = 1) -> None:
    product = xp.multiply(first, second)
    if value != 1:
        product *= value
    xp.add(target, product, out=target)


def _direct_addcdiv(xp: Any, target: Any, first: Any, second: Any, value: Any = 1) -> None:
    quotient = xp.true_divide(first, second)
    if value != 1:
        quotient *= value
    xp.add(target, quotient, out=target)


# Arithmetic that can write straight into the tensor's storage when nothing is recorded
# (optimizer updates, ``p -= lr * g`` under no_grad): no copy back, and the same operations
# in the same order as the general path (``addcmul``: ``input + t1 * t2 * value``).
DIRECT = {
    "add_": _direct_add,
    "sub_": _direct_sub,
    "mul_": _direct_mul,
    "div_": _direct_div,
    "addcmul_": _direct_addcmul,
    "addcdiv_": _direct_addcdiv,
}


def _write_directly(tensor: Tensor, name: str, args: tuple, kwargs: dict) -> bool:
    """Apply ``name`` in place with the array module's ``out=`` when that is exactly what the
    general path would compute: nothing recorded or observed, same device, and an operand
    that neither changes the dtype nor broadcasts the tensor bigger. False: take the
    general path."""
    direct = DIRECT.get(name)
    if direct is None or _state.observing or not args:
        return False
    _check_inference_write(tensor, name)
    if any(type(v) not in (int, float) for v in kwargs.values()):  # alpha=, value=
        return False
    data = tensor._data
    recording = _state.grad_enabled and tensor._requires_grad
    operands = []
    for other in args:
        if isinstance(other, Tensor):
            if other._device is not tensor._device or other._data.dtype != data.dtype:
                return False
            recording = recording or (_state.grad_enabled and other._requires_grad)
            operands.append(other._data)
        elif type(other) in (int, float) and data.dtype.kind == "f":
            operands.append(other)
        else:
            return False
    if recording or (name in ("div_", "addcdiv_") and data.dtype.kind != "f"):
        return False
    if 0 in data.strides and data.size > 1:
        return False
    try:
        direct(tensor._device.xp, data, *operands, **kwargs)
    except (ValueError, TypeError):  # shapes that don't fit: let the general path explain
        return False
    tensor.bump_version(name)
    return True


def make_inplace(function: Callable, name: str) -> Callable:
    """The in-place method ``name`` (e.g. ``add_``) of an out-of-place op ``function``."""

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        if _write_directly(self, name, args, kwargs):
            return self
        return inplace_update(self, function(snapshot(self, args), *args, **kwargs), name)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In-place version of :meth:`{function.__name__}`."
    return method


# ------------------------------------------------------------- in-place shape changes
def _restride(tensor: Tensor, view: Callable, op_name: str) -> Tensor:
    """Give ``tensor`` the shape and strides of ``view(tensor)`` in place, as PyTorch's
    ``t_``/``squeeze_``/...: the data stays, the tensor moves to the view's place in the graph
    and stays a view of its base (if it was one)."""
    _check_inference_write(tensor, op_name)
    if _state.grad_enabled and tensor._requires_grad and tensor.grad_fn is None:
        raise RuntimeError(
            f"a leaf Variable that requires grad is being used in an in-place operation "
            f"({op_name} on a tensor of shape {list(tensor.shape)}). Wrap it in "
            "`with tk.no_grad():` if you mean to change the parameter itself."
        )
    result = view(tensor)
    tensor._data = result._data
    tensor.grad_fn = result.grad_fn
    tensor._output_nr = result._output_nr
    tensor._requires_grad = result._requires_grad
    if tensor._base is not None:
        tensor._view_fn = result._view_fn
    tensor.bump_version(op_name, user_call_site() if tensor._requires_grad else None)
    return tensor


def squeeze_(tensor: Tensor, dim: Any = None) -> Tensor:
    from .shape import squeeze

    return _restride(tensor, lambda t: squeeze(t) if dim is None else squeeze(t, dim), "squeeze_")


def unsqueeze_(tensor: Tensor, dim: int) -> Tensor:
    from .shape import unsqueeze

    return _restride(tensor, lambda t: unsqueeze(t, dim), "unsqueeze_")


def t_(tensor: Tensor) -> Tensor:
    from .shape import t

    if tensor.ndim > 2:
        raise RuntimeError(
            f"t_() expects a tensor with <= 2 dimensions, but self is {tensor.ndim}D"
        )
    return _restride(tensor, t, "t_")


def transpose_(tensor: Tensor, dim0: int, dim1: int) -> Tensor:
    from .shape import transpose

    return _restride(tensor, lambda t: transpose(t, dim0, dim1), "transpose_")


def swapaxes_(tensor: Tensor, axis0: int, axis1: int) -> Tensor:
    return transpose_(tensor, axis0, axis1)


def swapdims_(tensor: Tensor, dim0: int, dim1: int) -> Tensor:
    return transpose_(tensor, dim0, dim1)
