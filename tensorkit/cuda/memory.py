"""The caching-allocator view of GPU memory, on CuPy's default memory pool.

"Allocated" is what live arrays hold (``pool.used_bytes()``); "reserved" is what the pool
holds from the device, cached blocks included (``pool.total_bytes()``). CuPy keeps no peaks
or failure counts, so a ``cupy.cuda.MemoryHook`` (installed in the calling thread by the
first call to any function here; CuPy's hooks are per thread) tracks them from then on. The
same hook records alloc/free events while ``_record_memory_history`` is on; recording also
makes tensorkit report its ops (as a Tape or profiler does), so each event names the op that
was running and the user's call site.
"""

from __future__ import annotations

import collections
import sys
from types import ModuleType
from typing import Any

from .. import _state
from .._callsite import is_package_file
from ._runtime import cupy, device_index, is_available, on_device

__all__ = [
    "empty_cache",
    "max_memory_allocated",
    "max_memory_reserved",
    "memory_allocated",
    "memory_reserved",
    "memory_stats",
    "memory_summary",
    "reset_peak_memory_stats",
]


class _DeviceCounters:
    """What the hook has seen on one device. ``current`` is seeded from the pool."""

    __slots__ = (
        "allocated",
        "allocs",
        "current",
        "freed",
        "frees",
        "ooms",
        "peak",
        "reserved_peak",
        "retries",
    )

    def __init__(self, current: int, reserved: int) -> None:
        self.current = current
        self.peak = current
        self.reserved_peak = reserved
        self.allocated = self.freed = self.allocs = self.frees = 0
        self.ooms = self.retries = 0


class _Recorder:
    """The hook's logic (mixed into a ``cupy.cuda.MemoryHook`` subclass by ``_tracker``) and,
    while history is recorded, a tensorkit op observer that names the running op."""

    name = "tensorkit"

    def __init__(self, cp: ModuleType) -> None:
        self.cupy = cp
        self.devices: dict[int, _DeviceCounters] = {}
        self.history: collections.deque[dict[str, Any]] | None = None
        self.blocks: dict[int, dict[str, Any]] = {}
        self.segments: dict[tuple[int, int], int] = {}  # (device, base) -> bytes, recorded
        self.op: str | None = None

    def counters(self, index: int) -> _DeviceCounters:
        """Device ``index``'s counters, seeded from the pool when first seen."""
        counters = self.devices.get(index)
        if counters is None:
            pool = self.cupy.get_default_memory_pool()
            with on_device(index):
                counters = _DeviceCounters(pool.used_bytes(), pool.total_bytes())
            self.devices[index] = counters
        return counters

    # ----------------------------------------------------------- tensorkit op observer
    def op_started(self, event: Any) -> None:
        self.op = event.name

    def op_finished(self, event: Any) -> None:
        self.op = None

    def _context(self) -> tuple[str | None, str | None]:
        # Inside an observed op tensorkit switches observing off, so an op name left over
        # from an op that raised is never reported.
        return (None if _state.observing else self.op), _call_site()

    def _record(self, action: str, device_id: int, size: int, ptr: int) -> dict[str, Any]:
        """Append an event to the history (which must be on) and return it."""
        op, site = self._context()
        entry = {"action": action, "device": device_id, "addr": ptr, "size": size}
        entry.update(op=op, call_site=site)
        self.history.append(entry)  # type: ignore[union-attr]
        return entry

    # ------------------------------------------------------------------ CuPy callbacks
    def malloc_preprocess(self, device_id: int, **kwargs: Any) -> None:
        self.counters(device_id)  # seed before the pool changes

    def free_preprocess(self, device_id: int, **kwargs: Any) -> None:
        self.counters(device_id)

    def alloc_preprocess(self, device_id: int, **kwargs: Any) -> None:
        self.counters(device_id)

    def alloc_postprocess(self, device_id: int, mem_size: int, mem_ptr: int, **_: Any) -> None:
        counters = self.counters(device_id)
        if not mem_ptr:  # cudaMalloc failed: CuPy frees its cache and retries
            counters.retries += 1
            return
        reserved = self.cupy.get_default_memory_pool().total_bytes()
        counters.reserved_peak = max(counters.reserved_peak, reserved)
        if self.history is not None:
            self._record("segment_alloc", device_id, mem_size, mem_ptr)
            self.segments[(device_id, mem_ptr)] = mem_size

    def malloc_postprocess(
        self, device_id: int, size: int, mem_size: int, mem_ptr: int, **_: Any
    ) -> None:
        counters = self.counters(device_id)
        if not mem_ptr:
            counters.ooms += 1
            if self.history is not None:
                self._record("oom", device_id, mem_size, 0)
            return
        counters.current += mem_size
        counters.peak = max(counters.peak, counters.current)
        counters.allocated += mem_size
        counters.allocs += 1
        if self.history is not None:
            entry = self._record("alloc", device_id, mem_size, mem_ptr)
            self.blocks[mem_ptr] = {**entry, "requested_size": size}

    def free_postprocess(self, device_id: int, mem_size: int, mem_ptr: int, **_: Any) -> None:
        counters = self.counters(device_id)
        counters.current -= mem_size
        counters.freed += mem_size
        counters.frees += 1
        if self.history is not None:
            self._record("free", device_id, mem_size, mem_ptr)
            self.blocks.pop(mem_ptr, None)

    def segments_returned(self, device_id: int) -> None:
        """Record a ``segment_free`` for each recorded segment on ``device_id`` that holds no
        live block: the memory ``empty_cache`` gives back to the device (CuPy's hook does not
        report it; the pool releases exactly the segments whose memory is all free)."""
        live = [ptr for ptr, block in self.blocks.items() if block["device"] == device_id]
        for (device, base), size in list(self.segments.items()):
            if device == device_id and not any(base <= ptr < base + size for ptr in live):
                del self.segments[(device, base)]
                self._record("segment_free", device, size, base)


