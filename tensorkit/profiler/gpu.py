"""GPU time per op from CUDA events (through CuPy), for ops that run on a CUDA device.

``profile(cuda_timing=...)`` picks one of two modes:

- ``"events"`` (the default): a start and an end event are recorded on the current stream
  around each CUDA op, and nothing synchronizes while the profile records, so profiling does
  not serialize the run. The elapsed times are read when the records are first read, after
  one synchronize per device used.
- ``"synchronized"``: the device is also synchronized before and after each CUDA op, so the
  op's host time covers its GPU work (host and GPU times agree) at the price of a serialized
  GPU.

A record's ``gpu_start_ns`` places its GPU work on the host clock: the first event recorded
on a device is taken to sit at the host time it was recorded at, and every later event on
that device is offset from it by the events' elapsed time.
"""

from __future__ import annotations

import time
from types import ModuleType
from typing import Any

from .events import TIMING_MODE

CUDA_TIMING_MODES = ("events", "synchronized")
GPU_TIMING = {
    "events": (
        'cuda_timing="events": GPU time from CUDA events recorded around each CUDA op and '
        "read after the run (no synchronize while recording; the GPU is not serialized)"
    ),
    "synchronized": (
        'cuda_timing="synchronized": GPU time from CUDA events, with the device synchronized '
        "before and after each CUDA op (host times include the GPU work; the GPU is serialized)"
    ),
}


def check_mode(mode: object) -> str:
    """``mode`` if it names a CUDA timing mode, else a ValueError that lists them."""
    if not isinstance(mode, str) or mode not in CUDA_TIMING_MODES:
        raise ValueError(
            f'cuda_timing must be one of {CUDA_TIMING_MODES} ("events": asynchronous CUDA '
            f'events; "synchronized": synchronize around each op), got {mode!r}'
        )
    return mode


def timing_text(mode: str) -> str:
    """The timing line every report carries: host time, and how GPU time is taken."""
    return f"{TIMING_MODE}; {GPU_TIMING[mode]}"


def synchronize(cupy: ModuleType, index: int) -> None:
    """Wait for all work queued on CUDA device ``index``, leaving the current device as is."""
    runtime = cupy.cuda.runtime
    current = runtime.getDevice()
    if current == index:
        runtime.deviceSynchronize()
        return
    runtime.setDevice(index)
    try:
        runtime.deviceSynchronize()
    finally:
        runtime.setDevice(current)


class GpuTimer:
    """The CUDA event pairs of one profile, and the GPU times resolved from them."""

    def __init__(self, mode: str, cupy: ModuleType) -> None:
        self.mode = mode
        self.cupy = cupy
        self.running: tuple[int, Any] | None = None  # (device index, start event) of the op
        self.pending: list[tuple[int, int, Any, Any]] = []  # (op index, device, start, end)
        self.anchors: dict[int, tuple[Any, int]] = {}  # device -> (first start event, host ns)
        self.times: dict[int, tuple[int, int]] = {}  # op index -> (GPU start, duration), ns

    def start(self) -> None:
        """Record the start event of a CUDA op on the current stream of the current device."""
        cuda = self.cupy.cuda
        index = cuda.runtime.getDevice()
        if self.mode == "synchronized":
            synchronize(self.cupy, index)
        event = cuda.Event()
        event.record()
        if index not in self.anchors:
            self.anchors[index] = (event, time.perf_counter_ns())
        self.running = (index, event)

    def finish(self, op_index: int) -> None:
        """Record the end event of the running CUDA op (the one ``start`` saw)."""
        index, start = self.running  # type: ignore[misc]
        self.running = None
        end = self.cupy.cuda.Event()
        end.record()
        self.pending.append((op_index, index, start, end))
        if self.mode == "synchronized":
            synchronize(self.cupy, index)
            self.resolve()  # every event is complete: nothing is left to wait for

    def resolve(self) -> dict[int, tuple[int, int]]:
        """Read the elapsed times of the pending pairs (one synchronize per device in the
        "events" mode); returns every resolved op's (GPU start, duration) in ns."""
        pending = self.pending
        if not pending:
            return self.times
        if self.mode == "events":
            for index in sorted({p[1] for p in pending}):
                synchronize(self.cupy, index)
        elapsed = self.cupy.cuda.get_elapsed_time
        for op_index, index, start, end in pending:
            anchor, anchor_ns = self.anchors[index]
            offset_ns = 0 if start is anchor else round(elapsed(anchor, start) * 1e6)
            self.times[op_index] = (anchor_ns + offset_ns, round(elapsed(start, end) * 1e6))
        pending.clear()
        return self.times
