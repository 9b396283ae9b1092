"""Smoke test of the tk.jit benchmark: a quick tensorkit-only run prints every workload."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench" / "bench_jit.py"


def test_quick_run_prints_every_workload_and_the_compile_times() -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--only", "tensorkit", "--markdown"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-3000:]
    labels = ("1  100 elementwise ops", "2  MLP", "3  CNN step", "4  Transformer layer", "5a gelu")
    for label in labels:
        assert label in out, f"{label!r} missing from:\n{out}"
    assert "| workload | torch | numpy | tk eager | tk compiled | torch.compile |" in out
    assert "tk.compile to the first replay" in out and "cache hit's overhead" in out
    assert "ERROR" not in out
