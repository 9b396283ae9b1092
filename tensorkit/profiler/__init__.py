"""``tk.profiler``: per-op host time, GPU time, shapes, call sites, module paths and memory.

Host times are wall time (``time.perf_counter_ns``); ops on a CUDA device also get GPU time
from CUDA events, read after the run (``cuda_timing="events"``) or with a synchronize around
each op (``"synchronized"``). Every report states the mode.
"""

from .events import TIMING_MODE
from .merge import merge_traces
from .profile import profile, record_function
from .report import EventAverage, KeyAverages

__all__ = [
    "TIMING_MODE",
    "EventAverage",
    "KeyAverages",
    "merge_traces",
    "profile",
    "record_function",
]
