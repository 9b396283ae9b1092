"""What each rank runs under the launcher: set torchrun's environment variables from MPI,
make an uncaught exception end every rank (traceback first, then ``MPI_Abort``), then run
the user's script or module as ``__main__``.

``python -m tensorkit.distributed._rank (-m module | script.py) args...``
"""

from __future__ import annotations

import os
import runpy
import sys
import traceback
from types import TracebackType
from typing import Any

from ._mpi import mpi_module

__all__ = ["main"]


def set_environment(mpi: Any) -> None:
    """RANK, WORLD_SIZE, LOCAL_RANK and LOCAL_WORLD_SIZE, as torchrun sets them."""
    world = mpi.COMM_WORLD
    local = world.Split_type(mpi.COMM_TYPE_SHARED, key=world.Get_rank())
    os.environ["RANK"] = str(world.Get_rank())
    os.environ["WORLD_SIZE"] = str(world.Get_size())
    os.environ["LOCAL_RANK"] = str(local.Get_rank())
    os.environ["LOCAL_WORLD_SIZE"] = str(local.Get_size())
    local.Free()


ERROR_DIR = "TENSORKIT_DISTRIBUTED_ERROR_DIR"  # set by the launcher (torchrun's error files)


def abort_on_exception(mpi: Any) -> None:
    """Install an excepthook that reports the traceback, then aborts every rank."""

    def hook(kind: type[BaseException], error: BaseException, tb: TracebackType | None) -> None:
        rank = os.environ.get("RANK", "?")
        lines = traceback.format_exception(kind, error, _user_frames(tb))
        report(f"[rank {rank}] uncaught exception; ending every rank:\n" + "".join(lines))
        sys.stdout.flush()
        mpi.COMM_WORLD.Abort(1)

    sys.excepthook = hook


def report(text: str) -> None:
    """Show ``text`` even though an abort follows at once: under the launcher, in this rank's
    error file, which the launcher prints after mpiexec returns (stderr passes through
    mpiexec's proxies, and an abort can end them before they forward it); else on stderr."""
    directory = os.environ.get(ERROR_DIR)
    if directory:
        path = os.path.join(directory, f"rank_{os.environ.get('RANK', os.getpid())}.txt")
        with open(path, "a", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        return
    sys.stderr.write(text)  # one write: an abort may follow at once
    sys.stderr.flush()


def _user_frames(tb: TracebackType | None) -> TracebackType | None:
    """``tb`` without its leading frames of this module and runpy (the user's code first)."""
    ours = (__file__, runpy.__file__)
    while tb is not None and tb.tb_next is not None:
        name = tb.tb_frame.f_code.co_filename
        if name not in ours and name != "<frozen runpy>":
            break
        tb = tb.tb_next
    return tb


def main(argv: list[str]) -> None:
    mpi = mpi_module()
    set_environment(mpi)
    abort_on_exception(mpi)
    try:
        if argv[0] == "-m":
            sys.argv = [argv[1], *argv[2:]]
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(argv)
            sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as exit_:
        code = exit_.code
        if code not in (None, 0):  # a rank that exits with an error ends the others too
            if not isinstance(code, int):
                report(f"{code}\n")
                code = 1
            sys.stderr.flush()
            mpi.COMM_WORLD.Abort(code)
        raise


if __name__ == "__main__":
    main(sys.argv[1:])
