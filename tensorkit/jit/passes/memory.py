"""Memory planning: when each value's array can go, and which writes go in place.

A generated plan holds every array in a local variable; ``last_uses`` says after which node
each value is read for the last time, so the plan deletes it there and its buffer returns to
the allocator (NumPy's, which ``_backend/host_allocator`` keeps for reuse, or CuPy's caching
pool), to be taken by the next array of its size: buffers whose lifetimes do not overlap are
shared. ``peak_bytes`` measures a node order's peak of live bytes under that rule.

``in_place_writes`` picks the mutations (an optimizer's ``p.add_(...)``, recorded as a new
value written back to the tensor after the replay) whose new value one elementwise kernel
can write straight into the tensor's own array (``out=``), where nothing reads the old value
after it: the write-back copy and the new array are saved (the MLP step's six parameter
updates: 2 MB copied and allocated less per step).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...ops._apply import OPS
from ..elementwise import fusible
from ..fusion import writes_into
from ..ir import Graph, Node, Ref

__all__ = ["in_place_writes", "last_uses", "peak_bytes"]


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


def in_place_writes(graph: Graph) -> dict[int, int]:
    """Forward node index -> the placeholder value id whose array that node writes its result
    into (see the module docstring). A mutation qualifies when its value is the single output
    of a numba kernel (a fused node, or one fusible op that becomes a kernel of its own) of
    the placeholder's shape, dtype and device, and neither the placeholder's old value nor any
    view of it is read after that node, by the backward or as a result."""
    values = graph.values()
    dtypes = {value_id: value.dtype for value_id, value in values.items()}
    producer = {v.id: index for index, node in enumerate(graph.nodes) for v in node.outputs}
    aliases = _aliases(graph.nodes)
    read_after = _last_reads(graph.nodes)
    results = {v.id for v in graph.outputs if type(v) is Ref}
    results |= {v for v in graph.leaf_grads.values() if v is not None}
    late = {value_id for node in graph.backward for value_id in node.refs()} | results
    targets = [m.placeholder for m in graph.mutations]
    writes: dict[int, int] = {}
    for mutation in graph.mutations:
        target = graph.placeholders[mutation.placeholder].value
        index = producer.get(mutation.value)
        if index is None or targets.count(mutation.placeholder) != 1 or mutation.value in results:
            continue
        node = graph.nodes[index]
        if node.kind == "op" and not fusible(node, dtypes):
            continue
        if node.kind not in ("op", "fused") or len(node.outputs) != 1 or node.multi_output:
            continue
        value = node.outputs[0]
        if (value.shape, value.dtype, value.device) != (target.shape, target.dtype, target.device):
            continue
        if not writes_into(as_kernel(node)):
            continue
        old = {target.id} | aliases.get(target.id, set())
        if any(read_after.get(v, -1) > index or v in late for v in old):
            continue
        writes[index] = target.id
    return writes


def as_kernel(node: Node) -> Node:
    """``node`` as a fused node: itself, or a kernel whose one member is the op."""
    if node.kind == "fused":
        return node
    from .fuse import single_member_kernel

    return single_member_kernel(node)


def _aliases(nodes: Sequence[Node]) -> dict[int, set[int]]:
    """Value id -> the values that may share its memory: outputs of view ops over it (and of
    opaque functions, which may return views of what they read), transitively."""
    root: dict[int, set[int]] = {}
    found: dict[int, set[int]] = {}
    for node in nodes:
        opdef = OPS.get(node.op) if node.kind == "op" else None
        if not (node.kind == "function" or (opdef is not None and opdef.view)):
            continue
        bases: set[int] = set()
        for value_id in node.refs():
            bases |= root.get(value_id, {value_id})
        for value in node.outputs:
            root[value.id] = bases
            for base in bases:
                found.setdefault(base, set()).add(value.id)
    return found


def _last_reads(nodes: Sequence[Node]) -> dict[int, int]:
    """Value id -> the index of the last node that reads it."""
    last: dict[int, int] = {}
    for index, node in enumerate(nodes):
        for value_id in node.refs():
            last[value_id] = index
    return last
