import assert from "node:assert/strict";
import { test } from "node:test";

import { GROUP_PREFIX, foldGraph, groupTree, searchMatches } from "../src/fold.js";
import {
  boxInView,
  centreOn,
  fitTransform,
  groupsToPrelayout,
  hitTest,
  largestFolded,
} from "../src/graphview.js";
import { layoutFolded } from "../src/layout.js";
import { clip, paintSvg } from "../src/paint_svg.js";
import {
  ALL_LINKS_BELOW,
  arrowHead,
  buildScene,
  routedPath,
  sideCurve,
  visibleItems,
} from "../src/scene.js";

test("fitTransform scales a wide graph down, never up, and centres what fits", () => {
  const wide = { x: 0, y: 0, width: 2000, height: 100 };
  const fitted = fitTransform(wide, 800, 400, 0);
  assert.ok(fitted.k < 1);
  assert.ok(fitted.x >= 0 && fitted.x + 2000 * fitted.k <= 800);
  const small = fitTransform({ x: 0, y: 0, width: 100, height: 50 }, 800, 400, 0);
  assert.equal(small.k, 1);
  assert.equal(small.x, 350, "centred");
});

test("fitTransform keeps a legible minimum first: then the left end shows", () => {
  const huge = { x: 0, y: 0, width: 100_000, height: 5000 };
  const legible = fitTransform(huge, 800, 400, 0.75);
  assert.equal(legible.k, 0.75);
  assert.equal(legible.x, 24);
  const whole = fitTransform(huge, 800, 400, 0);
  assert.ok(whole.k * 100_000 <= 800, "fit to view shows all of it");
});

test("centreOn and boxInView", () => {
  const b = { x: 1000, y: 500, width: 100, height: 40 };
  const view = centreOn(b, 800, 400, 1);
  assert.deepEqual(view, { k: 1, x: 800 / 2 - 1050, y: 400 / 2 - 520 });
  assert.ok(boxInView(b, view, 800, 400));
  assert.ok(!boxInView(b, { k: 1, x: 0, y: 0 }, 800, 400));
});

const op = (id, group, extra = {}) => ({ id, kind: "op", op: id, band: 0, group, shapes: { in: [], out: [[2, 3]] }, ...extra });
const graph = {
  nodes: [
    op("x", "", { kind: "tensor", op: null, label: "x" }),
    op("mm", "lin#0", { label: "matmul" }),
    op("add", "lin#0"),
    op("out", ""),
    op("g", "", { band: 1, op: "mul" }),
  ],
  edges: [
    { source: "x", target: "mm", position: 0 },
    { source: "mm", target: "add", position: 0 },
    { source: "add", target: "out", position: 0 },
    { source: "x", target: "g", position: 1 },
  ],
  links: [{ source: "out", target: "g" }],
  groups: { "lin#0": { parent: null, children: [], label: "linear", kind: "function" } },
};
const sceneFor = (collapsed, props = {}) => {
  const tree = groupTree(graph);
  const folded = foldGraph(graph, tree, collapsed);
  const layout = layoutFolded(folded, { direction: props.direction });
  const matches = searchMatches(graph, tree, folded, props.query || "");
  return buildScene(folded, layout, { colorBy: "none", ...props }, matches);
};

test("buildScene: labels, a frame per open group, an arrowhead per edge", () => {
  const scene = sceneFor([]);
  assert.deepEqual(scene.frames.map((f) => [f.group, f.label]), [["lin#0", "▾ linear"]]);
  const labels = Object.fromEntries(scene.nodes.map((n) => [n.id, n.label]));
  assert.deepEqual(labels, { x: "x", mm: "matmul", add: "add", out: "out", g: "mul" });
  const inBand = scene.edges.filter((e) => !e.classes.includes("tk-edge-cross"));
  assert.equal(inBand.length, 3);
  const boxes = Object.fromEntries(scene.nodes.map((n) => [n.id, n]));
  for (const e of inBand) {
    assert.equal(e.arrow.length, 6);
    assert.equal((e.d.length - 2) % 6, 0, "a start point and cubic segments");
    assert.deepEqual([e.arrow[0], e.arrow[1]], e.d.slice(-2), "the tip at the path's end");
    const target = boxes[e.target];
    assert.ok(Math.abs(e.d.at(-2) - target.x) < 1e-6, "on the target's incoming side");
    assert.ok(e.d.at(-1) >= target.y && e.d.at(-1) <= target.y + target.height);
  }
  assert.equal(scene.links.length, 1, "few links: all drawn");
  assert.ok(scene.texts.some((t) => t.classes.includes("tk-band-label")));
});

test("buildScene: a folded group is one box with its label and size, search counts on it", () => {
  const scene = sceneFor(["lin#0"]);
  const group = scene.nodes.find((n) => n.id === `${GROUP_PREFIX}lin#0`);
  assert.equal(group.label, "linear");
  assert.equal(group.sub, "2 nodes");
  assert.equal(group.group, "lin#0");
  assert.equal(scene.frames.length, 0);
  const searched = sceneFor(["lin#0"], { query: "matmul" });
  const found = searched.nodes.find((n) => n.id === `${GROUP_PREFIX}lin#0`);
  assert.equal(found.sub, "1 of 2 match");
  assert.ok(found.classes.includes("tk-match"));
  assert.ok(searched.nodes.find((n) => n.id === "out").classes.includes("tk-dim"));
});

