"""``spawn`` / ``start_processes``: run ``fn(i, *args)`` in ``nprocs`` processes, as PyTorch's."""

from __future__ import annotations

import multiprocessing
import signal
import sys
import time
import traceback
import warnings
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from typing import Any

__all__ = [
    "ProcessContext",
    "ProcessException",
    "ProcessExitedException",
    "ProcessRaisedException",
    "spawn",
    "start_processes",
]


class ProcessException(Exception):  # noqa: N818 - PyTorch's name
    """A process started by ``spawn`` failed; ``error_index`` and ``error_pid`` say which."""

    def __init__(self, msg: str, error_index: int, error_pid: int) -> None:
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.error_pid = error_pid

    def __reduce__(self) -> tuple:
        return type(self), (self.msg, self.error_index, self.error_pid)


class ProcessRaisedException(ProcessException):
    """The process's function raised; the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """The process exited with a non-zero code or was killed by a signal."""

    def __init__(
        self,
        msg: str,
        error_index: int,
        error_pid: int,
        exit_code: int,
        signal_name: str | None = None,
    ) -> None:
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self) -> tuple:
        args = (self.msg, self.error_index, self.error_pid, self.exit_code, self.signal_name)
        return type(self), args


def _wrap(fn: Callable, index: int, args: tuple, errors: Connection) -> None:
    try:
        fn(index, *args)
    except KeyboardInterrupt:
        pass  # the parent stopped us
    except Exception:
        errors.send(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """The processes started by ``start_processes(join=False)``; ``join()`` waits for them."""

    def __init__(self, processes: list, error_pipes: list[Connection]) -> None:
        self.processes = processes
        self.error_pipes = error_pipes
        self.sentinels = {process.sentinel: i for i, process in enumerate(processes)}

    def pids(self) -> list[int]:
        return [int(process.pid) for process in self.processes]

    def join(self, timeout: float | None = None, grace_period: float | None = None) -> bool:
        """Wait up to ``timeout`` for processes to end: True once all ended well. If one
        failed, stop the others (SIGTERM, then SIGKILL after ``grace_period`` or 30 s) and
        raise ``ProcessRaisedException`` (with its traceback) or ``ProcessExitedException``."""
        if not self.sentinels:
            return True
        failed = None
        for sentinel in wait(list(self.sentinels), timeout=timeout):
            index = self.sentinels.pop(sentinel)
            self.processes[index].join()
            if self.processes[index].exitcode != 0:
                failed = index
                break
        if failed is None:
            if not self.sentinels:
                self._close_pipes()
            return not self.sentinels
        self._stop_all(grace_period)
        error = self._error(failed)
        self._close_pipes()
        raise error

    def _close_pipes(self) -> None:
        for pipe in self.error_pipes:
            pipe.close()

    def _stop_all(self, grace_period: float | None) -> None:
        if grace_period is not None:
            self._join_all(grace_period)
        for process in self.processes:
            if process.is_alive():
                process.terminate()
        self._join_all(30 if grace_period is None else grace_period)
        for process in self.processes:
            if process.is_alive():
                process.kill()
            process.join()

    def _join_all(self, timeout: float) -> None:
        end = time.monotonic() + timeout
        for process in self.processes:
            process.join(max(0.0, end - time.monotonic()))

    def _error(self, index: int) -> ProcessException:
        process = self.processes[index]
        trace = _sent_traceback(self.error_pipes[index])
        if trace is not None:
            text = f"\n\n-- Process {index:d} terminated with the following error:\n"
            return ProcessRaisedException(text + trace, index, process.pid)
        code = process.exitcode
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"<Unknown signal {-code}>"
            message = f"process {index:d} terminated with signal {name}"
            return ProcessExitedException(message, index, process.pid, code, name)
        message = f"process {index:d} terminated with exit code {code:d}"
        return ProcessExitedException(message, index, process.pid, code)


def _sent_traceback(pipe: Connection) -> str | None:
    """The traceback a failed process sent, or None (it died without raising)."""
    try:
        return pipe.recv() if pipe.poll(0) else None
    except (EOFError, OSError):  # the writing end closed with nothing sent
        return None


def start_processes(
    fn: Callable[..., Any],
    args: tuple = (),
    nprocs: int = 1,
    join: bool = True,
    daemon: bool = False,
    start_method: str = "spawn",
) -> ProcessContext | None:
    """Start ``nprocs`` processes of ``start_method`` running ``fn(i, *args)``; with ``join``
    wait for all (raising as ``ProcessContext.join``), else return their ``ProcessContext``."""
    context = multiprocessing.get_context(start_method)
    processes, pipes = [], []
    for i in range(nprocs):
        receiver, sender = context.Pipe(duplex=False)
        process = context.Process(target=_wrap, args=(fn, i, args, sender), daemon=daemon)
        process.start()
        sender.close()
        processes.append(process)
        pipes.append(receiver)
    processes_context = ProcessContext(processes, pipes)
    if not join:
        return processes_context
    while not processes_context.join():
        pass
    return None


def spawn(
    fn: Callable[..., Any],
    args: tuple = (),
    nprocs: int = 1,
    join: bool = True,
    daemon: bool = False,
    start_method: str = "spawn",
) -> ProcessContext | None:
    """``start_processes`` with the ``spawn`` start method (other values warn and are ignored,
    as in PyTorch): ``fn`` must be importable from the top level of a module."""
    if start_method != "spawn":
        warnings.warn(
            f"This method only supports start_method=spawn (got: {start_method}).\n"
            "To use a different start_method use:\n\t\t"
            " tk.multiprocessing.start_processes(...)",
            FutureWarning,
            stacklevel=2,
        )
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
