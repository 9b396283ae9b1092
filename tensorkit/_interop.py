"""Small top-level helpers: DLPack import, type queries and PyTorch's promotion queries."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._backend import cpu, cupy_module, device_of_array
from ._dtype import dtype, from_numpy_dtype, result_type_of
from .tensor import Tensor, wrap

__all__ = [
    "from_dlpack",
    "is_tensor",
    "numel",
    "result_type",
    "can_cast",
    "is_floating_point",
    "is_complex",
]

_DLPACK_CPU, _DLPACK_CUDA = 1, 2


def from_dlpack(ext_tensor: Any) -> Tensor:
    """A tensor sharing memory with any object that speaks DLPack (NumPy, CuPy, PyTorch, JAX)."""
    if isinstance(ext_tensor, Tensor):
        return ext_tensor
    if not hasattr(ext_tensor, "__dlpack_device__"):
        raise TypeError(
            f"from_dlpack expects an object with __dlpack__ and __dlpack_device__, got "
            f"{type(ext_tensor).__name__}"
        )
    device_type, _ = ext_tensor.__dlpack_device__()
    if device_type == _DLPACK_CPU:
        array = np.from_dlpack(ext_tensor)
    elif device_type == _DLPACK_CUDA:
        array = cupy_module().from_dlpack(ext_tensor)
    else:
        raise RuntimeError(f"from_dlpack: unsupported DLPack device type {device_type}")
    from_numpy_dtype(array.dtype)
    return wrap(array, device_of_array(array) if device_type != _DLPACK_CPU else cpu)


def is_tensor(obj: Any) -> bool:
    return isinstance(obj, Tensor)


def numel(input: Tensor) -> int:
    return input.numel()


def is_floating_point(input: Tensor) -> bool:
    return input.is_floating_point()


def is_complex(input: Tensor) -> bool:
    return input.is_complex()


def result_type(tensor1: Any, tensor2: Any) -> dtype:
    """The dtype an op on these two operands (tensors or numbers) would return."""
    with_dims, zero_dim, scalars = [], [], []
    for operand in (tensor1, tensor2):
        if isinstance(operand, Tensor):
            (with_dims if operand.ndim else zero_dim).append(operand.dtype)
        else:
            scalars.append(operand)
    return result_type_of(with_dims, zero_dim, scalars)


def can_cast(from_: dtype, to: dtype) -> bool:
    """Whether PyTorch's in-place ops allow casting ``from_`` to ``to`` (no float -> int,
    complex -> real, or non-bool -> bool)."""
    if from_.is_complex and not to.is_complex:
        return False
    if from_.is_floating_point and not (to.is_floating_point or to.is_complex):
        return False
    return not (from_.name != "bool" and to.name == "bool")
