"""The shipped notebooks in a real JupyterLab: Run All finishes with every code cell executed,
no error output, and every widget drawn as an SVG graph."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
# A cell whose last line shows a graph or stepper widget.
SHOWS_WIDGET = re.compile(r"^(tkn|tk\.notebook)\.(show|step_backward)\(.*\)$")


@pytest.mark.parametrize("name", ["01_tour.ipynb", "02_course_backprop_mlp.ipynb"])
def test_notebook_runs_and_draws_its_widgets(open_notebook, expect, name: str) -> None:
    import nbformat

    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    sources = [c.source for c in notebook.cells if c.cell_type == "code"]
    shows = [i for i, src in enumerate(sources) if SHOWS_WIDGET.match(src.splitlines()[-1])]
    assert shows, f"{name} shows no widget"
    nb = open_notebook(name, source=NOTEBOOKS / name)
    nb.run_all()
    assert nb.errors() == []
    assert nb.execution_counts() == [f"[{i}]:" for i in range(1, len(sources) + 1)]

    expect(nb.page.locator(".tk-widget")).to_have_count(len(shows))
    for i in shows:
        widget = nb.code_cells().nth(i).locator(".jp-OutputArea-output .tk-widget")
        expect(widget.locator("svg.tk-graph-svg g.tk-node").first).to_be_attached()
        assert widget.locator("svg.tk-graph-svg path.tk-edge").count() >= 1
        nb.screenshot(f"cell{i}", widget)
