"""Recorded backward steps: what a Tape keeps of each step, the replay models, the widget and
the replay section of a standalone page (stepped in headless Chromium)."""

from __future__ import annotations

import gc
import json
import math
import weakref
from pathlib import Path

import pytest

import tensorkit as tk
from tensorkit.notebook import BackwardStepper, build_graph, replay
from tensorkit.notebook.replay import replay_passes
from tensorkit.notebook.values import tensor_payload


def _plain(value: object) -> object:
    return json.loads(json.dumps(value))


def _leaves() -> tuple[tk.Tensor, tk.Tensor]:
    x = tk.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = tk.tensor([0.5, -1.0, 2.0], requires_grad=True)
    return x, w


def _loss(x: tk.Tensor, w: tk.Tensor) -> tk.Tensor:
    return ((x * w).tanh() * x).sum() * 2  # x is used twice: its leaf gets two gradients


def _recorded(**options: object) -> tuple[tk.autograd.Tape, tk.Tensor, tk.Tensor, tk.Tensor]:
    x, w = _leaves()
    w.grad = tk.tensor([10.0, 20.0, 30.0])  # a .grad from before: accumulated into
    with tk.autograd.Tape(**options) as tape:
        loss = _loss(x, w)
        loss.backward(retain_graph=True)
    return tape, loss, x, w


def test_recorded_steps_equal_what_the_stepper_reports() -> None:
    tape, loss, x, w = _recorded()
    [recorded] = tape.backward_passes
    x.grad, w.grad = None, tk.tensor([10.0, 20.0, 30.0])  # as before the recorded pass
    stepper = BackwardStepper(loss)
    assert recorded["leaves"] == stepper.state()["leaf_grads"]
    assert len(tape.backward_steps) == stepper.total_steps
    for entry in tape.backward_steps:
        state = stepper.next()
        step = dict(entry["step"])
        leaf_grad = step.pop("leaf_grad", "absent")
        assert step == state["step"]
        assert entry["pass"] == 0 and entry["node"] == step["node"]["name"]
        if step["node"]["id"].startswith("leaf"):
            now = {leaf["id"]: leaf["grad"] for leaf in state["leaf_grads"]}
            assert leaf_grad == now[step["node"]["id"]]
        else:
            assert leaf_grad == "absent"
    assert stepper.run_to_end()["done"]


def _scalar_pass(step_details: int) -> tuple[tk.autograd.Tape, tk.Tensor]:
    a = tk.tensor(2.0, requires_grad=True)
    b = tk.tensor(-3.0, requires_grad=True)
    with tk.autograd.Tape(step_details=step_details) as tape:
        loss = (a * b + a).tanh()
        loss.backward(retain_graph=True)
    a.grad = b.grad = None
    return tape, loss


def test_scalar_steps_keep_the_chain_rule_products_unobserved() -> None:
    tape, loss = _scalar_pass(200)
    stepper = BackwardStepper(loss)
    chains = [entry["step"]["chain"] for entry in tape.backward_steps]
    assert chains == [stepper.next()["step"]["chain"] for _ in chains]
    [tanh] = chains[0]  # d tanh(u)/du at u = 2 * -3 + 2, upstream 1, flowing to the add
    assert tanh["to"] == "n1" and tanh["upstream"] == 1.0
    assert tanh["local"] == pytest.approx(1 - math.tanh(-4.0) ** 2, rel=1e-3)  # float32
    plain, _ = _scalar_pass(0)  # re-running the rules for the products records no op
    assert [e.name for e in tape.entries] == [e.name for e in plain.entries]