test("buildScene: marks, selection, current and colours reach the node boxes", () => {
  const scene = sceneFor([], {
    marks: { mm: ["tk-check-bad"] },
    selected: "add",
    current: "out",
    colorBy: "time",
  });
  const classes = (id) => scene.nodes.find((n) => n.id === id).classes;
  assert.ok(classes("mm").includes("tk-check-bad"));
  assert.ok(classes("add").includes("tk-selected"));
  assert.ok(classes("out").includes("tk-current"));
  assert.ok(classes("g").includes("tk-backward"));
  assert.equal(scene.legend.mode, "forward_time");
});

test("buildScene with many links draws only those of the selected node", () => {
  const many = { ...graph, links: [] };
  many.nodes = [...graph.nodes];
  for (let i = 0; i < ALL_LINKS_BELOW; i++) {
    many.nodes.push(op(`h${i}`, "", { band: 1 }));
    many.links.push({ source: i % 2 ? "mm" : "out", target: `h${i}` });
  }
  const tree = groupTree(many);
  const folded = foldGraph(many, tree, []);
  const layout = layoutFolded(folded);
  const none = buildScene(folded, layout, {}, null);
  assert.equal(none.links.length, 0);
  const picked = buildScene(folded, layout, { selected: "mm" }, null);
  assert.equal(picked.links.length, ALL_LINKS_BELOW / 2);
  assert.ok(picked.links.every((l) => l.source === "mm"));
});

test("backward direction puts the arrowheads at the producers", () => {
  const scene = sceneFor([], { direction: "backward" });
  const e = scene.edges.find((x) => x.source === "add" && x.target === "out");
  assert.deepEqual([e.arrow[0], e.arrow[1]], [e.d[0], e.d[1]]);
  const add = scene.nodes.find((n) => n.id === "add");
  const out = scene.nodes.find((n) => n.id === "out");
  assert.ok(out.x < add.x, "read from the loss side");
});

test("sideCurve spreads arguments along the target and arrowHead points along the curve", () => {
  const from = { x: 0, y: 0, width: 100, height: 40 };
  const to = { x: 200, y: 0, width: 100, height: 40 };
  const d = sideCurve(from, to, false, 1, 3);
  assert.deepEqual([d[0], d[1], d[6], d[7]], [100, 20, 200, 20]);
  const [tx, ty, ax, , bx] = arrowHead(d, false);
  assert.deepEqual([tx, ty], [200, 20]);
  assert.ok(ax < 200 && bx < 200, "the head trails back from the tip");
});

test("routedPath follows ELK's route and joins nested ends with curves", () => {
  const side = [0, 0, 10, 0, 90, 50, 100, 50];
  const route = [20, 5, 50, 5, 80, 45];
  const direct = routedPath(side, route, true, true);
  assert.deepEqual(direct.slice(0, 2), [20, 5]);
  assert.deepEqual(direct.slice(-2), [80, 45]);
  assert.equal(direct.length, 2 + 2 * 6, "one straight cubic per route segment");
  const nested = routedPath(side, route, false, false);
  assert.deepEqual(nested.slice(0, 2), [0, 0], "from the nested source");
  assert.deepEqual(nested.slice(-2), [100, 50], "to the nested target");
  assert.equal(nested.length, 2 + 4 * 6);
});

test("visibleItems culls what lies outside the area", () => {
  const scene = sceneFor([]);
  const all = visibleItems(scene, { x: -1e6, y: -1e6, width: 2e6, height: 2e6 });
  assert.equal(all.nodes.length, scene.nodes.length);
  assert.equal(all.edges.length, scene.edges.length);
  const x = scene.nodes.find((n) => n.id === "x");
  const corner = visibleItems(scene, { x: x.x, y: x.y, width: 5, height: 5 });
  assert.deepEqual(corner.nodes.map((n) => n.id), ["x"]);
  assert.equal(visibleItems(scene, { x: -1e6, y: -1e6, width: 10, height: 10 }).nodes.length, 0);
});

test("hitTest finds the node under a point, else a frame's header", () => {
  const scene = sceneFor([]);
  const mm = scene.nodes.find((n) => n.id === "mm");
  assert.equal(hitTest(scene, mm.x + 2, mm.y + 2).node.id, "mm");
  const frame = scene.frames[0];
  assert.equal(hitTest(scene, frame.x + 3, frame.y + 3).frame.group, "lin#0");
  assert.equal(hitTest(scene, -1e6, -1e6), null);
});

