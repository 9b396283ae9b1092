"""Making tensors: from data, filled, ranges, and the ``*_like`` forms."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._backend import as_device, cpu, device, device_of_array, to_device_array
from .._dtype import (
    default_complex_dtype,
    dtype,
    from_numpy_dtype,
    get_default_dtype,
    int64,
)
from ..tensor import Tensor, wrap

__all__ = [
    "tensor",
    "as_tensor",
    "from_numpy",
    "zeros",
    "ones",
    "full",
    "empty",
    "arange",
    "linspace",
    "logspace",
    "eye",
    "tril_indices",
    "triu_indices",
    "zeros_like",
    "ones_like",
    "full_like",
    "empty_like",
    "OutOfMemoryError",
    "parse_shape",
]

_MAX_ELEMENTS = 2**63 - 1
_DtypeClass = dtype  # the creation functions have a parameter named ``dtype``


class OutOfMemoryError(RuntimeError):
    """An allocation larger than the device's free memory (catchable; the process survives)."""


def parse_shape(size: Any, caller: str = "size") -> tuple[int, ...]:
    """Accept ``f(2, 3)``, ``f((2, 3))``, ``f([2, 3])`` or ``f(tk.Size)``; check every dim."""
    if len(size) == 1 and isinstance(size[0], Sequence | Tensor) and not isinstance(size[0], str):
        size = tuple(size[0])
    shape = []
    for n in size:
        if isinstance(n, Tensor):
            n = n.item()
        if not isinstance(n, int | np.integer) or isinstance(n, bool):
            raise TypeError(
                f"{caller}(): argument 'size' must be a tuple of ints, but found element of type "
                f"{type(n).__name__}"
            )
        shape.append(int(n))
    for n in shape:
        if n < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {n}: {shape}")
    if math.prod(shape) > _MAX_ELEMENTS:
        raise RuntimeError(f"Storage size calculation overflowed with sizes={shape}")
    return tuple(shape)


def allocate(make: Any, shape: tuple, np_dtype: Any, dev: device) -> Any:
    """Run an allocating array call, turning out-of-memory into a clear, catchable error."""
    try:
        with dev.array_context():
            return make()
    except (MemoryError, ValueError) as error:
        nbytes = math.prod(shape) * np.dtype(np_dtype).itemsize
        if isinstance(error, ValueError) and "too big" not in str(error):
            raise
        raise OutOfMemoryError(
            f"{dev}: can't allocate memory: you tried to allocate {nbytes} bytes "
            f"({nbytes / 2**30:.2f} GiB) for a tensor of shape {list(shape)} and dtype "
            f"{np.dtype(np_dtype)}"
        ) from None
    except Exception as error:  # CuPy's OutOfMemoryError is not a MemoryError
        if type(error).__name__ == "OutOfMemoryError":
            raise OutOfMemoryError(f"CUDA out of memory on {dev}: {error}") from None
        raise


def _resolve(dtype_arg: dtype | None, default: dtype, device_arg: Any) -> tuple[dtype, device]:
    if dtype_arg is not None and not isinstance(dtype_arg, dtype):
        raise TypeError(f"dtype must be a tensorkit dtype such as tk.float32, got {dtype_arg!r}")
    return (dtype_arg or default), as_device(device_arg)


def _finish(data: Any, dev: device, requires_grad: bool) -> Tensor:
    out = wrap(data, dev)
    if requires_grad:
        out.requires_grad_(True)
    return out


def _host_array_from_data(data: Any, requested: dtype | None = None) -> np.ndarray | Any:
    """Data given by the user as an array: numpy/cupy arrays keep their dtype; Python data
    takes the ``requested`` dtype, else PyTorch's defaults (floats -> default dtype, ints ->
    int64), converted once from full precision."""
    if isinstance(data, Tensor):
        return data._data
    if isinstance(data, np.ndarray | np.generic):
        return np.asarray(data)
    if hasattr(data, "__cuda_array_interface__") or type(data).__module__.startswith("cupy"):
        return data
    if isinstance(data, list | tuple) and any(isinstance(x, Tensor) for x in _flatten(data)):
        data = _nested_tensors_to_lists(data)
    array = np.asarray(data)
    if requested is not None:
        return array.astype(requested.np, copy=False)
    if array.dtype.kind == "f":
        return array.astype(get_default_dtype().np, copy=False)
    if array.dtype.kind == "c":
        return array.astype(default_complex_dtype().np, copy=False)
    if array.dtype.kind in "iu":
        return array.astype(np.int64, copy=False)
    if array.dtype.kind == "b":
        return array
    raise TypeError(f"can't convert data of type {type(data).__name__} to a tensor")


