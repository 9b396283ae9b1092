"""``tk.profiler``: per-op host time, shapes, call sites, module paths and memory.

On the CPU every time is host wall time (``time.perf_counter_ns``); each report says so.
"""

from .events import TIMING_MODE
from .profile import profile, record_function
from .report import EventAverage, KeyAverages

__all__ = ["TIMING_MODE", "EventAverage", "KeyAverages", "profile", "record_function"]