_recorder: _Recorder | None = None


def _tracker() -> tuple[Any, _Recorder]:
    """CuPy and the hook, installed in this thread if it is not yet (a fresh one when CuPy
    itself changed, as under a test's stand-in)."""
    global _recorder
    cp = cupy()
    if _recorder is None or _recorder.cupy is not cp:
        hook_type = type("TensorkitMemoryHook", (_Recorder, cp.cuda.MemoryHook), {})
        _recorder = hook_type(cp)
    if _recorder.name not in cp.cuda.memory_hook.get_memory_hooks():
        _recorder.__enter__()
    return cp, _recorder


def _call_site() -> str | None:
    """'file:line' of the innermost frame outside tensorkit and CuPy, or None."""
    frame = sys._getframe(1)
    while frame is not None and (
        is_package_file(frame.f_code.co_filename)
        or str(frame.f_globals.get("__name__", "")).split(".")[0] in ("cupy", "cupyx")
    ):
        frame = frame.f_back
    return None if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}"


def _synced(device: Any) -> tuple[int, int, _DeviceCounters]:
    """(allocated, reserved, counters) of ``device`` now, the counters brought up to date."""
    cp, recorder = _tracker()
    index = device_index(device)
    counters = recorder.counters(index)
    pool = cp.get_default_memory_pool()
    with on_device(index):
        allocated, reserved = int(pool.used_bytes()), int(pool.total_bytes())
    counters.current = allocated  # frees made in threads without the hook
    counters.peak = max(counters.peak, allocated)
    counters.reserved_peak = max(counters.reserved_peak, reserved)
    return allocated, reserved, counters


def allocator_totals(device: Any = None) -> tuple[int, int]:
    """(bytes allocated, bytes freed) by the pool on ``device`` as the hook has seen them
    since it was installed: the profiler takes differences of these around each op."""
    counters = _tracker()[1].counters(device_index(device))
    return counters.allocated, counters.freed


def memory_allocated(device: Any = None) -> int:
    """Bytes held by live arrays on ``device`` (default: the current one)."""
    return _synced(device)[0]


def max_memory_allocated(device: Any = None) -> int:
    """The most bytes held by live arrays at once since tracking began or the last reset."""
    return _synced(device)[2].peak


def memory_reserved(device: Any = None) -> int:
    """Bytes the memory pool holds from the device, cached free blocks included."""
    return _synced(device)[1]


def max_memory_reserved(device: Any = None) -> int:
    """The most bytes the pool held at once since tracking began or the last reset."""
    return _synced(device)[2].reserved_peak


def reset_peak_memory_stats(device: Any = None) -> None:
    """Start peak tracking afresh: the peaks become what is allocated and reserved now."""
    allocated, reserved, counters = _synced(device)
    counters.peak, counters.reserved_peak = allocated, reserved


