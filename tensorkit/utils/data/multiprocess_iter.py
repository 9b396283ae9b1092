"""The DataLoader iterator with worker processes: hands keys out round robin, gets batches
back through shared memory, delivers them in order, and watches the workers."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import secrets
import signal
import time
import weakref
from multiprocessing.connection import Connection, wait
from typing import TYPE_CHECKING, Any

from ...multiprocessing import _shm
from .base_iter import BaseIter
from .transport import Packed, discard, unpack
from .worker import (
    ExceptionWrapper,
    IterableEnd,
    Resume,
    Resumed,
    WorkerConfig,
    worker_loop,
)

if TYPE_CHECKING:
    from .dataloader import DataLoader


_SHUTDOWN_GRACE = 5.0  # seconds workers get to exit before they are terminated
_PENDING = object()


def _exit_reason(exitcode: int | None) -> str:
    if exitcode is None:
        return "closed its connection"
    if exitcode >= 0:
        return f"exit code {exitcode}"
    sig = signal.Signals(-exitcode)
    reason = f"killed by signal {sig.name} ({signal.strsignal(sig)})"
    if sig == signal.SIGBUS:
        reason += "; this can mean the shared memory (/dev/shm) is full"
    return reason


class WorkerPool:
    """The worker processes, their task and result pipes, and their shutdown. Holds nothing
    of the iterator, so the iterator's finalizer can shut it down."""

    def __init__(self, context: Any, configs: list[WorkerConfig], shm_prefix: str) -> None:
        self.shm_prefix = shm_prefix
        self.closed = False
        self.done = context.Event()
        self.processes: list[Any] = []
        self.tasks: list[Connection] = []
        self.results: list[Connection] = []
        if os.name == "posix":
            # Workers must share this process's resource tracker (it unregisters their blocks).
            from multiprocessing import resource_tracker

            resource_tracker.ensure_running()
        try:
            for config in configs:
                task_reader, task_writer = context.Pipe(duplex=False)
                result_reader, result_writer = context.Pipe(duplex=False)
                process = context.Process(
                    target=worker_loop,
                    args=(config, task_reader, result_writer, self.done),
                    daemon=True,
                )
                process.start()
                task_reader.close()
                result_writer.close()
                self.processes.append(process)
                self.tasks.append(task_writer)
                self.results.append(result_reader)
        except BaseException:
            self.shutdown()
            raise

    def shutdown(self, graceful: bool = True) -> None:
        """Stop every worker and free every block in flight. ``graceful``: ask first and give
        workers a few seconds to finish the task at hand; else terminate them now. Idempotent."""
        if self.closed:
            return
        self.closed = True
        if graceful:
            self.done.set()
            for conn in self.tasks:
                with contextlib.suppress(OSError, ValueError):
                    conn.send(None)
            self._drain_until_exit(time.monotonic() + _SHUTDOWN_GRACE)
        for process in self.processes:
            if process.is_alive():
                process.terminate()
                process.join(1.0)
            if process.is_alive():
                process.kill()
            process.join()
        for conn in (*self.tasks, *self.results):
            conn.close()
        for name in _shm.leftovers(self.shm_prefix):
            _shm.unlink(name)

    def _drain_until_exit(self, deadline: float) -> None:
        # Read (and free) what workers still send, so none blocks on a full pipe.
        running = {p.sentinel: i for i, p in enumerate(self.processes) if p.is_alive()}
        readable = {conn: i for i, conn in enumerate(self.results)}
        while running and (remaining := deadline - time.monotonic()) > 0:
            for ready in wait([*running, *readable], remaining):
                if ready in readable:
                    try:
                        _, message = ready.recv()
                    except (EOFError, OSError):
                        del readable[ready]
                        continue
                    if isinstance(message, Packed):
                        discard(message)
                else:
                    del running[ready]


