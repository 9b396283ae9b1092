"""``a + alpha * b`` rounded once, as PyTorch's ``add`` and ``sub`` with ``alpha`` compute it.

PyTorch's CPU kernel for ``add(a, b, alpha=)`` is a fused multiply-add with ``alpha`` rounded to
the tensors' dtype; NumPy's ``a + b * alpha`` rounds the product first and differs from it by
one ulp in about 2% of float32 elements (measured on a million). This is the update of every
``optim.SGD`` step, so the same weights drift apart from PyTorch's.

float32 arrays go to BLAS ``saxpy`` (``y += alpha * x``: one pass, threaded by OpenBLAS, where
NumPy's two operations take two and a temporary) in the OpenBLAS that NumPy's wheels ship,
called through ctypes (which releases the GIL). Its vector kernels fuse, but the scalar loop
some of them run over the last elements (those of the Haswell core type) does not, so saxpy
gets the largest multiple of :data:`BLOCK` elements (of arrays of :data:`SMALL` or more) and
the rest is computed in float64, where the product is exact, and rounded once (a tie of the
float64 rounding could round twice: none in the tests' samples). A check on first use keeps
saxpy only if it agrees with that arithmetic; without it (a NumPy built on another BLAS)
float32 is all computed in float64, with the same values. Operands that broadcast or are not
C-ordered are copied into that form first. Other dtypes (float64, float16, complex, integers)
and CuPy arrays keep NumPy's two roundings.
"""

from __future__ import annotations

import ctypes
import glob
import os
from typing import Any

import numpy as np

__all__ = ["multiply_add"]

BLOCK = 64  # a multiple of every OpenBLAS saxpy kernel's vector step
SMALL = 4096  # fewer elements are all computed in float64: ctypes' own cost is about as large
_saxpy: Any = False  # the checked saxpy function, None without one; False until looked up


def multiply_add(xp: Any, a: Any, b: Any, alpha: Any, inplace: bool = False) -> Any:
    """``a + alpha * b`` rounded once where the dtype allows it (see the module docstring);
    written into ``a`` with ``inplace`` (``b`` broadcasts to its shape)."""
    dtype = getattr(a, "dtype", None)
    if xp is not np or dtype != np.float32 or getattr(b, "dtype", None) != dtype:
        return _two_roundings(xp, a, b, alpha, inplace)
    shape = a.shape if inplace else np.broadcast_shapes(a.shape, b.shape)
    if inplace and a.flags.c_contiguous:
        target = a
    else:
        target = np.empty(shape, dtype)
        np.copyto(target, a)
    source = b
    if not (
        type(b) is np.ndarray
        and b.shape == shape
        and b.flags.c_contiguous
        and (b is target or not np.may_share_memory(b, target))
    ):
        source = np.array(np.broadcast_to(b, shape), order="C")
    alpha = float(np.float32(alpha))
    _fused_into(target.reshape(-1), source.reshape(-1), alpha, _saxpy_function())
    if inplace and target is not a:
        np.copyto(a, target)
        return a
    return target


def _fused_into(y: Any, x: Any, alpha: float, saxpy: Any) -> None:
    """``y += alpha * x`` rounded once, on flat C-ordered float32 arrays (``saxpy`` None:
    all in float64)."""
    body = y.size - y.size % BLOCK if saxpy is not None and y.size >= SMALL else 0
    if body:
        saxpy(body, alpha, x.ctypes.data, 1, y.ctypes.data, 1)
    if body < y.size:
        tail = slice(body, None)
        wide = y[tail].astype(np.float64) + x[tail].astype(np.float64) * alpha
        y[tail] = wide  # one rounding, float64 to float32


def _two_roundings(xp: Any, a: Any, b: Any, alpha: Any, inplace: bool) -> Any:
    if inplace:
        return xp.add(a, b * alpha, out=a)
    return a + b * alpha


def _saxpy_function() -> Any:
    """saxpy, looked up and checked once; None without a library or where it rounds twice."""
    global _saxpy
    if _saxpy is False:
        found = _load_saxpy()
        _saxpy = found if found is not None and _rounds_once(found) else None
    return _saxpy


def _rounds_once(saxpy: Any) -> bool:
    """Whether ``saxpy`` with the float64 tail gives the single rounding on a sample."""
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal(SMALL + 5 * BLOCK + 7).astype(np.float32) for _ in range(2))
    alpha = float(np.float32(3.7))
    expected = (y.astype(np.float64) + x.astype(np.float64) * alpha).astype(np.float32)
    _fused_into(y, x, alpha, saxpy)
    return bool(np.array_equal(y, expected))


def _load_saxpy() -> Any:
    """``cblas_saxpy`` (64-bit integers) of the OpenBLAS in ``numpy.libs``; None where NumPy
    was built otherwise (MKL, Accelerate, a distribution's BLAS)."""
    libs = os.path.join(os.path.dirname(os.path.dirname(np.__file__)), "numpy.libs")
    found = sorted(glob.glob(os.path.join(libs, "libscipy_openblas64_*.so")))
    if not found:
        return None
    try:
        function = ctypes.CDLL(found[0]).scipy_cblas_saxpy64_
    except (OSError, AttributeError):
        return None
    function.argtypes = [
        ctypes.c_int64,
        ctypes.c_float,
        ctypes.c_void_p,
        ctypes.c_int64,
        ctypes.c_void_p,
        ctypes.c_int64,
    ]
    function.restype = None
    return function