def _flatten(data: Any) -> list:
    items = []
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, list | tuple):
            stack.extend(item)
        else:
            items.append(item)
    return items


def _nested_tensors_to_lists(data: Any) -> Any:
    if isinstance(data, Tensor):
        if data.numel() != 1 and data.ndim != 0:
            return data.tolist()
        return data.item()
    if isinstance(data, list | tuple):
        return [_nested_tensors_to_lists(x) for x in data]
    return data


def tensor(
    data: Any,
    dtype: dtype | None = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """A new tensor holding a copy of ``data`` (a number, nested lists, or an array)."""
    array = _host_array_from_data(data, dtype if isinstance(dtype, _DtypeClass) else None)
    source = device_of_array(array) if not isinstance(array, np.ndarray) else cpu
    if isinstance(data, Tensor) and device is None:
        target = data.device
    else:
        target = as_device(device) if device is not None else source
    if dtype is not None and not hasattr(dtype, "np"):
        raise TypeError(f"dtype must be a tensorkit dtype such as tk.float32, got {dtype!r}")
    np_dtype = dtype.np if dtype is not None else array.dtype
    moved = to_device_array(array, target)
    with target.array_context():
        copied = target.xp.array(moved, dtype=np_dtype, copy=True)
    return _finish(copied, target, requires_grad)


def as_tensor(data: Any, dtype: dtype | None = None, device: Any = None) -> Tensor:
    """Like ``tensor`` but shares memory with ``data`` when no copy is needed."""
    if isinstance(data, Tensor):
        out = data
        if device is not None:
            out = out.to(device)
        if dtype is not None:
            out = out.to(dtype)
        return out
    array = _host_array_from_data(data, dtype if isinstance(dtype, _DtypeClass) else None)
    target = as_device(device) if device is not None else device_of_array(array)
    moved = to_device_array(array, target)
    if dtype is not None and moved.dtype != dtype.np:
        moved = moved.astype(dtype.np)
    return wrap(moved, target)


def from_numpy(array: np.ndarray) -> Tensor:
    """A CPU tensor sharing memory with ``array``: changes to one show in the other."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    from_numpy_dtype(array.dtype)  # raises for unsupported dtypes
    return wrap(array, cpu)


def _filled(
    fill: Any, shape: tuple, dtype_arg: Any, device_arg: Any, requires_grad: bool, default: dtype
) -> Tensor:
    dt, dev = _resolve(dtype_arg, default, device_arg)
    xp = dev.xp
    if fill == 0:
        data = allocate(lambda: xp.zeros(shape, dt.np), shape, dt.np, dev)
    else:
        data = allocate(lambda: xp.full(shape, fill, dt.np), shape, dt.np, dev)
    return _finish(data, dev, requires_grad)


def zeros(
    *size: Any, dtype: dtype | None = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """A tensor of zeros with the given shape."""
    shape = parse_shape(size, "zeros")
    return _filled(0, shape, dtype, device, requires_grad, get_default_dtype())


def ones(
    *size: Any, dtype: dtype | None = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """A tensor of ones with the given shape."""
    shape = parse_shape(size, "ones")
    return _filled(1, shape, dtype, device, requires_grad, get_default_dtype())


def empty(
    *size: Any, dtype: dtype | None = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """An uninitialized tensor (here: zero-filled, which costs no more with calloc)."""
    shape = parse_shape(size, "empty")
    return _filled(0, shape, dtype, device, requires_grad, get_default_dtype())


def full(
    size: Any,
    fill_value: Any,
    *,
    dtype: dtype | None = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """A tensor filled with ``fill_value``; the dtype follows the value when not given."""
    shape = parse_shape((size,), "full")
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    default = _scalar_default_dtype(fill_value)
    return _filled(fill_value, shape, dtype, device, requires_grad, default)


def _scalar_default_dtype(value: Any) -> dtype:
    from .._dtype import bool_

    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return int64
    if isinstance(value, complex):
        return default_complex_dtype()
    return get_default_dtype()


def _like(t: Tensor, dtype_arg: Any, device_arg: Any) -> tuple[tuple, dtype, Any]:
    if not isinstance(t, Tensor):
        raise TypeError(f"expected a Tensor, got {type(t).__name__}")
    return t.shape, (dtype_arg or t.dtype), (device_arg if device_arg is not None else t.device)


def zeros_like(
    input: Tensor, *, dtype: dtype | None = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    shape, dt, dev = _like(input, dtype, device)
    return zeros(shape, dtype=dt, device=dev, requires_grad=requires_grad)


def ones_like(
    input: Tensor, *, dtype: dtype | None = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    shape, dt, dev = _like(input, dtype, device)
    return ones(shape, dtype=dt, device=dev, requires_grad=requires_grad)


def empty_like(
    input: Tensor, *, dtype: dtype | None = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    shape, dt, dev = _like(input, dtype, device)
    return empty(shape, dtype=dt, device=dev, requires_grad=requires_grad)


def full_like(
    input: Tensor,
    fill_value: Any,
    *,
    dtype: dtype | None = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    shape, dt, dev = _like(input, dtype, device)
    return full(shape, fill_value, dtype=dt, device=dev, requires_grad=requires_grad)


def arange(
    start: Any,
    end: Any = None,
    step: Any = 1,
    *,
    dtype: dtype | None = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Values from ``start`` up to (not including) ``end`` by ``step``."""
    if end is None:
        start, end = 0, start
    start, end, step = (v.item() if isinstance(v, Tensor) else v for v in (start, end, step))
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError(
            f"upper bound and lower bound inconsistent with step sign (start={start}, "
            f"end={end}, step={step})"
        )
    all_ints = all(isinstance(v, int) for v in (start, end, step))
    dt, dev = _resolve(dtype, int64 if all_ints else get_default_dtype(), device)
    count = max(0, math.ceil((end - start) / step))
    xp = dev.xp

    def make() -> Any:
        if all_ints:
            return xp.arange(start, end, step, dtype=dt.np)
        return (xp.arange(count, dtype=np.float64) * step + start).astype(dt.np)

    return _finish(allocate(make, (count,), dt.np, dev), dev, requires_grad)


def linspace(
    start: float,
    end: float,
    steps: int,
    *,
    dtype: dtype | None = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    if steps < 0:
        raise RuntimeError(f"number of steps must be non-negative, got {steps}")
    dt, dev = _resolve(dtype, get_default_dtype(), device)
    data = dev.xp.linspace(start, end, steps, dtype=np.float64).astype(dt.np)
    return _finish(data, dev, requires_grad)


def logspace(
    start: float,
    end: float,
    steps: int,
    base: float = 10.0,
    *,
    dtype: dtype | None = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    dt, dev = _resolve(dtype, get_default_dtype(), device)
    data = dev.xp.logspace(start, end, steps, base=base, dtype=np.float64).astype(dt.np)
    return _finish(data, dev, requires_grad)


def eye(
    n: int,
    m: int | None = None,
    *,
    dtype: dtype | None = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """The identity matrix (n x m)."""
    m = n if m is None else m
    parse_shape((n, m), "eye")
    dt, dev = _resolve(dtype, get_default_dtype(), device)
    return _finish(dev.xp.eye(n, m, dtype=dt.np), dev, requires_grad)


def _triangle_indices(
    name: str, row: int, col: int, offset: int, dtype: dtype | None, device: Any
) -> Tensor:
    for label, n in (("row", row), ("col", col)):
        if n < 0:
            raise RuntimeError(f"{label} must be non-negative, got{n}")
    dt, dev = _resolve(dtype, int64, device)
    xp = dev.xp
    triangle = xp.tril_indices if name == "tril_indices" else xp.triu_indices
    rows, cols = triangle(row, offset, col)
    return _finish(xp.stack([rows, cols]).astype(dt.np).reshape(2, -1), dev, False)


def tril_indices(
    row: int, col: int, offset: int = 0, *, dtype: dtype | None = None, device: Any = None
) -> Tensor:
    """The (2, N) row and column indices of the lower triangle of a row x col matrix."""
    return _triangle_indices("tril_indices", row, col, offset, dtype, device)


def triu_indices(
    row: int, col: int, offset: int = 0, *, dtype: dtype | None = None, device: Any = None
) -> Tensor:
    """The (2, N) row and column indices of the upper triangle of a row x col matrix."""
    return _triangle_indices("triu_indices", row, col, offset, dtype, device)
