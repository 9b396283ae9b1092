"""The graph widget in a real JupyterLab: what a person sees after Run All (expanded), compared
with the graph model that Python printed in the same notebook; nested group boxes that do not
overlap, arrowheads, folding a module group and opening it again."""

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
    "labels": sorted({n.get("label") or n["op"] for n in model_graph["nodes"]
                      if n["kind"] == "op"}),
    "groups": {gid: [g["nodes"], g["count"], g.get("label", gid), g["parent"]]
               for gid, g in model_graph["groups"].items()},
}))
"""
COLLAPSED = 'print("COLLAPSED", json.dumps(graph.collapsed))'

SVG = ".tk-graph-widget svg.tk-graph-svg"
VIEW = ".tk-graph-widget .tk-graph-view"


def _node_ids(page) -> list[str]:
    nodes = page.locator(f"{SVG} g.tk-node")
    return [nodes.nth(i).get_attribute("data-id") for i in range(nodes.count())]


def _expand_all(page, expect, count: int) -> None:
    page.locator(f'{VIEW} button[data-action="expand"]').click()
    expect(page.locator(f"{SVG} g.tk-node")).to_have_count(count)


def _boxes(page) -> dict[str, dict]:
    """The laid-out group frames the view drew (its scene, kept on the element)."""
    return page.locator(VIEW).evaluate(
        "(v) => Object.fromEntries(v.tkScene.frames.map((f) => [f.group, "
        "{x: f.x, y: f.y, w: f.width, h: f.height}]))"
    )


def _inside(a: dict, b: dict) -> bool:
    eps = 1e-6
    return (
        a["x"] >= b["x"] - eps
        and a["y"] >= b["y"] - eps
        and a["x"] + a["w"] <= b["x"] + b["w"] + eps
        and a["y"] + a["h"] <= b["y"] + b["h"] + eps
    )


def _disjoint(a: dict, b: dict) -> bool:
    return (
        a["x"] + a["w"] <= b["x"]
        or b["x"] + b["w"] <= a["x"]
        or a["y"] + a["h"] <= b["y"]
        or b["y"] + b["h"] <= a["y"]
    )


def test_graph_svg_shows_every_node_and_edge(open_notebook, expect) -> None:
    nb = open_notebook("graph.ipynb", [MODEL, EXPECTED])
    nb.run_all()
    assert nb.errors() == []
    expected = nb.printed("EXPECT")
    page = nb.page
    expect(page.locator(f"{SVG} g.tk-node").first).to_be_visible()
    # Fitted when first shown: zoomed out no further than the legible minimum, its left
    # end in view (all of it when it fits).
    transform = page.locator(f"{SVG} g.tk-viewport").get_attribute("transform")
    scale = float(re.search(r"scale\(([\d.]+)\)", transform).group(1))
    assert 0.75 <= scale <= 1, transform
    box = page.locator(SVG).bounding_box()
    first = min(
        (n.bounding_box() for n in page.locator(f"{SVG} g.tk-node").all()), key=lambda b: b["x"]
    )
    assert box["x"] <= first["x"] and first["x"] + first["width"] <= box["x"] + box["width"]

    _expand_all(page, expect, len(expected["nodes"]))
    assert sorted(_node_ids(page)) == sorted(expected["nodes"])
    edges = page.locator(f"{SVG} path.tk-edge")
    expect(edges).to_have_count(expected["edges"])
    expect(page.locator(f"{SVG} path.tk-arrow")).to_have_count(expected["edges"])
    labels = set(page.locator(f"{SVG} g.tk-op text.tk-node-op").all_text_contents())
    assert labels == set(expected["labels"])
    # Every group is a box inside its parent's, and boxes of one parent do not overlap.
    boxes = _boxes(page)
    groups = expected["groups"]
    assert set(boxes) == set(groups)
    for gid, (_, _, _, parent) in groups.items():
        if parent is not None:
            assert _inside(boxes[gid], boxes[parent]), (gid, parent)
        for other, (_, _, _, other_parent) in groups.items():
            if other != gid and other_parent == parent:
                assert _disjoint(boxes[gid], boxes[other]), (gid, other)
    nb.screenshot("expanded", page.locator(".tk-graph-widget"))
    assert nb.errors() == []


def test_collapsing_a_module_hides_its_ops(open_notebook, expect) -> None:
    nb = open_notebook("collapse.ipynb", [MODEL, EXPECTED, COLLAPSED])
    nb.run_all()
    assert nb.errors() == []
    expected = nb.printed("EXPECT")
    page = nb.page
    module = "Sequential.0"
    members, count, label, _ = expected["groups"][module]
    nodes = page.locator(f"{SVG} g.tk-node")
    _expand_all(page, expect, len(expected["nodes"]))

    header = page.locator(f'{SVG} g.tk-group[data-path="{module}"] .tk-group-header')
    before = header.bounding_box()
    header.click()
    group = page.locator(f'{SVG} g.tk-node.tk-group[data-id="group:{module}"]')
    expect(group).to_have_count(1)
    expect(group.locator("text.tk-node-op")).to_have_text(label)
    expect(group.locator("text.tk-node-shape")).to_have_text(f"{count} nodes")
    below = {
        n for gid, g in expected["groups"].items() for n in g[0] if _within(gid, module, expected)
    }
    expect(nodes).to_have_count(len(expected["nodes"]) - len(below) + 1)
    assert not below & set(_node_ids(page))
    # The folded group stays where its box was on screen.
    after = group.bounding_box()
    assert abs(after["x"] - before["x"]) < 8 and abs(after["y"] - (before["y"] - 4)) < 12
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
    assert members and count == len(below)
    assert nb.errors() == []


def _within(gid: str, ancestor: str, expected: dict) -> bool:
    """Whether group `gid` is `ancestor` or below it (walking parents; ids are opaque)."""
    while gid is not None:
        if gid == ancestor:
            return True
        gid = expected["groups"][gid][3]
    return False
