"""The backward stepper widget in a real JupyterLab: Next / Previous move the highlighted node
to the nodes Python's BackwardStepper visits, and the panel shows the gradients it computed."""

from __future__ import annotations

import pytest

from tensorkit.notebook.numbers import number_text

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

WIDGET = """
import json
import tensorkit as tk
import tensorkit.notebook as tkn


def make_loss():
    tk.manual_seed(0)
    model = tk.nn.Sequential(tk.nn.Linear(3, 4), tk.nn.Tanh(), tk.nn.Linear(4, 1))
    x, target = tk.randn(5, 3), tk.randn(5, 1)
    return ((model(x) - target) ** 2).mean()


stepper = tkn.step_backward(make_loss())
stepper
"""
# The same pass on an identical graph, stepped in Python: what each step must show.
REFERENCE = """
def flat(values):
    return [v for row in values for v in flat(row)] if isinstance(values, list) else [values]


def shown(state):
    step = state["step"]
    return {
        "position": state["position"],
        "node": f'{step["node"]["id"]}: {step["node"]["name"]}',
        "id": step["node"]["id"],
        "grads_out": [None if g["grad"] is None else flat(g["grad"]["values"])
                      for g in step["grads_out"]],
    }


reference = tkn.BackwardStepper(make_loss())
print("EXPECT", json.dumps([shown(reference.next()) for _ in range(2)]))
"""

STEPPER = ".tk-stepper-widget"


def _shows_rounded(text: str, value: float) -> bool:
    """Whether ``text`` is ``value`` as the workbench writes numbers (3 significant digits:
    tensorkit.notebook.numbers, the twin of the widgets' format.js)."""
    return text == number_text(value)


def _check_step(page, expect, step: dict) -> None:
    """The highlight and the panel show ``step`` (the reference's state at that position)."""
    current = page.locator(f"{STEPPER} svg g.tk-node.tk-current")
    expect(current).to_have_attribute("data-id", step["id"])
    expect(current).to_have_count(1)
    expect(page.locator(f"{STEPPER} .tk-step-node")).to_have_text(step["node"])
    expect(page.locator(f"{STEPPER} .tk-status")).to_contain_text(f"step {step['position']} /")
    produced = page.locator(f"{STEPPER} .tk-step .tk-grad-out")
    expect(produced).to_have_count(len(step["grads_out"]))
    for i, values in enumerate(step["grads_out"]):
        cells = produced.nth(i).locator("table.tk-values td")
        if values is None:
            expect(cells).to_have_count(0)
            expect(produced.nth(i)).to_contain_text("None")
            continue
        texts = cells.all_inner_texts()
        assert len(texts) == len(values), (i, texts, values)
        wrong = [(t, v) for t, v in zip(texts, values, strict=True) if not _shows_rounded(t, v)]
        assert not wrong, f"produced gradient {i}: shown vs Python {wrong}"


def test_next_and_previous_follow_python(open_notebook, expect) -> None:
    nb = open_notebook("stepper.ipynb", [WIDGET, REFERENCE])
    nb.run_all()
    assert nb.errors() == []
    first, second = nb.printed("EXPECT")
    assert first["id"] != second["id"]
    page = nb.page
    next_button = page.locator(STEPPER).get_by_role("button", name="Next", exact=True)
    expect(page.locator(f"{STEPPER} svg g.tk-node").first).to_be_visible()
    expect(page.locator(f"{STEPPER} svg g.tk-node.tk-current")).to_have_count(0)

    next_button.click()
    _check_step(page, expect, first)
    next_button.click()
    _check_step(page, expect, second)
    nb.screenshot("step2", page.locator(STEPPER))
    page.locator(STEPPER).get_by_role("button", name="Previous", exact=True).click()
    _check_step(page, expect, first)
    assert nb.errors() == []
