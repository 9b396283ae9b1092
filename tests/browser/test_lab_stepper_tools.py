"""The backward stepper widget in a real JupyterLab: Next highlights the node and shows its
gradient, the finite-difference checks colour a planted wrong rule, Run to here, the
chain-rule edge labels, a refused breakpoint setting, and a failing backward opening on the
failing node with the in-place culprit marked; positions compared with Python's state."""

from __future__ import annotations

import re

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

TOY = """
import json
import tensorkit as tk

class WrongCube(tk.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * x * grad  # planted bug: 3 x^2 is right

a = tk.tensor(2.0, requires_grad=True)
b = tk.tensor(-3.0, requires_grad=True)
toy = tk.notebook.step_backward(lambda a, b: WrongCube.apply(a * b + a), inputs=[a, b])
toy
"""
INPLACE = """
c = (tk.tensor([1.0, 2.0], requires_grad=True) * 2.0).exp()
c.mul_(3.0)
failing = tk.notebook.step_backward(c.sum())
failing.action = "run_to_end"
failing
"""
STATE = """
print("STATE", json.dumps({
    "position": toy.state["position"],
    "node": toy.state["step"] and toy.state["step"]["node"]["id"],
    "leaf_grads": [g["grad"] and g["grad"]["values"] for g in toy.state["leaf_grads"]],
    "notice": toy.notice,
}))
"""


def test_stepper_steps_checks_and_shows_failures(open_notebook, expect) -> None:
    nb = open_notebook("stepper.ipynb", [TOY, INPLACE, STATE])
    nb.run_all()
    assert nb.errors() == []
    expect(nb.page.locator(".tk-stepper-widget")).to_have_count(2)  # both drawn
    toy, failing = nb.page.locator(".tk-stepper-widget").all()

    toy.get_by_role("button", name="Next", exact=True).click()
    expect(toy.locator(".tk-node.tk-current")).to_have_attribute("data-id", "n0")
    expect(toy.locator(".tk-status")).to_have_text(re.compile(r"^step 1 / "))
    expect(toy.locator(".tk-panel")).to_contain_text("n0: WrongCubeBackward")
    expect(toy.locator(".tk-step .tk-values td").first).to_have_text("1")  # incoming dL/dL

    toy.get_by_role("button", name="Check this node").click()
    expect(toy.locator(".tk-node.tk-check-bad")).to_have_attribute("data-id", "n0")
    expect(toy.locator(".tk-check-result")).to_contain_text("DISAGREES")

    toy.locator(".tk-node[data-id='leaf0']").click()
    toy.get_by_role("button", name="Run to here").click()
    expect(toy.locator(".tk-node.tk-current")).to_have_attribute("data-id", "leaf0")
    expect(toy.locator(".tk-edge-label[data-edge='leaf0->n2']")).to_have_text("-3\u00d732=-96")
    toy.focus()
    nb.page.keyboard.press("g")
    expect(toy.locator(".tk-check-graph")).to_contain_text("first disagreeing node: n0")

    toy.locator(".tk-break-norm").fill("-1")
    toy.locator(".tk-break-norm").press("Enter")
    expect(toy.locator(".tk-notice")).to_contain_text("ValueError: break_on_grad_norm")

    nb.rerun_cell(2)
    expect(nb.page.locator(".jp-OutputArea-output", has_text="STATE")).to_contain_text('"leaf0"')
    state = nb.printed("STATE")
    shown = toy.locator(".tk-status").inner_text()
    assert shown.startswith(f"step {state['position']} / ") and state["node"] == "leaf0"
    assert state["leaf_grads"][0] == -64.0 and state["notice"].startswith("ValueError")

    expect(failing.locator(".tk-node.tk-current.tk-failed")).to_have_attribute("data-id", "n2")
    expect(failing.locator(".tk-node.tk-inplace")).to_have_attribute("data-id", "n1")
    expect(failing.locator(".tk-inplace-culprit")).to_contain_text("mul_")
