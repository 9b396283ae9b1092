"""Graph widget benchmark: a small ResNet's forward and backward (about 2,000 ops) on a Tape.

    python bench/bench_widgets.py                 # build + browser render, 7 repeats
    python bench/bench_widgets.py --repeats 3 --screenshots /tmp/shots

Times, each the median over repeats: building the graph model in Python
(``tk.notebook.build_graph``), its JSON payload, and the graph widget's first render in
headless Chromium (Playwright; the bundle the notebook loads, from ``render()`` until the
browser has laid out and painted), once folded by module as it opens and once fully
expanded; and the same for a 10,000-op chain. PyTorch has no graph widget to compare with.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _harness import REPO, machine_info, median, time_calls

import tensorkit as tk
from tensorkit.notebook import build_graph

STATIC = REPO / "tensorkit" / "notebook" / "static"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
ORIGIN = "http://tensorkit.bench"


class Block(tk.nn.Module):
    """A basic residual block: conv-bn-relu-conv-bn, plus the input, then relu."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv1 = tk.nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = tk.nn.BatchNorm2d(channels)
        self.relu = tk.nn.ReLU()
        self.conv2 = tk.nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = tk.nn.BatchNorm2d(channels)

    def forward(self, x: tk.Tensor) -> tk.Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(out)) + x)


def small_resnet(blocks: int = 13, channels: int = 8) -> tk.nn.Module:
    return tk.nn.Sequential(
        tk.nn.Conv2d(3, channels, 3, padding=1),
        tk.nn.BatchNorm2d(channels),
        tk.nn.ReLU(),
        *[Block(channels) for _ in range(blocks)],
        tk.nn.AdaptiveAvgPool2d(1),
        tk.nn.Flatten(),
        tk.nn.Linear(channels, 10),
    )


def resnet_tape() -> tuple[tk.autograd.Tape, tk.nn.Module]:
    """Forward and backward of the small ResNet, recorded; and the model (kept alive, as in
    a notebook, so that the graph shows its parameters' gradient norms)."""
    tk.manual_seed(0)
    model = small_resnet()
    x = tk.randn(2, 3, 8, 8)
    with tk.autograd.Tape() as tape:
        model(x).sum().backward()
    return tape, model


def chain_tape(length: int = 10_000) -> tk.autograd.Tape:
    x = tk.tensor([1.0], requires_grad=True)
    with tk.autograd.Tape(call_sites=False) as tape:
        y = x
        for _ in range(length):
            y = y * 1.0001
    return tape


RENDER = """
async ({collapsed, repeats}) => {
  const graph = window.tkGraph;
  const times = [];
  let info = null;
  for (let i = 0; i < repeats; i++) {
    const el = document.createElement("div");
    document.body.replaceChildren(el);
    const state = {graph, selected: "", collapsed: collapsed ?? graph.collapsed ?? [],
                   color_by: "forward_time", show_backward: true};
    const model = {get: (n) => state[n], set: (n, v) => { state[n] = v; },
                   on() {}, off() {}, save_changes() {}};
    const start = performance.now();
    window.tkWidget.render({model, el});
    el.getBoundingClientRect();
    await new Promise((done) => requestAnimationFrame(() => setTimeout(done, 0)));
    times.push(performance.now() - start);
    const viewport = el.querySelector(".tk-viewport").getAttribute("transform");
    info = {nodes: el.querySelectorAll("g.tk-node").length,
            edges: el.querySelectorAll("path.tk-edge").length,
            links: el.querySelectorAll("path.tk-link").length,
            scale: Number(/scale\\(([^)]+)\\)/.exec(viewport)[1])};
  }
  return {times, info};
}
"""


def browser_renders(
    cases: list[tuple[str, dict, list[str] | None]], repeats: int, shots: Path | None
) -> dict[str, dict]:
    """Median render ms, nodes drawn and fit scale per case, in one headless Chromium."""
    from playwright.sync_api import sync_playwright

    page_html = (
        "<!doctype html><html><head><meta charset='utf-8'><style>"
        + (STATIC / "widgets.css").read_text(encoding="utf-8")
        + "</style></head><body></body></html>"
    )
    loader = (
        "<script type='module'>import widget from './graph.js'; window.tkWidget = widget;</script>"
    )
    bundle = (STATIC / "graph.js").read_text(encoding="utf-8")
    results = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})

        def serve(route: Any) -> None:
            if route.request.url.endswith("/graph.js"):
                route.fulfill(body=bundle, content_type="text/javascript")
            else:
                route.fulfill(
                    body=page_html.replace("</body>", loader + "</body>"), content_type="text/html"
                )

        page.route(f"{ORIGIN}/**", serve)
        page.goto(f"{ORIGIN}/index.html")
        page.wait_for_function("window.tkWidget !== undefined")
        for name, graph, collapsed in cases:
            page.evaluate("(g) => { window.tkGraph = g; }", graph)
            out = page.evaluate(RENDER, {"collapsed": collapsed, "repeats": repeats + 1})
            results[name] = {"ms": median(out["times"][1:]), **out["info"]}
            if shots is not None:
                page.screenshot(path=str(shots / f"{name}.png"))
        browser.close()
    return results


def measure(name: str, tape: tk.autograd.Tape, repeats: int, **kwargs: Any) -> dict:
    """Build time (median ms) and payload size of one tape's graph model."""
    build: Callable[[], dict] = lambda: build_graph(tape, include_backward=True, **kwargs)  # noqa: E731
    graph = build()
    ops = len(tape.entries)
    return {
        "name": name,
        "ops": ops,
        "nodes": len(graph["nodes"]),
        "build_ms": 1e3 * median(time_calls(build, repeats, warmup=1)),
        "payload_kib": len(json.dumps(graph, allow_nan=False)) / 1024,
        "graph": graph,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--screenshots", type=Path, help="save a PNG per browser case here")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    if args.screenshots:
        args.screenshots.mkdir(parents=True, exist_ok=True)
    tape, _model = resnet_tape()
    resnet = measure("resnet", tape, args.repeats)
    chain = measure("chain", chain_tape(), args.repeats, max_nodes=20_000)
    cases = [
        ("resnet, folded by module (as opened)", resnet["graph"], None),
        ("resnet, fully expanded", resnet["graph"], []),
        ("10,000-op chain", chain["graph"], None),
    ]
    renders = browser_renders(cases, args.repeats, args.screenshots)
    rows = [
        ("build_graph: resnet fwd+bwd", f"{resnet['ops']} ops", resnet["build_ms"]),
        ("build_graph: 10,000-op chain", f"{chain['ops']} ops", chain["build_ms"]),
    ]
    rows += [
        (f"render: {name}", f"{r['nodes']} nodes, fit x{r['scale']:.2f}", r["ms"])
        for name, r in renders.items()
    ]
    width = max(len(r[0]) for r in rows)
    print(f"{'case':<{width}}  {'size':<26} {'median ms':>10}")
    for case, size, ms in rows:
        print(f"{case:<{width}}  {size:<26} {ms:>10.1f}")
    print(
        f"\npayload: resnet {resnet['payload_kib']:.0f} KiB ({resnet['nodes']} nodes), "
        f"chain {chain['payload_kib']:.0f} KiB ({chain['nodes']} nodes); "
        f"median of {args.repeats} repeats; {machine_info().get('cpu', '')}"
    )
    if args.json:
        for item in (resnet, chain):
            item.pop("graph")
        Path(args.json).write_text(json.dumps({"models": [resnet, chain], "renders": renders}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
