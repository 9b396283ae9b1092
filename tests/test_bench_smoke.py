"""Smoke tests of the benchmarks: a quick tensorkit-only run of the core benchmark prints
every workload; the GPU benchmark runs at tiny sizes on the CPU and refuses to run without
a GPU otherwise."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench" / "bench_core.py"
BENCH_GPU = BENCH.with_name("bench_gpu.py")
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
    "6a profiling off",
    "6b profiling on, default",
    "6c profiling on, record_shapes",
    "6d profiling on, record_memory",
    "6e profiling on, with_stack",
    "6f no-op op observer",
)
GPU_ROWS = ("g1 MLP train step", "g2 CNN train step", "g3 MLP step in profiler, events")
GPU_ROWS += ("g4 MLP step in profiler, synchronized", "g5 CNN step in profiler, events")
GPU_ROWS += ("g6 CNN step in profiler, synchronized", "g7 CNN step: op GPU time")
GPU_ROWS += ("g8 peak GPU memory",)


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


def run_gpu_bench(*flags: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(BENCH_GPU), *flags],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_gpu_bench_smoke_runs_both_libraries_on_the_cpu() -> None:
    pytest.importorskip("torch")
    proc = run_gpu_bench("--smoke", "--markdown")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert out.startswith("workload"), out[:500]
    for name in GPU_ROWS:
        assert f"| {name}" in out, f"{name!r} missing from:\n{out}"
    assert "device: cpu" in out and "ERROR" not in out
    losses = [line for line in out.splitlines() if line.startswith(("mlp loss", "cnn loss"))]
    assert len(losses) == 2
    for line in losses:  # the same weights, data and steps in both libraries
        tk_part, torch_part = line.split(": ", 1)[1].split("; ")
        assert tk_part.split(" ", 1)[1] == torch_part.split(" ", 1)[1], line


def test_gpu_bench_without_a_gpu_says_so() -> None:
    import tensorkit as tk

    if tk.cuda.is_available():
        pytest.skip("a GPU is present")
    proc = run_gpu_bench()
    assert proc.returncode == 2
    assert "no CUDA GPU" in proc.stderr and "--smoke" in proc.stderr
    assert proc.stdout == ""
