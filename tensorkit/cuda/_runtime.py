"""Device queries and selection on CuPy's runtime, following ``torch.cuda``.

CuPy is imported only when a function is called; functions that need a GPU raise
``RuntimeError("CUDA is not available: ...")`` where none is usable.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from .._backend import cuda_available, cupy_module

_CUDA_SPEC = re.compile(r"^cuda(?::(\d+))?$")


def cupy() -> ModuleType:
    """CuPy, once a GPU is known to answer; else a RuntimeError that says why not."""
    if not cuda_available():
        raise RuntimeError(
            "CUDA is not available: no GPU was found, or CuPy is not installed "
            "(pip install tensorkit[cuda])"
        )
    return cupy_module()


def is_available() -> bool:
    """True when CuPy imports and a CUDA device answers; never raises."""
    return cuda_available()


def device_count() -> int:
    """How many CUDA devices answer (0 without CuPy or a GPU; never raises)."""
    if not cuda_available():
        return 0
    return int(cupy_module().cuda.runtime.getDeviceCount())


def current_device() -> int:
    """The index of the current CUDA device."""
    return int(cupy().cuda.runtime.getDevice())


def device_index(device: Any = None) -> int:
    """A device argument (None, int, "cuda", "cuda:N" or a ``tk.device``) as an index."""
    if device is None:
        return current_device()
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    spec = device if isinstance(device, str) else str(device)
    match = _CUDA_SPEC.match(spec)
    if match is None:
        raise ValueError(f"expected a CUDA device, got {device!r}")
    return current_device() if match.group(1) is None else int(match.group(1))


def set_device(device: Any) -> None:
    """Make ``device`` the current CUDA device."""
    cupy().cuda.runtime.setDevice(device_index(device))


@contextmanager
def on_device(index: int) -> Iterator[None]:
    """Make device ``index`` current inside the block (for tk.cuda's own use)."""
    runtime = cupy().cuda.runtime
    previous = runtime.getDevice()
    runtime.setDevice(index)
    try:
        yield
    finally:
        runtime.setDevice(previous)


def device(device: Any) -> AbstractContextManager[None]:
    """A context manager: ``device`` is current inside the block, then the previous one is
    restored. ``None`` (or a negative index) changes nothing, as in PyTorch."""
    if device is None or (isinstance(device, int) and device < 0):
        return nullcontext()
    return on_device(device_index(device))


def synchronize(device: Any = None) -> None:
    """Wait for all work queued on ``device`` (default: the current one) to finish."""
    with on_device(device_index(device)):
        cupy().cuda.runtime.deviceSynchronize()


@dataclass(frozen=True)
class CudaDeviceProperties:
    """What ``get_device_properties`` reports; ``total_memory`` is in bytes."""

    name: str
    total_memory: int
    major: int
    minor: int
    multi_processor_count: int


def get_device_properties(device: Any = None) -> CudaDeviceProperties:
    """Name, memory and compute capability of ``device`` (default: the current one)."""
    props = cupy().cuda.runtime.getDeviceProperties(device_index(device))
    name = props["name"]
    return CudaDeviceProperties(
        name=name.decode() if isinstance(name, bytes) else str(name),
        total_memory=int(props["totalGlobalMem"]),
        major=int(props["major"]),
        minor=int(props["minor"]),
        multi_processor_count=int(props.get("multiProcessorCount", 0)),
    )


def get_device_name(device: Any = None) -> str:
    """The marketing name of ``device``, e.g. "NVIDIA H100 80GB HBM3"."""
    return get_device_properties(device).name
