"""Finite-difference checks of gradient rules: planted bugs are found, correct rules pass."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

import tensorkit as tk
from tensorkit.notebook import BackwardStepper, check_graph, check_node
from tensorkit.notebook.check import difference_map


class WrongSquare(tk.autograd.Function):
    """x * x with a planted bug: the backward says 3x instead of 2x."""

    @staticmethod
    def forward(ctx: Any, x: tk.Tensor) -> tk.Tensor:
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx: Any, grad: tk.Tensor) -> tk.Tensor:
        (x,) = ctx.saved_tensors
        return 3 * x * grad


class Square(WrongSquare):
    @staticmethod
    def backward(ctx: Any, grad: tk.Tensor) -> tk.Tensor:
        (x,) = ctx.saved_tensors
        return 2 * x * grad


def _inputs() -> list[tk.Tensor]:
    tk.manual_seed(0)
    return [tk.randn(4, 3), tk.randn(3, 2, requires_grad=True)]


def test_planted_wrong_gradient_is_flagged() -> None:
    inputs = _inputs()
    result = check_graph(lambda x, w: (WrongSquare.apply((x @ w).tanh()) * 2.0).sum(), inputs)
    json.dumps(result, allow_nan=False)
    assert not result["ok"]
    failure = result["first_failure"]
    assert failure["node"] == "WrongSquareBackward" and failure["verdict"] == "gradient mismatch"
    assert failure["max_rel_error"] > 0.3
    # every node is checked, in backward order: sum, mul, the square, tanh, matmul
    assert [(r["id"], r["ok"]) for r in result["nodes"]] == [
        ("n0", True),
        ("n1", True),
        ("n2", False),
        ("n3", True),
        ("n4", True),
    ]
    assert result["checked"] == 5 and result["nodes"][2] == failure
    assert [r["step"] for r in result["nodes"]] == [0, 1, 2, 3, 4]
    assert inputs[1].grad is None


def test_correct_graphs_pass() -> None:
    inputs = _inputs()
    result = check_graph(lambda x, w: (Square.apply((x @ w).tanh()) / 3.0).mean(), inputs)
    nodes = result.pop("nodes")
    assert result == {
        "ok": True,
        "checked": 5,
        "skipped": [],
        "first_failure": None,
        "error": None,
    }
    assert len(nodes) == 5 and all(r["ok"] for r in nodes)
    model = tk.nn.Sequential(tk.nn.Linear(3, 5), tk.nn.Tanh(), tk.nn.Linear(5, 1))
    result = check_graph(lambda x: model(x).pow(2).sum(), [tk.randn(4, 3)])
    assert result["ok"] and result["checked"] == 5  # two linear layers, tanh, pow and sum


def test_check_node_from_stepper_position() -> None:
    x = tk.randn(5, requires_grad=True)
    stepper = BackwardStepper(WrongSquare.apply(x.sin()).sum())
    with pytest.raises(ValueError, match="not run a step"):
        check_node(stepper)
    stepper.run_to(lambda step: step.name == "WrongSquareBackward")
    bad = check_node(stepper)
    assert not bad["ok"] and bad["inputs"][0]["elements"] == 5
    stepper.next()
    good = check_node(stepper)
    assert good["node"] == "SinBackward0" and good["ok"]
    assert good["max_abs_error"] < 1e-6


def test_node_without_saved_inputs_needs_them_passed() -> None:
    a = tk.randn(3, requires_grad=True)
    b = tk.randn(3, requires_grad=True)
    node = (a + b).grad_fn
    with pytest.raises(ValueError, match="inputs="):
        check_node(node)
    assert check_node(node, inputs=[a, b])["ok"]


def test_check_graph_of_a_stepper_replays_without_moving_it() -> None:
    x, w = _inputs()
    stepper = BackwardStepper.from_function(
        lambda x, w: (WrongSquare.apply((x @ w).tanh()) + 1.0).sum(), [x, w]
    )
    stepper.next()
    result = check_graph(stepper)
    assert not result["ok"] and result["skipped"] == []
    assert result["first_failure"]["id"] == "n2" and result["checked"] == 5
    assert stepper.position == 1 and w.grad is None
    assert check_node(stepper.node("n1"), inputs=stepper.forward_inputs[stepper.node("n1")])["ok"]


def test_check_graph_skips_nodes_whose_inputs_are_unknown() -> None:
    x, w = _inputs()
    stepper = BackwardStepper((Square.apply((x @ w).tanh()) + 1.0).sum())
    result = check_graph(stepper)
    assert result["ok"] and result["checked"] == 2  # square and matmul saved their inputs
    assert [(s["id"], s["node"]) for s in result["skipped"]] == [
        ("n0", "SumBackward0"),
        ("n1", "AddBackward0"),
        ("n3", "TanhBackward0"),  # saved its output only
    ]
    assert "did not save its inputs" in result["skipped"][0]["reason"]


def test_check_graph_reports_a_backward_error() -> None:
    w = tk.tensor([0.0, 4.0], requires_grad=True)
    with tk.autograd.detect_anomaly():  # sqrt's rule gives 0 / 0 at 0
        result = check_graph(lambda w: (w.sqrt() * 0.0).sum(), [w])
    assert not result["ok"] and result["first_failure"] is None and result["checked"] == 2
    assert result["error"]["node"]["name"] == "SqrtBackward0"
    assert "nan" in result["error"]["message"]


def test_check_misuse_is_refused() -> None:
    x, w = _inputs()
    stepper = BackwardStepper((x @ w).sum())
    with pytest.raises(TypeError, match="takes no inputs"):
        check_graph(stepper, [x, w])
    with pytest.raises(TypeError, match="needs the inputs"):
        check_graph(lambda x, w: (x @ w).sum())
    with pytest.raises(TypeError, match="got int"):
        check_graph(3, [x])
    with pytest.raises(ValueError, match="no gradient rule"):
        check_node(stepper.node("leaf0"))
    freed = BackwardStepper((w.exp() * 2.0).sum(), retain_graph=False)
    freed.run_to(lambda step: step.name == "ExpBackward0")
    with pytest.raises(ValueError, match=r"freed \(retain_graph=False\)"):
        check_node(freed)


def test_check_shows_the_produced_and_the_expected_gradient() -> None:
    x = tk.randn(3, 2, dtype=tk.float64, requires_grad=True)
    result = check_node(WrongSquare.apply(x).grad_fn, inputs=[x])
    json.dumps(result, allow_nan=False)
    (entry,) = result["inputs"]
    assert entry["shape"] == [3, 2] and entry["sampled"] is False and entry["elements"] == 6
    assert result["atol"] == 1e-5 and result["rtol"] == 1e-3
    produced = np.array(entry["produced"]["values"])
    expected = np.array(entry["expected"]["values"])
    assert produced.shape == expected.shape == (3, 2)
    # the rule says 3x, finite differences 2x (each times the same random upstream v)
    np.testing.assert_allclose(produced, 1.5 * expected, rtol=1e-6)
    difference = entry["difference"]
    assert (difference["rows"], difference["cols"], difference["block"]) == (3, 2, [1, 1])
    np.testing.assert_allclose(np.array(difference["values"]), produced - expected, atol=1e-9)
    assert difference["min"] == pytest.approx((produced - expected).min())
    assert entry["max_abs_error"] == pytest.approx(np.abs(produced - expected).max())
    vector = check_node(WrongSquare.apply(tk.randn(4, requires_grad=True)).grad_fn)
    assert vector["inputs"][0]["difference"] is None  # no map below two dimensions


def test_large_inputs_are_sampled_and_mapped_on_a_grid() -> None:
    x = tk.randn(40, 50, dtype=tk.float64, requires_grad=True)
    (entry,) = check_node(WrongSquare.apply(x).grad_fn, inputs=[x])["inputs"]
    assert entry["sampled"] is True and entry["elements"] == 256
    assert entry["produced"]["shape"] == entry["expected"]["shape"] == [256]
    difference = entry["difference"]
    assert (difference["rows"], difference["cols"]) == (40, 50)
    assert difference["block"] == [2, 2] and len(difference["values"]) == 32
    assert all(len(row) == 32 for row in difference["values"])
    cells = [v for row in difference["values"] for v in row]
    compared = [v for v in cells if v is not None]
    assert 0 < len(compared) <= 256 and None in cells  # 256 of 2000 elements: gaps remain
    assert max(abs(v) for v in compared) == pytest.approx(entry["max_abs_error"])


def test_difference_map_keeps_the_largest_and_non_finite_differences() -> None:
    index = np.array([0, 1, 5, 6])
    differences = np.array([0.5, -2.0, float("nan"), 1.0])
    grid = difference_map((2, 2, 3), index, differences, grid=2)
    assert (grid["rows"], grid["cols"], grid["block"]) == (4, 3, [2, 2])
    # elements 0, 1 (row 0) share cell (0, 0); 5 is row 1, column 2: cell (0, 1); 6 is row 2
    assert grid["values"] == [[-2.0, "nan"], [1.0, None]]
    assert (grid["min"], grid["max"]) == (-2.0, 1.0)
