"""Rank program: profile a DDP step and a few collectives, export this rank's Chrome trace to
``trace.py FOLDER`` (rank R writes FOLDER/rank_R.json)."""

from __future__ import annotations

import sys
from pathlib import Path

import tensorkit as tk
import tensorkit.distributed as dist
import tensorkit.nn as nn

dist.init_process_group("mpi")
RANK = dist.get_rank()
model = nn.parallel.DistributedDataParallel(nn.Linear(8, 4))
with tk.profiler.profile() as prof:
    model(tk.ones(2, 8)).sum().backward()
    dist.all_reduce(tk.ones(1000))
    dist.barrier()
assert [op["name"] for op in prof.distributed_ops] == ["all_reduce", "all_reduce", "barrier"]
prof.export_chrome_trace(str(Path(sys.argv[1]) / f"rank_{RANK}.json"))
dist.destroy_process_group()
print(f"rank {RANK} of 2: all checks passed")
