"""The "mpi" backend: mpi4py's nonblocking collectives on the tensors' own NumPy buffers."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._reduce_op import ReduceOp

__all__ = ["MpiBackend", "mpi_module"]


def mpi_module() -> Any:
    """mpi4py's ``MPI`` (MPI starts on first use), or a RuntimeError saying what to install."""
    try:
        from mpi4py import MPI
    except ImportError as error:
        raise RuntimeError(
            "Distributed package doesn't have MPI built in: the mpi backend needs mpi4py and "
            "an MPI library (pip install 'tensorkit[distributed]' installs mpich and mpi4py)"
        ) from error
    return MPI


class _Requests:
    """MPI requests of one operation, tested and waited on together."""

    def __init__(self, mpi: Any, requests: list[Any]) -> None:
        self._mpi = mpi
        self._requests = requests

    def test(self) -> bool:
        return bool(self._mpi.Request.Testall(self._requests))

    def wait(self) -> None:
        self._mpi.Request.Waitall(self._requests)


class MpiBackend:
    """Collectives of one communicator; every buffer is a C-contiguous NumPy array."""

    name = "mpi"

    def __init__(self, comm: Any) -> None:
        self.mpi = mpi_module()
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()

    def _op(self, op: ReduceOp, dtype: np.dtype) -> Any:
        mpi = self.mpi
        if dtype == np.bool_:  # MPI reduces booleans only with logical operators
            logical = {ReduceOp.PRODUCT: mpi.LAND, ReduceOp.MIN: mpi.LAND}
            return logical.get(op, mpi.LOR)
        table = {
            ReduceOp.SUM: mpi.SUM,
            ReduceOp.AVG: mpi.SUM,  # divided by the world size once the sum arrives
            ReduceOp.PRODUCT: mpi.PROD,
            ReduceOp.MIN: mpi.MIN,
            ReduceOp.MAX: mpi.MAX,
        }
        return table[op]

    def _done(self, *requests: Any) -> _Requests:
        return _Requests(self.mpi, list(requests))

    def all_reduce(self, buf: np.ndarray, op: ReduceOp) -> _Requests:
        return self._done(self.comm.Iallreduce(self.mpi.IN_PLACE, buf, self._op(op, buf.dtype)))

    def broadcast(self, buf: np.ndarray, root: int) -> _Requests:
        return self._done(self.comm.Ibcast(buf, root=root))

    def reduce(self, buf: np.ndarray, op: ReduceOp, root: int) -> _Requests:
        mpi_op = self._op(op, buf.dtype)
        if self.rank == root:
            return self._done(self.comm.Ireduce(self.mpi.IN_PLACE, buf, mpi_op, root=root))
        return self._done(self.comm.Ireduce(buf, None, mpi_op, root=root))

    def all_gather(self, send: np.ndarray, recv: np.ndarray) -> _Requests:
        return self._done(self.comm.Iallgather(send, recv))

    def reduce_scatter(self, send: np.ndarray, recv: np.ndarray, op: ReduceOp) -> _Requests:
        mpi_op = self._op(op, send.dtype)
        return self._done(self.comm.Ireduce_scatter_block(send, recv, mpi_op))

    def gather(self, send: np.ndarray, recv: np.ndarray | None, root: int) -> _Requests:
        return self._done(self.comm.Igather(send, recv, root=root))

    def scatter(self, send: np.ndarray | None, recv: np.ndarray, root: int) -> _Requests:
        return self._done(self.comm.Iscatter(send, recv, root=root))

    def all_to_all(
        self, send: np.ndarray, send_counts: list[int], recv: np.ndarray, recv_counts: list[int]
    ) -> _Requests:
        send_spec = [send, (send_counts, _offsets(send_counts))]
        recv_spec = [recv, (recv_counts, _offsets(recv_counts))]
        return self._done(self.comm.Ialltoallv(send_spec, recv_spec))

    def barrier(self) -> _Requests:
        return self._done(self.comm.Ibarrier())

    def send(self, buf: np.ndarray, dst: int, tag: int) -> _Requests:
        return self._done(self.comm.Isend(buf, dest=dst, tag=tag))

    def recv(self, buf: np.ndarray, src: int | None, tag: int) -> tuple[_Requests, Any]:
        status = self.mpi.Status()
        source = self.mpi.ANY_SOURCE if src is None else src
        request = self.comm.Irecv(buf, source=source, tag=tag)
        return _StatusRequests(self.mpi, request, status), status

    def split(self, color: int | None, key: int) -> Any:
        """A sub-communicator of the ranks with the same ``color`` (None: not a member)."""
        return self.comm.Split(self.mpi.UNDEFINED if color is None else color, key)

    def abort(self, code: int) -> None:
        self.comm.Abort(code)

    def free(self) -> None:
        if self.comm != self.mpi.COMM_WORLD:
            self.comm.Free()


class _StatusRequests(_Requests):
    """A receive, whose status (the sender's rank) is filled in when it completes."""

    def __init__(self, mpi: Any, request: Any, status: Any) -> None:
        super().__init__(mpi, [request])
        self._status = status

    def test(self) -> bool:
        return bool(self._requests[0].Test(self._status))

    def wait(self) -> None:
        self._requests[0].Wait(self._status)


def _offsets(counts: list[int]) -> list[int]:
    return [int(x) for x in np.concatenate([[0], np.cumsum(counts)[:-1]])]
