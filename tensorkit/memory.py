"""Host memory accounting: bytes of the arrays that tensorkit ops create, per device.

What it counts: the data buffer of every array an op returns while a
``tk.profiler.profile(record_memory=True)`` is active, counted once per buffer (a view counts
nothing; an op that returns a view of a buffer it allocated counts that buffer). A buffer is
un-counted when NumPy frees it (a weak reference fires), whether or not profiling is still on.

What it does not count: tensors made by factory functions (``tk.ones``, ``tk.tensor``, ...,
which are not ops), ops run while no memory-recording profiler is active, temporaries an op
allocates and frees inside its own forward, NumPy's allocator slack, and Python objects.
It is tensorkit's own bookkeeping, not the process's RSS or a tracemalloc measurement.

For a CUDA device ("cuda", "cuda:N") the functions below answer with ``tk.cuda``'s view of
CuPy's memory pool instead.
"""

from __future__ import annotations

import weakref
from types import ModuleType
from typing import Any

__all__ = [
    "max_memory_allocated",
    "memory_allocated",
    "memory_stats",
    "reset_peak_memory_stats",
]


class _Counters:
    """Running totals for one device."""

    __slots__ = ("allocated", "allocations", "count", "current", "freed", "frees", "peak")

    def __init__(self) -> None:
        self.current = 0  # bytes of counted buffers alive now
        self.peak = 0  # most bytes alive at once since the last reset
        self.allocated = 0  # bytes ever counted
        self.freed = 0  # bytes ever released
        self.count = 0  # counted buffers alive now
        self.allocations = 0
        self.frees = 0


class _BufferRef(weakref.ref):
    """A weak reference to a counted buffer that remembers what to un-count."""

    __slots__ = ("device", "key", "nbytes")


_counters: dict[str, _Counters] = {}
_live: dict[int, _BufferRef] = {}  # id(buffer) -> its reference
freed_total = 0  # bytes ever released, over all devices


def _device_counters(device: str) -> _Counters:
    counters = _counters.get(device)
    if counters is None:
        counters = _counters[device] = _Counters()
    return counters


def buffer_of(array: Any) -> Any:
    """The array that owns ``array``'s memory (``array`` itself unless it is a view)."""
    kind = type(array)
    base = array.base
    while base is not None and type(base) is kind:
        array = base
        base = array.base
    return array


def track(buffer: Any, device: str) -> int:
    """Count ``buffer`` (an array owning its memory, see ``buffer_of``) unless counted
    already; returns the bytes newly counted."""
    key = id(buffer)
    if key in _live:
        return 0
    try:
        ref = _BufferRef(buffer, _release)
    except TypeError:  # not weakly referenceable: cannot see it freed, so do not count it
        return 0
    nbytes = ref.nbytes = int(buffer.nbytes)
    ref.key = key
    ref.device = device
    _live[key] = ref
    counters = _device_counters(device)
    counters.current += nbytes
    counters.allocated += nbytes
    counters.count += 1
    counters.allocations += 1
    if counters.current > counters.peak:
        counters.peak = counters.current
    return nbytes


def _release(ref: _BufferRef) -> None:
    global freed_total
    if _live.get(ref.key) is not ref:
        return
    del _live[ref.key]
    counters = _counters[ref.device]
    counters.current -= ref.nbytes
    counters.freed += ref.nbytes
    counters.count -= 1
    counters.frees += 1
    freed_total += ref.nbytes


def _name(device: Any) -> str:
    return "cpu" if device is None else str(device)


def _cuda(device: Any) -> ModuleType | None:
    """``tk.cuda`` when ``device`` names a CUDA device, else None."""
    if device is None or not str(device).startswith("cuda"):
        return None
    from . import cuda

    return cuda


def memory_allocated(device: Any = None) -> int:
    """Bytes of counted buffers alive now on ``device`` (default: the CPU)."""
    if (cuda := _cuda(device)) is not None:
        return cuda.memory_allocated(device)
    counters = _counters.get(_name(device))
    return 0 if counters is None else counters.current


def max_memory_allocated(device: Any = None) -> int:
    """The most counted bytes alive at once on ``device`` since the last peak reset."""
    if (cuda := _cuda(device)) is not None:
        return cuda.max_memory_allocated(device)
    counters = _counters.get(_name(device))
    return 0 if counters is None else counters.peak


def reset_peak_memory_stats(device: Any = None) -> None:
    """Start peak tracking afresh: the peak becomes what is allocated now."""
    if (cuda := _cuda(device)) is not None:
        cuda.reset_peak_memory_stats(device)
        return
    counters = _device_counters(_name(device))
    counters.peak = counters.current


def memory_stats(device: Any = None) -> dict[str, int]:
    """PyTorch-style flat statistics for ``device`` (only the keys this accounting knows)."""
    if (cuda := _cuda(device)) is not None:
        return cuda.memory_stats(device)
    c = _counters.get(_name(device)) or _Counters()
    return {
        "allocated_bytes.all.current": c.current,
        "allocated_bytes.all.peak": c.peak,
        "allocated_bytes.all.allocated": c.allocated,
        "allocated_bytes.all.freed": c.freed,
        "allocation.all.current": c.count,
        "allocation.all.allocated": c.allocations,
        "allocation.all.freed": c.frees,
    }
