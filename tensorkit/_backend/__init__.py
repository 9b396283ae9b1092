"""Devices and their array modules: NumPy for "cpu", CuPy for "cuda:N".

Everything above this package asks a tensor's device for its array module (``device.xp``) and
never names numpy or cupy itself. CuPy is imported only when a CUDA device is first used.
"""

from __future__ import annotations

import re
import sys
from types import ModuleType
from typing import Any, ClassVar

import numpy as np

from . import precision

__all__ = [
    "as_device",
    "cpu",
    "cuda_available",
    "cuda_in_use",
    "cupy_module",
    "device",
    "device_of_array",
]

_DEVICE_PATTERN = re.compile(r"^(cpu|cuda)(?::(\d+))?$")


class device:  # noqa: N801 - the name PyTorch users know
    """Where a tensor lives: ``device("cpu")``, ``device("cuda")`` or ``device("cuda", 1)``.

    Devices are interned, so ``a.device is b.device`` is a valid (and fast) comparison;
    ``_name`` is ``str(device)``, kept for code that needs it on every op (the profiler).
    """

    __slots__ = ("_name", "array_type", "index", "type", "xp")
    _interned: ClassVar[dict[tuple[str, int | None], device]] = {}

    def __new__(cls, type_or_spec: str | device, index: int | None = None) -> device:
        if isinstance(type_or_spec, device):
            return type_or_spec
        if not isinstance(type_or_spec, str):
            raise TypeError(
                f"device() expects a string like 'cpu' or 'cuda:0', got {type_or_spec!r}"
            )
        match = _DEVICE_PATTERN.match(type_or_spec)
        if match is None:
            raise RuntimeError(
                f"Expected one of cpu, cuda device type at start of device string: {type_or_spec}"
            )
        kind, parsed_index = match.group(1), match.group(2)
        if parsed_index is not None:
            if index is not None:
                raise RuntimeError(f"device string {type_or_spec!r} already has an index")
            index = int(parsed_index)
        if kind == "cuda":
            if index is None or ("cuda", index) not in cls._interned:
                _require_cuda(index)  # a clear error when CuPy or the GPU is missing
            if index is None:
                index = _current_cuda_index()
        if kind == "cpu":
            index = None
        key = (kind, index)
        interned = cls._interned.get(key)
        if interned is None:
            interned = object.__new__(cls)
            interned.type = kind
            interned.index = index
            interned._name = kind if index is None else f"{kind}:{index}"
            # The array module: numpy, or cupy (imported when a CUDA device is first named).
            interned.xp = np if kind == "cpu" else cupy_module()
            if kind == "cuda":  # the first CUDA device: CuPy's matmuls follow the TF32 policy
                precision.apply_to_cupy(interned.xp)
            interned.array_type = interned.xp.ndarray
            cls._interned[key] = interned
        return interned

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            other = device(other)
        return self is other

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __reduce__(self) -> tuple:
        return (device, (str(self),))

    def array_context(self) -> Any:
        """A context manager that makes this device current for array allocation."""
        if self.type == "cpu":
            return _NullContext()
        return cupy_module().cuda.Device(self.index)


class _NullContext:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


cpu = device("cpu")


def _require_cuda(index: int | None) -> None:
    """Raise a RuntimeError that says why device ``cuda[:index]`` cannot be used (CuPy
    missing, no driver or GPU, or no device with that index)."""
    cupy = cupy_module()
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as error:  # CUDARuntimeError without a driver, missing libraries, ...
        raise RuntimeError(
            f"CUDA is not available: CuPy could not reach a GPU ({type(error).__name__}: "
            f"{error}); use device='cpu', or check tk.cuda.is_available() first"
        ) from None
    if count == 0:
        raise RuntimeError("CUDA is not available: CuPy found no GPU; use device='cpu'")
    if index is not None and not 0 <= index < count:
        raise RuntimeError(
            f"CUDA error: invalid device ordinal: cuda:{index} was requested but "
            f"{count} CUDA device(s) were found"
        )


def _current_cuda_index() -> int:
    if "cupy" not in sys.modules:
        return 0
    return sys.modules["cupy"].cuda.runtime.getDevice()


def as_device(spec: str | device | int | None) -> device:
    """Turn a user's device argument into a device (None means the CPU; an int means cuda:N)."""
    if spec is None:
        return cpu
    if isinstance(spec, int) and not isinstance(spec, bool):
        return device("cuda", spec)
    return device(spec)


def cupy_module() -> ModuleType:
    """Import CuPy, or explain how to get it."""
    try:
        import cupy
    except ImportError:
        raise RuntimeError(
            "CUDA tensors need CuPy: install it with `pip install tensorkit[cuda]` "
            "(or a cupy-cudaXXx wheel that matches your CUDA version)"
        ) from None
    return cupy


def cuda_available() -> bool:
    """True when CuPy imports and at least one CUDA device answers; never raises."""
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # ImportError, CUDARuntimeError, missing driver libraries, ...
        return False


def cuda_in_use() -> bool:
    """True once a CUDA device has been named in this process (CuPy is imported by then)."""
    return any(kind == "cuda" for kind, _ in device._interned)


def device_of_array(array: Any) -> device:
    """The device an ndarray lives on (numpy -> cpu, cupy -> cuda:N)."""
    if isinstance(array, np.ndarray | np.generic):
        return cpu
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(array, cupy.ndarray):
        return device("cuda", array.device.id)
    raise TypeError(f"expected a NumPy or CuPy array, got {type(array).__name__}")


def add_at(xp: ModuleType, out: Any, index: Any, values: Any) -> None:
    """``out[index] += values`` with repeated indices adding up (NumPy's ``add.at``)."""
    if xp is np:
        np.add.at(out, index, values)
    else:
        import cupyx

        cupyx.scatter_add(out, index, values)


def to_device_array(array: Any, target: device) -> Any:
    """Copy an array to ``target`` (a no-op when it already lives there)."""
    source = device_of_array(array)
    if source is target:
        return array
    if target.type == "cpu":
        return array.get()
    with target.array_context():
        return target.xp.asarray(array)