class MultiProcessIter(BaseIter):
    """Iterator over a DataLoader's batches made by ``num_workers`` worker processes.

    Task ``k`` goes to the next worker in a fixed round robin (skipping workers whose iterable
    dataset has ended), at most ``prefetch_factor`` tasks per worker are outstanding, and
    batches come out in task order whatever order they arrive in (as they arrive with
    ``in_order=False``).
    """

    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        context = loader.multiprocessing_context or multiprocessing.get_context()
        self._prefetch = max(1, loader.prefetch_factor)
        self._in_order = loader.in_order
        shm_prefix = f"tkdl{os.getpid()}_{secrets.token_hex(3)}_"
        configs = [
            WorkerConfig(
                dataset=self._dataset,
                iterable=self._iterable,
                auto_collation=self._auto_collation,
                collate_fn=self._collate_fn,
                drop_last=self._drop_last,
                base_seed=self._base_seed,
                init_fn=loader.worker_init_fn,
                worker_id=i,
                num_workers=self._num_workers,
                shm_prefix=shm_prefix,
                parent_pid=os.getpid(),
            )
            for i in range(self._num_workers)
        ]
        self._pool = WorkerPool(context, configs, shm_prefix)
        self._shutdown = weakref.finalize(self, self._pool.shutdown)
        self._epoch = 0
        self._start_tasks()

    @property
    def closed(self) -> bool:
        """True once the workers are shut down (end of a non-persistent epoch, or an error)."""
        return self._pool.closed

    def reset(self, loader: DataLoader) -> None:
        """Start a new epoch with the same (persistent) workers."""
        self._start_epoch(loader)
        self._epoch += 1
        try:
            for worker_id in range(self._num_workers):
                self._send(worker_id, Resume(self._epoch))
            waiting = set(range(self._num_workers))
            self._active = [True] * self._num_workers
            while waiting:  # earlier epochs' batches arrive first; free them
                worker_id, _, message = self._receive()
                if isinstance(message, Resumed) and message.epoch == self._epoch:
                    waiting.discard(worker_id)
                elif isinstance(message, Packed):
                    discard(message)
        except BaseException:
            self._pool.shutdown(graceful=False)
            raise
        self._start_tasks()

    def _start_tasks(self) -> None:
        self._sent = 0
        self._delivered = 0
        self._tasks: dict[int, list] = {}  # task index -> [worker id, message or _PENDING]
        self._outstanding = [0] * self._num_workers
        self._active = [True] * self._num_workers
        self._next_worker = 0
        self._hand_out()

    def _hand_out(self) -> None:
        """Send keys to workers in round robin until the next one in turn is full."""
        while True:
            for step in range(self._num_workers):
                worker_id = (self._next_worker + step) % self._num_workers
                if self._active[worker_id]:
                    break
            else:
                return
            if self._outstanding[worker_id] >= self._prefetch:
                return
            try:
                key = next(self._keys)
            except StopIteration:
                return
            self._send(worker_id, (self._sent, key))
            self._tasks[self._sent] = [worker_id, _PENDING]
            self._outstanding[worker_id] += 1
            self._sent += 1
            self._next_worker = worker_id + 1

    def _send(self, worker_id: int, message: Any) -> None:
        try:
            self._pool.tasks[worker_id].send(message)
        except OSError:  # a broken pipe: the worker is gone
            self._worker_died(worker_id)

    def _next_data(self) -> Any:
        if self._pool.closed:
            raise StopIteration
        try:
            message = self._next_message()
        except StopIteration:
            raise
        except BaseException:  # a dead worker, a timeout, Ctrl-C: nothing can be resumed
            self._pool.shutdown(graceful=False)
            raise
        if isinstance(message, ExceptionWrapper):
            message.reraise()
        return message

    def _next_message(self) -> Any:
        while True:
            while self._delivered < self._sent:
                task = self._tasks.get(self._delivered)
                if task is not None:  # None: handed out early (in_order=False)
                    worker_id, message = task
                    if message is not _PENDING or self._active[worker_id]:
                        break
                    del self._tasks[self._delivered]  # its worker's dataset ended first
                self._delivered += 1
            else:
                if not self._persistent_workers:
                    self._shutdown()
                raise StopIteration
            if message is not _PENDING:
                del self._tasks[self._delivered]
                self._delivered += 1
                self._hand_out()
                return unpack(message) if isinstance(message, Packed) else message
            worker_id, index, message = self._receive()
            self._outstanding[worker_id] -= 1
            if isinstance(message, IterableEnd):
                self._active[worker_id] = False
                self._outstanding[worker_id] = 0
                if not self._persistent_workers:
                    self._send(worker_id, None)
                self._hand_out()
            elif self._in_order or index == self._delivered:
                self._tasks[index][1] = message
            else:  # in_order=False: hand it out now
                del self._tasks[index]
                self._hand_out()
                return unpack(message) if isinstance(message, Packed) else message

    def _receive(self) -> tuple[int, int | None, Any]:
        """The next message from any active worker: (worker id, task index, message).
        Raises if a worker dies or ``timeout`` passes first."""
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        while True:
            live = [i for i in range(self._num_workers) if self._active[i]]
            conns = {self._pool.results[i]: i for i in live}
            sentinels = {self._pool.processes[i].sentinel: i for i in live}
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready = wait([*conns, *sentinels], remaining)
            if not ready:
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
            for obj in ready:
                if obj in conns:
                    worker_id = conns[obj]
                    try:
                        index, message = obj.recv()
                    except (EOFError, OSError):
                        self._worker_died(worker_id)
                    return worker_id, index, message
            for obj in ready:
                worker_id = sentinels[obj]
                if not self._pool.results[worker_id].poll(0):
                    self._worker_died(worker_id)

    def _worker_died(self, worker_id: int) -> None:
        process = self._pool.processes[worker_id]
        process.join(_SHUTDOWN_GRACE)
        raise RuntimeError(
            f"DataLoader worker {worker_id} (pid {process.pid}) exited unexpectedly: "
            f"{_exit_reason(process.exitcode)}"
        )
