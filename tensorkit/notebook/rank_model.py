"""The per-rank view's data model: for each rank of a distributed run, its compute and its
communication on one clock, and the share of communication hidden under backward, as plain
JSON-serializable data (rendered by the profile widget's "Ranks" section).

:func:`build_ranks` reads the traces each rank exported (``profile.export_chrome_trace``), or
their :func:`~tensorkit.profiler.merge_traces` document. Per rank, from its events:

- compute: the union of its ops' host intervals (forward, backward, optimizer; a CUDA op's
  GPU track is not read) less the time it blocked in ``Work.wait`` (``distributed.wait``
  ranges: a DDP hook that waits runs inside its AccumulateGrad op, and waiting is not
  computing);
- communication: the union of its collectives' intervals, each from its start to the moment
  the rank saw it complete (``distributed.<op>`` ranges);
- hidden: the communication time during which the rank computed backward ops;
  ``hidden_share`` = hidden / communication (None without communication).

Times are integer nanoseconds from the earliest event of any rank. Bars are bounded: intervals
closer than ``span / max_bars`` merge into one bar (the totals use the exact intervals).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from ..distributed._profiling import WAIT
from ..profiler.merge import merge_traces

__all__ = ["MAX_BARS", "build_ranks", "intersection_ns", "union"]

MAX_BARS = 1000
PHASES = ("forward", "backward", "optimizer")
Interval = tuple[int, int]


def build_ranks(traces: dict | Sequence[str | Path], *, max_bars: int = MAX_BARS) -> dict:
    """The per-rank model of a merged trace document or of the ranks' trace files.

    Keys: ``span_ns`` (from the earliest event to the latest end), ``ranks`` (one dict per
    rank, by rank: ``rank``, ``compute`` bars ``[start_ns, end_ns, phase]``, ``comm`` bars
    ``[start_ns, end_ns, names]``, ``compute_ns``, ``backward_ns``, ``comm_ns``, ``wait_ns``,
    ``hidden_ns``, ``hidden_share``, ``collectives`` (count) and ``bytes``), and the totals
    over ranks ``comm_ns``, ``hidden_ns``, ``hidden_share``.
    """
    if isinstance(max_bars, bool) or not isinstance(max_bars, int) or max_bars < 1:
        raise ValueError(f"max_bars must be a positive int, got {max_bars!r}")
    if isinstance(traces, dict):
        document = traces
        if "ranks" not in document.get("otherData", {}):
            raise ValueError(
                "build_ranks expects tk.profiler.merge_traces's document (otherData.ranks), "
                "or the paths of the ranks' traces"
            )
    elif isinstance(traces, str | Path):
        raise TypeError(
            "build_ranks expects a merged trace document or a list of trace paths, got the "
            f"single path {str(traces)!r}"
        )
    else:
        document = merge_traces(list(traces))
    events = [e for e in document["traceEvents"] if e.get("ph") == "X"]
    origin = min((_ns(e["ts"]) for e in events), default=0)
    end = max((_ns(e["ts"] + e["dur"]) for e in events), default=origin)
    span = max(1, end - origin)
    resolution = span // max_bars
    ranks = [
        _rank_view(rank, [e for e in events if e["pid"] == rank], origin, resolution)
        for rank in sorted(document["otherData"]["ranks"])
    ]
    comm = sum(r["comm_ns"] for r in ranks)
    hidden = sum(r["hidden_ns"] for r in ranks)
    return {
        "span_ns": span,
        "ranks": ranks,
        "comm_ns": comm,
        "hidden_ns": hidden,
        "hidden_share": hidden / comm if comm else None,
    }


def _rank_view(rank: int, events: list[dict], origin: int, resolution: int) -> dict:
    def interval(event: dict) -> Interval:
        start = _ns(event["ts"]) - origin
        return start, start + _ns(event["dur"])

    waits = union(interval(e) for e in events if e["name"] == WAIT)
    collectives = [e for e in events if _is_collective(e)]
    comm = union(interval(e) for e in collectives)
    by_phase = {
        phase: _minus(union(interval(e) for e in events if e.get("cat") == phase), waits)
        for phase in PHASES
    }
    compute = union(i for phase in PHASES for i in by_phase[phase])
    hidden = intersection_ns(comm, by_phase["backward"])
    comm_ns = _length(comm)
    bars = [
        [start, stop, phase]
        for phase in PHASES
        for start, stop in _coarse(by_phase[phase], resolution)
    ]
    bars.sort()
    return {
        "rank": rank,
        "compute": bars,
        "comm": _comm_bars(collectives, origin, resolution),
        "compute_ns": _length(compute),
        "backward_ns": _length(by_phase["backward"]),
        "comm_ns": comm_ns,
        "wait_ns": _length(waits),
        "hidden_ns": hidden,
        "hidden_share": hidden / comm_ns if comm_ns else None,
        "collectives": len(collectives),
        "bytes": sum(int(e.get("args", {}).get("bytes", 0)) for e in collectives),
    }


def _is_collective(event: dict) -> bool:
    name = event["name"]
    return name.startswith("distributed.") and name != WAIT


def _comm_bars(collectives: list[dict], origin: int, resolution: int) -> list[list]:
    """Collective bars ``[start, end, names]``: overlapping (or nearly touching) collectives
    share a bar, which names each op once, in order."""
    bars: list[list] = []
    for event in sorted(collectives, key=lambda e: e["ts"]):
        start = _ns(event["ts"]) - origin
        stop = start + _ns(event["dur"])
        name = event["name"].removeprefix("distributed.")
        if bars and start <= bars[-1][1] + resolution:
            bars[-1][1] = max(bars[-1][1], stop)
            if name not in bars[-1][2]:
                bars[-1][2].append(name)
        else:
            bars.append([start, stop, [name]])
    return bars


def union(intervals: Iterable[Interval]) -> list[Interval]:
    """The union of ``intervals`` as sorted, disjoint intervals (empty ones dropped)."""
    merged: list[Interval] = []
    for start, stop in sorted(i for i in intervals if i[1] > i[0]):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], stop))
        else:
            merged.append((start, stop))
    return merged


def intersection_ns(a: list[Interval], b: list[Interval]) -> int:
    """The length of the intersection of two sorted, disjoint interval lists."""
    total = i = j = 0
    while i < len(a) and j < len(b):
        total += max(0, min(a[i][1], b[j][1]) - max(a[i][0], b[j][0]))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def _minus(a: list[Interval], b: list[Interval]) -> list[Interval]:
    """``a`` less ``b`` (both sorted and disjoint)."""
    out: list[Interval] = []
    j = 0
    for start, stop in a:
        while j < len(b) and b[j][1] <= start:
            j += 1
        k = j
        while k < len(b) and b[k][0] < stop:
            if b[k][0] > start:
                out.append((start, b[k][0]))
            start = max(start, b[k][1])
            k += 1
        if start < stop:
            out.append((start, stop))
    return out


def _coarse(intervals: list[Interval], resolution: int) -> list[Interval]:
    """Sorted disjoint intervals with gaps of at most ``resolution`` closed."""
    bars: list[Interval] = []
    for start, stop in intervals:
        if bars and start - bars[-1][1] <= resolution:
            bars[-1] = (bars[-1][0], stop)
        else:
            bars.append((start, stop))
    return bars


def _length(intervals: list[Interval]) -> int:
    return sum(stop - start for start, stop in intervals)


def _ns(us: float) -> int:
    return round(us * 1000)
