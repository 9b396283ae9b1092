"""The nccl backend on a GPU: a world of one rank per GPU (at least one) through the launcher.
Skipped without a GPU or without libnccl; scripts/gpu_check.sh runs it where a GPU is lent."""

from __future__ import annotations

import pytest
from dist_launch import assert_passed, launch

import tensorkit as tk
import tensorkit.distributed as dist

pytestmark = [
    pytest.mark.xdist_group("distributed"),
    pytest.mark.skipif(not tk.cuda.is_available(), reason="no CUDA GPU"),
    pytest.mark.skipif(
        not dist.is_nccl_available(), reason="no libnccl (pip install 'tensorkit[nccl]')"
    ),
]


def test_nccl_collectives_on_every_gpu() -> None:
    nproc = max(1, min(tk.cuda.device_count(), 2))
    run = launch("nccl.py", nproc, timeout=120)
    assert_passed(run, nproc)
