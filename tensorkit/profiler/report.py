"""``key_averages``: per-op totals and a PyTorch-style text table."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any

SORT_KEYS = (
    "cpu_time_total",
    "self_cpu_time_total",
    "cpu_time",
    "device_time_total",
    "self_device_time_total",
    "device_time",
    "cuda_time_total",
    "self_cuda_time_total",
    "count",
    "cpu_memory_usage",
    "self_cpu_memory_usage",
)


@dataclass
class EventAverage:
    """Totals for one (name, phase[, input shapes]) group; times in nanoseconds.

    ``cpu_memory_usage`` is bytes allocated; ``self_cpu_memory_usage`` subtracts the bytes
    released since the previous op (as PyTorch counts frees negatively). An op's self time
    equals its total (ops are recorded flat); a range's (a ``record_function`` range, or a
    composite function such as ``conv2d``) self time is its duration minus that of the ops
    and ranges directly inside it. ``device_time_total`` sums the GPU time of the
    group's ops that ran on a CUDA device (CUDA events; ``cuda_time_total`` is its older
    PyTorch name), and for a range that of the ops inside it; ranges have no GPU time of
    their own (``self_device_time_total`` 0). A range's ``cpu_memory_usage`` is the bytes its
    ops allocated, its ``self_cpu_memory_usage`` 0.
    """

    name: str
    phase: str
    count: int = 0
    cpu_time_total: int = 0
    self_cpu_time_total: int = 0
    device_time_total: int = 0
    cpu_memory_usage: int = 0
    self_cpu_memory_usage: int = 0
    input_shapes: str = ""
    indices: list[int] = field(default_factory=list)
    is_range: bool = False  # a record_function or composite-function range, not an op

    @property
    def cpu_time(self) -> float:
        """Mean host time per call, in nanoseconds."""
        return self.cpu_time_total / self.count if self.count else 0.0

    @property
    def self_device_time_total(self) -> int:
        """GPU time of the group's own ops: all of it for ops (recorded flat), none for
        ranges."""
        return 0 if self.is_range else self.device_time_total

    @property
    def device_time(self) -> float:
        """Mean GPU time per call, in nanoseconds."""
        return self.device_time_total / self.count if self.count else 0.0

    @property
    def cuda_time_total(self) -> int:
        return self.device_time_total

    @property
    def self_cuda_time_total(self) -> int:
        return self.self_device_time_total

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "phase": self.phase,
            "count": self.count,
            "cpu_time_total": self.cpu_time_total,
            "cpu_time": self.cpu_time,
            "self_cpu_time_total": self.self_cpu_time_total,
            "device_time_total": self.device_time_total,
            "device_time": self.device_time,
            "cpu_memory_usage": self.cpu_memory_usage,
            "self_cpu_memory_usage": self.self_cpu_memory_usage,
            "input_shapes": self.input_shapes,
        }


class KeyAverages(list):
    """A list of ``EventAverage`` rows that knows how to print itself."""

    def __init__(
        self,
        rows: list[EventAverage],
        with_memory: bool,
        with_shapes: bool,
        timing_mode: str,
        with_gpu: bool = False,
    ) -> None:
        super().__init__(rows)
        self.with_memory = with_memory
        self.with_shapes = with_shapes
        self.timing_mode = timing_mode
        self.with_gpu = with_gpu

    def table(self, sort_by: str = "cpu_time_total", row_limit: int = 100) -> str:
        """A text table like PyTorch's, sorted (descending) by ``sort_by``."""
        if sort_by not in SORT_KEYS:
            raise ValueError(f"sort_by must be one of {SORT_KEYS}, got {sort_by!r}")
        rows = sorted(self, key=lambda r: getattr(r, sort_by), reverse=True)
        if row_limit >= 0:
            rows = rows[:row_limit]
        return format_table(rows, self)

    def __str__(self) -> str:
        return self.table()


def key_averages(prof: Any, group_by_input_shape: bool = False) -> KeyAverages:
    """Group ``prof``'s op records and ranges by name and phase (and input shapes)."""
    groups: dict[tuple, EventAverage] = {}
    with_gpu = False
    for r in prof.records:
        shapes = str(r.input_shapes) if group_by_input_shape and r.input_shapes else ""
        key = (r.name, r.phase, shapes)
        row = groups.get(key)
        if row is None:
            row = groups[key] = EventAverage(r.name, r.phase, input_shapes=shapes)
        duration = r.duration_ns
        row.count += 1
        row.cpu_time_total += duration
        row.self_cpu_time_total += duration
        row.indices.append(r.index)
        if r.gpu_time_ns is not None:
            row.device_time_total += r.gpu_time_ns
            with_gpu = True
        if r.alloc_bytes is not None:
            row.cpu_memory_usage += r.alloc_bytes
            row.self_cpu_memory_usage += r.alloc_bytes - r.free_bytes
    _add_ranges(prof, groups)
    return KeyAverages(
        list(groups.values()),
        prof.record_memory,
        group_by_input_shape,
        prof.timing_mode,
        with_gpu,
    )


