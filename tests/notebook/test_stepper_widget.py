"""The stepper widget's action protocol: every toolbar action, the breakpoint settings, the
finite-difference checks and the chain-rule default, driven through the ``action`` trait as
the front end drives them."""

from __future__ import annotations

import json
from typing import Any

import pytest

import tensorkit as tk
from tensorkit.notebook import BackwardStepper

pytest.importorskip("anywidget", reason="the widgets need anywidget (the notebook extra)")

from tensorkit.notebook.stepper_widget import StepperWidget, step_backward


class WrongCube(tk.autograd.Function):
    """x ** 3 with a planted bug: the backward says 2 x^2 instead of 3 x^2."""

    @staticmethod
    def forward(ctx: Any, x: tk.Tensor) -> tk.Tensor:
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx: Any, grad: tk.Tensor) -> tk.Tensor:
        (x,) = ctx.saved_tensors
        return 2 * x * x * grad


def _model(seed: int = 0) -> tk.Tensor:
    tk.manual_seed(seed)
    w = tk.randn(3, 2, requires_grad=True)
    x = tk.randn(4, 3)
    h = x @ w
    return (h.tanh() * h).sum()


def _send(widget: StepperWidget, action: str) -> dict:
    widget.action = action  # as the front end does
    assert widget.action == ""
    return widget.state


def test_moves_and_run_to_match_the_stepper() -> None:
    widget = step_backward(_model())
    reference = BackwardStepper(_model())
    for action, expected in [
        ("next", reference.next),
        ("run_to:n3", lambda: reference.run_to("n3")),
        ("previous", reference.previous),
        ("run_to:leaf0", lambda: reference.run_to("leaf0")),
        ("reset", reference.reset),
        ("run_to_end", reference.run_to_end),
    ]:
        assert _send(widget, action) == expected()
    assert widget.state["done"] and widget.state["position"] == 5


def test_breakpoint_settings_through_actions() -> None:
    widget = step_backward(_model())
    _send(widget, "break_at:n2, leaf0")
    _send(widget, "break_on_grad_norm:2.5")
    state = _send(widget, "break_on_nonfinite:true")
    assert state["breakpoints"] == {"nonfinite": True, "nodes": ["leaf0", "n2"], "grad_norm": 2.5}
    assert widget.stepper.break_on_nonfinite and widget.stepper.break_on_grad_norm == 2.5
    _send(widget, "break_on_grad_norm:none")
    state = _send(widget, "run_to_end")
    assert state["stopped_by"] == {"kind": "node", "node": "n2"}
    _send(widget, "break_at:")
    _send(widget, "break_on_nonfinite:false")
    state = _send(widget, "run_to_end")
    assert state["done"] and state["stopped_by"] is None
    assert state["breakpoints"] == {"nonfinite": False, "nodes": [], "grad_norm": None}


@pytest.mark.parametrize(
    ("action", "error", "message"),
    [
        ("jump", ValueError, "unknown stepper action 'jump'"),
        ("next:3", ValueError, "the next action takes no argument, got '3'"),
        ("run_to", ValueError, "run_to action needs an argument"),
        ("run_to:n99", KeyError, "no node 'n99'"),
        ("break_on_nonfinite:maybe", ValueError, "true or false, got 'maybe'"),
        ("break_on_grad_norm:big", ValueError, "a number or none, got 'big'"),
        ("break_on_grad_norm:-1", ValueError, "finite number >= 0 or None, got -1.0"),
        ("break_at:n1,n77", KeyError, "no node 'n77'"),
        ("check_node", ValueError, "not run a step yet"),
        ("check_graph:n1", ValueError, "takes no argument"),
    ],
)
def test_bad_actions_raise_and_are_cleared(action: str, error: type, message: str) -> None:
    widget = step_backward(_model())
    before = widget.state
    with pytest.raises(error, match=message):
        widget.action = action
    assert widget.action == "" and widget.state == before
    assert (
        widget.notice.startswith(f"{error.__name__}: ") and message.split("'")[0] in widget.notice
    )
    widget.action = "next"
    assert widget.notice == ""


