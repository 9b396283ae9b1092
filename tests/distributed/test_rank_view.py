"""The per-rank view's model (tensorkit.notebook.rank_model) of a real 2-rank DDP run through
the launcher, checked against the ranks' own trace events."""

from __future__ import annotations

import itertools
import json

import pytest
from dist_launch import assert_passed, launch

from tensorkit.notebook import build_ranks

pytestmark = pytest.mark.xdist_group("distributed")


def _intervals(events: list[dict], keep) -> list[tuple[int, int]]:
    """The kept events' intervals in integer ns (start and duration rounded apart)."""
    starts = [(round(e["ts"] * 1e3), round(e["dur"] * 1e3)) for e in events if keep(e)]
    return [(start, start + dur) for start, dur in starts]


def _measure(inside, *sets: list[tuple[int, int]]) -> int:
    """Brute force: the length of the time where ``inside(flags)`` holds, ``flags`` saying
    which of ``sets`` (interval lists) cover it, summed over the elementary segments between
    all interval ends."""
    points = sorted({t for intervals in sets for interval in intervals for t in interval})
    total = 0
    for start, stop in itertools.pairwise(points):
        flags = [any(a <= start and stop <= b for a, b in intervals) for intervals in sets]
        total += (stop - start) * inside(*flags)
    return total


def test_two_ddp_ranks_get_a_track_each_with_their_hidden_share(tmp_path) -> None:
    run = launch(["tests/distributed/programs/ddp_trace.py", str(tmp_path)], 2)
    assert_passed(run, 2)
    paths = [tmp_path / "rank_0.json", tmp_path / "rank_1.json"]
    model = build_ranks(paths, max_bars=10**9)  # no bar merging: bars are the intervals
    assert [r["rank"] for r in model["ranks"]] == [0, 1]
    merged = build_ranks(paths)
    assert merged["span_ns"] == model["span_ns"] and len(merged["ranks"]) == 2
    origin = min(json.loads(p.read_text())["otherData"]["start_ns"] for p in paths)
    for rank, path in zip(model["ranks"], paths, strict=True):
        trace = json.loads(path.read_text())
        events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
        ops = [e for e in events if e["cat"] in ("forward", "backward", "optimizer")]
        collectives = [e for e in events if e["name"] == "distributed.all_reduce"]
        assert rank["collectives"] == len(collectives) == 3 * 2  # 3 steps of 2 buckets
        assert rank["bytes"] == sum(e["args"]["bytes"] for e in collectives) > 0
        assert {phase for *_, phase in rank["compute"]} == {"forward", "backward", "optimizer"}
        assert len(rank["comm"]) >= 3 and all(bar[2] == ["all_reduce"] for bar in rank["comm"])
        # against the trace: its first collective on the common clock, then the totals
        shift = trace["otherData"]["start_ns"] - origin - _first(model, paths)
        assert rank["comm"][0][0] == pytest.approx(
            min(round(e["ts"] * 1e3) for e in collectives) + shift, abs=1
        )
        waits = _intervals(events, lambda e: e["name"] == "distributed.wait")
        backward = _intervals(ops, lambda e: e["cat"] == "backward")
        comm = _intervals(collectives, lambda e: True)
        # merge_traces shifts each rank's times by a float: each end may round 1 ns apart
        ns = pytest.approx
        slack = 2 * len(events)
        assert rank["wait_ns"] == ns(_measure(lambda w: w, waits), abs=slack)
        assert rank["wait_ns"] > 0  # the last hook waits
        assert rank["comm_ns"] == ns(_measure(lambda c: c, comm), abs=slack)
        hidden = _measure(lambda c, b, w: c and b and not w, comm, backward, waits)
        assert rank["hidden_ns"] == ns(hidden, abs=slack)
        compute = _measure(lambda o, w: o and not w, _intervals(ops, bool), waits)
        assert rank["compute_ns"] == ns(compute, abs=slack)
        assert 0 <= rank["hidden_share"] <= 1
        assert rank["hidden_share"] == pytest.approx(rank["hidden_ns"] / rank["comm_ns"])
        assert rank["hidden_ns"] <= min(rank["comm_ns"], rank["backward_ns"])
        assert rank["compute_ns"] <= sum(stop - start for start, stop, _ in rank["compute"]) + 1
    assert 0 <= model["hidden_share"] <= 1


def _first(model: dict, paths) -> int:
    """The common clock's origin (the earliest event of any rank), in ns after the earliest
    profile start."""
    origin = min(json.loads(p.read_text())["otherData"]["start_ns"] for p in paths)
    firsts = []
    for path in paths:
        trace = json.loads(path.read_text())
        shift = trace["otherData"]["start_ns"] - origin
        firsts += [round(e["ts"] * 1e3) + shift for e in trace["traceEvents"] if e.get("ph") == "X"]
    return min(firsts)
