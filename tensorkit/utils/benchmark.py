"""``Timer``: time a statement the way ``torch.utils.benchmark.Timer`` does.

``Timer(stmt, setup, globals).blocked_autorange()`` runs ``setup`` once, then times blocks of
``number_per_run`` executions of ``stmt`` and returns a ``Measurement`` (per-run times).
Timing is host wall time (``time.perf_counter``); on CUDA the device is synchronized before
each block ends. ``num_threads`` limits the BLAS/OpenMP pools through threadpoolctl when it
is installed (tensorkit has no thread-count setting of its own).
"""

from __future__ import annotations

import contextlib
import statistics
import textwrap
import time
import timeit
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Measurement", "Timer"]


def _quantile(sorted_values: list[float], q: float) -> float:
    """Linear-interpolated quantile of an already-sorted list."""
    position = q * (len(sorted_values) - 1)
    low = int(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


def _format_seconds(seconds: float) -> tuple[float, str]:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return seconds / scale, unit
    return seconds / 1e-9, "ns"


@dataclass
class Measurement:
    """Times of ``number_per_run`` executions each; ``times`` are per execution (seconds)."""

    number_per_run: int
    raw_times: list[float]
    stmt: str
    label: str | None = None
    description: str | None = None
    num_threads: int = 1
    times: list[float] = field(init=False)

    def __post_init__(self) -> None:
        self.times = [t / self.number_per_run for t in self.raw_times]

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.times)

    @property
    def iqr(self) -> float:
        ordered = sorted(self.times)
        return _quantile(ordered, 0.75) - _quantile(ordered, 0.25)

    def __repr__(self) -> str:
        ordered = sorted(self.times)
        median, unit = _format_seconds(self.median)
        scale = self.median / median if median else 1.0
        q1, q3 = _quantile(ordered, 0.25) / scale, _quantile(ordered, 0.75) / scale
        header = " ".join(x for x in (self.label, self.description) if x)
        lines = [f"<{type(self).__module__}.{type(self).__name__} object at {id(self):#x}>"]
        if header:
            lines.append(header)
        lines.append(textwrap.indent(self.stmt, "  "))
        lines.append(f"  {'Median' if len(self.times) > 1 else 'Time'}: {median:.2f} {unit}")
        if len(self.times) > 1:
            lines.append(f"  IQR:    {q3 - q1:.2f} {unit} ({q1:.2f} to {q3:.2f})")
        runs = "run" if self.number_per_run == 1 else "runs"
        threads = "thread" if self.num_threads == 1 else "threads"
        lines.append(
            f"  {len(self.times)} measurement{'s' if len(self.times) != 1 else ''}, "
            f"{self.number_per_run} {runs} per measurement, {self.num_threads} {threads}"
        )
        return "\n".join(lines)


def _synchronizer() -> Callable[[], None] | None:
    """tk.cuda.synchronize when a GPU is in use and tensorkit provides it, else None."""
    import tensorkit

    cuda = tensorkit.cuda
    sync = getattr(cuda, "synchronize", None)
    if sync is None or not cuda.is_available():
        return None
    return sync


def _thread_limit(num_threads: int) -> contextlib.AbstractContextManager:
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=num_threads)


class Timer:
    """Time ``stmt`` (a string of code) after running ``setup`` once, in ``globals``."""

    def __init__(
        self,
        stmt: str = "pass",
        setup: str = "pass",
        globals: dict[str, Any] | None = None,
        label: str | None = None,
        description: str | None = None,
        num_threads: int = 1,
    ) -> None:
        self.stmt = textwrap.dedent(stmt).strip() or "pass"
        self.label = label
        self.description = description
        self.num_threads = num_threads
        self._sync = _synchronizer()
        namespace = globals
        stmt = self.stmt
        if self._sync is not None:
            stmt = f"{stmt}\n_tk_timer_sync()"
            namespace = {**(globals or {}), "_tk_timer_sync": self._sync}
        self._timer = timeit.Timer(
            stmt=stmt, setup=textwrap.dedent(setup), timer=time.perf_counter, globals=namespace
        )

    def _measurement(self, number: int, raw_times: list[float]) -> Measurement:
        return Measurement(
            number, raw_times, self.stmt, self.label, self.description, self.num_threads
        )

    def _block(self, number: int) -> float:
        with _thread_limit(self.num_threads):
            return self._timer.timeit(number)

    def timeit(self, number: int = 1000000) -> Measurement:
        """One block of ``number`` executions."""
        self._block(max(number // 100, 2))  # warm up
        return self._measurement(number, [self._block(number)])

    def _block_size(self, min_block_time: float = 0.01) -> int:
        """Executions per block so that one block takes at least ``min_block_time``."""
        number = 1
        while True:
            if self._block(number) >= min_block_time:
                return number
            number *= 10

    def blocked_autorange(self, min_run_time: float = 0.2) -> Measurement:
        """Blocks of a fixed size until ``min_run_time`` seconds have been measured."""
        number = self._block_size()
        times: list[float] = []
        while sum(times) < min_run_time or len(times) < 2:
            times.append(self._block(number))
        return self._measurement(number, times)

    def adaptive_autorange(
        self,
        threshold: float = 0.1,
        *,
        min_run_time: float = 0.01,
        max_run_time: float = 10.0,
    ) -> Measurement:
        """Blocks until the IQR is below ``threshold`` times the median (at least
        ``min_run_time`` and 3 blocks), or until ``max_run_time`` seconds have been spent."""
        number = self._block_size(min_block_time=0.001)
        times: list[float] = []
        while True:
            times.append(self._block(number))
            spent = sum(times)
            if len(times) >= 3 and spent >= min_run_time:
                m = self._measurement(number, times)
                if m.iqr <= threshold * m.median or spent >= max_run_time:
                    return m
            elif spent >= max_run_time:
                return self._measurement(number, times)
