"""The profiler's plain records: one per op, one per ``record_function`` range."""

from __future__ import annotations

from typing import Any

TIMING_MODE = "host wall time (time.perf_counter_ns around each op's forward computation)"


class OpRecord:
    """One observed op. Times are nanoseconds; memory fields stay None unless recorded."""

    __slots__ = (
        "alloc_bytes",
        "call_site",
        "device",
        "end_ns",
        "forward_index",
        "free_bytes",
        "index",
        "input_dtypes",
        "input_shapes",
        "live_bytes",
        "module_path",
        "name",
        "output_dtypes",
        "output_shapes",
        "peak_bytes",
        "phase",
        "scopes",
        "start_ns",
    )

    def __init__(
        self,
        index: int,
        name: str,
        phase: str,
        start_ns: int,
        end_ns: int,
        device: str,
        module_path: str,
        forward_index: int | None,
        scopes: tuple[str, ...],
    ) -> None:
        self.index = index
        self.name = name
        self.phase = phase
        self.start_ns = start_ns
        self.end_ns = end_ns
        self.device = device
        self.module_path = module_path
        self.forward_index = forward_index
        self.scopes = scopes
        self.input_shapes: list | None = None
        self.input_dtypes: list | None = None
        self.output_shapes: list | None = None
        self.output_dtypes: list | None = None
        self.call_site: str | None = None
        self.alloc_bytes: int | None = None
        self.free_bytes: int | None = None
        self.live_bytes: int | None = None
        self.peak_bytes: int | None = None

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns

    def to_dict(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in self.__slots__}
        out["scopes"] = list(self.scopes)
        out["duration_ns"] = self.duration_ns
        return out


class RangeRecord:
    """One ``record_function`` range (a user annotation); ``depth`` 0 is outermost."""

    __slots__ = ("depth", "end_ns", "name", "start_ns")

    def __init__(self, name: str, start_ns: int, end_ns: int, depth: int) -> None:
        self.name = name
        self.start_ns = start_ns
        self.end_ns = end_ns
        self.depth = depth

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "start_ns": self.start_ns,
            "end_ns": self.end_ns,
            "depth": self.depth,
            "duration_ns": self.duration_ns,
        }


def make_record(index: int, raw: tuple) -> OpRecord:
    """An ``OpRecord`` from the tuple the profiler stores while recording."""
    name, phase, start_ns, end_ns, device, module_path, forward, scopes, extra = raw
    device_name = "cpu" if device is None else str(device)
    record = OpRecord(
        index, name, phase, start_ns, end_ns, device_name, module_path, forward, scopes
    )
    if extra is None:
        return record
    shapes, record.call_site, measured = extra
    if shapes is not None:
        inputs, outputs = shapes
        record.input_shapes = [None if x is None else list(x[0]) for x in inputs]
        record.input_dtypes = [None if x is None else str(x[1]) for x in inputs]
        record.output_shapes = [list(x[0]) for x in outputs]
        record.output_dtypes = [str(x[1]) for x in outputs]
    if measured is not None:
        record.alloc_bytes, record.free_bytes, record.live_bytes, record.peak_bytes = measured
    return record
