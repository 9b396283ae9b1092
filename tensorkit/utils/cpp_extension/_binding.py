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


def check_arguments(prototype: Prototype, args: tuple, device_type: str) -> dict[str, int]:
    """Check ``args`` against ``prototype`` (tensors on ``device_type``); returns the
    shape symbols bound (integer parameters and declared sizes)."""
    fn = prototype.name
    params = prototype.params
    if len(args) != len(params):
        raise TypeError(
            f"{fn}() takes {len(params)} arguments ({', '.join(p.name for p in params)}) but "
            f"{len(args)} were given"
        )
    sizes: dict[str, int] = {}
    for index, (p, value) in enumerate(zip(params, args, strict=True)):
        if p.pointer:
            _check_tensor(fn, p, index, value, device_type)
        else:
            _check_number(fn, p, index, value)
            if np.dtype(p.dtype).kind in "iu":
                sizes[p.name] = int(value)
    for index, (p, value) in enumerate(zip(params, args, strict=True)):
        if p.dims is not None:
            _check_shape(fn, p, index, value, sizes)
    return sizes


def _check_tensor(fn: str, p: Param, index: int, value: Any, device_type: str) -> None:
    where = _position(fn, p, index)
    if not isinstance(value, Tensor):
        raise TypeError(f"{where} must be a Tensor ({p.c_text()}), got {type(value).__name__}")
    if value.device.type != device_type:
        hint = (
            "functions from cpp_sources take CPU tensors; CUDA tensors go to cuda_sources kernels"
            if device_type == "cpu"
            else "kernels from cuda_sources take CUDA tensors; CPU tensors go to cpp_sources"
        )
        raise RuntimeError(
            f"{where} must be a {device_type} tensor, got a tensor on {value.device} ({hint})"
        )
    if value._data.dtype.name != p.dtype:
        raise TypeError(
            f"{where} must have dtype {p.dtype} (C type {p.ctype}), got "
            f"{value._data.dtype.name}"
        )
    if not value._data.flags.c_contiguous:
        raise ValueError(
            f"{where} must be contiguous, got a tensor of shape {list(value.shape)} with "
            f"strides {value.stride()} (call .contiguous() first)"
        )
    if not p.const:
        if value.requires_grad and is_grad_enabled() and value.grad_fn is None:
            raise RuntimeError(
                f"{where} is written by the function ({p.c_text()} is not const), but it is a "
                "leaf tensor that requires grad (a leaf Variable that requires grad is being "
                "used in an in-place operation)"
            )
        if not value._data.flags.writeable:
            raise ValueError(f"{where} is written by the function but its buffer is read-only")


def _check_number(fn: str, p: Param, index: int, value: Any) -> None:
    where = _position(fn, p, index)
    integer = np.dtype(p.dtype).kind in "iub"
    accepted = numbers.Integral if integer else numbers.Real
    if isinstance(value, Tensor) or not isinstance(value, accepted):
        kind = "an int" if integer else "a float"
        raise TypeError(f"{where} must be {kind} ({p.c_text()}), got {type(value).__name__}")
    if integer and p.dtype != "bool":
        info = np.iinfo(p.dtype)
        if not info.min <= int(value) <= info.max:
            raise OverflowError(f"{where} = {value} does not fit the C type {p.ctype}")


def _check_shape(fn: str, p: Param, index: int, tensor: Tensor, sizes: dict[str, int]) -> None:
    expected = []
    for dim, actual in zip(p.dims, tensor.shape, strict=False):
        if dim == "*":
            expected.append(actual)
        elif dim.isdigit():
            expected.append(int(dim))
        else:
            expected.append(sizes.setdefault(dim, actual))
    if len(p.dims) != tensor.ndim or tuple(expected) != tuple(tensor.shape):
        declared = "".join(f"[{d}]" for d in p.dims)
        known = ", ".join(f"{d}={sizes[d]}" for d in p.dims if d in sizes)
        raise ValueError(
            f"{_position(fn, p, index)} must have shape {p.name}{declared}"
            f"{f' ({known})' if known else ''}, got {list(tensor.shape)}"
        )


class ExtensionFunction:
    """A compiled C function taking tensors (CPU, zero-copy) and numbers."""

    def __init__(self, prototype: Prototype, cfunc: Any, ffi: Any, lib: Any) -> None:
        self.prototype = prototype
        self._cfunc = cfunc
        self._ffi = ffi
        self._lib = lib  # the library stays loaded while a function of it lives
        self.__name__ = prototype.name
        self.__doc__ = f"{prototype.c_text()} (compiled; takes tensors for pointers)"

    def __repr__(self) -> str:
        return f"<compiled function {self.prototype.c_text()}>"

    def __call__(self, *args: Any) -> Any:
        check_arguments(self.prototype, args, "cpu")
        ffi = self._ffi
        converted = []
        written = []
        for p, value in zip(self.prototype.params, args, strict=True):
            if p.pointer:
                converted.append(
                    ffi.from_buffer(f"{p.ctype}[]", value._data, require_writable=not p.const)
                )
                if not p.const:
                    written.append(value)
            else:
                converted.append(value)
        result = self._cfunc(*converted)
        for tensor in written:
            tensor.bump_version(self.prototype.name)
        return result
