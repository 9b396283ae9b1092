"""Per-op memory measurement on top of ``tensorkit.memory``'s buffer accounting.

An op's allocation is the bytes of the new buffers behind its outputs (buffers shared with
an input, i.e. views, count nothing). Frees are seen when a counted buffer dies; a record's
``free_bytes`` is what was released since the previous record (so it includes tensors the
user dropped between ops). tracemalloc is not used: it traces every Python allocation (merely
running it made the tiny-op chain 3.4x slower forward, 5.6x forward+backward), and NumPy's
temporaries inside an op would tie the numbers to NumPy internals, not to the op's tensors.
"""

from __future__ import annotations

from .. import memory
from ..tensor import Tensor


def count_outputs(inputs: tuple, outputs: tuple, device: str) -> int:
    """Count the new buffers behind ``outputs`` (not an input's); returns their bytes."""
    allocated = 0
    exclude = None
    for out in outputs:
        if type(out) is not Tensor:
            continue
        buffer = memory.buffer_of(out._data)
        if id(buffer) in memory._live:
            continue
        if exclude is None:
            exclude = {id(memory.buffer_of(x._data)) for x in inputs if isinstance(x, Tensor)}
        if id(buffer) not in exclude:
            allocated += memory.track(buffer, device)
    return allocated
