"""The graph widget in a real JupyterLab: what a person sees after Run All, compared with the
graph model that Python printed in the same notebook; collapsing a module group."""

from __future__ import annotations

import re

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

MODEL = """
import json
import tensorkit as tk
import tensorkit.notebook as tkn

tk.manual_seed(0)
model = tk.nn.Sequential(tk.nn.Linear(3, 4), tk.nn.Tanh(), tk.nn.Linear(4, 1))
x, target = tk.randn(5, 3), tk.randn(5, 1)
with tk.autograd.Tape() as tape:
    loss = (model(x) - target).abs().mean()
graph = tkn.show(tape)
graph
"""
EXPECTED = """
model_graph = graph.graph
print("EXPECT", json.dumps({
    "nodes": [n["id"] for n in model_graph["nodes"]],
    "edges": len(model_graph["edges"]),
    "ops": sorted({n["op"] for n in model_graph["nodes"] if n["kind"] == "op"}),
    "groups": {path: [g["nodes"], g["count"]] for path, g in model_graph["groups"].items()},
}))
"""
COLLAPSED = 'print("COLLAPSED", json.dumps(graph.collapsed))'

SVG = ".tk-graph-widget svg.tk-graph-svg"


def _node_ids(page) -> list[str]:
    nodes = page.locator(f"{SVG} g.tk-node")
    return [nodes.nth(i).get_attribute("data-id") for i in range(nodes.count())]


def test_graph_svg_shows_every_node_and_edge(open_notebook, expect) -> None:
    nb = open_notebook("graph.ipynb", [MODEL, EXPECTED])
    nb.run_all()
    assert nb.errors() == []
    expected = nb.printed("EXPECT")
    page = nb.page
    nodes = page.locator(f"{SVG} g.tk-node")
    expect(nodes).to_have_count(len(expected["nodes"]))
    assert sorted(_node_ids(page)) == sorted(expected["nodes"])
    expect(page.locator(f"{SVG} path.tk-edge")).to_have_count(expected["edges"])
    labels = set(page.locator(f"{SVG} g.tk-op text.tk-node-op").all_text_contents())
    assert labels == set(expected["ops"])
    assert {"matmul", "tanh", "abs", "mean"} <= labels
    # Fitted when first shown (before it had a size on the page): this graph is wider than
    # the widget, so the view zooms out (to the legible minimum) and starts at its left end.
    transform = page.locator(f"{SVG} g.tk-viewport").get_attribute("transform")
    scale = float(re.search(r"scale\(([\d.]+)\)", transform).group(1))
    assert scale < 1, transform
    box = page.locator(SVG).bounding_box()
    first = min((n.bounding_box() for n in nodes.all()), key=lambda b: b["x"])
    assert box["x"] <= first["x"] and first["x"] + first["width"] <= box["x"] + box["width"]
    assert nb.errors() == []


def test_collapsing_a_module_hides_its_ops(open_notebook, expect) -> None:
    nb = open_notebook("collapse.ipynb", [MODEL, EXPECTED, COLLAPSED])
    nb.run_all()
    assert nb.errors() == []
    expected = nb.printed("EXPECT")
    page = nb.page
    module = "Sequential.0"
    members, count = expected["groups"][module]  # the first Linear has no submodules
    assert members and count == len(members)
    nodes = page.locator(f"{SVG} g.tk-node")
    expect(nodes).to_have_count(len(expected["nodes"]))

    page.locator(f'{SVG} g.tk-group[data-path="{module}"] .tk-group-header').click()
    group = page.locator(f'{SVG} g.tk-node.tk-group[data-id="group:{module}"]')
    expect(group).to_have_count(1)
    expect(group.locator("text.tk-node-op")).to_have_text(f"{module} ({count})")
    expect(nodes).to_have_count(len(expected["nodes"]) - len(members) + 1)
    assert not set(members) & set(_node_ids(page))
    nb.screenshot("collapsed", page.locator(".tk-graph-widget"))
    expect(page.locator(f'{SVG} g.tk-group[data-path="{module}"]')).to_have_count(0)
    nb.rerun_cell(2)  # the click reached Python's `collapsed` trait
    expect(page.locator(".jp-OutputArea-output", has_text="COLLAPSED")).to_have_text(
        f'COLLAPSED ["{module}"]'
    )

    group.click()
    expect(group).to_have_count(0)
    expect(nodes).to_have_count(len(expected["nodes"]))
    assert sorted(_node_ids(page)) == sorted(expected["nodes"])
    expect(page.locator(f'{SVG} g.tk-group[data-path="{module}"]')).to_have_count(1)
    assert nb.errors() == []
