import assert from "node:assert/strict";
import { test } from "node:test";

import { MIN_FIT_SCALE, SIZE, drawGraph, fitView, revealNode } from "../src/graphview.js";

test("fitView scales a wide graph down and never up", () => {
  const wide = new Map([["a", { x: 0, y: 0 }], ["b", { x: 600, y: 0 }]]);
  const fitted = fitView(wide, 800, 400);
  assert.ok(fitted.k < 1);
  assert.ok(fitted.x + (600 + SIZE.width) * fitted.k <= 800);
  assert.equal(fitView(new Map([["a", { x: 0, y: 0 }]]), 600, 400).k, 1);
});

test("fitView keeps labels legible: a huge graph shows its top-left part", () => {
  const huge = new Map([["a", { x: 0, y: 0 }], ["b", { x: 100_000, y: 5000 }]]);
  const fitted = fitView(huge, 800, 400);
  assert.equal(fitted.k, MIN_FIT_SCALE);
  assert.deepEqual([fitted.x, fitted.y], [40, 40]);
});

test("revealNode pans only when the node is outside the area", () => {
  const view = { k: 1, x: 0, y: 0 };
  assert.equal(revealNode(view, { x: 100, y: 0 }, 600), view);
  const moved = revealNode(view, { x: 900, y: 0 }, 600);
  const left = moved.x + 900 * moved.k;
  assert.ok(left >= 0 && left + SIZE.width <= 600);
  assert.equal(moved.y, 0);
});

/** Just enough of the DOM for drawGraph: elements with attributes, children and text. */
class FakeElement {
  constructor(tag) {
    this.tag = tag;
    this.attributes = new Map();
    this.children = [];
    this.textContent = "";
  }
  setAttribute(name, value) {
    this.attributes.set(name, String(value));
  }
  getAttribute(name) {
    return this.attributes.get(name) ?? null;
  }
  append(...children) {
    this.children.push(...children);
  }
  addEventListener() {}
}
globalThis.document = {
  createElement: (tag) => new FakeElement(tag),
  createElementNS: (_ns, tag) => new FakeElement(tag),
};

const graph = {
  nodes: [
    { id: "t1", kind: "tensor", depth: 0, band: 0, module: "", metrics: { grad_norm: 15 } },
    { id: "op0", kind: "op", op: "pow", depth: 1, band: 0, module: "", metrics: { time_ns: 9 } },
    { id: "op1", kind: "op", op: "mul", depth: 0, band: 1, module: "", metrics: { time_ns: 3 } },
  ],
  edges: [
    { source: "t1", target: "op0", position: 0 },
    { source: "t1", target: "op1", position: 0 },
  ],
  links: [{ source: "op0", target: "op1" }],
  groups: {},
};
const props = (extra = {}) => ({
  graph,
  collapsed: [],
  selected: "",
  query: "",
  colorBy: "none",
  current: "",
  ...extra,
});
const handlers = { onToggle() {} };
const byClass = (elements, name) =>
  elements.filter((e) => (e.getAttribute("class") || "").split(" ").includes(name));

test("drawGraph marks edge ends, links gradient ops and styles their band", () => {
  const { elements } = drawGraph(props(), handlers);
  const edges = byClass(elements, "tk-edge");
  assert.deepEqual(
    edges.map((e) => [e.getAttribute("data-source"), e.getAttribute("data-target")]),
    [["t1", "op0"], ["t1", "op1"]],
  );
  assert.equal(byClass(edges, "tk-edge-cross").length, 1, "the edge into band 1");
  const links = byClass(elements, "tk-link");
  assert.equal(links.length, 1);
  assert.equal(links[0].getAttribute("data-target"), "op1");
  assert.deepEqual(byClass(elements, "tk-backward").map((g) => g.getAttribute("data-id")), ["op1"]);
  assert.equal(byClass(elements, "tk-band-label").length, 1);
  const hidden = drawGraph(props({ showBackward: false }), handlers).elements;
  assert.equal(byClass(hidden, "tk-node").length, 2);
  assert.equal(byClass(hidden, "tk-link").length, 0);
});

test("drawGraph adds marks' classes to nodes and draws edge labels", () => {
  const { elements } = drawGraph(
    props({
      marks: { op0: ["tk-check-bad", "tk-inplace"] },
      edgeLabels: { "t1->op0": "2x", "t1->missing": "never" },
    }),
    handlers,
  );
  const op0 = elements.find((e) => e.getAttribute("data-id") === "op0");
  assert.match(op0.getAttribute("class"), /\btk-check-bad tk-inplace\b/);
  const labels = byClass(elements, "tk-edge-label");
  assert.deepEqual(labels.map((l) => [l.getAttribute("data-edge"), l.textContent]), [
    ["t1->op0", "2x"],
  ]);
});

test("drawGraph colours nodes by the mode and returns its legend", () => {
  const { elements, legend } = drawGraph(props({ colorBy: "time" }), handlers);
  assert.equal(legend.mode, "forward_time");
  assert.deepEqual([legend.min, legend.max, legend.missing], [0, 9, 1]);
  const fill = (id) =>
    elements.find((e) => e.getAttribute("data-id") === id).children[1].getAttribute("style");
  assert.equal(fill("op0"), "fill: hsl(0, 70%, 80%)");
  assert.equal(fill("t1"), "fill: #eeeeee");
  assert.equal(drawGraph(props(), handlers).legend, null);
});
