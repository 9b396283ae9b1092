"""The DataLoader worker process: its loop, its seeding, ``get_worker_info()``, and the
messages it exchanges with the main process."""

from __future__ import annotations

import os
import pickle
import random
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from ... import random as tk_random
from ...multiprocessing import _shm
from .fetch import create_fetcher
from .transport import BlockWriter

__all__ = ["WorkerInfo", "get_worker_info"]

_PARENT_CHECK_INTERVAL = 1.0  # seconds between checks that the main process is still alive


class WorkerInfo:
    """What a worker knows about itself: ``id``, ``num_workers``, ``seed``, ``dataset`` (its
    own copy)."""

    id: int
    num_workers: int
    seed: int
    dataset: Any
    __initialized = False

    def __init__(self, **kwargs: Any) -> None:
        for name, value in kwargs.items():
            setattr(self, name, value)
        self.__keys = tuple(kwargs)
        self.__initialized = True

    def __setattr__(self, name: str, value: Any) -> None:
        if self.__initialized:
            raise RuntimeError(f"Cannot assign attributes to {type(self).__name__} objects")
        super().__setattr__(name, value)

    def __repr__(self) -> str:
        fields = ", ".join(f"{key}={getattr(self, key)}" for key in self.__keys)
        return f"{type(self).__name__}({fields})"


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """In a DataLoader worker process, its ``WorkerInfo``; in the main process, ``None``."""
    return _worker_info


class _Message(str):
    """Text whose repr is itself, so a KeyError carrying it prints readably."""

    def __repr__(self) -> str:
        return self


class ExceptionWrapper:
    """An exception raised in a worker, carried to the main process with its traceback text."""

    def __init__(self, where: str) -> None:
        exc_type, exc, tb = sys.exc_info()
        self.type_name = exc_type.__name__
        self.exc_type = exc_type if _picklable(exc_type) else None
        self.where = where
        self.text = "".join(traceback.format_exception(exc_type, exc, tb))

    def reraise(self) -> None:
        """Raise it again here: same type when it can be rebuilt from a message, else
        RuntimeError; the message names the worker and holds the original traceback."""
        raise self._rebuild()

    def _rebuild(self) -> BaseException:
        # Returned, not raised, so no frame of ours holds the exception (which would make a
        # cycle keeping the DataLoader iterator, and its workers, alive until a GC pass).
        message = f"Caught {self.type_name} {self.where}.\nOriginal {self.text}"
        if self.exc_type is None:
            return RuntimeError(message)
        if self.exc_type is KeyError:
            message = _Message(message)
        try:
            if getattr(self.exc_type, "message", None):
                return self.exc_type(message=message)
            return self.exc_type(message)
        except Exception:
            return RuntimeError(message)


def _picklable(obj: Any) -> bool:
    try:
        pickle.dumps(obj)
    except Exception:
        return False
    return True


@dataclass(frozen=True)
class IterableEnd:
    """A worker's copy of an iterable dataset is exhausted."""

    worker_id: int


@dataclass(frozen=True)
class Resume:
    """Start a new epoch (persistent workers): answered by ``Resumed`` after earlier tasks."""

    epoch: int


@dataclass(frozen=True)
class Resumed:
    worker_id: int
    epoch: int


def numpy_seed(base_seed: int, worker_id: int) -> np.ndarray:
    """The state NumPy's global RNG is seeded with in a worker: 4 words of a SeedSequence of
    (worker_id, base_seed low word, base_seed high word, 0), as PyTorch does."""
    entropy = [worker_id, base_seed & 0xFFFFFFFF, base_seed >> 32, 0]
    return np.random.SeedSequence(entropy).generate_state(4)


def seed_worker(base_seed: int, worker_id: int) -> int:
    """Seed tensorkit's default generator and ``random`` with ``base_seed + worker_id`` and
    NumPy's global RNG with ``numpy_seed``; returns the worker's seed."""
    seed = base_seed + worker_id
    random.seed(seed)
    tk_random.manual_seed(seed)
    np.random.seed(numpy_seed(base_seed, worker_id))
    return seed


@dataclass(frozen=True)
class WorkerConfig:
    """Everything a worker process is started with."""

    dataset: Any
    iterable: bool
    auto_collation: bool
    collate_fn: Callable
    drop_last: bool
    base_seed: int
    init_fn: Callable[[int], None] | None
    worker_id: int
    num_workers: int
    shm_prefix: str
    parent_pid: int


def worker_loop(config: WorkerConfig, tasks: Connection, results: Connection, done: Any) -> None:
    """Fetch the batches the main process asks for until it says stop (``None``), closes the
    pipe or dies; batches go back through shared memory, errors as ``ExceptionWrapper``."""
    global _worker_info
    writer = BlockWriter(f"{config.shm_prefix}{config.worker_id}_")
    where = f"in DataLoader worker process {config.worker_id}"
    try:
        seed = seed_worker(config.base_seed, config.worker_id)
        _worker_info = WorkerInfo(
            id=config.worker_id,
            num_workers=config.num_workers,
            seed=seed,
            dataset=config.dataset,
        )
        init_error = None
        try:
            if config.init_fn is not None:
                config.init_fn(config.worker_id)
            fetcher = _new_fetcher(config)
        except Exception:
            init_error = ExceptionWrapper(where)
        ended = False
        while True:
            if not tasks.poll(_PARENT_CHECK_INTERVAL):
                if os.getppid() != config.parent_pid:
                    break
                continue
            task = tasks.recv()
            if task is None:
                break
            if isinstance(task, Resume):
                if init_error is None:
                    fetcher = _new_fetcher(config)
                ended = False
                results.send((None, Resumed(config.worker_id, task.epoch)))
                continue
            if ended or done.is_set():
                continue
            index, key = task
            if init_error is not None:
                results.send((index, init_error))
                continue
            try:
                reply = writer.pack(fetcher.fetch(key))
            except StopIteration:
                if not config.iterable:
                    reply = ExceptionWrapper(where)
                else:
                    reply = IterableEnd(config.worker_id)
                    ended = True
            except Exception:
                reply = ExceptionWrapper(where)
            results.send((index, reply))
    except (KeyboardInterrupt, EOFError, BrokenPipeError):
        pass  # Ctrl-C reaches the main process too; a closed pipe means it is gone
    finally:
        if os.getppid() != config.parent_pid:  # nobody will map what was left in flight
            for name in _shm.leftovers(writer.prefix):
                _shm.unlink(name)


def _new_fetcher(config: WorkerConfig) -> Any:
    return create_fetcher(
        config.dataset, config.auto_collation, config.collate_fn, config.drop_last
    )
