"""``tk.distributed``: torch.distributed's process groups and collectives on MPI and NCCL.

The "mpi" backend runs mpi4py's nonblocking collectives on CPU tensors' own NumPy buffers;
"nccl" runs CuPy's NCCL bindings on CUDA tensors, its unique id broadcast over MPI. Ranks are
the processes MPI started: ``python -m tensorkit.distributed.run --nproc-per-node N
script.py``, or any cluster's ``mpiexec``/``srun``. See docs/distributed.md.
"""

from ._collectives import (
    all_gather,
    all_gather_into_tensor,
    all_reduce,
    all_to_all_single,
    barrier,
    broadcast,
    gather,
    irecv,
    isend,
    recv,
    reduce,
    reduce_scatter,
    reduce_scatter_tensor,
    scatter,
    send,
)
from ._group import (
    GroupMember,
    ProcessGroup,
    default_pg_timeout,
    destroy_process_group,
    get_backend,
    get_process_group_ranks,
    get_rank,
    get_world_size,
    init_process_group,
    is_available,
    is_initialized,
    is_mpi_available,
    is_nccl_available,
    new_group,
)
from ._reduce_op import ReduceOp
from ._work import DistBackendError, Work

__all__ = [
    "DistBackendError",
    "GroupMember",
    "ProcessGroup",
    "ReduceOp",
    "Work",
    "all_gather",
    "all_gather_into_tensor",
    "all_reduce",
    "all_to_all_single",
    "barrier",
    "broadcast",
    "default_pg_timeout",
    "destroy_process_group",
    "gather",
    "get_backend",
    "get_process_group_ranks",
    "get_rank",
    "get_world_size",
    "init_process_group",
    "irecv",
    "is_available",
    "is_initialized",
    "is_mpi_available",
    "is_nccl_available",
    "isend",
    "new_group",
    "recv",
    "reduce",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "scatter",
    "send",
]
