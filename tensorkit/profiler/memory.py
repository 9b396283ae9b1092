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
