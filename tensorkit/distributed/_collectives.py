"""Collectives and point-to-point operations on tensors, with torch.distributed's
signatures: each stages its tensors (``_buffers``), starts the backend's nonblocking call and
returns a ``Work`` (``async_op=True``) or waits on it. Ranks are global unless ``group_*``."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from . import _profiling
from ._buffers import (
    check_tensor,
    check_tensor_list,
    describe,
    joined,
    readable,
    split_into,
    staged,
)
from ._debug import check_collective
from ._group import ProcessGroup, resolve
from ._reduce_op import COMPLEX_OPS, ReduceOp
from ._work import Work, completed_work

__all__ = [
    "all_gather",
    "all_gather_into_tensor",
    "all_reduce",
    "all_to_all_single",
    "barrier",
    "broadcast",
    "gather",
    "irecv",
    "isend",
    "recv",
    "reduce",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "scatter",
    "send",
]


def _group_or_warn(group: Any, op: str) -> ProcessGroup | None:
    pg = resolve(group)
    if pg is None:
        warnings.warn(
            f"Running {op} on a rank which does not belong to the given group.", stacklevel=3
        )
    return pg


def _root(
    pg: ProcessGroup, global_rank: int | None, group_rank: int | None, default: int | None
) -> int:
    """The group rank of a root given as a global rank or a group rank (torch's rules)."""
    if group_rank is not None:
        if global_rank is not None:
            raise ValueError("Can't specify both group_rank and global_rank")
        if not 0 <= group_rank < pg.size():
            raise ValueError(
                f"Group rank {group_rank} is outside group {pg.name} of size {pg.size()}"
            )
        return int(group_rank)
    if global_rank is None:
        if default is None:
            raise ValueError("Must specify global_rank or group_rank")
        global_rank = pg.ranks[default]
    return pg.group_rank(int(global_rank))


def _check_op(op: Any, tensor: Any, name: str) -> ReduceOp:
    if not isinstance(op, ReduceOp):
        raise TypeError(f"{name}: op must be a ReduceOp, got {op!r}")
    if tensor.is_complex() and op not in COMPLEX_OPS:
        raise ValueError(f"{name} does not support {op} on complex tensors")
    if tensor._data.dtype == np.bool_ and op is ReduceOp.AVG:
        raise ValueError(f"{name} does not support {op} on bool tensors")
    return op


def _divider(array: Any, size: int) -> Callable[[], None]:
    """AVG's last step: the sum divided by the number of ranks (floor division for integers)."""

    def divide() -> None:
        if array.dtype.kind in "iu":
            array[...] //= size
        else:
            array[...] /= size

    return divide


def _start(
    pg: ProcessGroup,
    name: str,
    pending: Any,
    steps: list[Callable[[], None]],
    nbytes: int,
    async_op: bool,
) -> Work | None:
    """A Work for a started operation, waited on unless ``async_op``."""
    start_ns = time.perf_counter_ns()

    def finish() -> None:
        for step in steps:
            step()
        _profiling.record(name, start_ns, time.perf_counter_ns(), nbytes, pg)

    describe = f"{name}(rank {pg.rank()} of {pg.size()}, group {pg.name}, {pg.backend.name})"
    work = Work([pending], finish, describe, pg.deadline_s)
    if async_op:
        return work
    work.wait()
    return None


def all_reduce(
    tensor: Any, op: ReduceOp = ReduceOp.SUM, group: Any = None, async_op: bool = False
) -> Work | None:
    """Reduce ``tensor`` across the group with ``op``; every rank gets the result in place."""
    check_tensor(tensor, "tensor")
    pg = _group_or_warn(group, "all_reduce")
    if pg is None:
        return None
    _check_op(op, tensor, "all_reduce")
    check_collective(pg, "all_reduce", [tensor], op=op.name)
    array, write_back = staged(tensor, pg.backend.name, "all_reduce")
    steps = [_divider(array, pg.size())] if op is ReduceOp.AVG else []
    pending = pg.backend.all_reduce(array, op)
    return _start(pg, "all_reduce", pending, [*steps, write_back], array.nbytes, async_op)


def broadcast(
    tensor: Any,
    src: int | None = None,
    group: Any = None,
    async_op: bool = False,
    group_src: int | None = None,
) -> Work | None:
    """Copy ``src``'s tensor into every rank's ``tensor``."""
    check_tensor(tensor, "tensor")
    pg = _group_or_warn(group, "broadcast")
    if pg is None:
        return None
    root = _root(pg, src, group_src, None)
    check_collective(pg, "broadcast", [tensor], src=pg.ranks[root])
    array, write_back = staged(tensor, pg.backend.name, "broadcast")
    pending = pg.backend.broadcast(array, root)
    return _start(pg, "broadcast", pending, [write_back], array.nbytes, async_op)


def reduce(
    tensor: Any,
    dst: int | None = None,
    op: ReduceOp = ReduceOp.SUM,
    group: Any = None,
    async_op: bool = False,
    group_dst: int | None = None,
) -> Work | None:
    """Reduce ``tensor`` across the group into rank ``dst``'s tensor (the others keep theirs)."""
    check_tensor(tensor, "tensor")
    pg = _group_or_warn(group, "reduce")
    if pg is None:
        return None
    root = _root(pg, dst, group_dst, None)
    _check_op(op, tensor, "reduce")
    check_collective(pg, "reduce", [tensor], dst=pg.ranks[root], op=op.name)
    array, write_back = staged(tensor, pg.backend.name, "reduce")
    steps = []
    if pg.rank() == root:
        steps = [_divider(array, pg.size())] if op is ReduceOp.AVG else []
        steps.append(write_back)
    pending = pg.backend.reduce(array, op, root)
    return _start(pg, "reduce", pending, steps, array.nbytes, async_op)


def _check_list(tensors: list[Any], like: Any, size: int, op: str, name: str) -> None:
    if len(tensors) != size:
        raise ValueError(
            f"{op}: {name} must hold one tensor per rank of the group ({size}), got {len(tensors)}"
        )
    for i, tensor in enumerate(tensors):
        if tensor.shape != like.shape or tensor.dtype != like.dtype:
            raise ValueError(
                f"{op}: {name}[{i}] is {describe(tensor)}, but the tensor is "
                f"{describe(like)}; they must match"
            )


def all_gather(
    tensor_list: list[Any], tensor: Any, group: Any = None, async_op: bool = False
) -> Work | None:
    """Every rank's ``tensor`` into ``tensor_list[rank]``, on every rank."""
    tensor_list = check_tensor_list(tensor_list, "tensor_list")
    check_tensor(tensor, "tensor")
    pg = _group_or_warn(group, "all_gather")
    if pg is None:
        return None
    _check_list(tensor_list, tensor, pg.size(), "all_gather", "tensor_list")
    check_collective(pg, "all_gather", [tensor])
    send = readable(tensor, pg.backend.name, "all_gather")
    recv = tensor._device.xp.empty((pg.size(), *send.shape), dtype=send.dtype)
    pending = pg.backend.all_gather(send, recv)
    steps = [lambda: split_into(recv, tensor_list, "all_gather")]
    return _start(pg, "all_gather", pending, steps, recv.nbytes, async_op)


def all_gather_into_tensor(
    output_tensor: Any, input_tensor: Any, group: Any = None, async_op: bool = False
) -> Work | None:
    """Every rank's ``input_tensor`` concatenated (or stacked) into ``output_tensor``."""
    check_tensor(output_tensor, "output_tensor")
    check_tensor(input_tensor, "input_tensor")
    pg = _group_or_warn(group, "all_gather_into_tensor")
    if pg is None:
        return None
    if output_tensor.numel() != pg.size() * input_tensor.numel():
        raise ValueError(
            "output tensor size must be equal to world_size times input tensor size "
            f"(output {list(output_tensor.shape)}, input {list(input_tensor.shape)}, "
            f"world_size {pg.size()})"
        )
    _check_dtypes(output_tensor, input_tensor, "all_gather_into_tensor")
    check_collective(pg, "all_gather_into_tensor", [input_tensor, output_tensor])
    send = readable(input_tensor, pg.backend.name, "all_gather_into_tensor")
    recv, write_back = staged(output_tensor, pg.backend.name, "all_gather_into_tensor")
    pending = pg.backend.all_gather(send, recv)
    return _start(pg, "all_gather_into_tensor", pending, [write_back], recv.nbytes, async_op)


def _check_dtypes(output: Any, input_: Any, op: str) -> None:
    if output.dtype != input_.dtype:
        raise ValueError(
            f"{op}: output tensor is {output.dtype} but input tensor is {input_.dtype}; "
            "they must match"
        )


def reduce_scatter(
    output: Any,
    input_list: list[Any],
    op: ReduceOp = ReduceOp.SUM,
    group: Any = None,
    async_op: bool = False,
) -> Work | None:
    """Reduce ``input_list[r]`` across the group into rank ``r``'s ``output``."""
    check_tensor(output, "output")
    input_list = check_tensor_list(input_list, "input_list")
    pg = _group_or_warn(group, "reduce_scatter")
    if pg is None:
        return None
    _check_list(input_list, output, pg.size(), "reduce_scatter", "input_list")
    _check_op(op, output, "reduce_scatter")
    check_collective(pg, "reduce_scatter", [output], op=op.name)
    send = joined(input_list, pg.backend.name, "reduce_scatter")
    recv, write_back = staged(output, pg.backend.name, "reduce_scatter")
    steps = [_divider(recv, pg.size())] if op is ReduceOp.AVG else []
    pending = pg.backend.reduce_scatter(send, recv, op)
    return _start(pg, "reduce_scatter", pending, [*steps, write_back], send.nbytes, async_op)


def reduce_scatter_tensor(
    output: Any,
    input: Any,
    op: ReduceOp = ReduceOp.SUM,
    group: Any = None,
    async_op: bool = False,
) -> Work | None:
    """Reduce ``input`` across the group; rank ``r`` gets its ``r``-th chunk in ``output``."""
    check_tensor(output, "output")
    check_tensor(input, "input")
    pg = _group_or_warn(group, "reduce_scatter_tensor")
    if pg is None:
        return None
    if input.numel() != pg.size() * output.numel():
        raise ValueError(
            "input tensor must be the same size as output size times world size "
            f"(input {list(input.shape)}, output {list(output.shape)}, world_size {pg.size()})"
        )
    _check_dtypes(output, input, "reduce_scatter_tensor")
    _check_op(op, output, "reduce_scatter_tensor")
    check_collective(pg, "reduce_scatter_tensor", [input, output], op=op.name)
    send = readable(input, pg.backend.name, "reduce_scatter_tensor")
    recv, write_back = staged(output, pg.backend.name, "reduce_scatter_tensor")
    steps = [_divider(recv, pg.size())] if op is ReduceOp.AVG else []
    pending = pg.backend.reduce_scatter(send, recv, op)
    return _start(pg, "reduce_scatter_tensor", pending, [*steps, write_back], send.nbytes, async_op)


def gather(
    tensor: Any,
    gather_list: list[Any] | None = None,
    dst: int | None = None,
    group: Any = None,
    async_op: bool = False,
    group_dst: int | None = None,
) -> Work | None:
    """Every rank's ``tensor`` into ``gather_list`` on rank ``dst`` (default 0)."""
    check_tensor(tensor, "tensor")
    pg = _group_or_warn(group, "gather")
    if pg is None:
        return None
    root = _root(pg, dst, group_dst, 0)
    here = pg.rank() == root
    if here:
        if not gather_list:
            raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
        gather_list = check_tensor_list(gather_list, "gather_list")
        _check_list(gather_list, tensor, pg.size(), "gather", "gather_list")
    elif gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    check_collective(pg, "gather", [tensor], dst=pg.ranks[root])
    send = readable(tensor, pg.backend.name, "gather")
    recv = tensor._device.xp.empty((pg.size(), *send.shape), dtype=send.dtype) if here else None
    pending = pg.backend.gather(send, recv, root)
    steps = [lambda: split_into(recv, gather_list, "gather")] if here else []
    return _start(pg, "gather", pending, steps, send.nbytes, async_op)


def scatter(
    tensor: Any,
    scatter_list: list[Any] | None = None,
    src: int | None = None,
    group: Any = None,
    async_op: bool = False,
    group_src: int | None = None,
) -> Work | None:
    """``scatter_list[r]`` of rank ``src`` (default 0) into rank ``r``'s ``tensor``."""
    check_tensor(tensor, "tensor")
    pg = _group_or_warn(group, "scatter")
    if pg is None:
        return None
    root = _root(pg, src, group_src, 0)
    here = pg.rank() == root
    if here:
        if not scatter_list:
            raise ValueError("Argument ``scatter_list`` must be specified on source rank.")
        scatter_list = check_tensor_list(scatter_list, "scatter_list")
        _check_list(scatter_list, tensor, pg.size(), "scatter", "scatter_list")
    elif scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    check_collective(pg, "scatter", [tensor], src=pg.ranks[root])
    send = joined(scatter_list, pg.backend.name, "scatter") if here else None
    recv, write_back = staged(tensor, pg.backend.name, "scatter")
    pending = pg.backend.scatter(send, recv, root)
    return _start(pg, "scatter", pending, [write_back], recv.nbytes, async_op)


def _split_counts(tensor: Any, splits: list[int] | None, size: int, name: str) -> list[int]:
    """Element counts per rank of ``tensor`` cut along dim 0 (equal parts by default)."""
    rows = tensor.shape[0] if tensor.dim() else 1
    row_numel = tensor.numel() // rows if rows else 0
    if splits is None or len(splits) == 0:
        if rows % size:
            raise ValueError(
                f"all_to_all_single: {name}'s first dimension ({rows}) must divide evenly by "
                f"the world size ({size}) when no split sizes are given"
            )
        return [rows // size * row_numel] * size
    splits = [int(s) for s in splits]
    if len(splits) != size or sum(splits) != rows:
        raise ValueError(
            f"all_to_all_single: {name}_split_sizes {splits} must have one entry per rank "
            f"({size}) summing to {name}'s first dimension ({rows})"
        )
    return [s * row_numel for s in splits]


def all_to_all_single(
    output: Any,
    input: Any,
    output_split_sizes: list[int] | None = None,
    input_split_sizes: list[int] | None = None,
    group: Any = None,
    async_op: bool = False,
) -> Work | None:
    """Split ``input`` along dim 0, send part ``r`` to rank ``r``; the parts received from
    every rank, in rank order, fill ``output``."""
    check_tensor(output, "output")
    check_tensor(input, "input")
    pg = _group_or_warn(group, "all_to_all_single")
    if pg is None:
        return None
    _check_dtypes(output, input, "all_to_all_single")
    send_counts = _split_counts(input, input_split_sizes, pg.size(), "input")
    recv_counts = _split_counts(output, output_split_sizes, pg.size(), "output")
    check_collective(pg, "all_to_all_single", [], dtype=str(input.dtype))
    send = readable(input, pg.backend.name, "all_to_all_single").reshape(-1)
    recv, write_back = staged(output, pg.backend.name, "all_to_all_single")
    pending = pg.backend.all_to_all(send, send_counts, recv.reshape(-1), recv_counts)
    return _start(pg, "all_to_all_single", pending, [write_back], send.nbytes, async_op)


def barrier(
    group: Any = None, async_op: bool = False, device_ids: list[int] | None = None
) -> Work | None:
    """Wait until every rank of the group has reached its barrier."""
    pg = _group_or_warn(group, "barrier")
    if pg is None:
        return None
    check_collective(pg, "barrier", [])
    return _start(pg, "barrier", pg.backend.barrier(), [], 0, async_op)


def _peer(pg: ProcessGroup, global_rank: int | None, group_rank: int | None, role: str) -> int:
    peer = _root(pg, global_rank, group_rank, None)
    if peer == pg.rank():
        raise ValueError(
            f"Invalid {role} rank: should not be the same as the rank of the current process."
        )
    return peer


def isend(
    tensor: Any,
    dst: int | None = None,
    group: Any = None,
    tag: int = 0,
    group_dst: int | None = None,
) -> Work | None:
    """Start sending ``tensor`` to rank ``dst``; returns a Work."""
    check_tensor(tensor, "tensor")
    pg = _group_or_warn(group, "isend")
    if pg is None:
        return completed_work("isend")
    peer = _peer(pg, dst, group_dst, "destination")
    array = readable(tensor, pg.backend.name, "send")
    return _start(pg, "send", pg.backend.send(array, peer, int(tag)), [], array.nbytes, True)


def irecv(
    tensor: Any,
    src: int | None = None,
    group: Any = None,
    tag: int = 0,
    group_src: int | None = None,
) -> Work | None:
    """Start receiving into ``tensor`` from rank ``src`` (any rank when None); returns a Work."""
    return _receive(tensor, src, group, tag, group_src)[0]


def _receive(
    tensor: Any, src: Any, group: Any, tag: int, group_src: Any
) -> tuple[Work, Callable[[], int]]:
    check_tensor(tensor, "tensor")
    pg = _group_or_warn(group, "recv")
    if pg is None:
        return completed_work("recv"), lambda: -1
    peer = None if src is None and group_src is None else _peer(pg, src, group_src, "source")
    array, write_back = staged(tensor, pg.backend.name, "recv")
    pending, status = pg.backend.recv(array, peer, int(tag))
    work = _start(pg, "recv", pending, [write_back], array.nbytes, True)
    assert work is not None

    def sender() -> int:
        source = peer if status is None else status.Get_source()
        return pg.ranks[source]

    return work, sender


def send(
    tensor: Any,
    dst: int | None = None,
    group: Any = None,
    tag: int = 0,
    group_dst: int | None = None,
) -> None:
    """Send ``tensor`` to rank ``dst`` and wait until it has been sent."""
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(
    tensor: Any,
    src: int | None = None,
    group: Any = None,
    tag: int = 0,
    group_src: int | None = None,
) -> int:
    """Receive into ``tensor`` from rank ``src`` (any rank when None); returns the sender's
    global rank (-1 when this rank is outside ``group``)."""
    work, sender = _receive(tensor, src, group, tag, group_src)
    work.wait()
    return sender()
