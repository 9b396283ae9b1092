"""The "nccl" backend: CuPy's NCCL bindings on CUDA arrays, the unique id broadcast over MPI.

Every operation is queued on the current CUDA stream; its pending handle is a CUDA event
recorded right after it, so ``Work.is_completed`` and the timeout poll never block the host.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np

from ._mpi import MpiBackend
from ._reduce_op import ReduceOp

__all__ = ["NcclBackend"]

_UNIQUE_ID_BYTES = 128  # NCCL_UNIQUE_ID_BYTES: cupy's get_unique_id() is a tuple of as many


def nccl_module() -> Any:
    """CuPy's ``cupy.cuda.nccl`` when it loaded libnccl, else None (never raises)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # CuPy warns when libnccl is missing
            from cupy.cuda import nccl
    except Exception:
        return None
    return nccl if getattr(nccl, "available", False) else None


class _Event:
    """A CUDA event recorded after an NCCL call on the stream it was queued on."""

    def __init__(self, cupy: Any, stream: Any) -> None:
        self._event = cupy.cuda.Event(block=False, disable_timing=True)
        self._event.record(stream)

    def test(self) -> bool:
        return bool(self._event.done)

    def wait(self) -> None:
        self._event.synchronize()


class NcclBackend:
    """Collectives of one NCCL communicator over the ranks of ``bootstrap``'s MPI one."""

    name = "nccl"

    def __init__(self, bootstrap: MpiBackend, device_id: Any = None) -> None:
        from ..cuda import device_count, is_available

        if not is_available():
            raise RuntimeError(
                "ProcessGroupNCCL is only supported with GPUs, no GPUs found! "
                "(tk.cuda.is_available() is False; use backend='mpi' for CPU tensors)"
            )
        nccl = nccl_module()
        if nccl is None:
            raise RuntimeError(
                "Distributed package doesn't have NCCL built in: CuPy's NCCL bindings could "
                "not load libnccl (pip install 'tensorkit[nccl]', which installs "
                "nvidia-nccl-cu12)"
            )
        import cupy

        self.cupy = cupy
        self.nccl = nccl
        self.bootstrap = bootstrap
        self.rank = bootstrap.rank
        self.size = bootstrap.size
        local_rank = int(os.environ.get("LOCAL_RANK", bootstrap.rank))
        self.device = _device_index(device_id, local_rank % device_count())
        cupy.cuda.Device(self.device).use()
        unique_id = np.zeros(_UNIQUE_ID_BYTES, dtype=np.int64)
        if self.rank == 0:
            unique_id[:] = nccl.get_unique_id()
        bootstrap.broadcast(unique_id, 0).wait()
        self.comm = nccl.NcclCommunicator(self.size, tuple(int(v) for v in unique_id), self.rank)

    def _stream(self) -> Any:
        return self.cupy.cuda.get_current_stream()

    def _queued(self) -> _Event:
        return _Event(self.cupy, self._stream())

    def _type(self, array: Any) -> tuple[Any, int]:
        """NCCL's datatype for ``array``'s elements and the element count it sends."""
        nccl = self.nccl
        table = {
            "int8": nccl.NCCL_INT8,
            "uint8": nccl.NCCL_UINT8,
            "bool": nccl.NCCL_UINT8,
            "int32": nccl.NCCL_INT32,
            "int64": nccl.NCCL_INT64,
            "float16": nccl.NCCL_FLOAT16,
            "float32": nccl.NCCL_FLOAT32,
            "float64": nccl.NCCL_FLOAT64,
            "complex64": nccl.NCCL_FLOAT32,  # as pairs of reals (SUM and AVG only)
            "complex128": nccl.NCCL_FLOAT64,
        }
        name = str(array.dtype)
        if name not in table:
            raise TypeError(f"the nccl backend has no NCCL datatype for {name} tensors")
        count = array.size * (2 if array.dtype.kind == "c" else 1)
        return table[name], count

    def _op(self, op: ReduceOp, dtype: Any) -> Any:
        nccl = self.nccl
        if dtype.kind == "c" and op is ReduceOp.PRODUCT:  # sent as pairs of reals
            raise ValueError(
                "the nccl backend does not support ReduceOp.PRODUCT on complex tensors"
            )
        if dtype == np.bool_:
            return nccl.NCCL_MIN if op in (ReduceOp.PRODUCT, ReduceOp.MIN) else nccl.NCCL_MAX
        table = {
            ReduceOp.SUM: nccl.NCCL_SUM,
            ReduceOp.AVG: nccl.NCCL_SUM,  # divided by the world size once the sum arrives
            ReduceOp.PRODUCT: nccl.NCCL_PROD,
            ReduceOp.MIN: nccl.NCCL_MIN,
            ReduceOp.MAX: nccl.NCCL_MAX,
        }
        return table[op]

    def all_reduce(self, buf: Any, op: ReduceOp) -> _Event:
        kind, count = self._type(buf)
        ptr = buf.data.ptr
        self.comm.allReduce(ptr, ptr, count, kind, self._op(op, buf.dtype), self._stream().ptr)
        return self._queued()

    def broadcast(self, buf: Any, root: int) -> _Event:
        kind, count = self._type(buf)
        self.comm.bcast(buf.data.ptr, count, kind, root, self._stream().ptr)
        return self._queued()

    def reduce(self, buf: Any, op: ReduceOp, root: int) -> _Event:
        kind, count = self._type(buf)
        ptr = buf.data.ptr
        mpi_op = self._op(op, buf.dtype)
        self.comm.reduce(ptr, ptr, count, kind, mpi_op, root, self._stream().ptr)
        return self._queued()

    def all_gather(self, send: Any, recv: Any) -> _Event:
        kind, count = self._type(send)
        self.comm.allGather(send.data.ptr, recv.data.ptr, count, kind, self._stream().ptr)
        return self._queued()

    def reduce_scatter(self, send: Any, recv: Any, op: ReduceOp) -> _Event:
        kind, count = self._type(recv)
        nccl_op = self._op(op, send.dtype)
        self.comm.reduceScatter(
            send.data.ptr, recv.data.ptr, count, kind, nccl_op, self._stream().ptr
        )
        return self._queued()

    def _exchange(self, sends: list[tuple[Any, int]], recvs: list[tuple[Any, int]]) -> _Event:
        """Point-to-point sends and receives as one NCCL group (gather, scatter, all-to-all)."""
        stream = self._stream().ptr
        self.nccl.groupStart()
        try:
            for array, peer in sends:
                if array.size:
                    kind, count = self._type(array)
                    self.comm.send(array.data.ptr, count, kind, peer, stream)
            for array, peer in recvs:
                if array.size:
                    kind, count = self._type(array)
                    self.comm.recv(array.data.ptr, count, kind, peer, stream)
        finally:
            self.nccl.groupEnd()
        return self._queued()

    def gather(self, send: Any, recv: Any | None, root: int) -> _Event:
        recvs = [] if recv is None else [(recv[r], r) for r in range(self.size)]
        return self._exchange([(send, root)], recvs)

    def scatter(self, send: Any | None, recv: Any, root: int) -> _Event:
        sends = [] if send is None else [(send[r], r) for r in range(self.size)]
        return self._exchange(sends, [(recv, root)])

    def all_to_all(
        self, send: Any, send_counts: list[int], recv: Any, recv_counts: list[int]
    ) -> _Event:
        send_parts = _split(send, send_counts)
        recv_parts = _split(recv, recv_counts)
        return self._exchange(
            [(part, r) for r, part in enumerate(send_parts)],
            [(part, r) for r, part in enumerate(recv_parts)],
        )

    def barrier(self) -> _Event:
        token = self.cupy.zeros(1, dtype=self.cupy.float32)
        return self.all_reduce(token, ReduceOp.SUM)

    def send(self, buf: Any, dst: int, tag: int) -> _Event:
        return self._exchange([(buf, dst)], [])

    def recv(self, buf: Any, src: int | None, tag: int) -> tuple[_Event, None]:
        if src is None:
            raise RuntimeError("the nccl backend cannot receive from any source: give src")
        return self._exchange([], [(buf, src)]), None

    def abort(self, code: int) -> None:
        self.comm.abort()
        self.bootstrap.abort(code)

    def free(self) -> None:
        self.comm.destroy()
        self.bootstrap.free()


def _split(flat: Any, counts: list[int]) -> list[Any]:
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(int)
    return [flat[offsets[i] : offsets[i + 1]] for i in range(len(counts))]


def _device_index(device_id: Any, default: int) -> int:
    if device_id is None:
        return default
    index = getattr(device_id, "index", device_id)
    return default if index is None else int(index)
