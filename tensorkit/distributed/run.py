"""``python -m tensorkit.distributed.run --nproc-per-node N (-m module | script.py) args...``:
torchrun's role on one machine, through the mpiexec of the mpich wheel (or the PATH's).

Each rank runs the script with RANK, WORLD_SIZE, LOCAL_RANK and LOCAL_WORLD_SIZE set (and
OMP_NUM_THREADS, unless set, to the cores divided by the ranks); one
rank's uncaught exception ends every rank (MPI_Abort), so a failed job never hangs, and its
traceback is printed here from the rank's error file (stderr forwarded by mpiexec can be cut
off by the abort). Exit code: 0 when every rank succeeded, 1 when any failed (as torchrun),
2 for a usage error or no mpiexec.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ._rank import ERROR_DIR

__all__ = ["find_mpiexec", "main", "parse_args"]


def find_mpiexec() -> str | None:
    """mpiexec beside this Python (where the mpich wheel puts it), else the PATH's."""
    beside = Path(sys.executable).parent / "mpiexec"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("mpiexec")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m tensorkit.distributed.run",
        description="Start N ranks of a training script on this machine, through mpiexec.",
    )
    parser.add_argument(
        "--nproc-per-node", "--nproc_per_node", type=int, default=1, help="ranks to start"
    )
    parser.add_argument(
        "-m", "--module", action="store_true", help="run training_script as a module (python -m)"
    )
    parser.add_argument("training_script", help="the script (or module, with -m) each rank runs")
    parser.add_argument("training_script_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.nproc_per_node < 1:
        parser.error(f"--nproc-per-node must be at least 1, got {args.nproc_per_node}")
    return args


def command(args: argparse.Namespace, mpiexec: str) -> list[str]:
    """The mpiexec command line that starts the ranks."""
    target = ["-m", args.training_script] if args.module else [args.training_script]
    rank = [sys.executable, "-m", "tensorkit.distributed._rank"]
    return [mpiexec, "-n", str(args.nproc_per_node), *rank, *target, *args.training_script_args]


def environment(nproc: int) -> dict[str, str]:
    """This environment, with OMP_NUM_THREADS (unless set) sharing the cores among the ranks
    (as torchrun, which sets it to 1): threads of every rank on every core would fight."""
    env = dict(os.environ)
    if "OMP_NUM_THREADS" not in env:
        env["OMP_NUM_THREADS"] = str(max(1, len(os.sched_getaffinity(0)) // nproc))
    return env


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    mpiexec = find_mpiexec()
    if mpiexec is None:
        print(
            "tensorkit.distributed.run: no mpiexec beside this Python or on the PATH "
            "(pip install 'tensorkit[distributed]' installs mpich's)",
            file=sys.stderr,
        )
        return 2
    with tempfile.TemporaryDirectory(prefix="tensorkit-ranks-") as errors:
        env = {**environment(args.nproc_per_node), ERROR_DIR: errors}
        process = subprocess.Popen(command(args, mpiexec), env=env)
        try:
            code = process.wait()
        except KeyboardInterrupt:
            process.terminate()
            code = process.wait()
        for path in sorted(Path(errors).glob("rank_*.txt"), key=_rank_number):
            sys.stderr.write(path.read_text(encoding="utf-8"))  # the failing ranks' reports
    if code != 0:
        print(
            f"tensorkit.distributed.run: {args.training_script} failed on at least one of "
            f"{args.nproc_per_node} ranks (mpiexec exit code {code})",
            file=sys.stderr,
        )
        return 1
    return 0


def _rank_number(path: Path) -> int:
    number = path.stem.removeprefix("rank_")
    return int(number) if number.isdigit() else -1


if __name__ == "__main__":
    sys.exit(main())
