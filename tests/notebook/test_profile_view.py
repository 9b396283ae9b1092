"""The profile view: its data model (rows, modules, memory timeline, allocator blocks, payload
cap), the widget's traits and static HTML, and its selection linked to the graph widget."""

from __future__ import annotations

import json
from typing import Any

import pytest

import tensorkit as tk
from tensorkit.autograd import Tape
from tensorkit.notebook import build_graph
from tensorkit.notebook.profile_model import block_view, build_profile, selection_links
from tensorkit.profiler.events import TIMING_MODE


def _run(profiled: bool = True) -> tuple[Any, Tape]:
    tk.manual_seed(0)
    model = tk.nn.Sequential(tk.nn.Linear(4, 8), tk.nn.ReLU(), tk.nn.Linear(8, 2))
    x, target = tk.randn(3, 4), tk.randn(3, 2)
    prof = tk.profiler.profile(record_shapes=True, record_memory=True, with_stack=True)
    tape = Tape(summaries=False)
    if profiled:
        with prof, tape:
            tk.nn.functional.mse_loss(model(x), target).backward()
    else:
        with tape:
            tk.nn.functional.mse_loss(model(x), target).backward()
    return prof, tape


@pytest.fixture(scope="module")
def run() -> tuple[Any, Tape]:
    return _run()


def test_rows_follow_the_records(run: tuple[Any, Tape]) -> None:
    prof, _ = run
    model = build_profile(prof)
    rows = model["rows"]
    assert model["total_ops"] == len(rows) == len(prof.records) == 26
    assert [r["index"] for r in rows] == list(range(26))
    assert [r["name"] for r in rows] == [r.name for r in prof.records]
    assert sum(r["phase"] == "forward" for r in rows) == 8
    assert sum(r["phase"] == "backward" for r in rows) == 18
    assert [r["host_time_ns"] for r in rows] == [r.duration_ns for r in prof.records]
    assert model["has"] == {"gpu_time": False, "memory": True, "shapes": True, "call_sites": True}
    assert model["omitted"] == {"count": 0, "host_time_ns": 0}
    # Linear 0 is one op, addmm, its arguments (bias, input, weight) as PyTorch's
    assert rows[0]["name"] == "addmm" and rows[0]["input_shapes"] == [[8], [3, 4], [8, 4]]
    assert rows[0]["output_dtypes"] == ["float32"] and rows[0]["alloc_bytes"] == 3 * 8 * 4
    assert "test_profile_view.py" in rows[0]["call_site"]
    assert model["timing_mode"] == TIMING_MODE  # a CPU-only run: nothing about CUDA
    assert "cuda" not in model["timing_mode"].lower() and "cuda" in prof.timing_mode.lower()
    json.dumps(model, allow_nan=False)  # plain data


def test_backward_rows_link_to_their_forward_op(run: tuple[Any, Tape]) -> None:
    prof, _ = run
    rows = build_profile(prof)["rows"]
    by_index = {r["index"]: r for r in rows}
    relu_backward = next(r for r in rows if r["name"] == "threshold_backward")
    assert by_index[relu_backward["forward_index"]]["name"] == "relu"
    for row in rows:
        if row["forward_index"] is not None:
            forward = by_index[row["forward_index"]]
            assert row["phase"] == "backward" and forward["phase"] == "forward"
            assert row["module"] == forward["module"]  # backward time joins the module
    assert relu_backward["module"] == "Sequential.1"


def test_module_totals_are_sums_of_rows(run: tuple[Any, Tape]) -> None:
    prof, _ = run
    model = build_profile(prof)
    rows = model["rows"]
    assert {m["module"] for m in model["modules"]} == {
        "Sequential.0",
        "Sequential.1",
        "Sequential.2",
        "(no module)",
    }
    for module in model["modules"]:
        mine = [r for r in rows if (r["module"] or "(no module)") == module["module"]]
        assert module["count"] == len(mine)
        for phase in ("forward", "backward"):
            expected = sum(r["host_time_ns"] for r in mine if r["phase"] == phase)
            assert module["host_ns"].get(phase, 0) == expected
        assert module["total_ns"] == sum(module["host_ns"].values())
    totals = [m["total_ns"] for m in model["modules"]]
    assert totals == sorted(totals, reverse=True)


