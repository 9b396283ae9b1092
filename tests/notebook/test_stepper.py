"""BackwardStepper: positions, gradients equal to backward(), replay, breakpoints, errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

import tensorkit as tk
from tensorkit.notebook import BackwardStepper


def _model(seed: int = 0) -> tuple[tk.Tensor, list[tk.Tensor]]:
    tk.manual_seed(seed)
    w = tk.randn(3, 2, requires_grad=True)
    b = tk.randn(2, requires_grad=True)
    x = tk.randn(4, 3)
    h = x @ w + b
    return (h.tanh() * h).sum(), [w, b]


def _grads(leaves: list[tk.Tensor]) -> list[np.ndarray | None]:
    return [None if t.grad is None else t.grad.numpy().copy() for t in leaves]


def test_stepping_matches_backward() -> None:
    loss, leaves = _model()
    stepper = BackwardStepper(loss)
    first = stepper.next()
    json.dumps(first, allow_nan=False)
    assert first["position"] == 1 and first["step"]["node"] == {"id": "n0", "name": "SumBackward0"}
    assert first["step"]["grads_in"][0]["values"] == 1.0
    assert first["step"]["grads_out"][0]["to"] == "n1"
    assert first["step"]["rule"]["op"] == "sum"
    end = stepper.run_to_end()
    assert (
        end["done"]
        and end["total_exact"]
        and end["position"] == end["total_steps"] == first["total_steps"] == 7
    )
    stepped = _grads(leaves)
    reference, reference_leaves = _model()
    reference.backward()
    for got, want in zip(stepped, _grads(reference_leaves), strict=True):
        np.testing.assert_array_equal(got, want)
    values = {g["id"]: g["grad"]["values"] for g in end["leaf_grads"]}
    np.testing.assert_array_equal(np.array(values["leaf0"]), stepped[0])
    json.dumps(end, allow_nan=False)


def test_previous_replays_and_restores_leaf_grads() -> None:
    loss, leaves = _model()
    leaves[0].grad = tk.ones(3, 2)  # gradients from before the stepper are kept
    stepper = BackwardStepper(loss)
    seen = [_grads(leaves)]
    while not stepper.next()["done"]:
        seen.append(_grads(leaves))
    assert stepper.position == 7
    for position in range(6, -1, -1):
        assert stepper.previous()["position"] == position
        for got, want in zip(_grads(leaves), seen[position], strict=True):
            np.testing.assert_array_equal(got, want)
    stepper.run_to_end()
    stepper.reset()
    np.testing.assert_array_equal(leaves[0].grad.numpy(), np.ones((3, 2)))
    assert leaves[1].grad is None


def test_grad_mode_is_the_callers_between_steps() -> None:
    loss, _ = _model()
    stepper = BackwardStepper(loss)
    stepper.next()
    assert tk.is_grad_enabled()
    stepper.reset()
    assert tk.is_grad_enabled()


def test_run_to_node_and_predicate() -> None:
    loss, _ = _model()
    stepper = BackwardStepper(loss)
    state = stepper.run_to("leaf1")
    assert state["step"]["node"]["id"] == "leaf1"
    assert state["stopped_by"] == {"kind": "target", "node": "leaf1"}
    stepper.reset()
    state = stepper.run_to(lambda step: step.name == "TanhBackward0")
    assert state["step"]["node"]["name"] == "TanhBackward0"
    with pytest.raises(KeyError):
        stepper.run_to("n99")


def test_breakpoints() -> None:
    w = tk.tensor([0.0, 4.0], requires_grad=True)
    loss = (w.sqrt() * 100.0).sum()
    stepper = BackwardStepper(loss, break_on_nonfinite=True)
    state = stepper.run_to_end()
    assert state["stopped_by"]["kind"] == "nonfinite"
    assert state["step"]["node"]["name"] == "SqrtBackward0"
    assert state["step"]["grads_out"][0]["grad"]["values"][0] == "inf"
    json.dumps(state, allow_nan=False)

    stepper = BackwardStepper((w * 3.0).sum() * 100.0, max_grad_norm=150.0)
    state = stepper.run_to_end()
    assert state["stopped_by"]["kind"] == "norm" and state["stopped_by"]["norm"] > 150.0
    assert state["step"]["node"] == {"id": "n2", "name": "MulBackward0"}

    loss, _ = _model()
    stepper = BackwardStepper(loss, break_at=["n2"])
    assert stepper.run_to_end()["stopped_by"] == {"kind": "node", "node": "n2"}
    assert not stepper.run_to_end()["stopped_by"]
    assert stepper.done


def test_chain_rule_products_on_scalar_graph() -> None:
    a = tk.tensor(2.0, requires_grad=True)
    c = tk.tensor(-3.0, requires_grad=True)
    stepper = BackwardStepper(a * c + a)
    stepper.next()
    state = stepper.run_to(lambda step: step.name == "MulBackward0")
    chain = state["step"]["chain"]
    assert [(e["local"], e["upstream"], e["product"], e["grad"]) for e in chain] == [
        (-3.0, 1.0, -3.0, -3.0),
        (2.0, 1.0, 2.0, 2.0),
    ]


def test_large_gradients_travel_as_summary_and_histogram() -> None:
    w = tk.randn(100, 10, requires_grad=True)
    stepper = BackwardStepper((w * w).sum())
    state = stepper.run_to_end()
    grad = next(g["grad"] for g in state["leaf_grads"])
    assert "values" not in grad and sum(grad["histogram"]["counts"]) == 1000
    assert grad["summary"]["nan"] == 0


def test_saved_tensors_marked_freed_without_retain_graph() -> None:
    w = tk.randn(3, requires_grad=True)
    stepper = BackwardStepper((w.exp() * 2.0).sum(), retain_graph=False)
    state = stepper.run_to(lambda step: step.name == "ExpBackward0")
    assert state["step"]["saved"] == [
        {"role": "output", "shape": [3], "dtype": "float32", "bytes": 12, "freed": True}
    ]
    with pytest.raises(RuntimeError, match="retain_graph"):
        stepper.previous()


def test_error_nan_in_anomaly_mode() -> None:
    w = tk.tensor([1.0, -1.0], requires_grad=True)
    with tk.autograd.detect_anomaly():
        stepper = BackwardStepper(w.sqrt().sum())
        state = stepper.run_to_end()
    assert state["error"]["node"]["name"] == "SqrtBackward0"
    assert "nan" in state["error"]["message"]
    assert "test_stepper.py" in state["error"]["forward_trace"]
    assert not state["done"] and state["position"] == 1
    json.dumps(state, allow_nan=False)


def test_error_saved_tensor_modified_in_place() -> None:
    a = tk.tensor([1.0, 2.0], requires_grad=True)
    c = (a * 2.0).exp()
    c.mul_(3.0)
    state = BackwardStepper(c.sum()).run_to_end()
    error = state["error"]
    assert error["node"]["name"] == "ExpBackward0"
    assert error["inplace"]["op"] == "mul_"
    assert error["inplace"]["saved"] == "output 0"
    assert "test_stepper.py" in error["inplace"]["site"]
    assert "modified by an inplace operation" in error["message"]


def test_loss_without_graph_is_rejected() -> None:
    with pytest.raises(RuntimeError, match="does not require grad"):
        BackwardStepper(tk.ones(2).sum())


def test_non_scalar_loss_with_gradient_and_rule_location() -> None:
    w = tk.randn(2, 3, requires_grad=True)
    seed = tk.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    stepper = BackwardStepper(w * 2.0, gradient=seed)
    state = stepper.run_to_end()
    np.testing.assert_array_equal(w.grad.numpy(), seed.numpy() * 2.0)
    stepper.reset()
    rule = stepper.next()["step"]["rule"]
    assert rule["op"] == "mul" and rule["where"].split(":")[-1].isdigit()
    assert state["done"] and state["error"] is None


def test_abandoned_paused_stepper_leaves_grad_mode_alone() -> None:
    import gc

    loss, _ = _model()
    stepper = BackwardStepper(loss)
    stepper.next()
    stepper.next()
    del stepper
    gc.collect()
    assert tk.is_grad_enabled()
