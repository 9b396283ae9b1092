"""Per-op memory fields of a profile, derived from ``tensorkit.memory``'s buffer history.

An op's allocation is the bytes of the new buffers behind its outputs (buffers shared with
an input, i.e. views, count nothing). Frees are seen when a counted buffer dies; a record's
``free_bytes`` is what was released since the previous record (so it includes tensors the
user dropped between ops). tracemalloc is not used: it traces every Python allocation (merely
running it made the tiny-op chain 3.4x slower forward, 5.6x forward+backward), and NumPy's
temporaries inside an op would tie the numbers to NumPy internals, not to the op's tensors.

After every recorded op, the profile counts its new buffers (``memory.count_tensors``, or
``memory.count_arrays`` for a backward node), which appends their bytes to ``memory``'s
history (a free costs no Python call, see ``tensorkit.memory``), and stores the op's
allocated bytes and the history's position; ``resolve`` derives each op's freed, live and
peak bytes from the history when the profile ends or its records are read.
"""

from __future__ import annotations

from .. import memory
from ..memory import _events
from .events import CORE_FIELDS, DEVICE_FIELD, EXTRA_FIELDS


def resolve(core: list, extra: list, start: int, stop: int, state: list) -> None:
    """Complete the memory fields of ops ``start`` to ``stop`` in a profile's ``extra`` list
    (the last four of its ``EXTRA_FIELDS`` per op: allocated bytes, then for a CPU op the
    history position after it and None, None; for a CUDA op freed and live bytes from the
    pool and None): a CPU op gets its freed bytes since the previous CPU op and its live
    bytes, and every op the peak of its device's live bytes so far (devices from ``core``).
    ``state`` is [history position, CPU live bytes, peak per device] after op
    ``start - 1``, updated in place."""
    memory.settle()
    events = _events
    pos, live, peaks = state
    for index in range(start, stop):
        at = index * EXTRA_FIELDS + EXTRA_FIELDS - 3
        device_live = extra[at + 1]
        if device_live is None:  # a CPU op: replay the history up to its position
            end = extra[at]
            released = 0
            for entry in events[pos:end]:
                if type(entry) is int:  # an entry of another device is a tuple
                    live += entry
                    if entry < 0:
                        released -= entry
            pos = end
            extra[at] = released
            extra[at + 1] = device_live = live
        device = core[index * CORE_FIELDS + DEVICE_FIELD]
        peak = max(peaks.get(device, 0), device_live)
        peaks[device] = peak
        extra[at + 2] = peak
    state[:] = [pos, live, peaks]
