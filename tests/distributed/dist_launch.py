"""Start rank programs (tests/distributed/programs/) through the launcher, bounded in time."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = Path(__file__).resolve().parent / "programs"

pytest.importorskip("mpi4py", reason="tensorkit.distributed's tests need mpi4py (and mpich)")


@dataclass
class Launched:
    returncode: int
    stdout: str
    stderr: str
    seconds: float


def launch(
    program: str | list[str], nproc: int, timeout: float = 60, env: dict[str, str] | None = None
) -> Launched:
    """Run ``python -m tensorkit.distributed.run --nproc-per-node nproc`` on a program of
    PROGRAMS (or on the given arguments), capturing its output."""
    target = [str(PROGRAMS / program)] if isinstance(program, str) else program
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", **(env or {})}
    start = time.monotonic()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tensorkit.distributed.run",
            "--nproc-per-node",
            str(nproc),
            *target,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=environment,
        cwd=ROOT,
    )
    return Launched(result.returncode, result.stdout, result.stderr, time.monotonic() - start)


def assert_passed(run: Launched, nproc: int) -> None:
    assert run.returncode == 0, run.stdout + run.stderr
    for rank in range(nproc):
        assert f"rank {rank} of {nproc}: all checks passed" in run.stdout, run.stdout