def test_function_totals_group_ops_under_their_composite(run: tuple[Any, Tape]) -> None:
    prof, tape = run
    model = build_profile(prof)
    rows = model["rows"]
    by_index = {r["index"]: r for r in rows}
    linear = next(r for r in rows if r["name"] == "addmm" and r["phase"] == "forward")
    assert linear["function"] == "linear"  # F.linear is a composite function (its op inside)
    matmul = next(r for r in rows if r["name"] == "matmul")  # the input's gradient, in backward
    assert matmul["phase"] == "backward" and matmul["function"] == "linear"
    relu = next(r for r in rows if r["name"] == "relu")
    assert relu["function"] == "relu"  # an op outside any composite stands for itself
    for row in rows:
        if row["forward_index"] is not None:  # backward time joins its forward op's function
            assert row["function"] == by_index[row["forward_index"]]["function"]
    functions = {f["function"]: f for f in model["functions"]}
    assert {"linear", "mse_loss", "relu"} <= set(functions)
    assert set(functions["linear"]["host_ns"]) == {"forward", "backward"}
    for name, group in functions.items():
        mine = [r for r in rows if r["function"] == name]
        assert group["count"] == len(mine)
        assert group["total_ns"] == sum(r["host_time_ns"] for r in mine)
    assert build_profile(tape)["functions"] == model["functions"]  # a Tape inside agrees


def test_cpu_memory_timeline(run: tuple[Any, Tape]) -> None:
    prof, _ = run
    memory = build_profile(prof)["memory"]
    live = [r.live_bytes for r in prof.records]
    assert memory["index"] == list(range(26)) and memory["allocated"] == live
    assert memory["reserved"] == memory["allocated"]  # no caching allocator on the CPU
    assert not memory["caching"] and "no caching allocator" in memory["allocator"]
    assert memory["peak"] == [max(r.peak_bytes, *live[: i + 1]) for i, r in enumerate(prof.records)]
    assert memory["peak_bytes"] == memory["peak"][-1] >= max(live)
    assert memory["allocated"][memory["peak_index"]] == max(live)
    assert memory["backward_start"] == next(r.index for r in prof.records if r.phase == "backward")
    assert memory["stride"] == 1


def test_gpu_timeline_reads_reserved_bytes_when_recorded() -> None:
    _, tape = _run()
    for entry in tape.entries:
        entry.records.pop("reserved_bytes")  # as a recording made before it was recorded
        for info in entry.outputs:
            info.device = "cuda:0"
    memory = build_profile(tape)["memory"]
    assert memory["caching"] and "caching memory pool" in memory["allocator"]
    assert memory["reserved"] == [None] * 26 and "not recorded per op" in memory["allocator"]
    for n, entry in enumerate(tape.entries):
        entry.records["reserved_bytes"] = 4096 * (n + 1)
    memory = build_profile(tape)["memory"]
    assert memory["reserved"] == [4096 * (n + 1) for n in range(26)]
    assert "not recorded" not in memory["allocator"]


def test_no_memory_no_timeline() -> None:
    with tk.profiler.profile() as prof:
        tk.ones(2, 2).sum()
    model = build_profile(prof)
    assert model["memory"] is None and model["blocks"] is None
    assert model["has"] == {
        "gpu_time": False,
        "memory": False,
        "shapes": False,
        "call_sites": False,
    }


def test_payload_is_capped_and_says_so(run: tuple[Any, Tape]) -> None:
    prof, _ = run
    full = build_profile(prof)
    capped = build_profile(prof, max_rows=5, max_points=10)
    times = sorted((r["host_time_ns"] for r in full["rows"]), reverse=True)
    assert sorted((r["host_time_ns"] for r in capped["rows"]), reverse=True) == times[:5]
    assert [r["index"] for r in capped["rows"]] == sorted(r["index"] for r in capped["rows"])
    assert capped["omitted"] == {"count": 21, "host_time_ns": sum(times[5:])}
    assert capped["total_ops"] == 26 and capped["max_rows"] == 5
    assert capped["modules"] == full["modules"]  # totals still cover every op
    memory, allocated = capped["memory"], full["memory"]["allocated"]
    assert memory["stride"] == 3 and memory["index"] == list(range(0, 26, 3))
    assert memory["allocated"] == [max(allocated[i : i + 3]) for i in range(0, 26, 3)]
    assert memory["peak_bytes"] == full["memory"]["peak_bytes"]
    with pytest.raises(ValueError, match="max_rows must be a positive int, got 0"):
        build_profile(prof, max_rows=0)


def test_a_profiled_tape_gives_the_same_rows(run: tuple[Any, Tape]) -> None:
    prof, tape = run
    keys = ("index", "name", "phase", "forward_index", "module", "host_time_ns", "alloc_bytes")
    keys += ("live_bytes", "input_shapes", "output_shapes", "output_dtypes", "device")
    from_prof, from_tape = build_profile(prof), build_profile(tape)
    assert [[r[k] for k in keys] for r in from_tape["rows"]] == [
        [r[k] for k in keys] for r in from_prof["rows"]
    ]
    assert from_tape["modules"] == from_prof["modules"]
    assert from_tape["memory"]["allocated"] == from_prof["memory"]["allocated"]


