"""BackwardStepper: positions, gradients equal to backward(), replay, breakpoints, errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

import tensorkit as tk
from tensorkit.notebook import BackwardStepper
from tensorkit.notebook.docstring import RUN_KINDS, inline_runs


def _model(seed: int = 0) -> tuple[tk.Tensor, list[tk.Tensor]]:
    tk.manual_seed(seed)
    w = tk.randn(3, 2, requires_grad=True)
    b = tk.randn(2, requires_grad=True)
    x = tk.randn(4, 3)
    h = x @ w + b
    return (h.tanh() * h).sum(), [w, b]


def _mlp(seed: int = 0) -> tuple[tk.Tensor, list[tk.Tensor]]:
    tk.manual_seed(seed)
    model = tk.nn.Sequential(tk.nn.Linear(4, 8), tk.nn.ReLU(), tk.nn.Linear(8, 3))
    x, target = tk.randn(5, 4), tk.tensor([0, 2, 1, 1, 0])
    return tk.nn.functional.cross_entropy(model(x), target), list(model.parameters())


def _cnn(seed: int = 0) -> tuple[tk.Tensor, list[tk.Tensor]]:
    tk.manual_seed(seed)
    model = tk.nn.Sequential(
        tk.nn.Conv2d(1, 3, 3, padding=1),
        tk.nn.ReLU(),
        tk.nn.MaxPool2d(2),
        tk.nn.Conv2d(3, 4, 3),
        tk.nn.Tanh(),
        tk.nn.Flatten(),
        tk.nn.Linear(4, 2),
    )
    x, target = tk.randn(2, 1, 6, 6), tk.tensor([1, 0])
    return tk.nn.functional.cross_entropy(model(x), target), list(model.parameters())


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


@pytest.mark.parametrize("build", [_mlp, _cnn])
def test_positions_and_gradients_equal_backward_on_mlp_and_cnn(build) -> None:
    loss, leaves = build()
    stepper = BackwardStepper(loss)
    names = []
    while not stepper.next()["done"]:
        names.append(stepper.current_step.name)
        assert stepper.position == len(names)
    stepped = _grads(leaves)
    reference, reference_leaves = build()
    with tk.autograd.Tape() as tape:  # records the steps backward() runs
        reference.backward()
    seen = [step["node"] for step in tape.backward_steps]
    assert names == seen and stepper.total_exact and stepper.total_steps == len(seen)
    for got, want in zip(stepped, _grads(reference_leaves), strict=True):
        np.testing.assert_array_equal(got, want)
    # run_to a node in the middle stops there with the gradients backward() has at that point
    middle = stepper.ids[stepper._steps[len(names) // 2].node]
    stepper.reset()
    state = stepper.run_to(middle)
    assert state["position"] == len(names) // 2 + 1 and state["step"]["node"]["id"] == middle
    json.dumps(state, allow_nan=False)


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

    stepper = BackwardStepper((w * 3.0).sum() * 100.0, break_on_grad_norm=150.0)
    state = stepper.run_to_end()
    assert state["stopped_by"]["kind"] == "norm" and state["stopped_by"]["norm"] > 150.0
    assert state["step"]["node"] == {"id": "n2", "name": "MulBackward0"}

    loss, _ = _model()
    stepper = BackwardStepper(loss, break_at=["n2"])
    assert stepper.run_to_end()["stopped_by"] == {"kind": "node", "node": "n2"}
    assert not stepper.run_to_end()["stopped_by"]
    assert stepper.done


def test_breakpoint_settings_are_validated_and_reported() -> None:
    loss, _ = _model()
    stepper = BackwardStepper(loss, break_at=["n2", "leaf0"], break_on_grad_norm=3)
    assert stepper.state()["breakpoints"] == {
        "nonfinite": False,
        "nodes": ["leaf0", "n2"],
        "grad_norm": 3.0,
    }
    stepper.break_at = []
    stepper.break_on_grad_norm = None
    assert stepper.state()["breakpoints"]["nodes"] == []
    with pytest.raises(ValueError, match="finite number >= 0 or None, got -1"):
        stepper.break_on_grad_norm = -1
    with pytest.raises(ValueError, match="got nan"):
        stepper.break_on_grad_norm = float("nan")
    with pytest.raises(TypeError, match="a number or None, got str"):
        stepper.break_on_grad_norm = "10"
    with pytest.raises(TypeError, match="iterable of node ids"):
        stepper.break_at = "n2"
    with pytest.raises(KeyError, match="no node 'n42'"):
        stepper.break_at = ["n42"]
    assert stepper.break_on_grad_norm is None and stepper.break_at == set()
    stepper.break_on_grad_norm = np.float32(0.5)
    assert type(stepper.break_on_grad_norm) is float and stepper.break_on_grad_norm == 0.5


def test_grad_norm_breakpoint_checks_every_produced_gradient() -> None:
    w = tk.tensor([3.0, 4.0], requires_grad=True)
    stepper = BackwardStepper((w * 2.0).sum(), break_on_grad_norm=9.0)
    state = stepper.run_to_end()  # sum gives ones (norm 1.41), mul gives 2s (2.83), leaf: same
    assert state["done"] and state["stopped_by"] is None
    stepper.reset()
    stepper.break_on_grad_norm = 2.0
    state = stepper.run_to_end()
    assert state["stopped_by"] == {
        "kind": "norm",
        "node": "n1",
        "position": 0,
        "norm": pytest.approx(8**0.5),
    }


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


def test_chain_edges_cover_every_scalar_step_so_far() -> None:
    a = tk.tensor(2.0, requires_grad=True)
    b = tk.tensor(-3.0, requires_grad=True)
    stepper = BackwardStepper(a * b + a)
    assert stepper.state()["chain_edges"] == []
    state = stepper.run_to_end()
    edges = {
        (e["from"], e["to"]): (e["local"], e["upstream"], e["grad"]) for e in state["chain_edges"]
    }
    assert edges == {
        ("n0", "n1"): (1.0, 1.0, 1.0),  # add: d(u + a)/du = 1
        ("n0", "leaf0"): (1.0, 1.0, 1.0),
        ("n1", "leaf0"): (-3.0, 1.0, -3.0),  # mul: d(a * b)/da = b
        ("n1", "leaf1"): (2.0, 1.0, 2.0),
    }
    assert a.grad.item() == -2.0  # the two edges into a sum up
    back = stepper.previous()  # the last step (a leaf) has no chain: the edges stay
    assert back["position"] == 3 and back["chain_edges"] == state["chain_edges"]
    assert stepper.reset()["chain_edges"] == []


def test_non_finite_chain_products_travel_as_labels() -> None:
    w = tk.tensor(0.0, requires_grad=True)
    state = BackwardStepper(w.sqrt() * 2.0).run_to_end()
    sqrt = next(e for e in state["chain_edges"] if e["from"] == "n1")
    assert (sqrt["local"], sqrt["upstream"], sqrt["grad"]) == ("inf", 2.0, "inf")
    json.dumps(state, allow_nan=False)


def test_large_gradients_travel_as_summary_histogram_and_heatmap() -> None:
    w = tk.randn(100, 10, requires_grad=True)
    stepper = BackwardStepper((w * w).sum())
    state = stepper.run_to_end()
    grad = next(g["grad"] for g in state["leaf_grads"])
    assert "values" not in grad and sum(grad["histogram"]["counts"]) == 1000
    assert grad["summary"]["nan"] == 0
    heatmap = grad["heatmap"]
    assert len(heatmap["values"]) == 32 and len(heatmap["values"][0]) == 10
    blocks = np.asarray(heatmap["values"])
    assert heatmap["min"] == blocks.min() and heatmap["max"] == blocks.max()
    expected = 2 * w.detach().numpy()[:3].astype(np.float64).mean(axis=0)  # rows 0-2: block 0
    np.testing.assert_allclose(blocks[0], expected, rtol=1e-6)


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
    # the graph is sum <- mul_ (n1) <- exp (n2) <- mul (n3) <- a: the failing node and the
    # node of the in-place op that bumped the version are both named, by id
    assert error["node"]["id"] == "n2"
    assert error["inplace"]["node"] == {"id": "n1", "name": "MulBackward0"}
    assert state["position"] == 2 and state["step"]["node"]["id"] == "n1"
    json.dumps(state, allow_nan=False)


def test_error_saved_input_modified_in_place_names_op_outside_the_graph() -> None:
    a = tk.tensor([1.0, 2.0], requires_grad=True)
    b = a * 1.0
    d = b.exp() * b  # mul saves b
    b.add_(1.0)  # b moves onto a new AddBackward0 node, which the loss does not use
    state = BackwardStepper(d.sum()).run_to_end()
    inplace = state["error"]["inplace"]
    assert state["error"]["node"] == {"id": "n1", "name": "MulBackward0"}
    assert inplace["saved"] == "input 1" and inplace["op"] == "add_"
    assert inplace["node"] == {"id": None, "name": "AddBackward0"}
    assert (inplace["version"], inplace["expected_version"]) == (1, 0)


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


@pytest.mark.parametrize("make", [_model, _mlp, _cnn])
def test_state_lists_the_engine_order_from_the_loss_back(make) -> None:
    loss, _ = make()
    stepper = BackwardStepper(loss)
    before = stepper.state()
    assert before["visited"] == [] and sorted(before["order"]) == sorted(stepper.ids.values())
    assert before["order"][0] == "n0"  # the loss's node runs first
    final = stepper.run_to_end()
    assert final["visited"] == final["order"] == before["order"]


class _Doubled(tk.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        """Twice ``grad``: :math:`\\partial y / \\partial x = 2`, see :func:`torch.mul` and
        *the* **docs**.

        Not this paragraph."""
        return grad * 2


def test_rule_docstring_becomes_inline_runs() -> None:
    x = tk.randn(3, requires_grad=True)
    rule = BackwardStepper(_Doubled.apply(x).sum()).run_to("n1")["step"]["rule"]
    assert rule["doc_runs"] == [
        {"kind": "text", "text": "Twice "},
        {"kind": "code", "text": "grad"},
        {"kind": "text", "text": ": "},
        {"kind": "math", "text": "\\partial y / \\partial x = 2"},
        {"kind": "text", "text": ", see "},
        {"kind": "code", "text": "torch.mul"},
        {"kind": "text", "text": " and "},
        {"kind": "emphasis", "text": "the"},
        {"kind": "text", "text": " "},
        {"kind": "strong", "text": "docs"},
        {"kind": "text", "text": "."},
    ]
    assert rule["doc"] == "Twice grad: \\partial y / \\partial x = 2, see torch.mul and the docs."
    assert {run["kind"] for run in rule["doc_runs"]} == set(RUN_KINDS)  # one of each kind


def test_docstring_runs_of_links_and_broken_markup() -> None:
    assert inline_runs(None) == [] and inline_runs("   ") == []
    assert inline_runs("See `the paper <https://example.org>`_ and `Ref`_.") == [
        {"kind": "text", "text": "See the paper and Ref."}
    ]
    # markup docutils cannot parse and HTML stay text, never markup
    assert inline_runs("a <b>&amp; ``open") == [{"kind": "text", "text": "a <b>&amp; ``open"}]
    assert inline_runs("- a list item") == [{"kind": "text", "text": "- a list item"}]
    leaf = BackwardStepper((tk.randn(2, requires_grad=True) * 1.0).sum()).run_to("leaf0")
    assert {"kind": "code", "text": ".grad"} in leaf["step"]["rule"]["doc_runs"]
