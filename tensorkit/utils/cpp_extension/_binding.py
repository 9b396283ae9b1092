"""Calling a compiled function with tensors: every argument is checked against the C
prototype before the call (tensor or number, device, dtype, contiguity, declared shape; the
error names the argument), then tensors are passed zero-copy as pointers to their buffers.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from ...autograd.grad_mode import is_grad_enabled
from ...tensor import Tensor
from ._prototypes import Param, Prototype


def _position(fn: str, p: Param, index: int) -> str:
    return f"{fn}(): argument '{p.name}' (position {index + 1})"


class _Slot:
    """What a call checks for one parameter, worked out once per function."""

    __slots__ = ("bounds", "dims", "dtype", "integer", "param", "pointer", "symbol", "where")

    def __init__(self, fn: str, p: Param, index: int) -> None:
        self.param = p
        self.where = _position(fn, p, index)
        self.pointer = p.pointer
        self.dtype = np.dtype(p.dtype)
        self.integer = self.dtype.kind in "iub"
        self.symbol = not p.pointer and self.dtype.kind in "iu"
        if self.integer and self.dtype.kind != "b":
            info = np.iinfo(self.dtype)
            self.bounds = (int(info.min), int(info.max))
        else:
            self.bounds = None
        self.dims = p.dims


class ArgumentChecker:
    """Checks a call's arguments against a prototype (tensors on ``device_type``)."""

    def __init__(self, prototype: Prototype, device_type: str) -> None:
        self.prototype = prototype
        self.device_type = device_type
        self.slots = tuple(_Slot(prototype.name, p, i) for i, p in enumerate(prototype.params))
        self.shaped = tuple(
            (index, slot) for index, slot in enumerate(self.slots) if slot.dims is not None
        )

    def __call__(self, args: tuple) -> None:
        slots = self.slots
        if len(args) != len(slots):
            params = self.prototype.params
            raise TypeError(
                f"{self.prototype.name}() takes {len(params)} arguments "
                f"({', '.join(p.name for p in params)}) but {len(args)} were given"
            )
        sizes: dict[str, int] = {}
        for slot, value in zip(slots, args, strict=True):
            if slot.pointer:
                if (
                    type(value) is not Tensor
                    or value._device.type != self.device_type
                    or value._data.dtype != slot.dtype
                    or not value._data.flags.c_contiguous
                    or not slot.param.const
                ):
                    _check_tensor(slot, value, self.device_type)
            else:
                _check_number(slot, value)
                if slot.symbol:
                    sizes[slot.param.name] = int(value)
        for index, slot in self.shaped:
            _check_shape(slot, args[index], sizes)


def _check_tensor(slot: _Slot, value: Any, device_type: str) -> None:
    where, p = slot.where, slot.param
    if not isinstance(value, Tensor):
        raise TypeError(f"{where} must be a Tensor ({p.c_text()}), got {type(value).__name__}")
    if value._device.type != device_type:
        hint = (
            "functions from cpp_sources take CPU tensors; CUDA tensors go to cuda_sources kernels"
            if device_type == "cpu"
            else "kernels from cuda_sources take CUDA tensors; CPU tensors go to cpp_sources"
        )
        raise RuntimeError(
            f"{where} must be a {device_type} tensor, got a tensor on {value.device} ({hint})"
        )
    if value._data.dtype != slot.dtype:
        raise TypeError(
            f"{where} must have dtype {p.dtype} (C type {p.ctype}), got {value._data.dtype.name}"
        )
    if not value._data.flags.c_contiguous:
        raise ValueError(
            f"{where} must be contiguous, got a tensor of shape {list(value.shape)} with "
            f"strides {value.stride()} (call .contiguous() first)"
        )
    if not p.const:
        if value._requires_grad and is_grad_enabled() and value.grad_fn is None:
            raise RuntimeError(
                f"{where} is written by the function ({p.c_text()} is not const), but it is a "
                "leaf tensor that requires grad (a leaf Variable that requires grad is being "
                "used in an in-place operation)"
            )
        if not getattr(value._data.flags, "writeable", True):  # CuPy arrays are always
            raise ValueError(f"{where} is written by the function but its buffer is read-only")


def _check_number(slot: _Slot, value: Any) -> None:
    kind = type(value)
    if slot.integer:
        boolean = kind is bool
        integral = kind is int or (not boolean and isinstance(value, numbers.Integral))
        if not integral and not (boolean and slot.dtype.kind == "b"):
            raise TypeError(
                f"{slot.where} must be an int ({slot.param.c_text()}), got {kind.__name__}"
            )
        bounds = slot.bounds
        if bounds is not None and not bounds[0] <= value <= bounds[1]:
            raise OverflowError(
                f"{slot.where} = {value} does not fit the C type {slot.param.ctype}"
            )
    elif kind is not float and (
        isinstance(value, Tensor | bool) or not isinstance(value, numbers.Real)
    ):
        raise TypeError(
            f"{slot.where} must be a float ({slot.param.c_text()}), got {kind.__name__}"
        )


def _check_shape(slot: _Slot, tensor: Tensor, sizes: dict[str, int]) -> None:
    dims = slot.dims
    shape = tensor._data.shape
    if len(dims) == len(shape):
        for dim, actual in zip(dims, shape, strict=True):
            if dim == "*":
                continue
            wanted = int(dim) if dim.isdigit() else sizes.setdefault(dim, actual)
            if wanted != actual:
                break
        else:
            return
    expected = []
    for dim, actual in zip(dims, shape, strict=False):
        if dim == "*":
            expected.append(actual)
        elif dim.isdigit():
            expected.append(int(dim))
        else:
            expected.append(sizes.setdefault(dim, actual))
    if len(dims) != len(shape) or tuple(expected) != tuple(shape):
        declared = "".join(f"[{d}]" for d in dims)
        known = ", ".join(f"{d}={sizes[d]}" for d in dims if d in sizes)
        raise ValueError(
            f"{slot.where} must have shape {slot.param.name}{declared}"
            f"{f' ({known})' if known else ''}, got {list(shape)}"
        )


class ExtensionFunction:
    """A compiled C function taking tensors (CPU, zero-copy) and numbers."""

    def __init__(self, prototype: Prototype, cfunc: Any, ffi: Any, lib: Any) -> None:
        self.prototype = prototype
        self._check = ArgumentChecker(prototype, "cpu")
        self._buffers = tuple(
            (f"{p.ctype}[]", not p.const) if p.pointer else None for p in prototype.params
        )
        self._cfunc = cfunc
        self._ffi = ffi
        self._lib = lib  # the library stays loaded while a function of it lives
        self.__name__ = prototype.name
        self.__doc__ = f"{prototype.c_text()} (compiled; takes tensors for pointers)"

    def __repr__(self) -> str:
        return f"<compiled function {self.prototype.c_text()}>"

    def __call__(self, *args: Any) -> Any:
        self._check(args)
        from_buffer = self._ffi.from_buffer
        converted = []
        written = None
        for buffer, value in zip(self._buffers, args, strict=True):
            if buffer is None:
                converted.append(value)
                continue
            ctype, writable = buffer
            converted.append(from_buffer(ctype, value._data, require_writable=writable))
            if writable:
                written = [value] if written is None else [*written, value]
        result = self._cfunc(*converted)
        if written is not None:
            for tensor in written:
                tensor.bump_version(self.prototype.name)
        return result
