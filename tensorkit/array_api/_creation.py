"""Creation functions: asarray with the standard's ``copy`` semantics, filled arrays, ranges,
eye, meshgrid, tril/triu and DLPack import."""

from __future__ import annotations

import builtins
import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import _interop
from .._backend import as_device
from .._dtype import default_complex_dtype, dtype, get_default_dtype, int64
from ..ops import creation
from ..ops import shape as shape_ops
from ..ops.complex import complex as make_complex
from ..ops.conversion import clone
from ..tensor import Tensor
from ._promotion import cast, is_scalar, python_scalar, result_dtype

Shape = int | tuple[int, ...]


def asarray(
    obj: Any,
    /,
    *,
    dtype: dtype | None = None,
    device: Any = None,
    copy: bool | None = None,
) -> Tensor:
    """An array from ``obj``: an array, a DLPack or buffer object, a Python scalar or a nested
    sequence of those.

    ``copy=True`` always copies, ``copy=False`` never does (it raises ValueError when a copy
    is needed), ``copy=None`` copies only when needed. Arrays keep their gradient history:
    ``asarray(x)`` is ``x``, and a nested sequence of arrays is stacked.
    """
    if isinstance(obj, Tensor):
        return _convert(obj, dtype, device, copy)
    shared = _shared_tensor(obj)
    if shared is not None:
        return _convert(shared, dtype, device, copy)
    if copy is False:
        raise ValueError(f"asarray(copy=False): can't share a {type(obj).__name__}, only copy it")
    if _holds_tensor(obj):
        return _convert(_stack_nested(obj), dtype, device, None)
    if dtype is None:
        return creation.tensor(python_scalar(obj), device=device)
    made = creation.from_numpy(np.asarray(obj, dtype=dtype.np))
    return _convert(made, None, device, None)


def _convert(x: Tensor, dtype: dtype | None, device: Any, copy: bool | None) -> Tensor:
    """``x`` on ``device`` with ``dtype``, honouring ``copy``."""
    out = x
    if device is not None and as_device(device) is not out.device:
        out = out.to(as_device(device))
    if dtype is not None and dtype is not out.dtype:
        out = out.to(dtype)
    if out is not x and copy is False:
        raise ValueError("asarray(copy=False): changing the dtype or device needs a copy")
    if copy and out is x:
        out = clone(x)
    return out


def _shared_tensor(obj: Any) -> Tensor | None:
    """A tensor sharing memory with a NumPy array, DLPack object or buffer; None for other
    objects (Python scalars and sequences)."""
    if isinstance(obj, np.ndarray | np.generic):
        return creation.from_numpy(np.asarray(obj))
    if hasattr(obj, "__dlpack__"):
        return _interop.from_dlpack(obj)
    if is_scalar(obj) or isinstance(obj, list | tuple):
        return None
    try:
        view = memoryview(obj)
    except TypeError:
        if isinstance(obj, Sequence):
            return None
        raise TypeError(f"asarray: can't make an array from a {type(obj).__name__}") from None
    return creation.from_numpy(np.asarray(view))


def _holds_tensor(obj: Any) -> bool:
    if isinstance(obj, Tensor):
        return True
    return isinstance(obj, list | tuple) and any(_holds_tensor(item) for item in obj)


def _stack_nested(obj: Any) -> Tensor:
    """A nested list of arrays and scalars stacked into one array, differentiably."""
    if not isinstance(obj, list | tuple):
        return asarray(obj)
    items = [item if is_scalar(item) else _stack_nested(item) for item in obj]
    target = result_dtype(items)
    dev = next(item.device for item in items if isinstance(item, Tensor))
    tensors = [
        cast(item, target)
        if isinstance(item, Tensor)
        else creation.tensor(python_scalar(item), dtype=target, device=dev)
        for item in items
    ]
    return shape_ops.stack(tensors)


def arange(
    start: int | float,
    /,
    stop: int | float | None = None,
    step: int | float = 1,
    *,
    dtype: dtype | None = None,
    device: Any = None,
) -> Tensor:
    """Values from ``start`` up to (not including) ``stop`` in steps of ``step``."""
    if stop is None:
        start, stop = 0, start
    if dtype is None:
        exact = all(isinstance(v, int) for v in (start, stop, step))
        dtype = int64 if exact else get_default_dtype()
    if step != 0 and math.ceil((stop - start) / step) <= 0:
        return creation.zeros(0, dtype=dtype, device=device)
    return creation.arange(start, stop, step, dtype=dtype, device=device)


def empty(shape: Shape, *, dtype: dtype | None = None, device: Any = None) -> Tensor:
    """An array of the given shape (zero-filled)."""
    return creation.empty(shape, dtype=dtype, device=device)


