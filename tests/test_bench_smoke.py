"""Smoke test of the core benchmark: a quick tensorkit-only run prints every workload."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench" / "bench_core.py"
WORKLOADS = (
    "1a tiny-op chain, no_grad",
    "1b tiny-op chain, recording",
    "1c tiny-op chain, fwd+bwd",
    "1n NumPy floor, same chain",
    "2  MLP train step",
    "2n NumPy floor, same step",
    "3  import time",
    "3n import numpy alone",
    "4  peak RSS growth",
    "4b whole-child peak RSS",
    "5a x**2",
    "5b x**3",
    "5c x*x",
)


def test_quick_run_prints_every_workload() -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--only", "tensorkit", "--markdown"],
        capture_output=True,
        text=True,
        timeout=300,
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
