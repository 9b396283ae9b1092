"""Shared benchmark plumbing: child processes, timers, memory probes, machine facts, tables.

Nothing here imports tensorkit or torch, so the parent process stays free of both.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent

# Set on this machine to pin an older OpenBLAS kernel; the children run without them.
BLAS_ENV_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


# ------------------------------------------------------------------------ child processes
THREAD_ENV_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def child_env(threads: int | None = None, blas_spin: int | None = None) -> dict[str, str]:
    """The parent's environment minus the BLAS overrides, with the repo first on PYTHONPATH;
    ``threads`` caps the BLAS/OpenMP thread pools (None: the libraries' defaults);
    ``blas_spin`` sets OPENBLAS_THREAD_TIMEOUT (OpenBLAS's workers sleep after 2**N cycles
    without work instead of spinning ~0.1 s)."""
    env = {k: v for k, v in os.environ.items() if k not in BLAS_ENV_VARS}
    if threads is not None:
        env.update(dict.fromkeys(THREAD_ENV_VARS, str(threads)))
    if blas_spin is not None:
        env["OPENBLAS_THREAD_TIMEOUT"] = str(blas_spin)
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(REPO) if not path else f"{REPO}{os.pathsep}{path}"
    return env


def run_child(
    args: Sequence[str],
    threads: int | None = None,
    timeout: float = 600.0,
    blas_spin: int | None = None,
) -> dict[str, Any]:
    """Run ``python *args`` in the child environment; its last stdout line is a JSON object."""
    proc = subprocess.run(
        [sys.executable, *args],
        env=child_env(threads, blas_spin),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout)[-2000:]
        raise RuntimeError(f"child {' '.join(args)} exited {proc.returncode}:\n{tail}")
    return json.loads(lines[-1])


def time_import(module: str, runs: int) -> list[float]:
    """Seconds to ``import module`` in fresh interpreters (one discarded warm-up run), with
    bytecode cached as after an install: PYTHONDONTWRITEBYTECODE, which some environments
    set, would have every run compile the sources again."""
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    env = child_env()
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    times = []
    for i in range(runs + 1):
        proc = subprocess.run(
            [sys.executable, "-c", code],
            env=env,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        if i:
            times.append(float(proc.stdout.strip().splitlines()[-1]))
    return times


# ------------------------------------------------------------------------------- timers
def time_calls(
    fn: Callable[[], object],
    repeats: int,
    warmup: int,
    clock: Callable[[], int] = time.perf_counter_ns,
) -> list[float]:
    """Seconds of each of ``repeats`` calls of ``fn``, after ``warmup`` untimed calls: wall
    time, or the nanosecond ``clock`` given (``time.process_time_ns``: this process's CPU time,
    which other jobs on a busy machine do not skew for single-threaded host work)."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        start = clock()
        fn()
        samples.append((clock() - start) * 1e-9)
    return samples


def median(values: Sequence[float]) -> float:
    """The median as a float."""
    return float(statistics.median(values))


# ------------------------------------------------------------------------------- memory
def rss_bytes() -> int:
    """Current resident set size of this process."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE")


def reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS mark (and ru_maxrss) to the current RSS, where allowed."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return True


def peak_rss_bytes() -> int:
    """Peak resident set size so far (``ru_maxrss`` is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


# ------------------------------------------------------------------------ machine facts
def cpu_model() -> str:
    """The CPU model name from /proc/cpuinfo (or what platform knows)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info() -> dict[str, Any]:
    """CPU, core counts, OS, Python and NumPy versions, and the date."""
    import numpy as np

    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 0
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "os": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "blas_env_in_parent": {k: os.environ.get(k) for k in BLAS_ENV_VARS},
    }


def blas_info() -> list[dict[str, Any]]:
    """What threadpoolctl sees loaded in this process: BLAS and OpenMP libraries."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return [{"error": "threadpoolctl is not installed"}]
    keys = ("user_api", "internal_api", "version", "architecture", "num_threads", "filepath")
    return [{k: pool.get(k) for k in keys} for pool in threadpool_info()]


def describe_pools(pools: list[dict[str, Any]]) -> list[str]:
    """One line per thread pool: api, version, kernel architecture, threads, library file."""
    lines = []
    for pool in pools:
        if "error" in pool:
            lines.append(pool["error"])
            continue
        name = Path(pool.get("filepath") or "?").name
        arch = pool.get("architecture") or "-"
        lines.append(
            f"{pool['internal_api']} {pool.get('version') or '?'} ({pool['user_api']}), "
            f"kernel {arch}, num_threads={pool['num_threads']}, {name}"
        )
    return lines


# -------------------------------------------------------------------------------- table
@dataclass
class Row:
    """One line of the result table; numbers are None where not measured."""

    workload: str
    tensorkit: float | None
    torch: float | None
    target: str
    verdict: str
    digits: int = 2

    @property
    def ratio(self) -> float | None:
        if self.tensorkit is None or not self.torch:
            return None
        return self.tensorkit / self.torch


HEADER = ("workload", "tensorkit", "torch", "ratio tk/torch", "target", "verdict")


def _cells(row: Row) -> list[str]:
    """One row as formatted cells."""

    def num(value: float | None) -> str:
        return "-" if value is None else f"{value:.{row.digits}f}"

    ratio = row.ratio
    return [
        row.workload,
        num(row.tensorkit),
        num(row.torch),
        "-" if ratio is None else f"{ratio:.2f}x",
        row.target,
        row.verdict,
    ]


def format_table(rows: Sequence[Row], markdown: bool = False) -> str:
    """The rows as an aligned plain-text table, or as a GitHub markdown table."""
    return format_grid(HEADER, [_cells(row) for row in rows], {1, 2, 3}, markdown)


def format_grid(
    header: Sequence[str], body: Sequence[Sequence[str]], right: set[int], markdown: bool
) -> str:
    """Cells as an aligned plain-text table (columns in ``right`` right-aligned), or as a
    GitHub markdown table."""
    if markdown:
        lines = ["| " + " | ".join(header) + " |"]
        lines.append(
            "|" + "|".join("---:" if i in right else "---" for i in range(len(header))) + "|"
        )
        lines += ["| " + " | ".join(cells) + " |" for cells in body]
        return "\n".join(lines)
    widths = [max(len(r[i]) for r in [list(header), *body]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        parts = [
            c.rjust(widths[i]) if i in right else c.ljust(widths[i]) for i, c in enumerate(cells)
        ]
        return "  ".join(parts).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), rule, *(line(cells) for cells in body)])


def print_report(
    rows: Sequence[Row],
    info: list[str],
    results: dict[str, Any],
    profiles: Sequence[tuple[str, str]],
    *,
    markdown: bool,
    json_path: str | None,
    payload: dict[str, Any],
) -> int:
    """Print the table, the run's notes, any child errors and cProfile texts (``profiles``
    names result keys and their titles), then the markdown and JSON forms when asked.
    Returns the exit status: 1 when a child reported an error."""
    print(format_table(rows))
    print()
    print("\n".join(info))
    errors = [(n, job, text) for n, r in results.items() for job, text in r["errors"].items()]
    for name, job, text in errors:
        print(f"\nERROR in {name} {job}:\n{text.rstrip()}")
    for name, res in results.items():
        for key, title in profiles:
            if key in res:
                print(f"\ncProfile, {name}, {title} (top by tottime):\n{res[key].rstrip()}")
    if markdown:
        print("\n" + format_table(rows, markdown=True) + "\n")
        print("\n".join(f"- {line.strip()}" for line in info))
    if json_path:
        Path(json_path).write_text(json.dumps(payload, indent=1))
    return 1 if errors else 0


def core_build(name: str) -> str | None:
    """For tensorkit (already imported by the caller): whether its core runs compiled
    (hatch_build.py) or as pure Python; None for other libraries."""
    if name != "tensorkit":
        return None
    from tensorkit import _compiled

    modules = _compiled.compiled_modules()
    return f"compiled with Cython ({len(modules)} modules)" if modules else "pure Python"
