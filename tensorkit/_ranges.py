"""Named ranges of code that profilers record: the user's ``record_function`` ranges and
tensorkit's composite functions (``conv2d``, ``max_pool2d``, ``cross_entropy``, ...: one
PyTorch op each, made here of several tensorkit ops).

A composite's range is a parent of the ops it runs, as PyTorch's profiler shows
``aten::conv2d`` above its kernels: the op table lists it with its total time, and the
Chrome trace nests its ops under it; a Tape's entries name the scopes they ran in. A closed
range reaches the profiles through the observer channel (``report_range``: every active
observer with an ``add_range`` method), as ops do. Kept
apart from ``tensorkit.profiler`` (and light) so that ``tk.nn.functional`` can mark its
composites without importing the profiler: with nothing observing ops, a composite costs
one flag check per call.
"""

from __future__ import annotations

import functools
import itertools
import time
from collections.abc import Callable
from typing import Any, TypeVar

from . import _state

scopes: list[str] = []  # names of the open ranges (record_function and composite), outermost first
# Beside each name in ``scopes``: (call number, the nn module path it was opened in, kind:
# "function" for a composite, "range" for record_function), so that a Tape tells one call
# from the next and places it among the modules.
scope_calls: list[tuple[int, str, str]] = []
composites: set[str] = set()  # the names of the functions marked ``composite``

OPTIMIZER_PREFIX = "Optimizer."  # record_function("Optimizer.step#SGD.step") as in PyTorch

F = TypeVar("F", bound=Callable[..., Any])
_call_numbers = itertools.count(1)


def open_scope(name: str, kind: str) -> None:
    """Push a range named ``name`` (``kind`` "function" or "range") onto ``scopes``."""
    scopes.append(name)
    scope_calls.append((next(_call_numbers), ".".join(_state.module_path), kind))


def close_scope() -> None:
    """Pop the innermost range."""
    scopes.pop()
    scope_calls.pop()


def report_range(name: str, start_ns: int, end_ns: int, depth: int, phase: str) -> None:
    """Hand a closed range to the active observers that record ranges (``add_range``)."""
    for observer in _state.observers:
        add_range = getattr(observer, "add_range", None)
        if add_range is not None:
            add_range(name, start_ns, end_ns, depth, phase)


def range_observers() -> list[Any]:
    """The active observers that record ranges (open profiles)."""
    return [o for o in _state.observers if getattr(o, "add_range", None) is not None]


def phase_in_scope(phase: str) -> str:
    """``phase``, or "optimizer" inside an ``Optimizer....`` range."""
    if any(s.startswith(OPTIMIZER_PREFIX) for s in scopes):
        return "optimizer"
    return phase


def outermost_composite(names: Any) -> str | None:
    """The first composite function among ``names`` (a record's scopes), or None."""
    return next((n for n in names if n in composites), None)


def composite(function: F) -> F:
    """Mark ``function`` (an ``nn.functional`` function built of several ops) as one op for
    profilers and Tapes: while anything observes ops, its name is a scope the records of its
    ops carry (a Tape entry's ``scopes``), and each call is a range for the active profiles."""
    name = function.__name__
    composites.add(name)

    @functools.wraps(function)
    def marked(*args: Any, **kwargs: Any) -> Any:
        if not _state.observing:  # no profile, Tape or other observer: nothing to name
            return function(*args, **kwargs)
        open_scope(name, "function")
        start_ns = time.perf_counter_ns()
        try:
            return function(*args, **kwargs)
        finally:
            end_ns = time.perf_counter_ns()
            close_scope()
            report_range(name, start_ns, end_ns, len(scopes), phase_in_scope(_state.phase))

    return marked  # type: ignore[return-value]
