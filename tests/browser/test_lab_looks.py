"""How the workbench looks in real hosts: the node details panel reads as two columns (keys,
values) in JupyterLab, Notebook 7 and a standalone ``Tape.to_html`` page, whatever rules the
host has for lists; and the widgets follow JupyterLab's dark theme (background and text from
its variables, node text readable on node fills)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from page_looks import COLOURS_JS, check_details_layout, contrast, luminance
from test_notebook7 import _wait_for_idle_kernel

import tensorkit as tk

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

GRAPH = """
import tensorkit as tk

tk.manual_seed(0)
model = tk.nn.Sequential(tk.nn.Linear(4, 8), tk.nn.Tanh(), tk.nn.Linear(8, 1))
with tk.autograd.Tape() as tape:
    loss = model(tk.randn(2, 4)).pow(2).mean()
tape.show()
"""
EXPECTED_KEYS = {"node", "kind", "outputs", "dtypes"}  # among the rows every op has
READABLE = 4.5  # WCAG AA contrast for normal text


def _open_details(page: Any, expect: Any) -> Any:
    """Click the graph's first op node; the details panel once it shows that node."""
    widget = page.locator(".tk-graph-widget").first
    node = widget.locator("g.tk-node.tk-op").first
    expect(node).to_be_visible()
    node.click()
    panel = widget.locator(".tk-panel .tk-details")
    expect(panel).to_be_visible()
    return panel


def _set_theme(page: Any, theme: str) -> None:
    """Settings ▸ Theme ▸ ``theme``, as a person would."""
    page.get_by_role("menuitem", name="Settings", exact=True).click()
    item = page.locator(".lm-Menu-item")  # Lumino's submenu items carry no ARIA role
    item.filter(has_text=re.compile(r"^Theme$")).click()
    item.filter(has_text=re.compile(f"^{re.escape(theme)}$")).click()


def _colours(page: Any) -> dict:
    return page.locator(".tk-graph-widget").first.evaluate(COLOURS_JS)


def test_details_panel_and_dark_theme_in_jupyterlab(open_notebook, expect) -> None:
    nb = open_notebook("looks.ipynb", [GRAPH])
    nb.run_all()
    assert nb.errors() == []
    page = nb.page
    keys = check_details_layout(_open_details(page, expect))
    assert set(keys) >= EXPECTED_KEYS
    light = _colours(page)
    assert (light["bg"], light["fg"]) == (light["hostBg"], light["hostFg"])
    assert luminance(light["bg"]) > 0.8
    assert contrast(light["nodeFill"], light["nodeText"]) >= READABLE
    try:
        _set_theme(page, "JupyterLab Dark")
        page.wait_for_selector('body[data-jp-theme-light="false"]', state="attached")
        page.wait_for_function(
            """(before) => getComputedStyle(document.querySelector('.tk-graph-widget'))
              .backgroundColor !== before""",
            arg=light["bg"],
        )
        dark = _colours(page)
        assert (dark["bg"], dark["fg"]) == (dark["hostBg"], dark["hostFg"])
        assert luminance(dark["bg"]) < 0.1 and luminance(dark["fg"]) > 0.4
        assert dark["nodeFill"] != light["nodeFill"]  # the dark node palette
        assert contrast(dark["nodeFill"], dark["nodeText"]) >= READABLE
        assert contrast(dark["nodeFill"], dark["bg"]) > 1.1  # boxes stand out
        nb.screenshot("dark", page.locator(".tk-graph-widget").first)
        check_details_layout(page.locator(".tk-graph-widget .tk-details").first)
    finally:
        _set_theme(page, "JupyterLab Light")
        page.wait_for_selector('body[data-jp-theme-light="true"]', state="attached")
    assert nb.errors() == []


def test_details_panel_in_notebook_7(lab: Any, browser: Any, expect: Any) -> None:
    import nbformat

    name = "looks_nb7.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nb.cells = [nbformat.v4.new_code_cell(GRAPH.strip())]
    nbformat.write(nb, lab.root / name)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(lab.url(f"notebooks/{name}"))
        _wait_for_idle_kernel(lab, name)
        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
        keys = check_details_layout(_open_details(page, expect))
        assert set(keys) >= EXPECTED_KEYS
    finally:
        page.close()
        lab.shutdown_kernel(name)


def test_details_panel_in_an_html_export(browser: Any, expect: Any, tmp_path: Path) -> None:
    tk.manual_seed(0)
    model = tk.nn.Sequential(tk.nn.Linear(4, 8), tk.nn.Tanh(), tk.nn.Linear(8, 1))
    with tk.autograd.Tape() as tape:
        model(tk.randn(2, 4)).pow(2).mean()
    path = tape.to_html(str(tmp_path / "looks.html"))
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(Path(path).resolve().as_uri())
        keys = check_details_layout(_open_details(page, expect))
        assert set(keys) >= EXPECTED_KEYS
        colours = _colours(page)  # no JupyterLab: the light fallbacks
        assert luminance(colours["bg"]) > 0.9 and luminance(colours["fg"]) < 0.05
    finally:
        page.close()


def test_html_export_puts_the_profile_beside_the_graph(browser: Any, tmp_path: Path) -> None:
    tk.manual_seed(0)
    model = tk.nn.Sequential(tk.nn.Linear(4, 8), tk.nn.Tanh(), tk.nn.Linear(8, 1))
    with tk.profiler.profile(), tk.autograd.Tape() as tape:
        model(tk.randn(2, 4)).pow(2).mean()
    tanh = next(e for e in tape.entries if e.name == "tanh")
    path = tape.to_html(str(tmp_path / "profiled.html"))
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(Path(path).resolve().as_uri())
        graph = page.locator(".tk-side-by-side .tk-graph-widget").bounding_box()
        profile = page.locator(".tk-side-by-side .tk-profile").bounding_box()
        assert profile["x"] >= graph["x"] + graph["width"] - 1
        assert abs(profile["y"] - graph["y"]) < 20
        row = page.locator(f'.tk-profile-table tr[data-index="{tanh.records["profiler_index"]}"]')
        row.click()
        selected = page.locator(".tk-graph-widget g.tk-node.tk-selected")
        assert selected.get_attribute("data-id") == f"op{tanh.index}"
        assert "cuda" not in page.locator(".tk-profile .tk-toolbar").inner_text().lower()
        page.set_viewport_size({"width": 700, "height": 1000})  # narrow: stacked
        page.wait_for_function(
            """() => { const g = document.querySelector('.tk-graph-widget').getBoundingClientRect();
              const p = document.querySelector('.tk-profile').getBoundingClientRect();
              return p.top >= g.bottom - 1; }"""
        )
    finally:
        page.close()
