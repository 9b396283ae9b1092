"""Who holds a shared tensor block: the reference counts kept in its first bytes.

Layout, in int64 words: ``[0]`` references inside pickled messages not yet unpickled; ``[1]``
references of holders that found no free slot; then ``SLOTS`` pairs ``(pid, count)``, one per
process that maps the block. A slot whose process no longer exists is dropped when the
references are counted, so a process killed while holding a block (``Pool.terminate()``,
SIGKILL) does not keep it alive for ever. Every change is made under an ``fcntl`` lock on the
block's file (against other processes) and a thread lock (against this process's threads,
such as a queue's feeder thread).
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

HEADER_BYTES = 256
_SLOTS = (HEADER_BYTES // 8 - 2) // 2
_MESSAGES, _OVERFLOW = 0, 1

_thread_lock = threading.Lock()


def _reset_thread_lock() -> None:
    global _thread_lock
    _thread_lock = threading.Lock()


os.register_at_fork(after_in_child=_reset_thread_lock)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Refs:
    """The reference counts of one block, seen through this process's mapping of it."""

    def __init__(self, header: np.ndarray, fd: int) -> None:
        self._words = header  # int64 view of the header
        self._fd = fd

    @contextmanager
    def _locked(self) -> Iterator[np.ndarray]:
        with _thread_lock:
            fcntl.lockf(self._fd, fcntl.LOCK_EX)
            try:
                yield self._words
            finally:
                fcntl.lockf(self._fd, fcntl.LOCK_UN)

    @staticmethod
    def _add_holder(words: np.ndarray, pid: int, delta: int) -> None:
        pairs = words[2:].reshape(_SLOTS, 2)
        for slot in pairs:
            if slot[0] == pid:
                slot[1] += delta
                if slot[1] <= 0:
                    slot[:] = 0
                return
        if delta > 0:
            for slot in pairs:
                if slot[0] == 0 or not _alive(int(slot[0])):
                    slot[:] = (pid, delta)
                    return
        words[_OVERFLOW] += delta

    def hold(self) -> None:
        """This process now maps the block (the one that made it)."""
        with self._locked() as words:
            self._add_holder(words, os.getpid(), 1)

    def send(self) -> None:
        """A pickled message now refers to the block."""
        with self._locked() as words:
            words[_MESSAGES] += 1

    def receive(self, *, hold: bool) -> None:
        """A message was unpickled here; its reference becomes ours if ``hold``."""
        with self._locked() as words:
            words[_MESSAGES] -= 1
            if hold:
                self._add_holder(words, os.getpid(), 1)

    def release(self) -> bool:
        """This process drops its mapping; True when nobody alive holds the block any more."""
        with self._locked() as words:
            self._add_holder(words, os.getpid(), -1)
            pairs = words[2:].reshape(_SLOTS, 2)
            for slot in pairs:
                if slot[0] != 0 and not _alive(int(slot[0])):
                    slot[:] = 0
            return int(words[_MESSAGES] + words[_OVERFLOW] + pairs[:, 1].sum()) <= 0
