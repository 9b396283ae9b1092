"""CUDA kernels from ``cuda_sources``: compiled by CuPy's ``RawModule`` (NVRTC) and launched
on CUDA tensors' arrays.

Each listed function is an ``extern "C" __global__`` kernel of the sources. A call checks its
arguments as the C functions' are (tensors must be CUDA tensors), passes numbers as the
NumPy scalar of their C type, and launches with ``grid`` and ``block`` (by default blocks of
256 threads, enough of them to cover the first tensor argument's elements) on the current
stream. Modules are kept per process by the same hash as C builds; the compiled binary is
cached on disk by CuPy (its kernel cache, ``$CUPY_CACHE_DIR``).
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from ._binding import ArgumentChecker
from ._build import BuildError
from ._prototypes import Prototype

_MODULES: dict[str, Any] = {}  # hash -> RawModule
DEFAULT_BLOCK = 256


def cuda_unavailable_reason() -> str | None:
    """Why CUDA kernels cannot be built here (None when they can)."""
    from ... import cuda

    if not cuda.is_available():
        return "no CUDA device is available (tk.cuda.is_available() is False)"
    cupy = sys.modules.get("cupy")
    if cupy is None or not hasattr(cupy, "RawModule"):
        return "CuPy's RawModule is missing (install cupy-cuda12x)"
    return None


def build_module(name: str, key: str, source: str, options: Sequence[str], path: str) -> Any:
    """The RawModule of ``source`` (``path`` names its copy in the build folder, which the
    compiler's messages refer to); raises :class:`BuildError` with NVRTC's log."""
    module = _MODULES.get(key)
    if module is not None:
        return module
    import cupy

    module = cupy.RawModule(code=source, options=tuple(options))
    try:
        module.compile()
    except cupy.cuda.compiler.CompileException as error:
        log = re.sub(r"\S*\.cu\((\d+)\)", lambda m: f"{path}({m.group(1)})", str(error))
        raise BuildError(
            f"Error building extension '{name}' (cuda_sources {path}):\n{log}"
        ) from None
    _MODULES[key] = module
    return module


class CudaKernel:
    """A kernel of ``cuda_sources`` taking CUDA tensors and numbers."""

    def __init__(self, prototype: Prototype, module: Any) -> None:
        self.prototype = prototype
        self._check = ArgumentChecker(prototype, "cuda")
        self._kernel = module.get_function(prototype.name)
        self.__name__ = prototype.name

    def __repr__(self) -> str:
        return f"<CUDA kernel {self.prototype.c_text()}>"

    def __call__(
        self,
        *args: Any,
        grid: tuple[int, ...] | int | None = None,
        block: tuple[int, ...] | int = DEFAULT_BLOCK,
        shared_mem: int = 0,
    ) -> None:
        self._check(args)
        block = (block,) if isinstance(block, int) else tuple(block)
        tensors = [a for a, p in zip(args, self.prototype.params, strict=True) if p.pointer]
        devices = sorted({str(t.device) for t in tensors})
        if len(devices) > 1:
            raise RuntimeError(
                f"{self.prototype.name}(): expected all tensors to be on the same device, but "
                f"found {', '.join(devices)}"
            )
        if grid is None:
            count = tensors[0].numel() if tensors else 1
            grid = (max(1, math.ceil(count / math.prod(block))),)
        grid = (grid,) if isinstance(grid, int) else tuple(grid)
        launch = []
        written = []
        for p, value in zip(self.prototype.params, args, strict=True):
            if p.pointer:
                launch.append(value._data)
                if not p.const:
                    written.append(value)
            else:
                launch.append(np.dtype(p.dtype).type(value))
        index = tensors[0].device.index if tensors else None
        with sys.modules["cupy"].cuda.Device(index):  # the tensors' GPU
            self._kernel(grid, block, tuple(launch), shared_mem=shared_mem)
        for tensor in written:
            tensor.bump_version(self.prototype.name)
