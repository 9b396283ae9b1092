"""Widget front ends outside JupyterLab, in the session's headless Chromium: a standalone
``to_html`` page replaying recorded backward steps, and the graph widget's toolbar on a plain
page with a stand-in for anywidget's model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from harness import create_graph_tape

import tensorkit as tk
from tensorkit.notebook import BackwardStepper
from tensorkit.notebook.numbers import number_text

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

STATIC = Path(__file__).resolve().parents[2] / "tensorkit" / "notebook" / "static"


def test_html_page_replays_steps(browser: Any, tmp_path: Path) -> None:
    x = tk.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = tk.tensor([0.5, -1.0, 2.0], requires_grad=True)
    with tk.autograd.Tape() as tape:
        loss = (x * w * 2).sum()
        loss.backward(retain_graph=True)
    path = tape.to_html(str(tmp_path / "run.html"))
    x.grad = w.grad = None
    stepper = BackwardStepper(loss)
    stepper.next()
    second = stepper.next()["step"]
    page = browser.new_page()
    try:
        page.goto(Path(path).resolve().as_uri())
        widget = page.locator(".tk-replay-widget")
        assert widget.locator(".tk-status").text_content() == f"step 0 / {stepper.total_steps}"
        assert widget.locator("g.tk-current").count() == 0
        next_button = widget.locator('button[data-action="next"]')
        next_button.click()
        next_button.click()
        current = widget.locator("g.tk-current")
        assert current.count() == 1
        assert current.get_attribute("data-id") == second["node"]["id"]
        node_text = widget.locator(".tk-step-node").text_content()
        assert node_text == f"{second['node']['id']}: {second['node']['name']}"
        cells = widget.locator(".tk-step .tk-values td").all_text_contents()
        incoming = second["grads_in"][0]["values"]
        produced = [v for g in second["grads_out"] if g["grad"] for v in g["grad"]["values"]]
        assert cells == [number_text(v) for v in incoming + produced]
        widget.focus()
        page.keyboard.press("r")
        assert widget.locator(".tk-status").text_content() == f"step 0 / {stepper.total_steps}"
        page.keyboard.press("e")
        assert widget.locator(".tk-status").text_content().endswith("· done")
    finally:
        page.close()


# The graph widget's front end alone, in a plain page: a model object standing in for
# anywidget's.
RENDER = """(graph) => {
  const state = {graph, selected: "", collapsed: graph.collapsed, color_by: "none",
                 show_backward: true};
  const listeners = {};
  window.tkState = state;
  const model = {
    get: (name) => state[name],
    set: (name, value) => {
      state[name] = value;
      (listeners["change:" + name] || []).forEach((f) => f());
    },
    on: (event, fn) => { (listeners[event] = listeners[event] || []).push(fn); },
    off() {},
    save_changes() {},
  };
  window.tkWidget.render({model, el: document.body});
}"""


def test_graph_toolbar_colours_with_a_legend_and_toggles_the_gradient_band(
    browser: Any,
) -> None:
    graph = tk.notebook.show(create_graph_tape()).graph
    css = (STATIC / "widgets.css").read_text(encoding="utf-8")
    page_html = f"<html><head><style>{css}</style></head><body></body></html>"
    loader = "<script type=module>import w from './graph.js'; window.tkWidget = w;</script>"

    def serve(route: Any) -> None:
        if route.request.url.endswith("/graph.js"):
            body, kind = (STATIC / "graph.js").read_text(encoding="utf-8"), "text/javascript"
        else:
            body, kind = page_html.replace("</body>", loader + "</body>"), "text/html"
        route.fulfill(body=body, content_type=kind)

    page = browser.new_page()
    try:
        page.route("http://widget.test/**", serve)
        page.goto("http://widget.test/index.html")
        page.wait_for_function("window.tkWidget !== undefined")
        page.evaluate(RENDER, graph)
        nodes = page.locator("g.tk-node")
        assert nodes.count() == len(graph["nodes"])
        assert page.locator("path.tk-link").count() == len(graph["links"])
        assert page.locator(".tk-legend-title").count() == 0
        page.select_option("select.tk-color-by", "grad_norm")
        assert page.evaluate("window.tkState.color_by") == "grad_norm"
        assert page.locator(".tk-legend-title").text_content() == "gradient norm"
        norms = [n["metrics"]["grad_norm"] for n in graph["nodes"] if "grad_norm" in n["metrics"]]
        assert page.locator(".tk-legend-max").text_content() == f"{max(norms):.4g}"
        page.uncheck("input.tk-show-backward")
        assert page.evaluate("window.tkState.show_backward") is False
        assert nodes.count() == sum(1 for n in graph["nodes"] if n["band"] == 0)
        assert page.locator("g.tk-backward").count() == 0
    finally:
        page.close()
