"""Collectives as profiled ranges: each finished operation, while a ``tk.profiler.profile``
is open, is added to it as a range named ``distributed.<op>`` (phase "distributed") from its
start to its completion, with its bytes and group in ``distributed_ops``; the time a rank
blocked in ``Work.wait`` is a range named ``distributed.wait`` (what the rank's ops did not
compute: a post-accumulate-grad hook that waits runs inside its AccumulateGrad op)."""

from __future__ import annotations

from typing import Any

from .. import _ranges

__all__ = ["PHASE", "WAIT", "record", "record_wait"]

PHASE = "distributed"
WAIT = "distributed.wait"


def record(op: str, start_ns: int, end_ns: int, nbytes: int, group: Any) -> None:
    """Add one finished collective to every open profile (nothing when none is open)."""
    for profiler in _ranges.range_observers():
        profiler.add_range(f"distributed.{op}", start_ns, end_ns, 0, PHASE)
        ops = profiler.__dict__.setdefault("distributed_ops", [])
        ops.append(
            {
                "name": op,
                "bytes": int(nbytes),
                "group": group.name,
                "ranks": list(group.ranks),
                "backend": group.backend.name,
                "start_ns": start_ns,
                "end_ns": end_ns,
            }
        )


def record_wait(start_ns: int, end_ns: int) -> None:
    """Add one blocking wait for collectives to every open profile."""
    for profiler in _ranges.range_observers():
        profiler.add_range(WAIT, start_ns, end_ns, 0, PHASE)
