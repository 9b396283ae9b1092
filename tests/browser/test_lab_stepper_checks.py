"""The stepper's marks and checks in a real JupyterLab: the current node's colour is its own
(not a failed check's), listed in the legend; nodes are offered and drawn in backward order;
the check panel shows the rule's gradient beside the finite-difference one with a heat map of
their difference; Reset clears every mark; notebook 03 under Run All still finds its bug."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"

WIDGET = '''
import json
import tensorkit as tk
import tensorkit.notebook as tkn


class WrongSquare(tk.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        """Twice ``x`` times ``grad``: :math:`2x`, *planted* **bug**."""
        (x,) = ctx.saved_tensors
        return 3 * x * grad


def loss_fn(x, w):
    return (WrongSquare.apply(x @ w) * 0.5).sum()


tk.manual_seed(0)
x = tk.randn(3, 4, dtype=tk.float64)
w = tk.randn(4, 2, dtype=tk.float64, requires_grad=True)
stepper = tkn.step_backward(loss_fn, inputs=[x, w])
stepper
'''
# What the page must show, from Python: the engine's order, and the check of the square's node.
REFERENCE = """
reference = tkn.BackwardStepper.from_function(loss_fn, [x, w])
square = next(i for n, i in reference.ids.items() if n.name() == "WrongSquareBackward")
node = reference.node(square)
entry = tkn.check_node(node, inputs=reference.forward_inputs[node])["inputs"][0]
print("EXPECT", json.dumps({
    "order": reference.planned_order,
    "square": square,
    "produced": entry["produced"]["values"],
    "expected": entry["expected"]["values"],
    "max_abs_error": entry["max_abs_error"],
}))
"""

STEPPER = ".tk-stepper-widget"
# The computed outline of a node's box, and of a legend sample.
STROKE_JS = "(el) => getComputedStyle(el).stroke"


def _flat(values):
    return [v for row in values for v in _flat(row)] if isinstance(values, list) else [values]


def _shows_rounded(text: str, value: float) -> bool:
    """Whether ``text`` is ``value`` to the workbench's 3 significant digits."""
    if value == 0:
        return float(text) == 0
    half_unit = 0.5 * 10 ** (math.floor(math.log10(abs(value))) - 2)
    return abs(float(text) - value) <= half_unit * (1 + 1e-9)


def _stroke(locator) -> str:
    return locator.locator("rect").first.evaluate(STROKE_JS)