def _add_ranges(prof: Any, groups: dict[tuple, EventAverage]) -> None:
    """Rows for the ranges, apart from the ops' rows even where a range and an op share a
    name: a range's total is its duration, its self time that less the ops and the ranges
    directly inside it (so self times add up to the profile's time)."""
    starts = [r.start_ns for r in prof.records]
    cumulative, cumulative_gpu, cumulative_alloc = [0], [0], [0]
    for r in prof.records:
        cumulative.append(cumulative[-1] + r.duration_ns)
        cumulative_gpu.append(cumulative_gpu[-1] + (r.gpu_time_ns or 0))
        cumulative_alloc.append(cumulative_alloc[-1] + (r.alloc_bytes or 0))
    ranges = sorted(prof._ranges, key=lambda r: (r.start_ns, -r.end_ns))
    gpu, alloc = [], []  # per range: the GPU time and the bytes allocated of the ops inside it
    own = []  # per range: its duration less the ops inside it, then less its children's
    open_ranges: list[int] = []  # indices into ranges, the innermost last
    for i, rng in enumerate(ranges):
        first = bisect.bisect_left(starts, rng.start_ns)
        last = bisect.bisect_right(starts, rng.end_ns)
        outside_ops = rng.duration_ns - (cumulative[last] - cumulative[first])
        own.append(outside_ops)
        gpu.append(cumulative_gpu[last] - cumulative_gpu[first])
        alloc.append(cumulative_alloc[last] - cumulative_alloc[first])
        while open_ranges and ranges[open_ranges[-1]].end_ns < rng.end_ns:
            open_ranges.pop()
        if open_ranges:  # the enclosing range's own time excludes this one's
            own[open_ranges[-1]] -= outside_ops
        open_ranges.append(i)
    for rng, self_ns, gpu_ns, alloc_bytes in zip(ranges, own, gpu, alloc, strict=True):
        # Never an op's row, whose time the range already counts, should the names meet in
        # one phase (no op bears a composite's name: tests/test_profiler.py).
        key = (rng.name, rng.phase, "", "range")
        row = groups.get(key)
        if row is None:
            row = groups[key] = EventAverage(rng.name, rng.phase, is_range=True)
        row.count += 1
        row.cpu_time_total += rng.duration_ns
        row.self_cpu_time_total += self_ns
        row.device_time_total += gpu_ns
        row.cpu_memory_usage += alloc_bytes  # its ops'; a range allocates nothing itself


def format_time(ns: float) -> str:
    """PyTorch's style: microseconds below 1 ms, then ms, then s."""
    if ns >= 1e9:
        return f"{ns / 1e9:.3f}s"
    if ns >= 1e6:
        return f"{ns / 1e6:.3f}ms"
    return f"{ns / 1e3:.3f}us"


def format_bytes(n: int) -> str:
    """Bytes as b / Kb / Mb / Gb (1024-based, as PyTorch prints them)."""
    for unit, size in (("Gb", 1 << 30), ("Mb", 1 << 20), ("Kb", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} b"


def format_table(rows: list[EventAverage], every: KeyAverages) -> str:
    """``rows`` as text; percentages are of ``every`` row's total; the footer states the
    timing mode."""
    with_memory, with_shapes, with_gpu = every.with_memory, every.with_shapes, every.with_gpu
    total_self = sum(r.self_cpu_time_total for r in every) or 1
    total_gpu = sum(r.self_device_time_total for r in every)
    headers = ["Name", "Phase", "Self CPU %", "Self CPU", "CPU total %", "CPU total"]
    headers += ["CPU time avg"]
    if with_gpu:
        headers += ["Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg"]
    if with_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
    headers += ["# of Calls"]
    if with_shapes:
        headers += ["Input Shapes"]
    body = []
    for r in rows:
        cells = [
            r.name,
            r.phase,
            f"{100 * r.self_cpu_time_total / total_self:.2f}%",
            format_time(r.self_cpu_time_total),
            f"{100 * r.cpu_time_total / total_self:.2f}%",
            format_time(r.cpu_time_total),
            format_time(r.cpu_time),
        ]
        if with_gpu:
            cells += [
                format_time(r.self_device_time_total),
                f"{100 * r.self_device_time_total / (total_gpu or 1):.2f}%",
                format_time(r.device_time_total),
                format_time(r.device_time),
            ]
        if with_memory:
            cells += [format_bytes(r.cpu_memory_usage), format_bytes(r.self_cpu_memory_usage)]
        cells.append(str(r.count))
        if with_shapes:
            cells.append(r.input_shapes)
        body.append(cells)
    widths = [max([len(h), *(len(c[i]) for c in body)]) for i, h in enumerate(headers)]
    rule = "  ".join("-" * w for w in widths)

    def line(cells: list[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = [c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True)]
        return "  ".join([first, *rest])

    out = [rule, line(headers), rule, *(line(c) for c in body), rule]
    out.append(f"Self CPU time total: {format_time(total_self)}")
    if with_gpu:
        out.append(f"Self CUDA time total: {format_time(total_gpu)}")
    out.append(f"Timing: {every.timing_mode}")
    return "\n".join(out) + "\n"
