"""Rank program: profile three DDP training steps of an MLP whose gradients fill several
buckets (after two unprofiled steps), and export this rank's Chrome trace to
``ddp_trace.py FOLDER`` (FOLDER/rank_R.json)."""

from __future__ import annotations

import sys
from pathlib import Path

import tensorkit as tk
import tensorkit.distributed as dist
import tensorkit.nn as nn

dist.init_process_group("mpi")
RANK = dist.get_rank()
tk.manual_seed(0)
mlp = nn.Sequential(
    nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 4)
)
model = nn.parallel.DistributedDataParallel(mlp, bucket_cap_mb=0.25)
assert len(model._buckets) >= 2, model._buckets
optimizer = tk.optim.SGD(model.parameters(), lr=0.01)
x = tk.randn(32, 64)


def step() -> None:
    optimizer.zero_grad()
    model(x).square().mean().backward()
    optimizer.step()


step()
step()  # its forward rebuilds the buckets (in the order the first backward made gradients)
with tk.profiler.profile() as prof:
    for _ in range(3):
        step()
prof.export_chrome_trace(str(Path(sys.argv[1]) / f"rank_{RANK}.json"))
dist.destroy_process_group()
print(f"rank {RANK} of 2: all checks passed")