def empty_cache() -> None:
    """Return the pool's cached free blocks to the device (a no-op without a GPU); while
    memory history is recorded, the segments given back appear as ``segment_free`` events."""
    if not is_available():
        return
    cp = cupy()
    cp.get_default_memory_pool().free_all_blocks()
    if _recorder is not None and _recorder.history is not None and _recorder.cupy is cp:
        _recorder.segments_returned(int(cp.cuda.runtime.getDevice()))


def memory_stats(device: Any = None) -> dict[str, int]:
    """PyTorch-style flat statistics for ``device``. Counts (``.allocated``, ``.freed``,
    retries, OOMs) cover what the hook has seen since it was installed."""
    allocated, reserved, c = _synced(device)
    return {
        "allocated_bytes.all.current": allocated,
        "allocated_bytes.all.peak": c.peak,
        "allocated_bytes.all.allocated": c.allocated,
        "allocated_bytes.all.freed": c.freed,
        "reserved_bytes.all.current": reserved,
        "reserved_bytes.all.peak": c.reserved_peak,
        "inactive_split_bytes.all.current": reserved - allocated,
        "allocation.all.allocated": c.allocs,
        "allocation.all.freed": c.frees,
        "num_alloc_retries": c.retries,
        "num_ooms": c.ooms,
    }


def _size(nbytes: int) -> str:
    if abs(nbytes) < 1024:
        return f"{nbytes} B"
    value = float(nbytes)
    for unit in ("KiB", "MiB", "GiB"):
        value /= 1024
        if abs(value) < 1024 or unit == "GiB":
            break
    return f"{value:.2f} {unit}"


def memory_summary(device: Any = None, abbreviated: bool = False) -> str:
    """A text table of ``memory_stats``: bytes allocated and reserved, now and at peak;
    unless ``abbreviated``, also the counts and failures the hook has seen."""
    stats = memory_stats(device)
    width = 61
    rule = "|" + "-" * (width - 2) + "|"
    lines = [
        "|" + "=" * (width - 2) + "|",
        f"| {'tensorkit CUDA memory summary, device ' + str(device_index(device)):<{width - 4}} |",
        rule,
        f"| {'Metric':<24}| {'Current':>14} | {'Peak':>14} |",
        rule,
    ]
    for label, key in (
        ("Allocated memory", "allocated_bytes"),
        ("Reserved memory", "reserved_bytes"),
    ):
        current, peak = stats[f"{key}.all.current"], stats[f"{key}.all.peak"]
        lines.append(f"| {label:<24}| {_size(current):>14} | {_size(peak):>14} |")
    lines.append(rule)
    if not abbreviated:
        for label, key in (
            ("Allocations", "allocation.all.allocated"),
            ("Frees", "allocation.all.freed"),
            ("Cached, not in use", "inactive_split_bytes.all.current"),
            ("Allocation retries", "num_alloc_retries"),
            ("Out-of-memory errors", "num_ooms"),
        ):
            value = stats[key]
            text = _size(value) if key.endswith("bytes.all.current") else str(value)
            lines.append(f"| {label:<24}| {text:>31} |")
        lines.append(rule)
    return "\n".join(lines) + "\n"


def _record_memory_history(
    enabled: bool | str | None = True, max_entries: int = sys.maxsize
) -> None:
    """Record alloc/free events (keeping the last ``max_entries``) and live blocks, each
    with the running tensorkit op and the user's call site; ``enabled=None``/False stops.
    While recording, tensorkit reports every op to the recorder (ops take the observed,
    slower path, as under a Tape or profiler)."""
    _, recorder = _tracker()
    on = enabled not in (None, False)
    if on:
        recorder.history = collections.deque(recorder.history or (), maxlen=max_entries)
        if recorder not in _state.observers:
            _state.add_observer(recorder)
    else:
        recorder.history = None
        recorder.blocks.clear()
        recorder.segments.clear()
        recorder.op = None
        if recorder in _state.observers:
            _state.remove_observer(recorder)


def _snapshot() -> dict[str, Any]:
    """What has been recorded: ``device_traces`` (one list of events per device, oldest
    first) and ``blocks`` (allocations made while recording that are still live)."""
    cp, recorder = _tracker()
    count = int(cp.cuda.runtime.getDeviceCount())
    traces: list[list[dict[str, Any]]] = [[] for _ in range(count)]
    for entry in recorder.history or ():
        traces[entry["device"]].append(dict(entry))
    return {"device_traces": traces, "blocks": [dict(b) for b in recorder.blocks.values()]}