def test_checks_flag_the_planted_wrong_rule() -> None:
    tk.manual_seed(0)
    x, w = tk.randn(4, 3), tk.randn(3, 2, requires_grad=True)
    widget = step_backward(lambda x, w: (WrongCube.apply(x @ w) * 0.5).sum(), inputs=[x, w])
    state = _send(widget, "run_to:n2")
    assert state["step"]["node"]["name"] == "WrongCubeBackward"
    widget.action = "check_node"
    bad = widget.checks["nodes"]["n2"]
    assert bad["id"] == "n2" and bad["ok"] is False and bad["max_rel_error"] > 0.3
    widget.action = "check_node:n1"  # mul by 0.5 saved nothing: its captured inputs are used
    assert widget.checks["nodes"]["n1"]["ok"] is True
    widget.action = "check_node:leaf0"
    assert widget.checks["nodes"]["leaf0"]["ok"] is None
    assert "no gradient rule" in widget.checks["nodes"]["leaf0"]["verdict"]
    widget.action = "check_graph"
    report = widget.checks["graph"]
    assert not report["ok"] and report["first_failure"]["id"] == "n2" and report["checked"] == 4
    assert widget.state["position"] == 3 and w.grad is None  # the checks left both alone
    json.dumps(widget.checks, allow_nan=False)
    # every node checked by the whole-graph check is marked by its own result
    assert {i: r["ok"] for i, r in widget.checks["nodes"].items()} == {
        "n0": True,
        "n1": True,
        "n2": False,
        "n3": True,
        "leaf0": None,  # from the earlier check_node: a leaf has no rule
    }
    full = widget.checks["nodes"]["n2"]
    assert {k: v for k, v in full.items() if k != "inputs"} == report["first_failure"]
    assert full["inputs"][0]["produced"]["shape"] == [4, 2]  # the comparison, sent once
    assert all("inputs" not in r for r in report["nodes"])


def test_reset_clears_checks_and_the_position() -> None:
    tk.manual_seed(0)
    x, w = tk.randn(4, 3), tk.randn(3, 2, requires_grad=True)
    widget = step_backward(lambda x, w: (WrongCube.apply(x @ w) * 0.5).sum(), inputs=[x, w])
    _send(widget, "run_to_end")
    widget.action = "check_graph"
    widget.action = "check_node:n1"
    assert widget.checks["graph"] is not None and widget.checks["nodes"]
    state = _send(widget, "reset")
    assert widget.checks == {"nodes": {}, "graph": None}
    assert state["position"] == 0 and state["step"] is None and state["chain_edges"] == []
    assert state["visited"] == [] and state["order"][0] == "n0"


def test_whole_graph_check_marks_skipped_nodes_not_checked() -> None:
    a = tk.randn(3, requires_grad=True)
    widget = step_backward((a * a + 1.0).sum())  # no captured inputs: add and sum skipped
    widget.action = "check_graph"
    nodes = widget.checks["nodes"]
    assert nodes["n2"]["ok"] is True  # mul saved its inputs
    assert nodes["n0"]["ok"] is None and nodes["n1"]["ok"] is None
    assert nodes["n1"]["verdict"].startswith("not checked: ")
    assert "did not save its inputs" in nodes["n1"]["verdict"]


def test_check_without_captured_inputs_reports_not_checked() -> None:
    a = tk.randn(3, requires_grad=True)
    widget = step_backward((a + 1.0).sum())
    widget.action = "check_node:n1"
    result = widget.checks["nodes"]["n1"]
    assert result["ok"] is None and "did not save its inputs" in result["verdict"]


def test_chain_rule_is_on_for_small_scalar_graphs() -> None:
    a = tk.tensor(2.0, requires_grad=True)
    b = tk.tensor(-3.0, requires_grad=True)
    scalar = step_backward((a * b + a).tanh())
    assert scalar.chain_rule
    state = _send(scalar, "run_to_end")
    assert {(e["from"], e["to"]) for e in state["chain_edges"]} >= {
        ("n2", "leaf0"),
        ("n2", "leaf1"),
    }
    assert not step_backward(_model()).chain_rule
    assert not step_backward(_model(), chain_rule=False).chain_rule
    big = a
    for _ in range(30):
        big = big * 1.01 + 0.1
    assert not step_backward(big).chain_rule  # 61 nodes: too many edges to label


def test_failing_backward_state_names_failing_and_inplace_nodes() -> None:
    a = tk.tensor([1.0, 2.0], requires_grad=True)
    c = (a * 2.0).exp()
    c.mul_(3.0)
    state = _send(step_backward(c.sum()), "run_to_end")
    assert state["error"]["node"]["id"] == "n2"
    assert state["error"]["inplace"]["node"]["id"] == "n1"
    assert state["error"]["inplace"]["op"] == "mul_"


def test_step_backward_misuse() -> None:
    with pytest.raises(TypeError, match="expects a loss tensor"):
        step_backward(lambda: None)
    with pytest.raises(TypeError, match="needs a loss function, got Tensor"):
        step_backward(_model(), inputs=[])
