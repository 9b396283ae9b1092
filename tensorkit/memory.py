"""Host memory accounting: bytes of the arrays that tensorkit ops create, per device.

What it counts: the data buffer of every array an op returns (forward ops and the gradients
of backward) while counting is on: inside ``with tk.memory.track():`` or a
``tk.profiler.profile(record_memory=True)``. Each buffer is counted once (a view counts
nothing; an op that returns a view of a buffer it allocated counts that buffer) and
un-counted when NumPy frees it (its weak reference fires), whether or not counting is still
on: the free is logged then and subtracted, in order, before any total is next read.

What it does not count: tensors made by factory functions (``tk.ones``, ``tk.tensor``, ...,
which are not ops), ops run while counting is off, temporaries an op allocates and frees
inside its own forward, NumPy's allocator slack, and Python objects. It is tensorkit's own
bookkeeping, not the process's RSS or a tracemalloc measurement. Counting costs a few
microseconds per op (3-4 us on the benchmark's tiny ops, 1.8x their time), which is why it is
off unless asked for.

For a CUDA device ("cuda", "cuda:N") the functions below answer with ``tk.cuda``'s view of
CuPy's memory pool instead (always on).
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from types import ModuleType
from typing import Any

from . import _state
from .tensor import Tensor

__all__ = [
    "max_memory_allocated",
    "memory_allocated",
    "memory_stats",
    "reset_peak_memory_stats",
    "track",
]


class _BufferRef(weakref.ref):
    """A weak reference to a counted buffer, hashed by identity (a key of ``_sizes``; a
    plain weak reference hashes its referent, and arrays are unhashable)."""

    __slots__ = ()
    __hash__ = object.__hash__


class _Counters:
    """Settled totals for one device (see ``settle``)."""

    __slots__ = ("allocated", "allocations", "current", "freed", "frees", "peak")

    def __init__(self) -> None:
        self.current = 0  # bytes of counted buffers alive now
        self.peak = 0  # most bytes alive at once since the last reset
        self.allocated = 0  # bytes ever counted
        self.freed = 0  # bytes ever released
        self.allocations = 0  # buffers ever counted
        self.frees = 0  # buffers ever released


# The accounting is a history, so that counting a buffer and seeing it freed cost no Python
# call: a new buffer appends its bytes to ``_events`` (an int on the CPU, a (device, bytes)
# tuple elsewhere) and its weak reference's callback is ``_events.append`` itself (C code),
# which appends the reference when NumPy frees the buffer. ``settle`` replays the entries
# in order into the totals (so peaks are exact) before any total is read, and turns each
# freed reference into its negative bytes (or (device, -bytes)). While a memory-recording
# profile keeps the history (``_keep``), settled entries stay, and the profile derives each
# op's freed, live and peak bytes from them when its records are read; otherwise they go.
_counters: dict[str, _Counters] = {}
_sizes: dict[_BufferRef, int] = {}  # counted buffers' references -> bytes, until settled
_devices: dict[_BufferRef, str] = {}  # the device of each such buffer not on the CPU
_events: list = []
_on_free = _events.append
_settled = 0  # _events[:_settled] are settled
_keep = 0  # profiles reading the history: while above 0, settled entries are kept
_lock = threading.Lock()  # one settle at a time


def _device_counters(device: str) -> _Counters:
    counters = _counters.get(device)
    if counters is None:
        counters = _counters[device] = _Counters()
    return counters


def settle() -> None:
    """Bring every device's totals up to date with ``_events``."""
    with _lock:
        _settle()


def _settle() -> None:
    global _settled
    events = _events
    end = len(events)
    if _settled < end:
        cpu = _device_counters("cpu")
        for i in range(_settled, end):
            entry = events[i]
            kind = type(entry)
            if kind is _BufferRef:  # freed
                nbytes = _sizes.pop(entry)
                device = _devices.pop(entry, "cpu") if _devices else "cpu"
                counters = cpu if device == "cpu" else _counters[device]
                events[i] = -nbytes if counters is cpu else (device, -nbytes)
                counters.current -= nbytes
                counters.freed += nbytes
                counters.frees += 1
                continue
            if kind is int:
                counters, nbytes = cpu, entry
            else:
                counters, nbytes = _device_counters(entry[0]), entry[1]
            counters.current += nbytes
            counters.allocated += nbytes
            counters.allocations += 1
            if counters.current > counters.peak:
                counters.peak = counters.current
        _settled = end
    if not _keep and end:
        del events[:end]  # not clear(): a free since ``end`` is kept, unsettled
        _settled = 0


def keep_history(keep: bool) -> tuple[int, int]:
    """Keep settled history entries (``keep``), or stop keeping them, for one reader (a
    memory-recording profile); returns the history position and the CPU's counted bytes
    alive there (everything before the position is settled)."""
    global _keep
    with _lock:
        _keep += 1 if keep else -1
        _settle()
        cpu = _counters.get("cpu")
        return _settled, 0 if cpu is None else cpu.current


def buffer_of(array: Any) -> Any:
    """The array that owns ``array``'s memory (``array`` itself unless it is a view)."""
    kind = type(array)
    base = array.base
    while base is not None and type(base) is kind:
        array = base
        base = array.base
    return array


