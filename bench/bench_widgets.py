"""Graph widget benchmark: a 20,000-op tape of a ResNet-like model in headless Chromium.

    python bench/bench_widgets.py                 # 18 blocks of 8 residual units, 5 repeats
    python bench/bench_widgets.py --repeats 3 --screenshots /tmp/shots

The model: a stem, 18 blocks (each a Sequential of 8 residual units: conv-bn-relu-conv-bn,
plus the input, then relu) and a head, forward and backward recorded on a Tape (about
21,000 ops). Times, medians over repeats: building the graph model in Python
(``tk.notebook.build_graph``) and its JSON payload; then in headless Chromium (Playwright,
the bundle the notebook loads): the first draw folded as it opens (from ``render()`` until
the browser has painted), unfolding one block clicked at once after the first draw (ELK's
code cold, nothing laid out ahead), then unfolding and folding one block and a function group
in it after the pause a user makes between clicks, in which the view lays out the folded groups
on screen open (the first time, and again for other blocks), expand all and
collapse all, and frames per second while panning the fully expanded graph (fitted whole,
and at zoom 1) with the time our code takes to draw a frame. PyTorch has no graph
widget to compare with.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from _harness import REPO, machine_info, median, time_calls

import tensorkit as tk
from tensorkit.notebook import build_graph

STATIC = REPO / "tensorkit" / "notebook" / "static"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
ORIGIN = "http://tensorkit.bench"
VIEWPORT = {"width": 1280, "height": 800}


class Unit(tk.nn.Module):
    """A basic residual unit: conv-bn-relu-conv-bn, plus the input, then relu."""

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


def resnet_like(blocks: int = 16, units: int = 8, channels: int = 4) -> tk.nn.Module:
    """A stem, `blocks` blocks of `units` residual units each, and a classifier head."""
    return tk.nn.Sequential(
        tk.nn.Conv2d(3, channels, 3, padding=1),
        tk.nn.BatchNorm2d(channels),
        tk.nn.ReLU(),
        *[tk.nn.Sequential(*[Unit(channels) for _ in range(units)]) for _ in range(blocks)],
        tk.nn.AdaptiveAvgPool2d(1),
        tk.nn.Flatten(),
        tk.nn.Linear(channels, 10),
    )


def resnet_tape(blocks: int = 18, units: int = 8) -> tuple[tk.autograd.Tape, tk.nn.Module]:
    """Forward and backward of the ResNet-like model, recorded; and the model (kept alive,
    as in a notebook, so that the graph shows its parameters' gradient norms)."""
    tk.manual_seed(0)
    model = resnet_like(blocks, units)
    x = tk.randn(1, 3, 4, 4)
    with tk.autograd.Tape(call_sites=False) as tape:
        model(x).sum().backward()
    return tape, model


FUNCTIONS = {
    "Conv2d": "conv2d",
    "BatchNorm2d": "batch_norm",
    "Linear": "linear",
    "ReLU": "relu",
    "AdaptiveAvgPool2d": "adaptive_avg_pool2d",
    "Flatten": "flatten",
}


def with_function_groups(graph: dict, model: tk.nn.Module) -> dict:
    """The graph model with group labels, kinds and function groups as tensorkit's
    build_graph gives them (class · path labels; each leaf module's ops in one function
    group, folded at first), synthesized for recordings made before it did: returned as is
    when its groups already have kinds."""
    groups = graph["groups"]
    if not groups or any("kind" in g for g in groups.values()):
        return graph
    classes = {
        f"{type(model).__name__}{'.' + name if name else ''}": type(m).__name__
        for name, m in model.named_modules()
    }
    by_id = {n["id"]: n for n in graph["nodes"]}
    functions = {}
    for gid, group in list(groups.items()):
        path = gid.lstrip("∇")
        cls = classes.get(path, "Module")
        group.update(
            kind="module", module=path, label=f"{'∇ ' if gid != path else ''}{cls} · {path}"
        )
        for nid in group["nodes"]:
            by_id[nid]["group"] = gid
        ops = [nid for nid in group["nodes"] if by_id[nid]["kind"] == "op"]
        if group["children"] or cls not in FUNCTIONS or len(ops) < 2:
            continue
        fid = f"{gid}/{FUNCTIONS[cls]}#0"
        functions[fid] = {
            "path": fid,
            "parent": gid,
            "children": [],
            "nodes": ops,
            "count": len(ops),
            "kind": "function",
            "label": FUNCTIONS[cls],
            "module": path,
        }
        group["children"].append(fid)
        group["nodes"] = [nid for nid in group["nodes"] if nid not in ops]
        for nid in ops:
            by_id[nid]["group"] = fid
    for node in graph["nodes"]:
        node.setdefault("group", "")
    groups.update(functions)
    graph["collapsed"] = sorted(set(graph["collapsed"]) | set(functions))
    return graph


def measure_model(tape: tk.autograd.Tape, model: tk.nn.Module, repeats: int) -> dict:
    """Build time (median ms) and payload size of the tape's graph model, and the model."""
    build: Callable[[], dict] = lambda: build_graph(  # noqa: E731
        tape, include_backward=True, max_nodes=100_000
    )
    graph = with_function_groups(build(), model)
    return {
        "ops": len(tape.entries),
        "nodes": len(graph["nodes"]),
        "groups": len(graph["groups"]),
        "build_ms": 1e3 * median(time_calls(build, repeats, warmup=1)),
        "payload_mib": len(json.dumps(graph, allow_nan=False)) / 2**20,
        "graph": graph,
    }


@contextmanager
def widget_page(browser: Any) -> Iterator[Any]:
    """A page of `browser` (Playwright) with the graph widget's bundle loaded as
    ``window.tkWidget`` and its CSS, on a plain page."""
    page_html = (
        "<!doctype html><html><head><meta charset='utf-8'><style>"
        + (STATIC / "widgets.css").read_text(encoding="utf-8")
        + "</style></head><body></body></html>"
    )
    loader = (
        "<script type='module'>import widget from './graph.js'; window.tkWidget = widget;</script>"
    )
    bundle = (STATIC / "graph.js").read_text(encoding="utf-8")

    def serve(route: Any) -> None:
        if route.request.url.endswith("/graph.js"):
            route.fulfill(body=bundle, content_type="text/javascript")
        else:
            html = page_html.replace("</body>", loader + "</body>")
            route.fulfill(body=html, content_type="text/html")

    page = browser.new_page(viewport=VIEWPORT)
    try:
        page.route(f"{ORIGIN}/**", serve)
        page.goto(f"{ORIGIN}/index.html")
        page.wait_for_function("window.tkWidget !== undefined")
        yield page
    finally:
        page.close()


# The in-page driver: mounts the widget on a stand-in for anywidget's model and times each
# step from the change until the browser painted (a frame, then a task). It returns the
# times and, after each step, what the view drew (element.tkScene), for the tests.
SCALE_JS = """
async ({text, repeats}) => {
  const graph = JSON.parse(text); // one string crosses faster than a structured object
  const painted = () => new Promise((done) => requestAnimationFrame(() => setTimeout(done, 0)));
  const summary = (el) => {
    const view = el.querySelector(".tk-graph-view");
    const scene = view.tkScene;
    return {renderer: view.dataset.renderer, nodes: scene.nodes.length,
            frames: scene.frames.map((f) => [f.group, f.x, f.y, f.width, f.height]),
            folded: scene.nodes.filter((n) => n.group !== null).map((n) => [n.group, n.sub]),
            edges: scene.edges.length,
            arrows: scene.edges.filter((e) => e.arrow && e.arrow.length === 6).length,
            withinBand: scene.edges.filter((e) => !e.classes.includes("tk-edge-cross")).length,
            svgNodes: view.querySelectorAll("g.tk-node").length,
            bounds: scene.bounds, stats: view.tkStats};
  };
  const mount = () => {
    const el = document.createElement("div");
    document.body.replaceChildren(el);
    const state = {graph, selected: "", collapsed: graph.collapsed, color_by: "none",
                   show_backward: true};
    const listeners = {};
    const model = {
      get: (name) => state[name],
      set: (name, value) => {
        state[name] = value;
        (listeners["change:" + name] || []).forEach((f) => f());
      },
      on: (event, fn) => { (listeners[event] = listeners[event] || []).push(fn); },
      off() {}, save_changes() {},
    };
    return {el, state, model};
  };
  const timed = async (action) => {
    const start = performance.now();
    action();
    await painted();
    return performance.now() - start;
  };
  const out = {first: [], unfoldBlock: [], foldBlock: [], unfoldUnit: [], foldUnit: [],
               expandAll: [], collapseAll: [], steps: {}};
  let w = null;
  const groups = graph.groups;
  // The blocks: folded module groups of several modules (not a Conv2d holding its conv2d).
  const blocks = graph.collapsed.filter(
    (id) => groups[id].kind === "module" && groups[id].children.length >= 4 && !id.startsWith("∇"),
  );
  const toggle = (id) => {
    const now = w.state.collapsed;
    w.model.set("collapsed", now.includes(id) ? now.filter((p) => p !== id) : [...now, id]);
  };
  // A user pauses between clicks: in that idle time the view lays out the folded groups on
  // screen open (tkPrelayoutPending counts what is left). Wait for it, at most 10 s.
  const settled = async () => {
    const view = w.el.querySelector(".tk-graph-view");
    for (let i = 0; i < 500 && view.tkPrelayoutPending > 0; i++) {
      await new Promise((done) => setTimeout(done, 20));
    }
  };
  for (let r = 0; r < repeats; r++) {
    w = mount();
    out.first.push(await timed(() => window.tkWidget.render({model: w.model, el: w.el})));
    if (r === 0) {  // clicked at once, before any idle work, with ELK's code cold
      out.unfoldCold = await timed(() => toggle(blocks[0]));
      toggle(blocks[0]);
    }
  }
  out.steps.first = summary(w.el);
  // Inside a block, the first group folded at first (a conv2d, as a block's units open).
  const firstFolded = (id) => {
    for (const child of groups[id].children) {
      const found = graph.collapsed.includes(child) ? child : firstFolded(child);
      if (found) return found;
    }
    return null;
  };
  out.blocks = blocks.slice(0, repeats);
  for (let r = 0; r < Math.min(repeats, blocks.length); r++) {
    const block = blocks[r];
    const unit = firstFolded(block);
    await settled();
    out.unfoldBlock.push(await timed(() => toggle(block)));
    if (r === 0) out.steps.unfoldedBlock = summary(w.el);
    await settled();
    out.unfoldUnit.push(await timed(() => toggle(unit)));
    if (r === 0) out.steps.unfoldedUnit = summary(w.el);
    await settled();
    out.foldUnit.push(await timed(() => toggle(unit)));
    await settled();
    out.foldBlock.push(await timed(() => toggle(block)));
    if (r === 0) out.steps.foldedBack = summary(w.el);
  }
  const tool = (action) => w.el.querySelector(`button[data-action="${action}"]`).click();
  for (let r = 0; r < repeats; r++) {
    out.expandAll.push(await timed(() => tool("expand")));
    out.collapseAll.push(await timed(() => tool("collapse")));
  }
  out.steps.collapsedAll = summary(w.el);
  // Selected from outside (as the profile view does): the groups hiding it open, it shows.
  const deep = graph.nodes.filter((n) => n.group && groups[n.group].kind === "function");
  const target = deep[Math.floor(deep.length / 2)];
  w.model.set("selected", target.id);
  await painted();
  await painted();
  const viewEl = w.el.querySelector(".tk-graph-view");
  const shown = viewEl.tkScene.nodes.find((n) => n.id === target.id);
  const v = viewEl.tkView;
  out.steps.revealed = {id: target.id, shown: Boolean(shown), inView: Boolean(shown) &&
    v.x + shown.x * v.k >= 0 && v.y + shown.y * v.k >= 0 &&
    v.x + (shown.x + shown.width) * v.k <= viewEl.clientWidth &&
    v.y + (shown.y + shown.height) * v.k <= viewEl.clientHeight,
    selected: shown ? shown.classes.includes("tk-selected") : false};
  w.model.set("selected", "");
  tool("collapse");
  await painted();
  const search = w.el.querySelector("input.tk-search");
  search.value = "batch_norm";
  search.dispatchEvent(new Event("input"));
  await painted();
  out.steps.searched = summary(w.el);
  search.value = "";
  search.dispatchEvent(new Event("input"));
  tool("expand");
  await painted();
  out.steps.expanded = summary(w.el);
  // Frames per second while dragging the expanded graph: fitted whole, then at zoom 1.
  const view = w.el.querySelector(".tk-graph-view");
  const box = view.getBoundingClientRect();
  const cx = box.left + box.width / 2;
  const cy = box.top + box.height / 2;
  const pointer = (type, x) =>
    view.dispatchEvent(new PointerEvent(type, {clientX: x, clientY: cy, buttons: 1, bubbles: 1}));
  const pan = async (ms) => {
    pointer("pointerdown", cx);
    let frames = 0;
    let x = cx;
    const draws = [];
    const start = performance.now();
    await new Promise((done) => {
      const step = () => {
        frames++;
        draws.push(view.tkDrawMs);
        x += frames % 120 < 60 ? -6 : 6;
        pointer("pointermove", x);
        if (performance.now() - start < ms) requestAnimationFrame(step);
        else done();
      };
      requestAnimationFrame(step);
    });
    view.dispatchEvent(new PointerEvent("click", {bubbles: true}));
    draws.sort((a, b) => a - b);
    const fps = frames / ((performance.now() - start) / 1000);
    return {fps, drawMs: draws[Math.floor(draws.length / 2)]};
  };
  tool("fit");
  await painted();
  out.fpsFitted = await pan(2000);
  out.steps.fitted = {...summary(w.el), scale: view.tkView.k};
  const zoom = Math.log(view.tkView.k) / 0.0015; // wheel delta from the fitted scale to 1
  const wheel = {deltaY: zoom, clientX: cx, clientY: cy, bubbles: true, cancelable: true};
  view.dispatchEvent(new WheelEvent("wheel", wheel));
  await painted();
  out.fpsZoom1 = await pan(2000);
  out.steps.zoomed = {...summary(w.el), scale: view.tkView.k};
  return out;
}
"""


def scale_run(page: Any, graph: dict, repeats: int) -> dict:
    """SCALE_JS's timings and views of `graph` on a widget_page."""
    text = json.dumps(graph, allow_nan=False)
    return page.evaluate(SCALE_JS, {"text": text, "repeats": repeats})


def browser_measure(graph: dict, repeats: int, shots: Path | None = None) -> dict:
    """Run SCALE_JS on `graph` in one headless Chromium; `shots` gets a PNG of the end."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            with widget_page(browser) as page:
                out = scale_run(page, graph, repeats)
                if shots is not None:
                    page.screenshot(path=str(shots / "expanded-zoom1.png"))
        finally:
            browser.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--blocks", type=int, default=18)
    parser.add_argument("--units", type=int, default=8)
    parser.add_argument("--screenshots", type=Path, help="save a PNG of the expanded graph here")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    if args.screenshots:
        args.screenshots.mkdir(parents=True, exist_ok=True)
    tape, model = resnet_tape(args.blocks, args.units)
    built = measure_model(tape, model, args.repeats)
    out = browser_measure(built["graph"], args.repeats, args.screenshots)
    rows = [
        ("build_graph", built["build_ms"]),
        ("first draw, folded as it opens", median(out["first"])),
        ("unfold a block, clicked at once", out["unfoldCold"]),
        ("unfold a block (first / median)", out["unfoldBlock"][0], median(out["unfoldBlock"])),
        ("unfold a function in it", out["unfoldUnit"][0], median(out["unfoldUnit"])),
        ("fold the function", median(out["foldUnit"])),
        ("fold the block", median(out["foldBlock"])),
        ("expand all (first / median)", out["expandAll"][0], median(out["expandAll"])),
        ("collapse all", median(out["collapseAll"])),
    ]
    print(
        f"{built['ops']} ops, {built['nodes']} nodes, {built['groups']} groups, "
        f"payload {built['payload_mib']:.1f} MiB; median of {args.repeats} repeats"
    )
    for name, *values in rows:
        print(f"  {name:<34} " + " / ".join(f"{v:8.1f} ms" for v in values))
    expanded = out["steps"]["expanded"]
    print(
        f"  panning fully expanded ({expanded['nodes']} boxes, {expanded['renderer']}): "
        f"{out['fpsFitted']['fps']:.0f} fps fitted whole (a frame drawn in "
        f"{out['fpsFitted']['drawMs']:.1f} ms), {out['fpsZoom1']['fps']:.0f} fps at zoom 1 "
        f"({out['fpsZoom1']['drawMs']:.1f} ms)"
    )
    print(f"  blocks opened: {', '.join(out['blocks'])}; {machine_info().get('cpu', '')}")
    if args.json:
        built.pop("graph")
        Path(args.json).write_text(json.dumps({"model": built, "browser": out}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
