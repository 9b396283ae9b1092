"""Notebook 05 (tk.jit) in a real JupyterLab: Run All draws the eager graph, the compiled graph
with its guards and the broken call with its graph break; a fused group is one box that opens
into its member ops and shows the generated kernel's source in the panel (the fusion pass's
own node: a bias add and the tanh after it, with their gradient ops in the backward band)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "05_compiling_with_jit.ipynb"
FUSED_VIEW = """
import json

view = tkn.show_compiled(traced)
group_id = next(g for g, x in view.graph["groups"].items() if x["kind"] == "fused")
group = view.graph["groups"][group_id]
ops = {n["id"]: n["op"] for n in view.graph["nodes"]}
print("EXPECT_KERNEL", json.dumps({
    "id": group_id, "label": group["label"], "source": group["source"],
    "members": {m: ops[m] for m in group["nodes"]},
}))
view
"""
WIDGET = ".jp-OutputArea-output .tk-graph-widget"
# a cell whose last line draws a graph: tkn.show(...), tkn.show_compiled(...) or obj.show()
SHOW_CALL = re.compile(r"tkn\.show|\w+\.show\(\)$")


def test_notebook_05_draws_compiled_graphs_breaks_and_fused_groups(open_notebook, expect) -> None:
    import nbformat

    notebook = nbformat.read(NOTEBOOK, as_version=4)
    sources = [c.source for c in notebook.cells if c.cell_type == "code"]
    shows = [i for i, src in enumerate(sources) if SHOW_CALL.match(src.splitlines()[-1])]
    assert len(shows) == 3
    nb = open_notebook("jit.ipynb", [*sources, FUSED_VIEW])
    nb.run_all()
    assert nb.errors() == []
    page = nb.page
    expect(page.locator(".tk-graph-widget")).to_have_count(4)
    cells = nb.code_cells()
    for i in [*shows, len(sources)]:
        widget = cells.nth(i).locator(WIDGET)
        expect(widget.locator("svg.tk-graph-svg g.tk-node").first).to_be_attached()
        assert widget.locator("svg.tk-graph-svg path.tk-edge").count() >= 1

    compiled = cells.nth(shows[1]).locator(WIDGET)
    expect(compiled.locator(".tk-panel .tk-jit-title")).to_have_text(
        "tk.compile of Sequential: guard set 1 of 1"
    )
    expect(compiled.locator(".tk-jit-guards li").first).to_have_text("grad mode on")
    expect(compiled.locator(".tk-muted", has_text="none: the call is one graph")).to_have_count(1)
    broken = cells.nth(shows[2]).locator(WIDGET)
    expect(broken.locator(".tk-jit-breaks li")).to_have_count(1)
    expect(broken.locator(".tk-jit-breaks li")).to_contain_text(
        "Tensor.__bool__() reads a tensor's value into Python (at cell ["
    )
    expect(broken.locator(".tk-jit-breaks li")).to_contain_text("guarded on True")
    expect(broken.locator("svg g.tk-node.tk-guard")).to_have_count(1)  # the guard's own box
    nb.screenshot("broken", broken)

    fused = nb.printed("EXPECT_KERNEL")
    view = cells.nth(len(sources)).locator(WIDGET)
    box = view.locator(f'svg g.tk-node.tk-group-fused[data-id="group:{fused["id"]}"]')
    expect(box).to_have_count(1)  # folded at first: one box
    expect(box.locator("text.tk-node-op")).to_contain_text("fused: ")
    for member in fused["members"]:
        expect(view.locator(f'svg g.tk-node[data-id="{member}"]')).to_have_count(0)
    expect(view.locator(".tk-code")).to_have_count(0)
    box.click()
    expect(box).to_have_count(0)
    expect(view.locator(f'svg g.tk-group[data-path="{fused["id"]}"]')).to_have_count(1)
    for member, op in fused["members"].items():
        node = view.locator(f'svg g.tk-node[data-id="{member}"]')
        expect(node.locator("text.tk-node-op")).to_have_text(op)
    expect(view.locator(".tk-panel .tk-code")).to_have_count(1)
    assert view.locator(".tk-panel .tk-code").text_content() == fused["source"]
    expect(view.locator(".tk-panel .tk-section-title").first).to_have_text(
        f"kernel of {fused['label']}"
    )
    first = next(iter(fused["members"]))
    view.locator(f'svg g.tk-node[data-id="{first}"]').click()
    expect(view.locator(".tk-details-value").first).to_have_text(
        f"{first}: {fused['members'][first]}"
    )
    expect(view.locator(".tk-panel .tk-code")).to_have_count(1)  # a member shows its kernel
    nb.screenshot("fused-open", view)
    assert nb.errors() == []