def empty_like(x: Tensor, /, *, dtype: dtype | None = None, device: Any = None) -> Tensor:
    """An array shaped like ``x`` (zero-filled)."""
    return creation.empty_like(x, dtype=dtype, device=device)


def eye(
    n_rows: int,
    n_cols: int | None = None,
    /,
    *,
    k: int = 0,
    dtype: dtype | None = None,
    device: Any = None,
) -> Tensor:
    """Ones on the ``k``-th diagonal, zeros elsewhere (all zeros when the diagonal lies
    outside, however large ``k`` is)."""
    n_cols = n_rows if n_cols is None else n_cols
    k = builtins.max(-n_rows, builtins.min(operator.index(k), n_cols))  # the same zeros beyond
    rows = creation.arange(n_rows, device=device)
    cols = creation.arange(n_cols, device=device)
    on_diagonal = shape_ops.unsqueeze(rows + k, 1) == cols
    return on_diagonal.to(dtype or get_default_dtype())


def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> Tensor:
    """An array sharing memory with a DLPack-speaking object (copied if ``copy=True``)."""
    return _convert(_interop.from_dlpack(x), None, device, copy)


def full(
    shape: Shape,
    fill_value: bool | int | float | complex,
    *,
    dtype: dtype | None = None,
    device: Any = None,
) -> Tensor:
    """An array filled with ``fill_value``; the dtype follows the value's kind by default."""
    return creation.full(shape, python_scalar(fill_value), dtype=dtype, device=device)


def full_like(
    x: Tensor,
    /,
    fill_value: bool | int | float | complex,
    *,
    dtype: dtype | None = None,
    device: Any = None,
) -> Tensor:
    """An array shaped like ``x`` filled with ``fill_value``."""
    return creation.full_like(x, python_scalar(fill_value), dtype=dtype, device=device)


def linspace(
    start: int | float | complex,
    stop: int | float | complex,
    /,
    num: int,
    *,
    dtype: dtype | None = None,
    device: Any = None,
    endpoint: bool = True,
) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop`` (included if ``endpoint``)."""
    is_complex = isinstance(start, complex) or isinstance(stop, complex)
    if dtype is None:
        dtype = default_complex_dtype() if is_complex else get_default_dtype()
    if dtype.is_complex:
        start, stop = complex(start), complex(stop)
        real = linspace(
            start.real, stop.real, num, dtype=dtype.to_real(), device=device, endpoint=endpoint
        )
        imag = linspace(
            start.imag, stop.imag, num, dtype=dtype.to_real(), device=device, endpoint=endpoint
        )
        return make_complex(real, imag)
    if endpoint:
        return creation.linspace(start, stop, num, dtype=dtype, device=device)
    values = creation.linspace(start, stop, num + 1, dtype=dtype, device=device)
    return shape_ops.narrow(values, 0, 0, num)


def meshgrid(*arrays: Tensor, indexing: str = "xy") -> list[Tensor]:
    """Coordinate grids from 1-D arrays ("xy": Cartesian, "ij": matrix indexing)."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    sizes = [a.shape[0] for a in arrays]
    positions = list(range(len(arrays)))
    if indexing == "xy" and len(arrays) >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
        positions[0], positions[1] = 1, 0
    grids = []
    for a, position in zip(arrays, positions, strict=True):
        view_shape = [1] * len(arrays)
        view_shape[position] = -1
        grids.append(shape_ops.broadcast_to(shape_ops.reshape(a, view_shape), sizes))
    return grids


def ones(shape: Shape, *, dtype: dtype | None = None, device: Any = None) -> Tensor:
    """An array of ones."""
    return creation.ones(shape, dtype=dtype, device=device)


def ones_like(x: Tensor, /, *, dtype: dtype | None = None, device: Any = None) -> Tensor:
    """An array of ones shaped like ``x``."""
    return creation.ones_like(x, dtype=dtype, device=device)


def tril(x: Tensor, /, *, k: int = 0) -> Tensor:
    """The lower triangle of the (stacked) matrices in ``x``, from diagonal ``k`` down."""
    return shape_ops.tril(x, k)


def triu(x: Tensor, /, *, k: int = 0) -> Tensor:
    """The upper triangle of the (stacked) matrices in ``x``, from diagonal ``k`` up."""
    return shape_ops.triu(x, k)


def zeros(shape: Shape, *, dtype: dtype | None = None, device: Any = None) -> Tensor:
    """An array of zeros."""
    return creation.zeros(shape, dtype=dtype, device=device)


def zeros_like(x: Tensor, /, *, dtype: dtype | None = None, device: Any = None) -> Tensor:
    """An array of zeros shaped like ``x``."""
    return creation.zeros_like(x, dtype=dtype, device=device)
