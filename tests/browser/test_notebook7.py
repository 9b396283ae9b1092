"""The widgets in Notebook 7 (served by the same Jupyter server as JupyterLab, at
/notebooks/...): after Run All the graph and the stepper draw, and Next moves the stepper."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

CELLS = [
    """
import json
import tensorkit as tk
import tensorkit.notebook as tkn

x = tk.tensor([1.0, 2.0, 3.0], requires_grad=True)
with tk.autograd.Tape() as tape:
    loss = (x * x).tanh().sum()
first = tkn.BackwardStepper((x * x).tanh().sum()).next()["step"]["node"]
print("EXPECT", json.dumps({"nodes": len(tape.show().graph["nodes"]), "first": first["id"]}))
""",
    "tape.show()",
    "tkn.step_backward((x * x).tanh().sum())",
]


def _write(lab: Any, name: str) -> None:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nb.cells = [nbformat.v4.new_code_cell(code.strip()) for code in CELLS]
    nbformat.write(nb, lab.root / name)


def test_graph_and_stepper_work_in_notebook_7(
    lab: Any, browser: Any, expect: Any, artifacts: Path
) -> None:
    name = "notebook7.ipynb"
    _write(lab, name)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(lab.url(f"notebooks/{name}"))
        _wait_for_idle_kernel(lab, name)
        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
        printed = page.locator(".jp-OutputArea-output", has_text="EXPECT")
        expect(printed).to_have_count(1)
        expected = json.loads(re.search(r"EXPECT (\{.*\})", printed.text_content()).group(1))
        graph, stepper = page.locator(".tk-graph-widget"), page.locator(".tk-stepper-widget")
        expect(graph.locator("g.tk-node")).to_have_count(expected["nodes"])
        expect(stepper.locator("g.tk-current")).to_have_count(0)
        stepper.locator("button.tk-button", has_text="Next").first.click()
        expect(stepper.locator("g.tk-current")).to_have_attribute("data-id", expected["first"])
        page.screenshot(path=str(artifacts / "test_notebook7.png"))
    finally:
        page.close()
        lab.shutdown_kernel(name)


def _wait_for_idle_kernel(lab: Any, name: str) -> None:
    """Until the page's kernel answers idle (asked of the server's sessions API; at most
    60 s): Notebook 7 drops a Run All clicked before its kernel is connected."""
    for _ in range(600):
        sessions = [s for s in lab.api("GET", "sessions") if s["path"] == name]
        if sessions and sessions[0]["kernel"]["execution_state"] == "idle":
            return
        time.sleep(0.1)  # polling interval of a bounded wait
    raise AssertionError(f"the kernel of {name} was not idle within 60 s")