def test_replay_graph_has_the_stepper_graphs_nodes_and_edges() -> None:
    tape, loss, _, _ = _recorded()
    [model] = replay_passes(_plain(tape.backward_steps), _plain(tape.backward_passes))
    expected = build_graph(loss)

    def edges(graph: dict) -> set:
        return {(e["source"], e["target"], e["position"]) for e in graph["edges"]}

    assert {n["id"] for n in model["graph"]["nodes"]} == {n["id"] for n in expected["nodes"]}
    assert edges(model["graph"]) == edges(expected)
    kinds = {n["id"]: n["kind"] for n in model["graph"]["nodes"]}
    assert kinds == {n["id"]: n["kind"] for n in expected["nodes"]}
    assert model["total_steps"] == len(model["steps"]) == len(tape.backward_steps)
    assert model["pass"] == 0 and model["leaves"] == _plain(tape.backward_passes[0]["leaves"])


def test_a_replay_graph_from_cyclic_steps_still_lays_out() -> None:
    grad = {"shape": [], "dtype": "float32", "values": 1.0}

    def step(node: str, to: str) -> dict:
        out = [{"position": 0, "to": to, "grad": grad}]
        return {"node": {"id": node, "name": "X"}, "grads_in": [grad], "grads_out": out}

    graph = replay.replay_graph([step("n0", "n1"), step("n1", "n0"), step("n1", "n1")])
    assert [(n["id"], n["depth"]) for n in graph["nodes"]] == [("n0", 0), ("n1", 0)]
    assert len(graph["edges"]) == 3


def test_large_gradients_travel_as_bounded_summaries() -> None:
    w = tk.randn(300, 200, requires_grad=True)
    with tk.autograd.Tape() as tape:
        (w * 3).sum().backward()
    leaf = next(s["step"] for s in tape.backward_steps if "leaf_grad" in s["step"])
    payload = leaf["grads_in"][0]
    assert "values" not in payload and payload["shape"] == [300, 200]
    assert payload == tensor_payload(w.grad)
    assert {"summary", "histogram", "heatmap"} <= payload.keys()
    size = len(json.dumps(_plain(tape.backward_steps)))
    assert size < 200 * 1024, f"{size} bytes of steps for a 60,000-element gradient"


def test_step_details_bounds_what_is_described() -> None:
    tape, _, _, _ = _recorded(step_details=2)
    details = [s["step"] for s in tape.backward_steps]
    assert [d is not None for d in details] == [True, True] + [False] * (len(details) - 2)
    [model] = replay_passes(tape.backward_steps, tape.backward_passes)
    assert len(model["steps"]) == 2 and model["total_steps"] == len(details)
    none, _, _, _ = _recorded(step_details=0)
    assert none.backward_passes == [{"leaves": []}]
    assert all(s["step"] is None for s in none.backward_steps)
    assert replay_passes(none.backward_steps, none.backward_passes) == []
    with pytest.raises(ValueError, match="step_details must be >= 0, got -1"):
        tk.autograd.Tape(step_details=-1)
    for bad, kind in ((1.5, "float"), (True, "bool")):
        with pytest.raises(TypeError, match=f"step_details must be an int, got {kind}"):
            tk.autograd.Tape(step_details=bad)


def test_nothing_is_described_without_a_tape(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: object, root: object) -> None:
        raise AssertionError("a pass was described with no Tape recording")

    monkeypatch.setattr(replay.PassRecorder, "__init__", refuse)
    x, w = _leaves()
    _loss(x, w).backward()
    assert x.grad is not None


def test_each_backward_pass_is_recorded_apart() -> None:
    x, w = _leaves()
    with tk.autograd.Tape() as tape:
        for _ in range(2):
            _loss(x, w).backward()
    first, second = replay_passes(_plain(tape.backward_steps), _plain(tape.backward_passes))
    assert (first["pass"], second["pass"]) == (0, 1)
    ended = {s["node"]["id"]: s["leaf_grad"] for s in first["steps"] if "leaf_grad" in s}
    # x gets two gradients: its leaf step runs once, with their sum
    assert {leaf["id"]: leaf["grad"] for leaf in second["leaves"]} == ended
    assert ended["leaf0"] == _plain(tensor_payload(x.grad * 0.5))


