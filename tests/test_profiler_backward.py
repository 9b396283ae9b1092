"""The profiler's default backward: one record per autograd node, taken on the engine's
array path; ``backward_ops=True``, a Tape, create_graph and anomaly mode keep op-level records."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest
from cuda_standin import StandInCupy, install
from test_profiler import BACKWARD, FORWARD, run_step, small_model

import tensorkit as tk
import tensorkit.profiler as profiler
from tensorkit import _state
from tensorkit.autograd import Tape
from tensorkit.notebook.profile_model import build_profile

# (node, the forward op it differentiates) of small_model's step; None: a leaf's accumulation
NODES = [
    ("MeanBackward0", "mean"), ("MulBackward0", "mul"), ("SubBackward0", "sub"),
    ("ExpandBackward0", "expand"), ("AddmmBackward0", "addmm"),
    ("AccumulateGrad", None), ("AccumulateGrad", None),  # the bias's, then the weight's
    ("ReluBackward0", "relu"), ("AddmmBackward0", "addmm"),
    ("AccumulateGrad", None), ("AccumulateGrad", None),
]  # fmt: skip
OPTIONS = {"record_shapes": True, "record_memory": True, "with_stack": True}


def grads_of(model: Any) -> list[np.ndarray]:
    return [p.grad.numpy().copy() for p in model.parameters()]


def linked(events: list[dict]) -> list[tuple[str, str | None]]:
    """(name, name of the linked forward op) of each backward event."""
    pairs = []
    for e in events:
        if e["phase"] == "backward":
            forward = e["forward_index"]
            if forward is not None:
                assert events[forward]["phase"] == "forward"
            pairs.append((e["name"], None if forward is None else events[forward]["name"]))
    return pairs


@pytest.fixture(scope="module")
def node_prof() -> tuple[profiler.profile, list[np.ndarray]]:
    model, x, target = small_model()
    with profiler.profile(**OPTIONS) as prof:
        run_step(model, x, target)
    return prof, grads_of(model)


def test_one_record_per_node_linked_to_its_forward_op(node_prof: Any) -> None:
    prof, _ = node_prof
    events = prof.events()
    assert [e["name"] for e in events[: len(FORWARD)]] == FORWARD
    assert [e["phase"] for e in events] == ["forward"] * len(FORWARD) + ["backward"] * len(NODES)
    assert linked(events) == NODES
    assert all(e["end_ns"] >= e["start_ns"] and e["device"] == "cpu" for e in events)
    forward_line = run_step.__code__.co_firstlineno + 1  # loss = mse_loss(model(x), target)
    site = f"{run_step.__code__.co_filename}:{forward_line}"
    assert {e["call_site"] for e in events[: len(FORWARD)]} == {site}
    for e in events[len(FORWARD) :]:  # a node's call site is its forward op's
        assert e["call_site"] == (None if e["forward_index"] is None else site)


def test_node_records_carry_shapes_and_memory(node_prof: Any) -> None:
    prof, _ = node_prof
    backward = [e for e in prof.events() if e["phase"] == "backward"]
    addmm = next(e for e in backward if e["name"] == "AddmmBackward0")  # the second Linear's
    assert addmm["input_shapes"] == [[3, 2]]  # the gradient flowing in
    # one per input needing a gradient, (bias, input, weight); the weight's in its own layout
    assert addmm["output_shapes"] == [[2], [3, 8], [2, 8]]
    assert addmm["alloc_bytes"] == (2 + 3 * 8 + 2 * 8) * 4
    first = [e for e in backward if e["name"] == "AddmmBackward0"][1]  # x needs no gradient
    assert first["output_shapes"] == [[8], [8, 4]]
    leaves = [e for e in backward if e["name"] == "AccumulateGrad"]
    assert [e["output_shapes"] for e in leaves] == [[[2]], [[2, 8]], [[8]], [[8, 4]]]
    assert all(e["live_bytes"] is not None and e["peak_bytes"] >= e["live_bytes"] for e in backward)


def test_totals_and_reports(node_prof: Any, tmp_path: Any) -> None:
    prof, _ = node_prof
    averages = prof.key_averages()
    rows = {(r.name, r.phase): r for r in averages if not r.is_range}
    assert rows[("AccumulateGrad", "backward")].count == 4
    assert rows[("AddmmBackward0", "backward")].count == 2
    assert ("MmBackward0", "backward") not in rows  # both Linear layers have a bias
    assert ("mul", "backward") not in rows  # the rules' ops are inside their node's record
    assert sum(r.cpu_time_total for r in averages if not r.is_range) == sum(
        e["duration_ns"] for e in prof.events()
    )
    assert "AccumulateGrad" in prof.key_averages().table()
    prof.export_chrome_trace(str(tmp_path / "trace.json"))
    trace = json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
    backward = [e for e in trace if e["ph"] == "X" and e["cat"] == "backward"]
    assert [e["name"] for e in backward] == [name for name, _ in NODES]
    assert {e["tid"] for e in backward} == {2}


def test_the_notebook_profile_model_reads_node_records(node_prof: Any) -> None:
    prof, _ = node_prof
    model = build_profile(prof)
    rows = model["rows"]
    assert [r["name"] for r in rows if r["phase"] == "backward"] == [n for n, _ in NODES]
    relu = next(r for r in rows if r["name"] == "ReluBackward0")
    assert relu["module"] == "Sequential.1"  # backward time joins its forward op's module


def test_gradients_are_bit_for_bit_those_of_an_unprofiled_backward(node_prof: Any) -> None:
    _, profiled = node_prof
    model, x, target = small_model()
    run_step(model, x, target)
    plain = grads_of(model)
    model, x, target = small_model()
    with profiler.profile(backward_ops=True):
        run_step(model, x, target)
    for a, b, c in zip(plain, profiled, grads_of(model), strict=True):
        assert a.tobytes() == b.tobytes() == c.tobytes()


def test_backward_ops_gives_op_level_records() -> None:
    model, x, target = small_model()
    with profiler.profile(backward_ops=True) as prof:
        run_step(model, x, target)
    assert linked(prof.events()) == BACKWARD


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_backward_ops_is_validated(value: Any) -> None:
    with pytest.raises(TypeError, match=r"backward_ops must be a bool.*got " + repr(value)):
        profiler.profile(backward_ops=value)


@pytest.mark.parametrize("tape_first", [True, False])
def test_a_tape_inside_the_profile_keeps_op_level_backward_on_both(tape_first: bool) -> None:
    model, x, target = small_model()
    tape, prof = Tape(summaries=False), profiler.profile()
    first, second = (tape, prof) if tape_first else (prof, tape)
    with first, second:
        run_step(model, x, target)
    assert linked(prof.events()) == BACKWARD
    assert [e.name for e in tape.entries] == [e["name"] for e in prof.events()]


def test_observers_say_what_backward_detail_they_need() -> None:
    class Silent:  # no backward_detail: it needs every op (as a Tape does)
        def op_started(self, event: Any) -> None:
            pass

        def op_finished(self, event: Any) -> None:
            pass

    class Nodes(Silent):
        backward_detail = "nodes"

        def __init__(self) -> None:
            self.seen: list[tuple[str, str, Any]] = []

        def op_finished(self, event: Any) -> None:
            self.seen.append((event.name, event.phase, event.backward_node))

    nodes, silent = Nodes(), Silent()
    x = tk.ones(3, requires_grad=True)
    y = x * 2
    _state.add_observer(nodes)
    try:
        assert not _state.ops_in_backward
        y.sum().backward(retain_graph=True)
        _state.add_observer(silent)
        assert _state.ops_in_backward and _state.node_observers == (nodes,)
        nodes.seen.clear()
        y.sum().backward()
    finally:
        for observer in (nodes, silent):
            if observer in _state.observers:
                _state.remove_observer(observer)
    assert not _state.observers and not _state.node_observers and not _state.ops_in_backward
    assert ("MulBackward0", "backward", y.grad_fn) not in nodes.seen
    assert ("mul", "backward", y.grad_fn) in nodes.seen  # op level while Silent watched


def test_hooks_run_and_their_node_is_one_record() -> None:
    x = tk.ones(3, requires_grad=True)
    seen = []
    with profiler.profile() as prof:
        y = x * 3
        y.register_hook(lambda g: g * 10)
        x.register_hook(lambda g: seen.append(g.numpy().copy()))
        (y * y).sum().backward()
    assert x.grad.tolist() == [180.0, 180.0, 180.0]  # 2 * y * 10 * 3
    assert [s.tolist() for s in seen] == [[180.0, 180.0, 180.0]]
    names = [e["name"] for e in prof.events() if e["phase"] == "backward"]
    assert names == ["SumBackward0", "MulBackward0", "MulBackward0", "AccumulateGrad"]


def test_grad_with_inputs_records_the_nodes_that_run() -> None:
    a = tk.ones(2, requires_grad=True)
    b = tk.ones(2, requires_grad=True)
    with profiler.profile() as prof:
        (ga,) = tk.autograd.grad((a * 2 + b).sum(), [a])
    assert ga.tolist() == [2.0, 2.0] and a.grad is None
    assert [e["name"] for e in prof.events() if e["phase"] == "backward"] == [
        "SumBackward0",
        "AddBackward0",
        "MulBackward0",
    ]


def test_create_graph_inside_a_profile_records_ops_and_differentiates_twice() -> None:
    x = tk.tensor([1.0, 2.0], requires_grad=True)
    with profiler.profile() as prof:
        (g,) = tk.autograd.grad((x**3).sum(), [x], create_graph=True)
        g.sum().backward()
    assert g.tolist() == [3.0, 12.0] and x.grad.tolist() == [6.0, 12.0]
    first_backward = ["view", "expand", "pow", "mul", "mul"]  # recorded: op level
    second_backward = ["SumBackward0", "MulBackward0", "MulBackward0", "PowBackward0"]
    assert [e["name"] for e in prof.events()] == [
        *("pow", "sum"),
        *first_backward,
        "sum",
        *second_backward,
        "AccumulateGrad",
    ]


def test_anomaly_mode_inside_a_profile_checks_each_rule() -> None:
    x = tk.tensor([0.0, 1.0], requires_grad=True)
    with profiler.profile() as prof, tk.autograd.detect_anomaly():
        y = tk.sqrt(x)
        with pytest.raises(RuntimeError, match="'SqrtBackward0' returned nan values in its 0th"):
            (y * 0).sum().backward()
    backward = [e["name"] for e in prof.events() if e["phase"] == "backward"]
    assert backward == ["view", "expand", "mul", "mul", "div"]  # op level, up to the failure


def test_a_failing_node_leaves_the_profile_recording() -> None:
    x = tk.ones(3, requires_grad=True)
    with profiler.profile() as prof:
        y = x * 2
        y.register_hook(lambda g: 1 / 0)
        with pytest.raises(ZeroDivisionError) as info:
            y.sum().backward()
        assert _state.observing
        x + 1
    assert info.value.backward_node is y.grad_fn
    assert [(e["name"], e["phase"]) for e in prof.events()] == [
        ("mul", "forward"),
        ("sum", "forward"),
        ("SumBackward0", "backward"),
        ("add", "forward"),
    ]


# ------------------------------------------------------------------- the stand-in CUDA device
def test_node_records_on_a_cuda_device_get_event_pairs(monkeypatch: pytest.MonkeyPatch) -> None:
    fake: StandInCupy = install(monkeypatch, numpy_backed=True)
    model, x, target = small_model()
    model.to("cuda")
    x, target = x.to("cuda"), target.to("cuda")
    with profiler.profile(**OPTIONS) as prof:
        run_step(model, x, target)
    events = prof.events()
    assert linked(events) == NODES
    assert {e["device"] for e in events} == {"cuda:0"}
    assert len(fake.recorded) == 2 * len(events)
    assert all(e["gpu_time_ns"] is not None for e in events)
    assert all(p.grad.device.type == "cuda" for p in model.parameters())
    assert not math.isnan(sum(float(p.grad.sum()) for p in model.parameters()))
