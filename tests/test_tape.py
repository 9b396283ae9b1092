"""The Tape: what it records, the graph it builds, and that it costs nothing when off."""

from __future__ import annotations

import gc
import inspect
import json
import weakref

import numpy as np
import pytest

import tensorkit as tk
from tensorkit import _state


def _line_of(marker: str) -> int:
    source, start = inspect.getsourcelines(_record_small_model)
    for offset, text in enumerate(source):
        if marker in text:
            return start + offset
    raise AssertionError(marker)


def _record_small_model():
    w = tk.tensor([[1.0, -1.0], [0.5, 2.0]], requires_grad=True)
    x = tk.tensor([[1.0, 2.0]])
    with tk.autograd.Tape() as tape:
        h = x @ w  # MARK-MATMUL
        with tk.autograd.module_scope("model"), tk.autograd.module_scope("act"):
            a = h.relu()
        loss = a.sum()
    return tape, w, x, h, loss


def test_tape_records_ops_in_order_with_metadata():
    tape, *_ = _record_small_model()
    assert [e.name for e in tape] == ["matmul", "relu", "sum"]
    matmul = tape[0]
    assert [i.shape for i in matmul.inputs] == [[1, 2], [2, 2]]
    assert matmul.outputs[0].shape == [1, 2]
    assert matmul.outputs[0].dtype == "float32" and matmul.outputs[0].device == "cpu"
    assert matmul.phase == "forward" and matmul.grad_fn == "MmBackward0"
    assert matmul.call_site.endswith(f"test_tape.py:{_line_of('MARK-MATMUL')}")
    assert tape[1].module_path == "model.act"
    assert tape[0].module_path == ""
    assert tape[1].duration_ns >= 0 and isinstance(tape[1].records, dict)


def test_tape_ids_link_producers_and_consumers():
    tape, w, _, h, _ = _record_small_model()
    assert tape.tensor_id(h) == tape[0].outputs[0].id == tape[1].inputs[0].id
    assert tape.entry_for(h) is tape[0]
    assert tape.entry_for(w) is None  # made before recording


def test_graph_is_plain_json_with_edges_in_argument_order():
    tape, w, x, *_ = _record_small_model()
    graph = tape.graph()
    text = json.dumps(graph)  # must not raise
    assert "MmBackward0" in text
    ops = [n for n in graph["nodes"] if n["kind"] == "op"]
    tensors = [n for n in graph["nodes"] if n["kind"] == "tensor"]
    assert [n["name"] for n in ops] == ["matmul", "relu", "sum"]
    assert {t["id"] for t in tensors} == {f"t{tape.tensor_id(x)}", f"t{tape.tensor_id(w)}"}
    into_matmul = [e for e in graph["edges"] if e["target"] == "op0"]
    assert [e["position"] for e in into_matmul] == [0, 1]
    assert [e["source"] for e in into_matmul] == [f"t{tape.tensor_id(x)}", f"t{tape.tensor_id(w)}"]
    assert {"source": "op0", "target": "op1"}.items() <= next(
        e for e in graph["edges"] if e["target"] == "op1"
    ).items()


def test_output_summaries_count_nan_and_inf():
    with tk.autograd.Tape() as tape:
        tk.tensor([1.0, 0.0, -1.0]).log()
    summary = tape[0].outputs[0].summary
    assert summary["nan"] == 1 and summary["inf"] == 1
    assert summary["min"] == summary["max"] == 0.0


def test_backward_ops_are_recorded_and_linked_to_their_forward_op():
    w = tk.tensor([1.0, 2.0], requires_grad=True)
    with tk.autograd.Tape() as tape:
        loss = (w.exp() * 3).sum()
        loss.backward()
    forward = tape.forward_entries()
    backward = [e for e in tape if e.phase == "backward"]
    assert [e.name for e in forward] == ["exp", "mul", "sum"]
    assert backward, "gradient rules run ops that the tape must see"
    exp_index = forward[0].index
    assert any(e.backward_of == exp_index for e in backward)
    steps = [s["node"] for s in tape.backward_steps]
    assert steps[0] == "SumBackward0" and "AccumulateGrad" in steps
    assert "bwd" in tape.to_text()