def test_gpu_times_are_shown_when_recorded(run: tuple[Any, Tape]) -> None:
    _, tape = _run()
    for n, entry in enumerate(tape.entries):
        entry.records["gpu_time_ns"] = 1000 * (n + 1)
    model = build_profile(tape)
    assert model["has"]["gpu_time"]
    assert [r["gpu_time_ns"] for r in model["rows"]] == [1000 * (n + 1) for n in range(26)]
    gpu_total = sum(sum(m["gpu_ns"].values()) for m in model["modules"])
    assert gpu_total == sum(1000 * (n + 1) for n in range(26))


def test_bad_sources() -> None:
    with pytest.raises(
        TypeError, match=r"expects a tensorkit\.profiler\.profile or a Tape, got list"
    ):
        build_profile([])
    _, tape = _run(profiled=False)
    with pytest.raises(ValueError, match="holds no profiled ops"):
        build_profile(tape)


# ------------------------------------------------------------------------------ allocator
SNAPSHOT = {
    "device_traces": [
        [
            {"action": "segment_alloc", "addr": 0, "size": 2048},
            {"action": "alloc", "addr": 0, "size": 512, "op": "matmul", "call_site": "a.py:3"},
            {"action": "alloc", "addr": 512, "size": 1024, "op": "add"},
            {"action": "free", "addr": 0, "size": 512},
            {"action": "alloc", "addr": 0, "size": 256, "op": "relu"},  # the cached block reused
            {"action": "free", "addr": 0, "size": 256},
            {"action": "free", "addr": 4096, "size": 64},  # allocated before recording
            {"action": "segment_free", "addr": 0, "size": 512},
            {"action": "oom", "addr": 0, "size": 1 << 40},
        ]
    ],
    "blocks": [{"addr": 512, "size": 1024}, {"addr": 8192, "size": 128, "device": 0}],
}


def test_block_view_reduces_the_event_history() -> None:
    view = block_view(SNAPSHOT)
    blocks = {b["addr"]: b for b in view["blocks"]}
    assert view["events"] == 9 and view["devices"] == [0] and view["omitted_blocks"] == 0
    assert blocks[0]["history"] == [
        [1, "in_use", 512],
        [3, "cached", 512],
        [4, "in_use", 256],
        [5, "cached", 256],
        [7, "returned", 256],
    ]
    assert blocks[0]["state"] == "returned" and blocks[0]["size"] == 256
    assert blocks[0]["op"] == "relu"
    assert blocks[512]["state"] == "in_use" and blocks[512]["history"] == [[2, "in_use", 1024]]
    assert blocks[4096]["state"] == "cached"  # outside the returned segment
    assert blocks[8192]["state"] == "in_use" and blocks[8192]["history"] == [[0, "in_use", 128]]
    assert view["totals"] == {"in_use": 1024 + 128, "cached": 64, "returned": 256}
    timeline = view["timeline"]
    assert timeline["in_use"] == [0, 512, 1536, 1024, 1280, 1024, 1024, 1024, 1024]
    assert timeline["cached"] == [0, 0, 0, 512, 0, 256, 320, 64, 64]
    assert timeline["reserved"] == [2048] * 7 + [1536] * 2
    assert view["ooms"] == [{"event": 8, "device": 0, "size": 1 << 40}]
    assert SNAPSHOT["blocks"][0] == {"addr": 512, "size": 1024}  # the input is not changed


def test_block_view_bounds_and_checks() -> None:
    view = block_view(SNAPSHOT, max_points=4, max_blocks=2)
    assert [b["size"] for b in view["blocks"]] == [256, 1024]
    assert view["omitted_blocks"] == 2
    assert view["timeline"]["stride"] == 3 and view["timeline"]["event"] == [0, 3, 6]
    assert view["timeline"]["in_use"] == [1536, 1280, 1024]
    with pytest.raises(ValueError, match="'device_traces' list"):
        block_view({"traces": []})
    with pytest.raises(ValueError, match=r"\[0\]\[1\] needs a string 'action'"):
        block_view({"device_traces": [[{"action": "alloc", "addr": 0, "size": 1}, {"size": 1}]]})
    with pytest.raises(ValueError, match="non-negative int 'size', got -4"):
        block_view({"device_traces": [[{"action": "alloc", "addr": 0, "size": -4}]]})
    with pytest.raises(ValueError, match=r"snapshot\['blocks'\]\[0\] needs a non-negative int"):
        block_view({"device_traces": [], "blocks": [{"addr": "0x10", "size": 1}]})


def test_snapshot_goes_into_the_model(run: tuple[Any, Tape]) -> None:
    prof, _ = run
    assert build_profile(prof, snapshot=SNAPSHOT)["blocks"] == block_view(SNAPSHOT)


# ------------------------------------------------------------------------------- widgets
@pytest.fixture
def widgets() -> Any:
    """tensorkit.notebook.profile_widget (skips without anywidget, the notebook extra)."""
    pytest.importorskip("anywidget", reason="the widgets need anywidget (the notebook extra)")
    from tensorkit.notebook import profile_widget

    return profile_widget


