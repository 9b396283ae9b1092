"""tk.profiler and tk.memory: op records, links, shapes, memory, reports, trace and plots."""

from __future__ import annotations

import gc
import json
from typing import Any

import pytest

import tensorkit as tk
import tensorkit.memory as tkmem
import tensorkit.profiler as profiler
from tensorkit._numbers import bytes_text
from tensorkit.autograd import Tape

FORWARD = [
    "addmm", "relu", "addmm",
    "expand", "expand", "sub", "mul", "mean",
]  # fmt: skip
# With backward_ops=True: (backward op, the forward op whose gradient rule ran it); None: a
# leaf's accumulation. A linear layer with a bias is one op, addmm (arguments (bias, input,
# weight), as PyTorch's): its rule gives the input's gradient (g @ weight), the weight's in
# its own layout (g^T @ input, a fresh array that becomes .grad without a copy), and g for
# the bias, which the engine sums to the bias's shape (sum, view) and copies as a view's
# output (clone). (By default backward is one record per node: test_profiler_backward.)
BACKWARD = [
    ("view", "mean"), ("expand", "mean"), ("div", "mean"),
    ("mul", "mul"), ("mul", "mul"), ("add", "mul"),
    ("matmul", "addmm"),
    ("permute", "addmm"), ("matmul", "addmm"),
    ("sum", "addmm"), ("view", "addmm"), ("clone", None),
    ("threshold_backward", "relu"),
    ("permute", "addmm"), ("matmul", "addmm"),  # weight and bias only
    ("sum", "addmm"), ("view", "addmm"), ("clone", None),
]  # fmt: skip


def assert_nested(complete: list[dict]) -> None:
    """On each thread, complete events are disjoint or nested, never partly overlapping."""
    for tid in {e["tid"] for e in complete}:
        spans = sorted((e["ts"], -e["dur"]) for e in complete if e["tid"] == tid)
        open_ends: list[float] = []
        for ts, minus_dur in spans:
            while open_ends and open_ends[-1] <= ts:
                open_ends.pop()
            end = ts - minus_dur
            assert not open_ends or end <= open_ends[-1]
            open_ends.append(end)


def small_model() -> tuple[Any, Any, Any]:
    tk.manual_seed(0)
    model = tk.nn.Sequential(tk.nn.Linear(4, 8), tk.nn.ReLU(), tk.nn.Linear(8, 2))
    return model, tk.randn(3, 4), tk.randn(3, 2)


def run_step(model: Any, x: Any, target: Any) -> None:
    loss = tk.nn.functional.mse_loss(model(x), target)
    loss.backward()


@pytest.fixture(scope="module")
def prof() -> profiler.profile:
    model, x, target = small_model()
    options = {"record_shapes": True, "record_memory": True, "with_stack": True}
    with profiler.profile(**options, backward_ops=True) as p:
        run_step(model, x, target)
    return p


def test_forward_ops_and_phases(prof: profiler.profile) -> None:
    events = prof.events()
    forward = [e["name"] for e in events if e["phase"] == "forward"]
    assert forward == FORWARD
    assert [e["phase"] for e in events] == ["forward"] * 8 + ["backward"] * len(BACKWARD)
    assert [e["index"] for e in events] == list(range(len(events)))


def test_backward_ops_link_to_their_forward_op(prof: profiler.profile) -> None:
    events = prof.events()
    linked = []
    for e in events[len(FORWARD) :]:
        forward = e["forward_index"]
        if forward is not None:
            assert events[forward]["phase"] == "forward"
        linked.append((e["name"], None if forward is None else events[forward]["name"]))
    assert linked == BACKWARD


def test_shapes_modules_call_sites(prof: profiler.profile) -> None:
    events = prof.events()
    first_linear = events[0]  # (bias, input, weight), as PyTorch's addmm
    assert first_linear["input_shapes"] == [[8], [3, 4], [8, 4]]
    assert first_linear["output_shapes"] == [[3, 8]]
    assert first_linear["input_dtypes"] == ["float32", "float32", "float32"]
    assert first_linear["device"] == "cpu"
    modules = [e["module_path"] for e in events[: len(FORWARD)]]
    assert modules == ["Sequential.0", "Sequential.1", "Sequential.2"] + [""] * 5
    assert all(e["call_site"].startswith(__file__ + ":") for e in events)
    assert all(e["end_ns"] >= e["start_ns"] for e in events)
    json.dumps(events)


def test_nothing_observed_after_exit(prof: profiler.profile) -> None:
    count = len(prof.records)
    x = tk.ones(3, requires_grad=True)
    (x * 2).sum().backward()
    assert len(prof.records) == count
    assert prof not in tk._state.observers


