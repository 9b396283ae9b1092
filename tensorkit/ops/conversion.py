"""Copies and conversions: ``to`` (device and dtype), ``clone``, ``contiguous``, casts."""

from __future__ import annotations

from typing import Any

from .._backend import as_device, device, to_device_array
from .._dtype import dtype
from ..tensor import Tensor
from ._apply import OpDef, apply


def _cast_rule(ctx: Any, g: Tensor) -> Tensor:
    return g  # the engine casts the gradient back to the input's dtype


def _move_rule(ctx: Any, g: Tensor) -> Tensor:
    return to(g, ctx.attrs["source"])


_CAST = OpDef(
    "to_dtype", lambda xp, x, np_dtype: x.astype(np_dtype), _cast_rule, node_name="ToCopyBackward0"
)
_MOVE = OpDef(
    "to_device",
    lambda xp, x, device, source: _copy_to(x, device),
    _move_rule,
    moves_device=True,
    node_name="ToCopyBackward0",
)
_CLONE = OpDef("clone", lambda xp, x: x.copy(), lambda ctx, g: g)
_CONTIGUOUS = OpDef(
    "contiguous",
    lambda xp, x: xp.ascontiguousarray(x),
    lambda ctx, g: g,
    node_name="CloneBackward0",
)


def _copy_to(x: Any, target: device) -> Any:
    return to_device_array(x, target)


def _parse_to_args(
    tensor: Tensor, args: tuple, kwargs: dict
) -> tuple[device | None, dtype | None, bool]:
    target_device = kwargs.pop("device", None)
    target_dtype = kwargs.pop("dtype", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    for arg in args:
        if arg is None:
            continue  # to(None, dtype): no device change
        if isinstance(arg, Tensor):
            target_device, target_dtype = arg.device, arg.dtype
        elif isinstance(arg, dtype):
            target_dtype = arg
        elif isinstance(arg, str | device | int) and not isinstance(arg, bool):
            target_device = arg
        elif isinstance(arg, bool):
            continue  # non_blocking / copy given positionally
        else:
            raise TypeError(f"to() received an invalid argument {arg!r}")
    if target_device is not None:
        target_device = as_device(target_device)
    return target_device, target_dtype, copy


def to(tensor: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """Move to a device and/or cast to a dtype; returns ``tensor`` itself when nothing changes."""
    target_device, target_dtype, copy = _parse_to_args(tensor, args, kwargs)
    out = tensor
    if target_dtype is not None and target_dtype.np != out._data.dtype:
        if out.requires_grad and not (target_dtype.is_floating_point or target_dtype.is_complex):
            out = out.detach()
        out = apply(_CAST, out, np_dtype=target_dtype.np)
    if target_device is not None and target_device is not out._device:
        out = apply(_MOVE, out, device=target_device, source=out._device)
    if copy and out is tensor:
        out = clone(out)
    return out


def clone(input: Tensor, *, memory_format: Any = None) -> Tensor:
    """A copy with its own storage; gradients flow back to ``input``."""
    return apply(_CLONE, input)


def contiguous(input: Tensor, memory_format: Any = None) -> Tensor:
    """``input`` itself when already C-contiguous, else a contiguous copy."""
    if input._data.flags.c_contiguous:
        return input
    return apply(_CONTIGUOUS, input)


def type_as(input: Tensor, other: Tensor) -> Tensor:
    return to(input, other.dtype)
