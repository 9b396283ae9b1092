"""Memory planning: when each value's array can go.

A generated plan holds every array in a local variable; ``last_uses`` says after which node
each value is read for the last time, so the plan deletes it there and its buffer returns to
the allocator (NumPy's, which ``_backend/host_allocator`` keeps for reuse, or CuPy's caching
pool), to be taken by the next array of its size: buffers whose lifetimes do not overlap are
shared. ``peak_bytes`` measures a node order's peak of live bytes under that rule.

``in_place_writes`` finds the in-place updates (an optimizer's ``p.add_(g, alpha=-lr)``)
whose result can be computed straight into the written tensor's own array, as eager's
direct path does (``ops.inplace``), instead of into a new array copied in after the replay.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...ops._apply import OPS
from ..ir import Node, Ref, Value

__all__ = ["in_place_writes", "last_uses", "peak_bytes"]

# The ops whose result a plan may write into their first argument: eager's direct forms.
DIRECT_FORMS = {"add": "add_", "sub": "sub_", "mul": "mul_", "div": "div_"}


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


def in_place_writes(
    nodes: Sequence[Node], written: dict[int, Value], keep: set[int]
) -> dict[int, int]:
    """Node index -> the value whose array it writes its result into. ``written`` maps each
    value a replay writes into a tensor to that tensor's placeholder value; ``keep``: values
    the plan must still hand out after it ran (their arrays must stay as they are).

    A node qualifies when it is an op with a direct form, makes a written value of the
    placeholder's shape and dtype from that placeholder as its first argument (no cast),
    comes after the last guard (a failed guard leaves no effect behind), and nothing reads
    the placeholder, or a view of it, after it."""
    last_guard = max((i for i, n in enumerate(nodes) if n.kind == "guard"), default=-1)
    aliases = _aliases(nodes, {target.id for target in written.values()})
    last_read: dict[int, int] = {}
    for index, node in enumerate(nodes):
        for value_id in node.refs():
            for target in aliases.get(value_id, ()):
                last_read[target] = index
    for value_id in keep:
        for target in aliases.get(value_id, ()):
            last_read[target] = len(nodes)
    writes = {}
    for index, node in enumerate(nodes):
        if index <= last_guard or node.kind != "op" or node.op not in DIRECT_FORMS:
            continue
        if len(node.outputs) != 1 or node.outputs[0].id not in written or node.cast is not None:
            continue
        value, placeholder = node.outputs[0], written[node.outputs[0].id]
        target = placeholder.id
        first = node.args[0] if node.args else None
        if type(first) is not Ref or first.id != target or last_read.get(target, -1) > index:
            continue
        if any(target in aliases.get(a.id, ()) for a in node.args[1:] if type(a) is Ref):
            continue  # another operand shares the target's memory
        if (value.shape, value.dtype) == (placeholder.shape, placeholder.dtype):
            writes[index] = target
    return writes


def _aliases(nodes: Sequence[Node], targets: set[int]) -> dict[int, set[int]]:
    """Value id -> the targets whose memory it may share: each target itself and what view
    ops (and opaque Python functions, which may return views) make from them."""
    aliases: dict[int, set[int]] = {t: {t} for t in targets}
    for node in nodes:
        shared = set().union(*(aliases.get(v, set()) for v in node.refs()))
        if not shared:
            continue
        viewing = node.kind == "function" or (node.kind == "op" and OPS[node.op].view)
        if viewing:
            for value in node.outputs:
                aliases[value.id] = shared
    return aliases
