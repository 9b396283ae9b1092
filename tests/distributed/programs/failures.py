"""Rank program for the failure tests: ``failures.py MODE`` misbehaves as MODE says."""

from __future__ import annotations

import datetime
import os
import sys
import time

import tensorkit as tk
import tensorkit.distributed as dist

MODE = sys.argv[1]
timeout = datetime.timedelta(seconds=0.5) if MODE == "timeout" else None
dist.init_process_group("mpi", timeout=timeout)
RANK = dist.get_rank()
print(f"rank {RANK} started", flush=True)

if MODE == "raise":
    if RANK == 1:
        raise ValueError("boom on rank 1")
    dist.all_reduce(tk.ones(3))  # the others wait here until the launcher ends them
elif MODE == "exit":
    if RANK == 0:
        sys.exit(3)
    dist.barrier()
elif MODE == "shapes":
    dist.all_reduce(tk.zeros(RANK + 2, 3))
elif MODE == "dtypes":
    dist.broadcast(tk.zeros(4, dtype=tk.float32 if RANK == 0 else tk.int64), src=0)
elif MODE == "timeout":
    if RANK == 1:
        time.sleep(5)  # far past rank 0's timeout; rank 0's error ends this rank first
    dist.all_reduce(tk.ones(3))
elif MODE == "ok":
    names = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")
    print("env " + " ".join(f"{name}={os.environ[name]}" for name in names), flush=True)
    dist.barrier()
print(f"rank {RANK} finished", flush=True)
