"""Smoke test of the nn benchmark: a quick tensorkit-only run prints every workload."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench" / "bench_nn.py"
WORKLOADS = (
    "m  MLP step, nn.Linear 784-512-256-10",
    "mn hand-written NumPy step",
    "p  peak memory in one MLP step",
    "a  CNN train step",
    "b  Transformer layer step",
    "c  DataLoader, 2 workers",
)


def test_quick_run_prints_every_workload() -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--only", "tensorkit", "--markdown"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert out.startswith("workload"), out[:500]
    assert "| workload | tensorkit | torch |" in out
    for name in WORKLOADS:
        assert name in out, f"{name!r} missing from:\n{out}"
    assert "BLAS in tensorkit child" in out
    assert "ERROR" not in out