def test_record_function_and_optimizer_phase(tmp_path: Any) -> None:
    model, x, target = small_model()
    opt = tk.optim.SGD(model.parameters(), lr=0.1)
    with profiler.profile() as p:
        with profiler.record_function("my_step"), profiler.record_function("inner"):
            run_step(model, x, target)
        opt.step()  # labels itself record_function("Optimizer.step#SGD.step"), as in PyTorch
    phases = {e["phase"] for e in p.events()}
    assert phases == {"forward", "backward", "optimizer"}
    assert all("my_step" in e["scopes"] for e in p.events() if e["phase"] != "optimizer")
    annotations = [r for r in p.ranges() if r["phase"] == "user_annotation"]
    assert [r["name"] for r in annotations] == ["inner", "my_step", "Optimizer.step#SGD.step"]
    assert [r["depth"] for r in annotations] == [1, 0, 0]
    linear = [r for r in p.ranges() if r["name"] == "linear"]  # F.linear, a composite
    assert linear and {(r["phase"], r["depth"]) for r in linear} == {("forward", 2)}
    p.export_chrome_trace(str(tmp_path / "ranges.json"))
    trace = json.loads((tmp_path / "ranges.json").read_text())["traceEvents"]
    ranges = [e for e in trace if e["ph"] == "X" and e["cat"] == "user_annotation"]
    assert {e["tid"] for e in ranges} == {0} and len(ranges) == 3
    assert_nested([e for e in trace if e["ph"] == "X"])
    rows = {(r.name, r.phase): r for r in p.key_averages()}
    step = rows[("my_step", "user_annotation")]
    assert step.count == 1
    assert 0 <= step.self_cpu_time_total < step.cpu_time_total


def test_key_averages_table(prof: profiler.profile) -> None:
    rows = prof.key_averages()
    by_key = {(r.name, r.phase): r for r in rows if not r.is_range}
    assert by_key[("addmm", "forward")].count == 2  # the op inside F.linear's range
    assert ("matmul", "forward") not in by_key  # a linear layer's product is inside its op
    assert by_key[("matmul", "backward")].count == 3  # two weights' gradients, one input's
    assert by_key[("relu", "forward")].cpu_memory_usage == 3 * 8 * 4
    total = sum(r.cpu_time_total for r in rows if not r.is_range)
    assert total == sum(e["duration_ns"] for e in prof.events())
    assert {r.name for r in rows if r.is_range} == {"linear", "mse_loss"}  # composites
    table = rows.table(sort_by="cpu_time_total", row_limit=100)
    for header in ("Name", "Self CPU %", "Self CPU", "CPU total", "CPU time avg", "# of Calls"):
        assert header in table
    assert "CPU Mem" in table and "host wall time" in table
    matmul_line = next(line for line in table.splitlines() if line.startswith("matmul "))
    assert matmul_line.split()[-1] == "3"  # backward only
    assert len(rows.table(row_limit=3).splitlines()) == 3 + 6
    shaped = prof.key_averages(group_by_input_shape=True)
    linear_ops = [r for r in shaped if r.name == "addmm" and r.phase == "forward"]
    assert len(linear_ops) == 2 and not any(r.is_range for r in linear_ops)  # one per shape
    with pytest.raises(ValueError):
        rows.table(sort_by="nope")


def test_chrome_trace(prof: profiler.profile, tmp_path: Any) -> None:
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    complete = [e for e in events if e["ph"] == "X" and e["cat"] != "composite"]
    assert len(complete) == len(prof.records)
    for e in complete:
        assert {"name", "cat", "ph", "ts", "dur", "pid", "tid", "args"} <= e.keys()
        assert e["dur"] >= 0
    assert {e["tid"] for e in complete if e["cat"] == "backward"} == {2}
    assert {e["tid"] for e in complete if e["cat"] == "forward"} == {1}
    linked = [e for e in complete if "forward_op" in e["args"]]
    assert linked and all(complete[e["args"]["forward_op"]]["cat"] == "forward" for e in linked)
    assert_nested(complete)
    counters = [e for e in events if e["ph"] == "C"]
    assert len(counters) == len(prof.records)
    assert all("allocated" in e["args"] for e in counters)


def test_memory_counts_known_allocations() -> None:
    base = tk.ones(1000, dtype=tk.float64)
    before = tkmem.memory_allocated()
    with profiler.profile(record_memory=True) as p:
        y = base + 1  # a new 1000-element float64 buffer
        view = y.view(10, 100)  # a view: no new memory
        row = view[1]  # a view of a view: none either
    assert [e["alloc_bytes"] for e in p.events()] == [8000, 0, 0]
    assert p.events()[0]["live_bytes"] == before + 8000
    assert tkmem.memory_allocated() == before + 8000
    assert tkmem.max_memory_allocated() >= before + 8000
    del y, view, row
    gc.collect()
    assert tkmem.memory_allocated() == before
    stats = tkmem.memory_stats()
    assert stats["allocated_bytes.all.current"] == before
    assert stats["allocated_bytes.all.freed"] >= 8000
    tkmem.reset_peak_memory_stats()
    assert tkmem.max_memory_allocated() == before


