"""The float32 matmul precision policy (``tk.set_float32_matmul_precision``,
``tk.backends.cuda.matmul.allow_tf32``), PyTorch's defaults: "highest", no TF32.

On CUDA it is CuPy's compute type for float32 GEMMs: ``cupy._core.set_compute_type`` with
``COMPUTE_TYPE_FP32`` for "highest" and ``COMPUTE_TYPE_TF32`` for "high" and "medium" (cuBLAS
has no bfloat16 mode for float32 inputs; PyTorch's CUDA matmuls also take TF32 for both). It is
applied when a CUDA device is first made and whenever the policy changes after that; CPU
matmuls (NumPy) are always full float32. ``CUPY_TF32=1`` in the environment starts the policy
at "high", so CuPy's own switch keeps working.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any

import numpy as np

__all__ = ["apply_to_cupy", "get_float32_matmul_precision", "set_float32_matmul_precision"]

PRECISIONS = ("highest", "high", "medium")


def initial_precision() -> str:
    """ "highest", or "high" when CuPy's own ``CUPY_TF32=1`` asks for TF32 (honoured, not
    overridden)."""
    return "high" if os.environ.get("CUPY_TF32") == "1" else "highest"


_precision = initial_precision()


def get_float32_matmul_precision() -> str:
    """The current float32 matmul precision: "highest" (the default), "high" or "medium"."""
    return _precision


def set_float32_matmul_precision(precision: str) -> None:
    """Set the float32 matmul precision; "high" and "medium" let CUDA matmuls use TF32. An
    unknown name warns and changes nothing, as in PyTorch."""
    global _precision
    if not isinstance(precision, str):
        raise RuntimeError(
            f"set_float32_matmul_precision expects a str, but got {type(precision).__name__}"
        )
    if precision not in PRECISIONS:
        warnings.warn(
            f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
            "set_float32_matmul_precision call has no effect.",
            UserWarning,
            stacklevel=2,
        )
        return
    _precision = precision
    from . import cuda_in_use  # this package's __init__ imports this module

    if cuda_in_use():
        apply_to_cupy(sys.modules["cupy"])


def apply_to_cupy(cupy: Any) -> bool:
    """Set CuPy's float32 GEMM compute type from the policy; False when this CuPy has no
    ``_core.set_compute_type`` (a CuPy without it, or a stand-in)."""
    core = getattr(cupy, "_core", None)
    set_type = getattr(core, "set_compute_type", None)
    if set_type is None:
        return False
    name = "COMPUTE_TYPE_FP32" if _precision == "highest" else "COMPUTE_TYPE_TF32"
    set_type(np.float32, getattr(core._routines_linalg, name))
    return True
