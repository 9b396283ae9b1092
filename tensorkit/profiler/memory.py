"""Per-op memory measurement on top of ``tensorkit.memory``'s buffer accounting.

An op's allocation is the bytes of the new buffers behind its outputs (buffers shared with
an input, i.e. views, count nothing). Frees are seen when a counted buffer dies; a record's
``free_bytes`` is what was released since the previous record (so it includes tensors the
user dropped between ops). tracemalloc is not used: it traces every Python allocation (merely
running it made the tiny-op chain 3.4x slower forward, 5.6x forward+backward), and NumPy's
temporaries inside an op would tie the numbers to NumPy internals, not to the op's tensors.

After every recorded op, ``count_tensors`` (or ``count_arrays``, for a backward node) appends
the new buffers' bytes to ``memory``'s history (``memory.track``; a free costs no Python call,
see ``tensorkit.memory``); the profile stores the op's allocated bytes and the
history's position, and ``resolve`` derives each op's freed, live and peak bytes from the
history when the profile ends or its records are read. Before this, counting each buffer
with its own Python release callback and settling the counters per op made
``record_memory`` cost 2.3x the unprofiled tiny-op chain; it now costs about 1.8-2.0x.
"""

from __future__ import annotations

from .. import memory
from ..memory import _events, buffer_of
from ..tensor import Tensor


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
            allocated += memory.track(buffer, device)
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
            allocated += memory.track(buffer, device)
    return allocated


def resolve(extra: list, start: int, stop: int, fields: int, state: list) -> None:
    """Turn the memory fields of ops ``start`` to ``stop`` in a profile's ``extra`` list
    (``fields`` values per op, the last four: allocated bytes, the history position after
    the op, live bytes (None on the CPU: derived here) and peak (None)) into allocated,
    freed since the previous op, live and peak bytes. ``state`` is [history position,
    CPU live bytes, peak] after op ``start - 1``, updated in place."""
    memory.settle()
    events = _events
    pos, live, peak = state
    for index in range(start, stop):
        at = index * fields + fields - 3
        end = extra[at]
        released = 0
        for entry in events[pos:end]:
            if type(entry) is int:
                live += entry
                if entry < 0:
                    released -= entry
            elif entry[1] < 0:
                released -= entry[1]
        pos = end
        extra[at] = released
        if extra[at + 1] is None:
            extra[at + 1] = live
        if extra[at + 1] > peak:
            peak = extra[at + 1]
        extra[at + 2] = peak
    state[:] = [pos, live, peak]