/** Just enough of the DOM for the SVG painter. */
class FakeElement {
  constructor(tag) {
    this.tag = tag;
    this.attributes = new Map();
    this.children = [];
    this.textContent = "";
    this.listeners = {};
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
  appendChild(child) {
    this.children.push(child);
  }
  replaceChildren() {
    this.children = [];
  }
  addEventListener(name, fn) {
    this.listeners[name] = fn;
  }
}
globalThis.document = { createElementNS: (_ns, tag) => new FakeElement(tag) };

test("paintSvg draws node groups, frames with headers, edges with arrowheads", () => {
  const viewport = new FakeElement("g");
  const clicked = [];
  const scene = sceneFor([], { edgeLabels: { "x->mm": "2x" } });
  paintSvg(viewport, scene, { onNode: (n) => clicked.push(n.id), onFrame: (f) => clicked.push(f.group) });
  const byClass = (name) =>
    viewport.children.filter((e) => (e.getAttribute("class") || "").split(" ").includes(name));
  assert.deepEqual(byClass("tk-node").map((g) => g.getAttribute("data-id")).sort(), ["add", "g", "mm", "out", "x"]);
  assert.equal(byClass("tk-edge").length, scene.edges.length);
  assert.equal(byClass("tk-arrow").length, scene.edges.filter((e) => e.arrow).length);
  assert.equal(byClass("tk-link").length, 1);
  assert.equal(byClass("tk-edge-label")[0].getAttribute("data-edge"), "x->mm");
  const frame = byClass("tk-group")[0];
  assert.equal(frame.getAttribute("data-path"), "lin#0");
  frame.children[1].listeners.click();
  byClass("tk-node")[0].listeners.click();
  assert.deepEqual(clicked, ["lin#0", "x"]);
});

test("clip cuts long labels with an ellipsis", () => {
  assert.equal(clip("short", 132), "short");
  assert.equal(clip("a".repeat(40), 132), `${"a".repeat(19)}…`);
});

test("groupsToPrelayout lists the folded groups on screen, nearest the centre first", () => {
  const group = (id) => ({ id: `group:${id}`, type: "group", open: false, group: { id } });
  const items = new Map(
    [group("a"), group("b"), group("c"), { id: "n", type: "node" }].map((i) => [i.id, i]),
  );
  items.set("group:open", { id: "group:open", type: "group", open: true, group: { id: "open" } });
  const boxes = new Map([
    ["group:a", { x: 0, y: 0, width: 100, height: 40 }], // at the view's top-left corner
    ["group:b", { x: 450, y: 280, width: 100, height: 40 }], // at its centre
    ["group:c", { x: 2000, y: 0, width: 100, height: 40 }], // off screen
    ["group:open", { x: 400, y: 300, width: 100, height: 40 }],
    ["n", { x: 500, y: 300, width: 100, height: 40 }],
  ]);
  const view = { k: 1, x: 0, y: 0 };
  assert.deepEqual(groupsToPrelayout({ items }, boxes, view, 1000, 600), ["b", "a"]);
  const zoomedOut = { k: 0.25, x: 0, y: 0 }; // c at x = 500 on screen now, nearest the centre
  assert.deepEqual(groupsToPrelayout({ items }, boxes, zoomedOut, 1000, 600), ["c", "b", "a"]);
});

test("groupsToPrelayout puts the groups inside the one just opened first, even off screen", () => {
  const item = (id, parent, open = false) => ({ id: `group:${id}`, type: "group", open, parent, group: { id } });
  const items = new Map(
    [
      item("block", "band:0", true),
      item("inner", "group:block"), // off screen, inside the block just opened
      item("near", "band:0"), // at the view's centre
      item("far", "band:0"), // off screen, elsewhere
    ].map((i) => [i.id, i]),
  );
  const boxes = new Map([
    ["group:block", { x: 0, y: 0, width: 3000, height: 2000 }],
    ["group:inner", { x: 0, y: 1500, width: 100, height: 40 }],
    ["group:near", { x: 450, y: 280, width: 100, height: 40 }],
    ["group:far", { x: 5000, y: 0, width: 100, height: 40 }],
  ]);
  const view = { k: 1, x: 0, y: 0 };
  assert.deepEqual(groupsToPrelayout({ items }, boxes, view, 1000, 600), ["near"]);
  const opened = new Set(["group:block"]);
  assert.deepEqual(groupsToPrelayout({ items }, boxes, view, 1000, 600, opened), ["inner", "near"]);
});

test("largestFolded picks the forward pass's folded group with the most nodes", () => {
  const item = (id, band, count, open = false) => [
    `group:${id}`,
    { id: `group:${id}`, type: "group", open, band, count, group: { id } },
  ];
  const items = new Map([
    item("small", 0, 3),
    item("big", 0, 30),
    item("openBig", 0, 90, true),
    item("gradient", 1, 300),
    ["n", { id: "n", type: "node", band: 0 }],
  ]);
  assert.equal(largestFolded({ items }), "big");
  items.delete("group:big");
  items.delete("group:small");
  assert.equal(largestFolded({ items }), "gradient"); // no folded group left in band 0
  items.delete("group:gradient");
  assert.equal(largestFolded({ items }), null);
});
