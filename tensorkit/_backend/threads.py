"""Intra-op parallelism on the host: a large array kernel split over a few threads.

NumPy runs each ufunc, copy or gather on one core, but it releases the GIL while it does, so a
kernel over a large array can run its parts on several threads at once. The kernels that a
training step spends its time in (a convolution's column copies and sums, ReLU and its
gradient, max pooling, softmax) call :func:`parallel_parts` with a function of one part; below
:data:`MIN_ELEMENTS` elements, with one thread, or on a GPU, the function runs once, inline,
over everything.

:func:`set_num_threads` / :func:`get_num_threads` are PyTorch's names (``tk.set_num_threads``).
The default is the number of cores this process may run on (or ``OMP_NUM_THREADS``), except
with NumPy on OpenBLAS, whose worker threads spin for about 0.1 s after every matrix product
unless ``OPENBLAS_THREAD_TIMEOUT`` was set before NumPy loaded it: the other cores are then
busy right after each GEMM, parts handed to them wait (measured: no gain on a quiet machine,
a loss on a loaded one), so the default is 1 until that variable is set.
The pool is started on first use and forgotten in a forked child (a DataLoader worker), which
starts its own if it needs one.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

__all__ = [
    "MIN_ELEMENTS",
    "ascontiguousarray",
    "get_num_threads",
    "parallel_parts",
    "set_num_threads",
    "split_axis",
    "splits",
]

# Below this many elements a kernel runs inline: handing parts to a thread costs tens of
# microseconds, about what NumPy needs for this many float32 elements.
MIN_ELEMENTS = 1 << 18


def _default_threads() -> int:
    if numpy_uses_openblas() and "OPENBLAS_THREAD_TIMEOUT" not in os.environ:
        return 1  # its workers spin after each GEMM (see above)
    configured = os.environ.get("OMP_NUM_THREADS", "")
    if configured.isdigit() and int(configured) > 0:
        return int(configured)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def numpy_uses_openblas() -> bool:
    """Whether NumPy was built against OpenBLAS (its wheels are)."""
    blas = np.__config__.CONFIG.get("Build Dependencies", {}).get("blas", {})
    return "openblas" in str(blas.get("name", "")).lower()


_num_threads = _default_threads()
_pool: ThreadPoolExecutor | None = None
_inside = threading.local()  # set on the pool's threads: a part never splits again


def get_num_threads() -> int:
    """The number of threads a large host kernel is split over."""
    return _num_threads


def set_num_threads(num: int) -> None:
    """Split large host kernels over ``num`` threads (1: no splitting)."""
    global _num_threads, _pool
    if isinstance(num, bool) or not isinstance(num, int):
        raise RuntimeError(f"set_num_threads expects an int, but got {type(num).__name__}")
    if num < 1:
        raise RuntimeError("set_num_threads expects a positive integer")
    _num_threads = num
    pool, _pool = _pool, None
    if pool is not None:
        pool.shutdown(wait=False)


def _after_fork() -> None:
    """In a forked child the parent's pool threads do not exist: start afresh."""
    global _pool
    _pool = None


os.register_at_fork(after_in_child=_after_fork)


def _mark_inside() -> None:
    _inside.active = True


def _thread_pool() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(
            _num_threads - 1, thread_name_prefix="tensorkit-intraop", initializer=_mark_inside
        )
    return _pool


def split_axis(shape: tuple[int, ...], parts: int) -> int | None:
    """The first axis of ``shape`` long enough to cut into ``parts`` pieces, or None."""
    for axis, n in enumerate(shape):
        if n >= parts:
            return axis
    return None


def splits(length: int, elements: int, array: Any = None) -> bool:
    """Whether :func:`parallel_parts` would cut this work into parts (see there)."""
    return (
        min(_num_threads, length) > 1
        and elements >= MIN_ELEMENTS
        and not getattr(_inside, "active", False)
        and (array is None or type(array) is np.ndarray)
    )


def parallel_parts(
    kernel: Callable[[slice], Any], length: int, elements: int, array: Any = None
) -> None:
    """Call ``kernel(part)`` on slices that together cover ``range(length)``, in parallel when
    the work (``elements``) is large, else once with ``slice(None)``. ``array`` (any operand)
    says where the data lives: anything but a NumPy array runs inline. The kernel writes its
    part of a preallocated output; exceptions from any part are raised here."""
    if not splits(length, elements, array):
        kernel(slice(None))
        return
    threads = min(_num_threads, length)
    bounds = [length * i // threads for i in range(threads + 1)]
    parts = [slice(lo, hi) for lo, hi in itertools.pairwise(bounds)]
    pool = _thread_pool()
    futures = [pool.submit(kernel, part) for part in parts[1:]]
    try:
        kernel(parts[0])
    finally:
        for future in futures:
            future.result()


def ascontiguousarray(xp: Any, src: Any) -> Any:
    """``xp.ascontiguousarray(src)``: ``src`` itself when C-contiguous, else a copy cut along
    its first long-enough axis."""
    if src.flags.c_contiguous:
        return src
    out = xp.empty(src.shape, src.dtype)
    axis = split_axis(src.shape, _num_threads)
    if axis is None:
        xp.copyto(out, src)
        return out
    lead = (slice(None),) * axis

    def part(rows: slice) -> None:
        xp.copyto(out[(*lead, rows)], src[(*lead, rows)])

    parallel_parts(part, src.shape[axis], src.size, src)
    return out