def is_counted(buffer: Any) -> bool:
    """Whether ``buffer`` is counted (alive with a reference in ``_sizes``)."""
    if not weakref.getweakrefcount(buffer):
        return False
    return any(type(ref) is _BufferRef for ref in weakref.getweakrefs(buffer))


def count_buffer(buffer: Any, device: str) -> int:
    """Count ``buffer`` (an array owning its memory, see ``buffer_of``) unless counted
    already; returns the bytes newly counted. A new buffer has no weak references: one C
    call tells, and its free costs no Python call (see ``_events``)."""
    if weakref.getweakrefcount(buffer) and is_counted(buffer):
        return 0
    try:
        ref = _BufferRef(buffer, _on_free)
    except TypeError:  # not weakly referenceable: cannot see it freed, so do not count it
        return 0
    nbytes = _sizes[ref] = buffer.nbytes
    if device == "cpu":
        _events.append(nbytes)
    else:
        _devices[ref] = device
        _events.append((device, nbytes))
    return nbytes


def count_tensors(inputs: tuple, outputs: tuple, device: str) -> int:
    """Count the new buffers behind an op's output Tensors (not an input's buffer, or a view
    of one) on ``device``; returns their bytes."""
    allocated = 0
    for out in outputs:
        if type(out) is not Tensor:
            continue
        data = out._data
        buffer = data if data.base is None else buffer_of(data)
        for x in inputs:  # an input's buffer (an op returning its input, or a view of it)?
            if isinstance(x, Tensor):
                src = x._data
                if buffer is src or (src.base is not None and buffer is buffer_of(src)):
                    break
        else:
            allocated += count_buffer(buffer, device)
    return allocated


def count_arrays(inputs: tuple, outputs: tuple, device: str) -> int:
    """``count_tensors`` for a backward node's gradient arrays (None where there is none)."""
    allocated = 0
    for buffer in outputs:
        if buffer is None:
            continue
        if buffer.base is not None:
            buffer = buffer_of(buffer)
        for src in inputs:  # an input's buffer (a gradient passed on, or a view of one)?
            if src is not None and (
                buffer is src or (src.base is not None and buffer is buffer_of(src))
            ):
                break
        else:
            allocated += count_buffer(buffer, device)
    return allocated


class _Counter:
    """The op observer behind ``track``: counts the new buffers of each op on the CPU, and
    of each backward node (taken per node, as the profiler takes it, so backward keeps its
    fast path); idle while a memory-recording profile counts them itself."""

    backward_detail = "nodes"

    def op_started(self, event: Any) -> None:
        return None

    def op_finished(self, event: Any) -> None:
        if _keep:  # a memory-recording profile is counting each op (and its bytes) itself
            return
        if event.op is None:  # a backward node: gradient arrays on event.device
            if event.device.type == "cpu":
                count_arrays(event.inputs, event.outputs, "cpu")
            return
        outputs = event.outputs
        if outputs and type(outputs[0]) is Tensor and outputs[0]._device.type == "cpu":
            count_tensors(event.inputs, outputs, "cpu")


_counter = _Counter()
_tracking = 0  # open ``track`` blocks (the counter observes while above 0)


class track(contextlib.ContextDecorator):  # noqa: N801 (a context manager, named as a verb)
    """``with tk.memory.track():`` counts the CPU buffers that ops return inside the block
    (forward and backward), so that ``memory_allocated()``, ``max_memory_allocated()`` and
    ``memory_stats()`` answer for the CPU; also a decorator. Blocks nest; a buffer counted
    inside stays counted until NumPy frees it, after the block too. Costs a few microseconds
    per op while on. (``profile(record_memory=True)`` counts the same way, per op.)"""

    def __enter__(self) -> track:
        global _tracking
        if not _tracking:
            _state.add_observer(_counter)
        _tracking += 1
        return self

    def __exit__(self, *exc: object) -> None:
        global _tracking
        _tracking -= 1
        if not _tracking:
            _state.remove_observer(_counter)


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
    settle()
    counters = _counters.get(_name(device))
    return 0 if counters is None else counters.current


def max_memory_allocated(device: Any = None) -> int:
    """The most counted bytes alive at once on ``device`` since the last peak reset."""
    if (cuda := _cuda(device)) is not None:
        return cuda.max_memory_allocated(device)
    settle()
    counters = _counters.get(_name(device))
    return 0 if counters is None else counters.peak


def reset_peak_memory_stats(device: Any = None) -> None:
    """Start peak tracking afresh: the peak becomes what is allocated now."""
    if (cuda := _cuda(device)) is not None:
        cuda.reset_peak_memory_stats(device)
        return
    settle()
    counters = _device_counters(_name(device))
    counters.peak = counters.current


def memory_stats(device: Any = None) -> dict[str, int]:
    """PyTorch-style flat statistics for ``device`` (only the keys this accounting knows)."""
    if (cuda := _cuda(device)) is not None:
        return cuda.memory_stats(device)
    settle()
    c = _counters.get(_name(device)) or _Counters()
    return {
        "allocated_bytes.all.current": c.current,
        "allocated_bytes.all.peak": c.peak,
        "allocated_bytes.all.allocated": c.allocated,
        "allocated_bytes.all.freed": c.freed,
        "allocation.all.current": c.allocations - c.frees,
        "allocation.all.allocated": c.allocations,
        "allocation.all.freed": c.frees,
    }