def test_the_recorded_graph_is_released_on_exit() -> None:
    x, w = _leaves()
    with tk.autograd.Tape() as tape:
        loss = _loss(x, w)
        node = weakref.ref(loss.grad_fn)
        loss.backward()
        del loss
        gc.collect()
        assert node() is not None  # the pass being recorded holds its graph
    gc.collect()
    assert node() is None
    assert len(tape.backward_steps) > 0


def test_a_backward_over_several_roots_numbers_every_graph() -> None:
    x, w = _leaves()
    with tk.autograd.Tape() as tape:
        first, second = (x * 2).sum(), (w * 3).sum()
        tk.autograd.backward([first, second])
    [model] = replay_passes(tape.backward_steps, tape.backward_passes)
    ids = sorted(n["id"] for n in model["graph"]["nodes"])
    assert ids == ["leaf0", "leaf1", "n0", "n1", "n2", "n3"]
    assert len(model["steps"]) == 6 and model["leaves"] == [
        {"id": "leaf0", "shape": [3], "grad": None},
        {"id": "leaf1", "shape": [3], "grad": None},
    ]
    grads = {s["node"]["id"]: s["leaf_grad"]["values"] for s in model["steps"] if "leaf_grad" in s}
    assert sorted(grads.values()) == [[2.0, 2.0, 2.0], [3.0, 3.0, 3.0]]


def test_a_tape_entered_mid_pass_starts_a_pass_there() -> None:
    x, w = _leaves()
    stepper = BackwardStepper(_loss(x, w))
    stepper.next()
    with tk.autograd.Tape() as tape:
        stepper.next()
    [entry] = tape.backward_steps
    assert entry["pass"] == 0 and entry["step"]["index"] == 1
    # numbered from the node it joined at, as a stepper over that node's graph would
    assert entry["step"]["node"] == {"id": "n0", "name": stepper.state()["step"]["node"]["name"]}
    [model] = replay_passes(tape.backward_steps, tape.backward_passes)
    assert model["graph"]["nodes"][0]["id"] == "n0"


# ------------------------------------------------------------------------------- widget
def test_replay_widget_traits_and_static_fallback() -> None:
    pytest.importorskip("anywidget")
    from traitlets import TraitError

    from tensorkit.notebook.replay_widget import ReplayWidget

    tape, _, _, _ = _recorded()
    passes = _plain(replay_passes(tape.backward_steps, tape.backward_passes))
    widget = ReplayWidget(passes)
    assert widget.position == 0 and widget.graph == passes[0]["graph"]
    total = len(passes[0]["steps"])
    widget.position = total
    with pytest.raises(TraitError, match=rf"position must be in \[0, {total}\], got {total + 1}"):
        widget.position = total + 1
    with pytest.raises(TraitError, match=r"pass_index must be in \[0, 1\), got 1"):
        widget.pass_index = 1
    recorded = widget._repr_mimebundle_()[0]["application/vnd.tensorkit.recording+json"]
    assert recorded["view"]["sections"] == ["replay"] and recorded["view"]["position"] == total
    assert recorded["view"]["replay"] == passes
    with pytest.raises(ValueError, match="at least one pass"):
        ReplayWidget([])


def test_opened_recording_shows_the_replay_below_the_graph(tmp_path: Path) -> None:
    pytest.importorskip("anywidget")
    import ipywidgets

    from tensorkit.notebook.replay_widget import ReplayWidget
    from tensorkit.notebook.widgets import GraphWidget

    tape, _, _, _ = _recorded()
    view = tk.notebook.open(str(tape.save(str(tmp_path / "run.json")))).show()
    assert isinstance(view, ipywidgets.VBox)
    graph, replayed = view.children
    assert isinstance(graph, GraphWidget) and isinstance(replayed, ReplayWidget)
    assert replayed.passes == _plain(replay_passes(tape.backward_steps, tape.backward_passes))