def test_custom_function_is_one_tape_entry():
    class Double(tk.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2 + 0

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    x = tk.tensor([1.0], requires_grad=True)
    with tk.autograd.Tape() as tape:
        Double.apply(x)
    assert [e.name for e in tape] == ["Double"]
    assert tape[0].grad_fn == "DoubleBackward"


def test_tape_holds_tensors_weakly():
    with tk.autograd.Tape() as tape:
        big = tk.ones(100_000) * 2
    ref = weakref.ref(big)
    del big
    gc.collect()
    assert ref() is None
    assert tape[0].outputs[0].shape == [100_000]


def test_tape_records_under_no_grad_and_stops_on_exit():
    with tk.autograd.Tape() as tape, tk.no_grad():
        tk.ones(2) + 1
    tk.ones(2) * 3
    assert [e.name for e in tape] == ["add"]
    assert tape[0].grad_fn is None
    assert not _state.observing


def test_tape_cannot_be_entered_twice_at_once():
    tape = tk.autograd.Tape()
    with tape, pytest.raises(RuntimeError, match="already recording"), tape:
        pass


def test_results_are_identical_with_and_without_a_tape():
    x = tk.tensor(np.linspace(-1, 1, 5), requires_grad=True)
    (x.sin() * x).sum().backward()
    plain = x.grad.numpy().copy()
    x.grad = None
    with tk.autograd.Tape():
        (x.sin() * x).sum().backward()
    np.testing.assert_array_equal(plain, x.grad.numpy())


def test_deep_chain_records_and_builds_a_graph():
    x = tk.tensor([1.0], requires_grad=True)
    with tk.autograd.Tape(summaries=False) as tape:
        y = x
        for _ in range(10_000):
            y = y * 1.0
        y.sum().backward()
    graph = tape.graph()
    assert len([n for n in graph["nodes"] if n["kind"] == "op"]) == 10_001
    assert x.grad.item() == 1.0


def test_show_is_the_notebook_graph_widget_of_the_tape():
    pytest.importorskip("anywidget")
    from tensorkit.notebook.widgets import GraphWidget

    tape, *_ = _record_small_model()
    widget = tape.show()
    assert isinstance(widget, GraphWidget)
    assert widget.graph == tk.notebook.show(tape).graph
    assert [n["op"] for n in widget.graph["nodes"] if n["kind"] == "op"] == [
        "matmul",
        "relu",
        "sum",
    ]
    forward_only = tape.show(include_backward=False, group_by_module=False)
    assert forward_only.graph["groups"] == {}


def test_backward_steps_keep_a_description_for_replay():
    w = tk.tensor([1.0, 2.0], requires_grad=True)
    with tk.autograd.Tape() as tape:
        (w * 3).sum().backward()
    assert tape.backward_passes == [{"leaves": [{"id": "leaf0", "shape": [2], "grad": None}]}]
    last = tape.backward_steps[-1]
    assert last["node"] == "AccumulateGrad" and last["pass"] == 0
    assert last["step"]["node"] == {"id": "leaf0", "name": "AccumulateGrad"}
    assert last["step"]["leaf_grad"]["values"] == [3.0, 3.0]
    json.dumps(tape.backward_steps, allow_nan=False)  # plain JSON data


def test_entries_name_the_ranges_and_composite_functions_they_ran_in() -> None:
    x = tk.randn(2, 1, 5, 5)
    weight = tk.randn(2, 1, 3, 3, requires_grad=True)
    with tk.autograd.Tape() as tape, tk.profiler.record_function("step"):
        y = tk.nn.functional.conv2d(x, weight)
        y.sum()
    conv = [e for e in tape.entries if "conv2d" in e.scopes]
    assert len(conv) >= 2 and all(e.scopes == ("step", "conv2d") for e in conv)
    assert tape.entries[-1].scopes == ("step",) and tape.entries[-1].name == "sum"
    assert tape.entries[0].to_dict()["scopes"] == ["step", "conv2d"]
    from tensorkit.notebook.graph_model import build_graph

    nodes = {n["id"]: n for n in build_graph(tape)["nodes"]}
    assert nodes[f"op{conv[0].index}"]["scopes"] == ["step", "conv2d"]
    tk.nn.functional.conv2d(x, weight)  # with nothing observing, no scope is opened
    from tensorkit import _ranges

    assert _ranges.scopes == []


def test_entries_tell_each_call_of_a_range_apart_and_where_it_opened() -> None:
    from tensorkit import _ranges

    linear = tk.nn.functional.linear
    x, w = tk.randn(2, 3), tk.randn(3, 3)
    model = tk.nn.Sequential(tk.nn.Linear(3, 2))
    with tk.autograd.Tape() as tape, tk.profiler.record_function("outer"):
        linear(linear(x, w), w)
        model(x)
    calls = [e.scope_calls for e in tape.entries]
    assert all(len(c) == len(e.scopes) == 2 for c, e in zip(calls, tape.entries, strict=True))
    outer = {c[0] for c in calls}
    assert len(outer) == 1 and next(iter(outer))[1:] == ("", "range")
    inner = [c[1] for c in calls]
    assert {kind for _, _, kind in inner} == {"function"}
    at_top = {number for number, path, _ in inner if path == ""}
    in_layer = {number for number, path, _ in inner if path == "Sequential.0"}
    assert len(at_top) == 2 and len(in_layer) == 1, "two F.linear calls, then the layer's"
    assert len(at_top | in_layer) == 3 and len(inner) == len(tape.entries)
    assert tape.entries[0].to_dict()["scope_calls"] == [list(c) for c in calls[0]]
    assert _ranges.scopes == [] and _ranges.scope_calls == []


SCALED_INPUTS = tk.randn(2, 3)  # a global: named on every Python (a function's locals from 3.13)


class _Scaled(tk.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer1 = tk.nn.Sequential(tk.nn.Linear(3, 4))
        self.register_buffer("scale", tk.tensor(2.0))

    def forward(self, x: tk.Tensor) -> tk.Tensor:
        return self.layer1(x) * self.scale


def test_tape_learns_module_classes_and_names_parameters_buffers_and_inputs() -> None:
    net = _Scaled()
    with tk.autograd.Tape() as tape:
        net(SCALED_INPUTS)
    assert tape.module_classes == {
        "_Scaled": "_Scaled",
        "_Scaled.layer1": "Sequential",
        "_Scaled.layer1.0": "Linear",
    }
    assert sorted(tape.tensor_names.values()) == [
        "SCALED_INPUTS",
        "layer1.0.bias",
        "layer1.0.weight",
        "scale",
    ]
    external = [n for n in tape.graph()["nodes"] if n["kind"] == "tensor"]
    assert {n["name"] for n in external} == set(tape.tensor_names.values())
    weight = next(n for n in external if n["name"] == "layer1.0.weight")
    assert weight["shape"] == [4, 3]
    with tk.autograd.Tape() as by_name:  # a submodule called directly: its registered name
        net.layer1(SCALED_INPUTS)
    assert by_name.module_classes == {"layer1": "Sequential", "layer1.0": "Linear"}
    assert sorted(by_name.tensor_names.values()) == [
        "SCALED_INPUTS",
        "layer1.0.bias",
        "layer1.0.weight",
    ]
    with tk.autograd.Tape() as named, tk.autograd.module_scope("block"):
        (SCALED_INPUTS * 2).sum()  # a scope opened by name alone: no class, nothing to name
    assert named.module_classes == {} and named.tensor_names == {1: "SCALED_INPUTS"}


def test_a_replaced_parameter_is_named_too() -> None:
    model = tk.nn.Sequential(tk.nn.Linear(2, 2))
    with tk.autograd.Tape() as tape:
        model(SCALED_INPUTS[:, :2])
        model[0].weight = tk.nn.Parameter(tk.randn(2, 2))
        model(SCALED_INPUTS[:, :2])
    weights = [i for i, name in tape.tensor_names.items() if name == "0.weight"]
    assert len(weights) == 2 and "0.bias" in tape.tensor_names.values()


def test_to_text_shows_call_sites_as_the_graph_does() -> None:
    import os

    tape, *_ = _record_small_model()
    line = _line_of("MARK-MATMUL")
    assert tape.to_text().splitlines()[0].endswith(f"  {os.path.relpath(__file__)}:{line}")
