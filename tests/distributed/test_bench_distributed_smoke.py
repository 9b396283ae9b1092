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
    # The floor's sum and ratio are checked as arithmetic, not as timings (a loaded machine
    # can make any of its parts larger or smaller than the one-process step).
    floor = re.search(
        r"one process beside another ([\d.]+) \+ all-reduces alone ([\d.]+) \+ copies into the "
        r"buckets ([\d.]+) = ([\d.]+) ms, ([\d.]+)x one process",
        proc.stdout,
    )
    one = re.search(r"one process, same batch: ([\d.]+) ms", proc.stdout)
    assert floor and one, proc.stdout
    beside, reduces, copies, total, ratio = map(float, floor.groups())
    assert abs(beside + reduces + copies - total) <= 0.02, proc.stdout
    assert abs(total / float(one.group(1)) - ratio) <= 0.01, proc.stdout
    share = re.search(r"(\d+)% of the collectives' time in flight overlapped backward", proc.stdout)
    assert share and 0 <= int(share.group(1)) <= 100, proc.stdout
