"""``Work``: the handle an ``async_op=True`` collective returns (wait, is_completed)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from . import _profiling

__all__ = ["DistBackendError", "Work"]


class DistBackendError(RuntimeError):
    """A collective failed or timed out in the backend (torch's name)."""


class Pending(Protocol):
    """What a backend hands back for one started operation."""

    def test(self) -> bool: ...  # True once the operation has completed

    def wait(self) -> None: ...  # block until it has completed


# Test this many times without pausing (a fast peer answers within them), then pause between
# tests, from 10 us doubling up to 100 us, so that a waiting rank leaves the cores to the
# others (ranks often outnumber free cores; a spinning wait would delay the very peer it
# waits for) while overshooting a finished operation by at most 100 us.
_SPIN_TESTS = 100
_MAX_PAUSE_SECONDS = 1e-4


class Work:
    """One started collective: ``wait()`` blocks until it finished (or ``timeout`` passed,
    raising ``DistBackendError``), then runs the finishing step (copy back, AVG's division);
    a profile open meanwhile gets the blocked time as a ``distributed.wait`` range."""

    def __init__(
        self,
        pending: list[Pending],
        finish: Callable[[], None] | None,
        describe: str,
        timeout_s: float | None,
    ) -> None:
        self._pending = pending
        self._finish = finish
        self._describe = describe
        self._timeout_s = timeout_s
        self._started = time.monotonic()
        self._done = False

    def is_completed(self) -> bool:
        """Whether the operation has finished (finishing it when it just has)."""
        if not self._done and all(p.test() for p in self._pending):
            self._complete()
        return self._done

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the operation has finished; raise ``DistBackendError`` on timeout."""
        if self._done:
            return True
        blocked_ns = time.perf_counter_ns()
        limit = self._timeout_s if timeout is None else _seconds(timeout)
        if limit is None:
            for pending in self._pending:
                pending.wait()
        else:
            self._poll_until(self._started + limit if timeout is None else time.monotonic() + limit)
        _profiling.record_wait(blocked_ns, time.perf_counter_ns())
        self._complete()
        return True

    def _poll_until(self, deadline: float) -> None:
        tests = 0
        pause = 1e-5
        while not all(p.test() for p in self._pending):
            tests += 1
            if tests < _SPIN_TESTS:
                continue
            if time.monotonic() > deadline:
                waited_ms = int((time.monotonic() - self._started) * 1000)
                raise DistBackendError(
                    f"Watchdog caught collective operation timeout: {self._describe} ran for "
                    f"{waited_ms} milliseconds before timing out."
                )
            time.sleep(pause)
            pause = min(2 * pause, _MAX_PAUSE_SECONDS)

    def _complete(self) -> None:
        self._done = True
        if self._finish is not None:
            finish, self._finish = self._finish, None
            finish()

    def __repr__(self) -> str:
        state = "completed" if self._done else "pending"
        return f"<Work {self._describe} {state}>"


def _seconds(timeout: object) -> float:
    total = getattr(timeout, "total_seconds", None)
    return float(total()) if total is not None else float(timeout)  # type: ignore[arg-type]


def completed_work(describe: str) -> Work:
    """A Work with nothing left to wait for (a rank outside the group, an empty list)."""
    work = Work([], None, describe, None)
    work._done = True
    return work
