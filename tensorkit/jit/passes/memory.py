"""Memory planning: when each value's array can go.

A generated plan holds every array in a local variable; ``last_uses`` says after which node
each value is read for the last time, so the plan deletes it there and its buffer returns to
the allocator (NumPy's, which ``_backend/host_allocator`` keeps for reuse, or CuPy's caching
pool), to be taken by the next array of its size: buffers whose lifetimes do not overlap are
shared. ``peak_bytes`` measures a node order's peak of live bytes under that rule.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..ir import Node

__all__ = ["last_uses", "peak_bytes"]


def last_uses(nodes: Sequence[Node], keep: set[int]) -> dict[int, list[int]]:
    """Node index -> the values whose last reader (or, if none reads them, producer) it is.
    Values in ``keep`` (the plan's results) never die; the plan's inputs die after their
    last read too (the caller's tensors keep their own arrays alive)."""
    last: dict[int, int] = {}
    for index, node in enumerate(nodes):
        for value_id in node.refs():
            last[value_id] = index
        for value in node.outputs:
            last.setdefault(value.id, index)
    dying: dict[int, list[int]] = {}
    for value_id, index in last.items():
        if value_id not in keep:
            dying.setdefault(index, []).append(value_id)
    return dying


def peak_bytes(nodes: Sequence[Node], keep: set[int]) -> int:
    """The most bytes the nodes' outputs hold at once when each dies at its last use."""
    dying = last_uses(nodes, keep)
    sizes = {v.id: _nbytes(v.shape, v.dtype) for node in nodes for v in node.outputs}
    live = peak = 0
    for index, node in enumerate(nodes):
        live += sum(sizes[v.id] for v in node.outputs)
        peak = max(peak, live)
        live -= sum(sizes.get(v, 0) for v in dying.get(index, ()))
    return peak


def _nbytes(shape: tuple[int, ...], dtype: str) -> int:
    return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
