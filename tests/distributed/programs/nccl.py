"""Rank program for the nccl backend on CUDA tensors (a world of one or more GPUs): all_reduce
of contiguous and non-contiguous tensors with each ReduceOp, async Work, broadcast,
all_gather_into_tensor, reduce_scatter_tensor, barrier, and the refusal of CPU tensors."""

from __future__ import annotations

import numpy as np

import tensorkit as tk
import tensorkit.distributed as dist
from tensorkit.distributed import ReduceOp

dist.init_process_group("nccl")
RANK, WORLD = dist.get_rank(), dist.get_world_size()
assert dist.get_backend() == "nccl"
VALUES = np.arange(12, dtype=np.float32).reshape(3, 4) + 1


def rank_values(rank: int) -> np.ndarray:
    return VALUES * (rank + 1)


everyone = np.stack([rank_values(r) for r in range(WORLD)])
wants = {
    ReduceOp.SUM: everyone.sum(0),
    ReduceOp.AVG: everyone.sum(0) / WORLD,
    ReduceOp.PRODUCT: everyone.prod(0),
    ReduceOp.MIN: everyone.min(0),
    ReduceOp.MAX: everyone.max(0),
}
for op, want in wants.items():
    for contiguous in (True, False):
        base = tk.tensor(
            rank_values(RANK) if contiguous else rank_values(RANK).T.copy(), device="cuda"
        )
        t = base if contiguous else base.t()
        dist.all_reduce(t, op=op)
        np.testing.assert_allclose(t.cpu().numpy(), want, rtol=1e-6, err_msg=f"{op} {contiguous}")
t = tk.tensor(rank_values(RANK), device="cuda")
work = dist.all_reduce(t, async_op=True)
assert work.wait() and work.is_completed()
np.testing.assert_allclose(t.cpu().numpy(), wants[ReduceOp.SUM], rtol=1e-6)
t = tk.tensor(rank_values(RANK), device="cuda")
dist.broadcast(t, src=0)
np.testing.assert_array_equal(t.cpu().numpy(), rank_values(0))
out = tk.zeros(WORLD * 3, 4, device="cuda")
dist.all_gather_into_tensor(out, tk.tensor(rank_values(RANK), device="cuda"))
np.testing.assert_array_equal(out.cpu().numpy(), everyone.reshape(WORLD * 3, 4))
part = tk.zeros(3, 4, device="cuda")
dist.reduce_scatter_tensor(
    part, tk.tensor(np.concatenate([rank_values(RANK)] * WORLD), device="cuda")
)
np.testing.assert_allclose(part.cpu().numpy(), wants[ReduceOp.SUM], rtol=1e-6)
dist.barrier()
try:
    dist.all_reduce(tk.ones(2))
except RuntimeError as error:
    assert "Tensors must be CUDA and dense for the nccl backend" in str(error), error
else:
    raise AssertionError("a CPU tensor on the nccl backend must raise")
dist.destroy_process_group()
print(f"rank {RANK} of {WORLD}: all checks passed", flush=True)
