"""tk.distributed in one process (a world of one): misuse before init, backends, devices."""

from __future__ import annotations

import datetime

import pytest
from cuda_standin import install

import tensorkit as tk
import tensorkit.distributed as dist

pytest.importorskip("mpi4py", reason="tensorkit.distributed's tests need mpi4py (and mpich)")

NOT_INITIALIZED = (
    "Default process group has not been initialized, please make sure to call init_process_group."
)


@pytest.fixture
def world():
    dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=30))
    yield
    dist.destroy_process_group()


def test_before_init_every_call_names_init_process_group() -> None:
    assert dist.is_available() and dist.is_mpi_available() and not dist.is_initialized()
    for call in (dist.get_rank, dist.get_world_size, dist.barrier, dist.new_group):
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            call()
    with pytest.raises(ValueError) as raised:
        dist.all_reduce(tk.ones(2))
    assert str(raised.value) == NOT_INITIALIZED


def test_unknown_backend_and_disagreeing_world() -> None:
    with pytest.raises(ValueError, match="Invalid backend: 'gloo'"):
        dist.init_process_group("gloo")
    with pytest.raises(
        ValueError, match="got world_size=4, but MPI started this process as world_size 1"
    ):
        dist.init_process_group("mpi", world_size=4, rank=0)
    assert not dist.is_initialized()


@pytest.mark.skipif(tk.cuda.is_available(), reason="checks the error without a GPU")
def test_nccl_without_a_gpu_raises_clearly() -> None:
    with pytest.raises(
        RuntimeError, match="ProcessGroupNCCL is only supported with GPUs, no GPUs found!"
    ):
        dist.init_process_group("nccl")
    assert not dist.is_initialized()


def test_world_of_one(world: None) -> None:
    assert (dist.get_rank(), dist.get_world_size(), dist.get_backend()) == (0, 1, "mpi")
    t = tk.arange(6.0).reshape(2, 3).t()
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    assert t.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    assert repr(dist.ReduceOp.SUM) == "<RedOpType.SUM: 0>"
    with pytest.raises(ValueError, match="trying to initialize the default process group twice!"):
        dist.init_process_group("mpi")
    with pytest.raises(ValueError, match="new_group got rank 1, outside the world of 1 ranks"):
        dist.new_group([0, 1])
    with pytest.raises(TypeError, match="op must be a ReduceOp, got 'sum'"):
        dist.all_reduce(t, op="sum")


def test_a_cuda_tensor_on_the_mpi_backend_is_refused(world: None, monkeypatch) -> None:
    install(monkeypatch, numpy_backed=True)
    cuda = tk.ones(3, device="cuda")
    with pytest.raises(
        RuntimeError, match="all_reduce: the mpi backend takes CPU tensors, got a tensor on cuda:0"
    ):
        dist.all_reduce(cuda)


def test_collectives_are_profiled_with_bytes_and_group(world: None) -> None:
    t = tk.ones(256)
    with tk.profiler.profile() as prof:
        dist.all_reduce(t)
        dist.broadcast(t, src=0)
    ops = prof.distributed_ops
    assert [(op["name"], op["bytes"], op["group"]) for op in ops] == [
        ("all_reduce", 1024, "0"),
        ("broadcast", 1024, "0"),
    ]
    assert all(op["end_ns"] >= op["start_ns"] for op in ops)
    names = [r["name"] for r in prof.ranges()]
    assert "distributed.all_reduce" in names and "distributed.broadcast" in names
