"""The arrays a collective hands to its backend: the tensor's own buffer when it is
C-contiguous, else a contiguous copy written back into the tensor when the operation ends."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..tensor import Tensor

__all__ = ["check_tensor", "check_tensor_list", "describe", "joined", "staged"]


def describe(tensor: Tensor) -> str:
    """``float32[4, 3]``: a tensor's dtype and shape, as errors and fingerprints name them."""
    return f"{str(tensor.dtype).removeprefix('tensorkit.')}{list(tensor.shape)}"


def check_tensor(value: Any, name: str) -> Tensor:
    """``value`` when it is a tensor, else torch's TypeError."""
    if not isinstance(value, Tensor):
        raise TypeError(
            f"Invalid function argument. Expected parameter `{name}` of type "
            f"tensorkit.Tensor but got {type(value)} instead."
        )
    return value


def check_tensor_list(value: Any, name: str) -> list[Tensor]:
    """``value`` when it is a list of tensors, else torch's TypeError."""
    if not isinstance(value, (list, tuple)) or not all(isinstance(t, Tensor) for t in value):
        raise TypeError(
            f"Invalid function argument. Expected parameter `{name}` of type "
            f"List[tensorkit.Tensor] but got {type(value)} instead."
        )
    return list(value)


def check_device(tensor: Tensor, backend: str, op: str) -> None:
    """The mpi backend takes CPU tensors, the nccl one CUDA tensors; anything else raises."""
    device = tensor.device
    if backend == "mpi" and device.type != "cpu":
        raise RuntimeError(
            f"{op}: the mpi backend takes CPU tensors, got a tensor on {device} "
            f"(MPI from PyPI is not CUDA-aware: use backend='nccl' for CUDA tensors)"
        )
    if backend == "nccl" and device.type != "cuda":
        raise RuntimeError(
            f"{op}: Tensors must be CUDA and dense for the nccl backend, got a tensor on "
            f"{device} (use backend='mpi' for CPU tensors)"
        )


def staged(tensor: Tensor, backend: str, op: str) -> tuple[Any, Callable[[], None]]:
    """A C-contiguous array the backend may write, and the step that makes the tensor hold
    what was written (a copy back when the tensor is not contiguous; a version bump)."""
    check_device(tensor, backend, op)
    data = tensor._data
    if data.flags.c_contiguous:
        array = data
    else:
        array = tensor._device.xp.ascontiguousarray(data)

    def write_back() -> None:
        if array is not data:
            data[...] = array
        tensor.bump_version(op)

    return array, write_back


def readable(tensor: Tensor, backend: str, op: str) -> Any:
    """A C-contiguous array with the tensor's values, for the backend to read only."""
    check_device(tensor, backend, op)
    return tensor._device.xp.ascontiguousarray(tensor._data)


def joined(tensors: Sequence[Tensor], backend: str, op: str) -> Any:
    """The tensors' values stacked into one new C-contiguous array (rank-major)."""
    for tensor in tensors:
        check_device(tensor, backend, op)
    xp = tensors[0]._device.xp
    return xp.stack([t._data for t in tensors])


def split_into(flat: Any, tensors: Sequence[Tensor], op: str) -> None:
    """Copy row ``i`` of ``flat`` into ``tensors[i]`` in place."""
    for i, tensor in enumerate(tensors):
        tensor._data[...] = flat[i].reshape(tensor._data.shape)
        tensor.bump_version(op)