def test_memory_frees_are_recorded() -> None:
    x = tk.ones(500, dtype=tk.float64)
    with profiler.profile(record_memory=True) as p:
        y = x * 2
        del y
        z = x * 3
    events = p.events()
    assert events[1]["free_bytes"] == 4000 and events[1]["alloc_bytes"] == 4000
    assert events[1]["live_bytes"] == events[0]["live_bytes"]
    assert events[1]["peak_bytes"] >= events[0]["live_bytes"]
    del z


@pytest.mark.parametrize("tape_first", [True, False])
def test_tape_inside_profile_carries_records(tape_first: bool) -> None:
    model, x, target = small_model()
    tape, prof = Tape(summaries=False), profiler.profile(record_memory=True)
    first, second = (tape, prof) if tape_first else (prof, tape)
    with first, second:
        run_step(model, x, target)
    assert len(tape.entries) == len(prof.records)
    for entry, record in zip(tape.entries, prof.records, strict=True):
        assert entry.records["time_ns"] == record.duration_ns
        assert entry.records["alloc_bytes"] == record.alloc_bytes
        assert entry.records["profiler_index"] == record.index
    assert tape.entries[1].to_dict()["records"]["alloc_bytes"] == 3 * 8 * 4


def test_custom_function_is_one_event() -> None:
    class Double(tk.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            return x * 2 + 0

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            return grad * 2

    x = tk.ones(3, requires_grad=True)
    with profiler.profile(backward_ops=True) as p:
        Double.apply(x).sum().backward()
    names = [(e["name"], e["phase"]) for e in p.events()]
    assert names[0] == ("Double", "forward")
    assert ("mul", "backward") in names
    mul = next(e for e in p.events() if e["name"] == "mul")
    assert mul["forward_index"] == 0


def test_plots() -> None:
    pytest.importorskip("matplotlib")
    model, x, target = small_model()
    # backward_ops: op names shared by both phases, so each bar stacks forward and backward
    with profiler.profile(record_memory=True, backward_ops=True) as p:
        run_step(model, x, target)
    fig = p.plot_op_times(top=4)
    ax = fig.axes[0]
    names = {t.get_text() for t in ax.get_yticklabels()}
    assert len(names) == 4
    phases = {t.get_text() for t in ax.get_legend().get_texts()}
    assert phases == {"forward", "backward"}
    assert len(ax.patches) == 4 * 2
    fig.canvas.draw()
    modules = p.plot_module_times().axes[0]
    assert {"Sequential.0", "Sequential.1", "Sequential.2"} <= {
        t.get_text() for t in modules.get_yticklabels()
    }
    mem = p.plot_memory_timeline()
    ax = mem.axes[0]
    first_backward = next(e["index"] for e in p.events() if e["phase"] == "backward")
    vertical = [line for line in ax.get_lines() if line.get_label() == "backward starts"]
    assert len(vertical) == 1 and list(vertical[0].get_xdata()) == [first_backward] * 2
    notes = [t for t in ax.texts if t.get_text().startswith("peak")]
    assert len(notes) == 1
    peak = max(e["live_bytes"] for e in p.events())
    assert bytes_text(peak) in notes[0].get_text()
    mem.canvas.draw()
    with profiler.profile() as bare:
        tk.ones(2) * 2
    with pytest.raises(RuntimeError):
        bare.plot_memory_timeline()


def test_recording_leaves_the_garbage_collector_nothing_new_to_track() -> None:
    """Per op the profiler keeps strs, ints and None, and each distinct shape signature,
    call site and scope tuple once: a long profile does not make collections slower."""
    x = tk.ones(4, requires_grad=True)

    def tracked_after(ops: int) -> int:
        options = {"record_shapes": True, "record_memory": True, "with_stack": True}
        with profiler.profile(**options) as p, profiler.record_function("scope"):
            for _ in range(ops):
                (x * 2).sum().backward()
        gc.collect()
        count = len(gc.get_objects())
        assert len(p.records) > 4 * ops
        return count

    tracked_after(10)  # warm up caches outside the profiler
    assert tracked_after(400) - tracked_after(10) < 100


def test_a_profile_can_be_reused_but_not_nested() -> None:
    p = profiler.profile()
    with p:
        tk.ones(2) * 2
    with p:
        tk.ones(2) + 1
        with pytest.raises(RuntimeError, match="already running"), p:
            pass
    assert [e["name"] for e in p.events()] == ["add"]


# ------------------------------------------------------------- composite functions as ranges
def test_a_composite_function_is_a_range_above_its_ops(tmp_path: Any) -> None:
    x = tk.randn(2, 1, 6, 6, requires_grad=True)
    weight = tk.randn(3, 1, 3, 3, requires_grad=True)
    with profiler.profile() as p, profiler.record_function("step"):
        tk.nn.functional.conv2d(x, weight, padding=1).sum().backward()
    (conv,) = [r for r in p._ranges if r.name == "conv2d"]
    assert conv.phase == "forward" and conv.composite and conv.depth == 1
    inside = [r for r in p.records if conv.start_ns <= r.start_ns <= conv.end_ns]
    assert len(inside) >= 2 and all(r.phase == "forward" for r in inside)
    assert all(r.scopes == ("step", "conv2d") for r in inside)
    rows = {(r.name, r.phase): r for r in p.key_averages()}
    row = rows[("conv2d", "forward")]
    ops_ns = sum(r.duration_ns for r in inside)
    assert row.is_range and row.count == 1 and row.cpu_time_total == conv.duration_ns
    assert row.self_cpu_time_total == conv.duration_ns - ops_ns
    step = rows[("step", "user_annotation")]  # its own time leaves out conv2d's own time too
    step_ops = sum(r.duration_ns for r in p.records)
    assert step.self_cpu_time_total == step.cpu_time_total - step_ops - row.self_cpu_time_total
    p.export_chrome_trace(str(tmp_path / "trace.json"))
    events = json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
    (slice_,) = [e for e in events if e.get("cat") == "composite"]
    assert slice_["name"] == "conv2d" and slice_["tid"] == 1  # the forward track: ops nest in it
    assert_nested([e for e in events if e["ph"] == "X"])


def test_composite_functions_cost_a_check_when_no_profile_is_active() -> None:
    from tensorkit import _ranges

    x = tk.randn(1, 1, 4, 4)
    weight = tk.randn(1, 1, 3, 3)
    assert not _ranges.range_observers()
    out = tk.nn.functional.conv2d(x, weight)
    assert not _ranges.scopes and out.shape == (1, 1, 2, 2)
    assert tk.nn.functional.conv2d.__wrapped__.__name__ == "conv2d"  # signature kept


def test_no_op_bears_the_name_of_a_composite_function() -> None:
    """A table row names one thing: a function's range and the ops it holds differ by name."""
    import tensorkit.nn.functional  # noqa: F401  (marks every composite)
    from tensorkit._ranges import composites
    from tensorkit.ops._apply import OPS

    assert len(composites) > 50
    assert composites.isdisjoint(op.name for op in OPS.values())


@pytest.mark.parametrize(
    ("run", "pairs"),
    [
        (
            lambda x, y: tk.nn.functional.cross_entropy(
                tk.nn.functional.linear(x, y[0], y[1]), y[2]
            ),
            [("linear", "addmm"), ("nll_loss", "nll_loss_forward")],
        ),
        (
            lambda x, y: tk.nn.functional.layer_norm(x, (4,), y[0][0], y[1]),
            [("layer_norm", "native_layer_norm")],
        ),
        (
            lambda x, y: tk.nn.functional.binary_cross_entropy(x.sigmoid(), x.detach().sigmoid()),
            [("binary_cross_entropy", "binary_cross_entropy_elementwise")],
        ),
    ],
)
def test_the_table_lists_a_function_above_its_op_by_their_own_names(run: Any, pairs: list) -> None:
    x = tk.randn(3, 4, requires_grad=True)
    params = (
        tk.randn(4, 4, requires_grad=True),
        tk.randn(4, requires_grad=True),
        tk.tensor([0, 3, 1]),
    )
    with profiler.profile() as p:
        run(x, params)
    rows = {row.name: row for row in p.key_averages() if row.phase == "forward"}
    table = p.key_averages().table()
    for function, op in pairs:
        assert rows[function].is_range and not rows[op].is_range
        assert rows[function].cpu_time_total >= rows[op].cpu_time_total
        assert sum(line.split()[0] == function for line in table.splitlines()) == 1
        assert sum(line.split()[0] == op for line in table.splitlines()) == 1


def test_a_range_reports_the_memory_its_ops_allocated() -> None:
    x = tk.randn(2, 1, 6, 6)
    weight = tk.randn(3, 1, 3, 3)
    with profiler.profile(record_memory=True) as p:
        tk.nn.functional.conv2d(x, weight, padding=1)
    row = {(r.name, r.phase): r for r in p.key_averages()}[("conv2d", "forward")]
    assert row.cpu_memory_usage == sum(r.alloc_bytes for r in p.records) > 0
    assert row.self_cpu_memory_usage == 0