def test_marks_order_check_panel_and_reset(open_notebook, expect) -> None:
    nb = open_notebook("stepper_checks.ipynb", [WIDGET, REFERENCE])
    nb.run_all()
    assert nb.errors() == []
    reference = nb.printed("EXPECT")
    widget = nb.page.locator(STEPPER)
    node = lambda node_id: widget.locator(f"svg g.tk-node[data-id='{node_id}']")  # noqa: E731

    # the node chooser lists the nodes in the engine's order, from the loss back to the leaves
    # (a placeholder first; read once the widget has drawn them)
    expect(widget.locator(".tk-node-chooser option")).to_have_count(len(reference["order"]) + 1)
    options = widget.locator(".tk-node-chooser option").all()
    assert [o.get_attribute("value") for o in options[1:]] == reference["order"]

    # check the whole graph: the square's node disagrees, the rest agree, each row listed
    widget.get_by_role("button", name="Check whole graph").click()
    square = reference["square"]
    expect(node(square)).to_have_class(_has("tk-check-bad"))
    rows = widget.locator("tr.tk-graph-check-row")
    expect(rows).to_have_count(len([i for i in reference["order"] if not i.startswith("leaf")]))
    expect(widget.locator("tr.tk-graph-check-row[data-mark='tk-check-bad']")).to_have_attribute(
        "data-id", square
    )
    assert rows.first.get_attribute("data-id") == reference["order"][0]

    # the current node's colour is its own: not the failed check's, and the legend's
    widget.get_by_role("button", name="Next", exact=True).click()
    current = widget.locator("svg g.tk-node.tk-current")
    expect(current).to_have_attribute("data-id", reference["order"][0])
    assert _stroke(current) != _stroke(node(square))
    legend = widget.locator(".tk-mark-legend")
    assert _stroke(legend.locator("[data-mark='tk-current'] .tk-mark-sample")) == _stroke(current)
    assert _stroke(legend.locator("[data-mark='tk-check-bad'] .tk-mark-sample")) == _stroke(
        node(square)
    )
    expect(legend).to_contain_text("current step")
    # where both apply, the current node keeps its colour and the failed check its fill
    widget.locator(".tk-node-chooser").select_option(square)
    widget.get_by_role("button", name="Run to here").click()
    expect(node(square)).to_have_class(_has("tk-current"))
    assert _stroke(node(square)) == _stroke(legend.locator("[data-mark='tk-current'] g"))
    fill = "(el) => getComputedStyle(el).fill"
    bad_fill = legend.locator("[data-mark='tk-check-bad'] rect").evaluate(fill)
    assert node(square).locator("rect").first.evaluate(fill) == bad_fill

    # the check panel: the rule's gradient beside the finite-difference one, and a heat map
    check = widget.locator(".tk-node-check")
    expect(check.locator(".tk-check-result")).to_contain_text("DISAGREES")
    sides = check.locator(".tk-compare .tk-side")
    expect(sides).to_have_count(2)
    produced, expected = (sides.nth(i).locator("td").all_inner_texts() for i in (0, 1))
    for texts, values in ((produced, reference["produced"]), (expected, reference["expected"])):
        values = _flat(values)
        assert len(texts) == len(values) == 6
        assert all(_shows_rounded(t, v) for t, v in zip(texts, values, strict=True))
    left, right = (sides.nth(i).bounding_box() for i in (0, 1))
    assert left["x"] + left["width"] <= right["x"] and abs(left["y"] - right["y"]) < 2
    assert check.locator("td.tk-mismatch").count() > 0  # 3x where 2x is right: all differ
    heat = check.locator(".tk-diff-map")
    expect(heat.locator("svg.tk-diff-svg rect")).to_have_count(6)  # one cell per element
    expect(heat.locator(".tk-legend-bar")).to_be_visible()
    expect(heat.locator(".tk-diff-errors")).to_contain_text("max abs error")
    expect(heat.locator(".tk-diff-errors")).to_contain_text("max rel error")
    # the rule's docstring drawn from inline runs: code, math, emphasis, strong
    doc = widget.locator(".tk-rule-doc")
    expect(doc.locator("code.tk-doc-code")).to_have_text(["x", "grad"])
    expect(doc.locator("var.tk-doc-math")).to_have_text("2x")
    expect(doc.locator("em")).to_have_text("planted")
    expect(doc.locator("strong")).to_have_text("bug")
    expect(doc).not_to_contain_text("``")
    nb.screenshot("check-panel", widget)
    nb.screenshot("check-detail", check)

    # Reset clears every mark: check colours, steps run, the current node, the panel's checks
    widget.get_by_role("button", name="Reset").click()
    expect(widget.locator("svg g.tk-node.tk-current")).to_have_count(0)
    for mark in ("tk-check-ok", "tk-check-bad", "tk-check-warn", "tk-check-skip", "tk-visited"):
        expect(widget.locator(f"svg g.tk-node.{mark}")).to_have_count(0)
    expect(widget.locator(".tk-node-check")).to_have_count(0)
    expect(widget.locator(".tk-graph-checks")).to_have_count(0)
    expect(widget.locator(".tk-status")).to_contain_text("step 0 /")
    assert nb.errors() == []


