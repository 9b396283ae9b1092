"""Notebook 03 run top to bottom, as "Run All" does: the planted bug stays in place, the
widget's whole-graph check names the wrong node, and the exercise's hidden solution fixes it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from notebook_kernel import notebook_client

nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed")
nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed")
pytest.importorskip("ipykernel", reason="ipykernel is not installed (needed for the kernel)")
pytest.importorskip("anywidget", reason="anywidget is not installed")

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "03_debugging_wrong_gradient.ipynb"

# What pressing "Check whole graph" does after Run All: the widget's check_graph action.
PRESS_CHECK_GRAPH = """
import json
stepper_widget.action = "check_graph"
report = stepper_widget.checks["graph"]
print("WIDGET " + json.dumps({
    "first": report["first_failure"]["node"],
    "disagree": [r["node"] for r in report["nodes"] if not r["ok"]],
    "marked": sorted(i for i, r in stepper_widget.checks["nodes"].items() if r["ok"] is False),
    "failure_id": report["first_failure"]["id"],
}))
"""


def _printed(nb, tag: str) -> list[dict]:
    return [
        json.loads(line[len(tag) + 1 :])
        for cell in nb.cells
        if cell.cell_type == "code"
        for output in cell.outputs
        if output.output_type == "stream"
        for line in output.text.splitlines()
        if line.startswith(f"{tag} ")
    ]


def _errors(nb) -> list[str]:
    return [
        f"{o.ename}: {o.evalue}"
        for cell in nb.cells
        if cell.cell_type == "code"
        for o in cell.outputs
        if o.output_type == "error"
    ]


def _solution(nb) -> str:
    """The code of the exercise's collapsed solution (a markdown <details> block)."""
    (text,) = [c.source for c in nb.cells if "<summary>Solution</summary>" in c.source]
    return re.search(r"```python\n(.*?)```", text, re.DOTALL)[1]


def _execute(nb) -> None:
    client = notebook_client(nb, resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    client.execute()


def test_run_all_keeps_the_bug_and_the_widget_check_finds_it() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    exercise = next(c.source for c in nb.cells if c.source.startswith("BUGGY = None"))
    fix_and_check = exercise[exercise.index("\nif BUGGY is None:") :]
    nb.cells.append(nbformat.v4.new_code_cell(PRESS_CHECK_GRAPH))
    # then the user opens the solution, pastes it above the exercise's check and runs it
    nb.cells.append(nbformat.v4.new_code_cell(_solution(nb) + fix_and_check))
    _execute(nb)
    assert _errors(nb) == []
    (widget,) = _printed(nb, "WIDGET")
    assert widget["first"] == "SoftplusBackward"
    assert widget["disagree"] == ["SoftplusBackward"]  # the other nodes, LogCosh too, agree
    assert widget["marked"] == [widget["failure_id"]]
    texts = [
        "".join(o.get("text", "") for o in c.outputs) for c in nb.cells if c.cell_type == "code"
    ]
    assert "bug still in place" in texts[-3]  # the exercise cell under Run All
    assert "ok after the fix: True" in texts[-1] and "gradcheck passed" in texts[-1]


def test_text_does_not_name_the_bug_before_the_check_finds_it() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    widget_cell = next(i for i, c in enumerate(nb.cells) if "step_backward" in c.source)
    before = "\n".join(c.source for c in nb.cells[:widget_cell] if c.cell_type == "markdown")
    assert "Softplus" not in before and "sigmoid" not in before
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert "# BUG" not in code and "fixed:" not in code  # no comment points at the bug
    assert "sigmoid()" not in code  # the fix is only in the collapsed solution