def test_widget_traits_and_static_html(run: tuple[Any, Tape], widgets: Any) -> None:
    prof, _ = run
    widget = prof.show()
    assert isinstance(widget, widgets.ProfileWidget)
    assert widget.model == build_profile(prof) and widget.selected == -1
    assert "tensorkit widgets bundle" in widget._esm and "tk-profile-table" in widget._esm
    assert ".tk-profile-table" in widget._css
    widget.selected = 3
    with pytest.raises(Exception, match="selected must be a profiler event index or -1, got -2"):
        widget.selected = -2
    recorded = widget._repr_mimebundle_()[0]["application/vnd.tensorkit.recording+json"]
    assert recorded["profile"] == widget.model and recorded["view"]["sections"] == ["profile"]


def _index(tape: Tape, name: str, phase: str = "forward") -> tuple[int, int]:
    entry = next(e for e in tape.entries if e.name == name and e.phase == phase)
    return entry.index, entry.records["profiler_index"]


def test_selection_is_linked_both_ways(run: tuple[Any, Tape], widgets: Any) -> None:
    prof, tape = run
    view = prof.show(tape=tape)
    assert isinstance(view, widgets.ProfileView)
    assert isinstance(view.graph, widgets.GraphWidget) and view.graph.graph == build_graph(tape)
    assert view.children == (view.graph, view.profile)
    assert view.layout.flex_flow == "row wrap"  # side by side, stacking when narrow
    assert (view.graph.layout.flex, view.profile.layout.flex) == ("3 1 560px", "2 1 420px")
    relu_entry, relu_index = _index(tape, "relu")
    view.profile.selected = relu_index
    assert view.graph.selected == f"op{relu_entry}"
    _, backward_index = _index(tape, "threshold_backward", "backward")
    view.profile.selected = backward_index  # its forward op's node; the row stays selected
    assert view.graph.selected == f"op{relu_entry}" and view.profile.selected == backward_index
    linear_entry, linear_index = _index(tape, "addmm")
    view.graph.selected = f"op{linear_entry}"
    assert view.profile.selected == linear_index
    view.graph.selected = next(n["id"] for n in view.graph.graph["nodes"] if n["kind"] == "tensor")
    assert view.profile.selected == -1
    view.profile.selected = linear_index
    view.profile.selected = -1
    assert view.graph.selected == ""
    assert "tk-side-by-side" in view._dom_classes  # graph and profile side by side
    data = view._repr_mimebundle_()  # a VBox's bundle: a dict, without metadata
    assert "tk-recorded-output" in data["text/html"]
    recorded = data["application/vnd.tensorkit.recording+json"]
    assert recorded["view"]["sections"] == ["graph", "profile"]
    assert recorded["view"]["links"]["node_of"][str(relu_index)] == f"op{relu_entry}"


def test_graph_with_backward_selects_backward_nodes(run: tuple[Any, Tape], widgets: Any) -> None:
    prof, tape = run
    view = widgets.show_profile(prof, tape, include_backward=True, max_rows=3)
    backward_entry, backward_index = _index(tape, "threshold_backward", "backward")
    view.profile.selected = backward_index
    assert view.graph.selected == f"op{backward_entry}"
    assert len(view.profile.model["rows"]) == 3


def test_selection_links_from_plain_entries(run: tuple[Any, Tape]) -> None:
    _, tape = run
    graph = build_graph(tape)
    ids = [n["id"] for n in graph["nodes"]]
    links = selection_links(tape.entries, ids)
    assert links == selection_links(
        json.loads(json.dumps([e.to_dict() for e in tape.entries])), ids
    )
    assert set(links["index_of"]) == {i for i in ids if i.startswith("op")}
    for entry in tape.entries:  # forward ops: their node; backward ops: their forward op's
        node = entry.index if entry.phase == "forward" else entry.backward_of
        expected = None if node is None else f"op{node}"  # a leaf's accumulation has none
        assert links["node_of"].get(entry.records["profiler_index"]) == expected


def test_tape_must_come_from_the_same_profile(run: tuple[Any, Tape], widgets: Any) -> None:
    prof, _ = run
    _, unprofiled = _run(profiled=False)
    with pytest.raises(ValueError, match="holds no profiled ops"):
        prof.show(tape=unprofiled)
    with tk.profiler.profile() as other, Tape() as tape:
        tk.ones(2).exp()
    with pytest.raises(ValueError, match=r"not recorded inside this profile: its entry 0 \(exp\)"):
        prof.show(tape=tape)
    assert other.show(tape=tape).profile.model["total_ops"] == 1
    with pytest.raises(TypeError, match=r"tape must be a tensorkit\.autograd\.Tape, got dict"):
        prof.show(tape={})
