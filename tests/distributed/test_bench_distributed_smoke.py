"""Smoke run of bench/bench_distributed.py: it launches its ranks and prints its rows, the
floor on these cores and the per-rank view's share."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mpi4py", reason="tensorkit.distributed's tests need mpi4py (and mpich)")
pytestmark = pytest.mark.xdist_group("distributed")

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_distributed.py"


def test_quick_run_prints_both_workloads() -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--quick"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "| all_reduce 16 MB float32, 2 ranks |" in proc.stdout
    assert "x bandwidth |" in proc.stdout and "x time |" in proc.stdout
    assert "hidden) | one process, same batch:" in proc.stdout
    assert "| one process beside another: " in proc.stdout
    floor = re.search(
        r"copies into the buckets [\d.]+ = [\d.]+ ms, ([\d.]+)x one process", proc.stdout
    )
    assert floor and float(floor.group(1)) > 1.0, proc.stdout
    share = re.search(r"(\d+)% of the collectives' time in flight overlapped backward", proc.stdout)
    assert share and 0 <= int(share.group(1)) <= 100, proc.stdout
