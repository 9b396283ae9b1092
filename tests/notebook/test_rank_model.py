"""The per-rank view's model (tensorkit.notebook.rank_model) on hand-made traces, where every
interval is known, and its widget (show_ranks): the ranks in the live model and in the saved
output's recorded view."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tensorkit.notebook import build_ranks
from tensorkit.notebook.rank_model import intersection_ns, union
from tensorkit.notebook.recording_schema import PROFILE, SchemaError, check

MIME = "application/vnd.tensorkit.recording+json"


def _op(name: str, cat: str, start_us: float, end_us: float, **args) -> dict:
    return {"ph": "X", "name": name, "cat": cat, "ts": start_us, "dur": end_us - start_us,
            "pid": 1, "tid": 1, "args": args}  # fmt: skip


def _write(folder: Path, rank: int, start_ns: int, events: list[dict]) -> Path:
    path = folder / f"rank_{rank}.json"
    other = {"start_ns": start_ns, "rank": rank, "world_size": 2}
    path.write_text(json.dumps({"traceEvents": events, "otherData": other}))
    return path


@pytest.fixture
def traces(tmp_path: Path) -> list[Path]:
    """Rank 0: forward 0-10 us, backward 10-40 (its AccumulateGrad 30-40 waits 34-40), an
    all_reduce 20-40 us; rank 1 starts 5 us later on the host clock: backward 0-20, a
    barrier 25-30 (after its backward: nothing hidden), optimizer 30-35."""
    zero = [
        _op("linear", "composite", 0, 10),
        _op("matmul", "forward", 0, 10),
        _op("MmBackward0", "backward", 10, 30),
        _op("AccumulateGrad", "backward", 30, 40),
        _op("distributed.all_reduce", "composite", 20, 40, bytes=4096, group="default"),
        _op("distributed.wait", "composite", 34, 40),
        {"ph": "C", "name": "Memory", "ts": 40, "pid": 1, "args": {"allocated": 8}},
    ]
    one = [
        _op("MmBackward0", "backward", 0, 20),
        _op("distributed.barrier", "composite", 25, 30, bytes=0, group="default"),
        _op("distributed.wait", "composite", 25, 30),
        _op("step", "optimizer", 30, 35),
    ]
    return [_write(tmp_path, 1, 5_000, one), _write(tmp_path, 0, 0, zero)]


def test_each_rank_gets_its_compute_communication_and_hidden_share(traces) -> None:
    model = build_ranks(traces)
    assert model["span_ns"] == 40_000
    zero, one = model["ranks"]
    assert (zero["rank"], one["rank"]) == (0, 1)
    assert zero["compute"] == [[0, 10_000, "forward"], [10_000, 34_000, "backward"]]
    assert zero["comm"] == [[20_000, 40_000, ["all_reduce"]]]
    assert zero["compute_ns"] == 34_000  # the wait inside AccumulateGrad is not compute
    assert zero["backward_ns"] == 24_000
    assert zero["comm_ns"] == 20_000 and zero["wait_ns"] == 6_000
    assert zero["hidden_ns"] == 14_000  # 20-34 us under backward
    assert zero["hidden_share"] == pytest.approx(0.7)
    assert (zero["collectives"], zero["bytes"]) == (1, 4096)
    assert one["compute"] == [[5_000, 25_000, "backward"], [35_000, 40_000, "optimizer"]]
    assert one["comm"] == [[30_000, 35_000, ["barrier"]]]
    assert (one["hidden_ns"], one["hidden_share"]) == (0, 0.0)
    assert model["comm_ns"] == 25_000 and model["hidden_ns"] == 14_000
    assert model["hidden_share"] == pytest.approx(14 / 25)
    assert build_ranks(json.loads(json.dumps(_merged(traces)))) == model


def _merged(paths: list[Path]) -> dict:
    from tensorkit.profiler import merge_traces

    return merge_traces(paths)


def test_bars_merge_below_the_resolution_but_totals_stay_exact(tmp_path: Path) -> None:
    ops = [_op("add", "forward", 10 * n, 10 * n + 9) for n in range(100)]
    ops += [_op("distributed.all_reduce", "composite", 10 * n, 10 * n + 1) for n in range(100)]
    ops.append(_op("distributed.broadcast", "composite", 505, 505.5))
    model = build_ranks([_write(tmp_path, 0, 0, ops)], max_bars=10)
    (rank,) = model["ranks"]
    assert rank["compute"] == [[0, 999_000, "forward"]]  # 1 us gaps < 99.9 us resolution
    assert rank["comm"] == [[0, 991_000, ["all_reduce", "broadcast"]]]
    assert rank["compute_ns"] == 900_000 and rank["comm_ns"] == 100_500
    assert rank["collectives"] == 101
    exact = build_ranks([tmp_path / "rank_0.json"], max_bars=10**9)["ranks"][0]
    assert len(exact["compute"]) == 100 and len(exact["comm"]) == 101


def test_a_run_without_collectives_has_no_share(tmp_path: Path) -> None:
    model = build_ranks([_write(tmp_path, 0, 0, [_op("add", "forward", 0, 1)])])
    assert model["ranks"][0]["hidden_share"] is None and model["hidden_share"] is None


def test_union_and_intersection() -> None:
    assert union([(5, 7), (0, 2), (1, 3), (4, 4), (3, 4)]) == [(0, 4), (5, 7)]
    assert intersection_ns([(0, 4), (5, 7)], [(3, 6), (6, 10)]) == 3
    assert intersection_ns([], [(0, 1)]) == 0


def test_misuse_is_named(traces) -> None:
    with pytest.raises(TypeError, match=r"got the single path '.*rank_1\.json'"):
        build_ranks(str(traces[0]))
    with pytest.raises(ValueError, match=r"expects tk\.profiler\.merge_traces's document"):
        build_ranks({"traceEvents": [], "otherData": {}})
    with pytest.raises(ValueError, match="max_bars must be a positive int, got 0"):
        build_ranks(traces, max_bars=0)
    with pytest.raises(ValueError, match="needs at least one trace"):
        build_ranks([])


def test_show_ranks_puts_the_ranks_in_the_widget_and_its_recorded_view(traces) -> None:
    pytest.importorskip("anywidget")
    from tensorkit.notebook import show_ranks

    widget = show_ranks(traces)
    assert widget.model["ranks"] == build_ranks(traces)
    assert widget.model["rows"] == [] and widget.model["total_ops"] == 0
    check(widget.model, PROFILE)
    bundle = widget._repr_mimebundle_()
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    assert data[MIME]["view"]["sections"] == ["profile"]
    assert data[MIME]["profile"]["ranks"] == widget.model["ranks"]
    assert data["text/html"].startswith('<div id="tk-recorded-')
    broken = {**widget.model, "ranks": {"span_ns": 1, "ranks": [{"rank": "0"}]}}
    with pytest.raises(SchemaError, match=r"ranks"):
        check(broken, PROFILE)
