"""tk.profiler.merge_traces on the traces two real ranks wrote."""

from __future__ import annotations

import json

import pytest
from dist_launch import assert_passed, launch

import tensorkit as tk

pytestmark = pytest.mark.xdist_group("distributed")


def test_two_ranks_traces_merge_into_one_track_per_rank(tmp_path) -> None:
    run = launch(["tests/distributed/programs/trace.py", str(tmp_path)], 2)
    assert_passed(run, 2)
    paths = [tmp_path / "rank_1.json", tmp_path / "rank_0.json"]
    sources = [json.loads(p.read_text()) for p in paths]
    assert [s["otherData"]["rank"] for s in sources] == [1, 0]
    merged = tk.profiler.merge_traces(paths, tmp_path / "merged.json")
    assert json.loads((tmp_path / "merged.json").read_text()) == merged
    assert merged["otherData"]["ranks"] == [1, 0]
    names = {
        (e["pid"], e["args"]["name"]) for e in merged["traceEvents"] if e["name"] == "process_name"
    }
    assert names == {(0, "rank 0"), (1, "rank 1")}
    for rank in (0, 1):
        mine = [e for e in merged["traceEvents"] if e["pid"] == rank and e.get("ph") == "X"]
        assert sum(e["name"] == "distributed.all_reduce" for e in mine) == 2
        assert any(e["cat"] == "backward" for e in mine)
    origin = merged["otherData"]["start_ns"]
    assert origin == min(s["otherData"]["start_ns"] for s in sources)
    later = max(sources, key=lambda s: s["otherData"]["start_ns"])
    shift = (later["otherData"]["start_ns"] - origin) / 1e3
    first = next(e for e in later["traceEvents"] if e.get("ph") == "X")
    moved = next(
        e
        for e in merged["traceEvents"]
        if e["pid"] == later["otherData"]["rank"] and e.get("ph") == "X"
    )
    assert moved["ts"] == pytest.approx(first["ts"] + shift)


def test_merge_traces_refuses_foreign_and_duplicate_traces(tmp_path) -> None:
    foreign = tmp_path / "foreign.json"
    foreign.write_text(json.dumps({"traceEvents": []}))
    with pytest.raises(ValueError, match=r"traces without otherData\.start_ns"):
        tk.profiler.merge_traces([foreign])
    same = tmp_path / "same.json"
    same.write_text(json.dumps({"traceEvents": [], "otherData": {"start_ns": 1, "rank": 0}}))
    with pytest.raises(ValueError, match="several traces of the same rank: ranks \\[0, 0\\]"):
        tk.profiler.merge_traces([same, same])
    with pytest.raises(ValueError, match="needs at least one trace"):
        tk.profiler.merge_traces([])
