"""``tk.cuda``: devices, streams, events and GPU memory on CuPy, following ``torch.cuda``.

CuPy is imported lazily; ``is_available()`` and ``device_count()`` never raise (any failure to
reach a GPU means "not available"), and functions that need a GPU raise
``RuntimeError("CUDA is not available: ...")`` without one.
"""

from __future__ import annotations

from . import memory
from ._runtime import (
    CudaDeviceProperties,
    current_device,
    device,
    device_count,
    get_device_name,
    get_device_properties,
    is_available,
    set_device,
    synchronize,
)
from ._seed import manual_seed, manual_seed_all
from .memory import (
    empty_cache,
    max_memory_allocated,
    max_memory_reserved,
    memory_allocated,
    memory_reserved,
    memory_stats,
    memory_summary,
    reset_peak_memory_stats,
)
from .streams import Event, Stream, current_stream, default_stream, stream

__all__ = [
    "CudaDeviceProperties",
    "Event",
    "Stream",
    "current_device",
    "current_stream",
    "default_stream",
    "device",
    "device_count",
    "empty_cache",
    "get_device_name",
    "get_device_properties",
    "is_available",
    "manual_seed",
    "manual_seed_all",
    "max_memory_allocated",
    "max_memory_reserved",
    "memory",
    "memory_allocated",
    "memory_reserved",
    "memory_stats",
    "memory_summary",
    "reset_peak_memory_stats",
    "set_device",
    "stream",
    "synchronize",
]