def test_backward_pass_drawn_from_the_loss_back(open_notebook, expect) -> None:
    nb = open_notebook("stepper_order.ipynb", [WIDGET, REFERENCE])
    nb.run_all()
    assert nb.errors() == []
    order = nb.printed("EXPECT")["order"]
    widget = nb.page.locator(STEPPER)
    expect(widget.locator("svg g.tk-node").first).to_be_visible()

    def left(node_id: str) -> float:
        return widget.locator(f"svg g.tk-node[data-id='{node_id}']").bounding_box()["x"]

    loss = left(order[0])
    leaves = [left(i) for i in order if i.startswith("leaf")]
    assert leaves and all(loss < x for x in leaves), (loss, leaves)


def test_notebook_03_run_all_reports_the_disagreeing_node(open_notebook, expect) -> None:
    name = "03_debugging_wrong_gradient.ipynb"
    nb = open_notebook(name, source=NOTEBOOKS / name)
    nb.run_all()
    assert nb.errors() == []
    widget = nb.page.locator(STEPPER)
    expect(widget).to_have_count(1)
    widget.get_by_role("button", name="Check whole graph").click()
    summary = widget.locator(".tk-check-graph")
    expect(summary).to_contain_text("first disagreeing node: ")
    expect(summary).to_contain_text("SoftplusBackward")
    bad = widget.locator("tr.tk-graph-check-row[data-mark='tk-check-bad']")
    expect(bad).to_have_count(1)
    expect(bad).to_contain_text("SoftplusBackward")
    failing = bad.get_attribute("data-id")
    expect(widget.locator(f"svg g.tk-node[data-id='{failing}']")).to_have_class(
        _has("tk-check-bad")
    )
    # the same node as the notebook's own check_graph cell printed
    expect(
        nb.page.locator(".jp-OutputArea-output", has_text="first failing node:")
    ).to_contain_text(f"SoftplusBackward (id {failing},")
    expect(nb.page.locator(".jp-OutputArea-output", has_text="bug still in place")).to_have_count(1)
    nb.screenshot("checked", widget)


def _has(name: str):
    """A pattern matching a class attribute that holds ``name``."""
    return re.compile(rf"(^|\s){re.escape(name)}(\s|$)")


def _theme(page, name: str, light: bool) -> None:
    """Pick a JupyterLab theme from the Settings menu and wait until the page follows it."""
    item = lambda label: page.locator(  # noqa: E731
        ".lm-Menu-item", has=page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{label}$"))
    )
    page.get_by_role("menuitem", name="Settings", exact=True).click()
    item("Theme").hover()
    item(name).click()
    page.wait_for_function(f"document.body.dataset.jpThemeLight === '{str(light).lower()}'")


def test_marks_follow_the_dark_theme(open_notebook, expect) -> None:
    nb = open_notebook("stepper_dark.ipynb", [WIDGET])
    nb.run_all()
    assert nb.errors() == []
    widget = nb.page.locator(STEPPER)
    widget.get_by_role("button", name="Check whole graph").click()
    widget.get_by_role("button", name="Next", exact=True).click()
    current = widget.locator("svg g.tk-node.tk-current")
    bad = widget.locator("svg g.tk-node.tk-check-bad")
    expect(bad).to_have_count(1)
    light = {"current": _stroke(current), "bad": _stroke(bad)}
    try:
        _theme(nb.page, "JupyterLab Dark", light=False)
        dark = {"current": _stroke(current), "bad": _stroke(bad)}
        nb.screenshot("dark", widget)
    finally:
        _theme(nb.page, "JupyterLab Light", light=True)
    # each theme has its own colours, and in each the current node differs from a failed check
    assert dark["current"] != light["current"] and dark["bad"] != light["bad"]
    assert dark["current"] != dark["bad"] and light["current"] != light["bad"]
    sample = widget.locator(".tk-mark-legend [data-mark='tk-current'] .tk-mark-sample")
    assert _stroke(sample) == light["current"]  # back in the light theme, legend and node agree
