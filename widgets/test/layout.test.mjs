import assert from "node:assert/strict";
import { test } from "node:test";

import { GROUP_PREFIX, foldGraph, groupTree } from "../src/fold.js";
import {
  PIECE,
  SIZE,
  containerLayout,
  itemSize,
  layoutCache,
  layoutFolded,
  piecewiseLayout,
  runElk,
} from "../src/layout.js";

const G = (id) => GROUP_PREFIX + id;
const op = (id, group, band = 0) => ({ id, kind: "op", op: "mul", band, group });
const edge = (source, target, position = 0) => ({ source, target, position });

/** Two identical blocks b0, b1 in net, each: a Linear (function group inside) then relu. */
function blocks() {
  const nodes = [op("x", "")];
  const edges = [];
  const groups = { net: { parent: null, children: ["b0", "b1"], label: "Net · net" } };
  let last = "x";
  for (const b of ["b0", "b1"]) {
    groups[b] = { parent: "net", children: [`${b}/lin`], label: `Block · ${b}` };
    groups[`${b}/lin`] = { parent: b, children: [], label: "linear", kind: "function" };
    nodes.push(op(`${b}mm`, `${b}/lin`), op(`${b}add`, `${b}/lin`), op(`${b}relu`, b));
    edges.push(edge(last, `${b}mm`), edge(`${b}mm`, `${b}add`), edge(`${b}add`, `${b}relu`));
    last = `${b}relu`;
  }
  nodes.push(op("g0", "", 1), op("g1", "", 1));
  edges.push(edge("g0", "g1"));
  return { nodes, edges, links: [{ source: last, target: "g0" }], groups };
}

const inside = (inner, outer) =>
  inner.x >= outer.x - 1e-6 &&
  inner.y >= outer.y - 1e-6 &&
  inner.x + inner.width <= outer.x + outer.width + 1e-6 &&
  inner.y + inner.height <= outer.y + outer.height + 1e-6;
const overlap = (a, b) =>
  a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;

test("runElk lays out an ELK graph synchronously, left to right", () => {
  const out = runElk({
    id: "root",
    layoutOptions: { "elk.algorithm": "layered", "elk.direction": "RIGHT" },
    children: [{ id: "a", width: 10, height: 10 }, { id: "b", width: 10, height: 10 }],
    edges: [{ id: "e", sources: ["a"], targets: ["b"] }],
  });
  const [a, b] = out.children;
  assert.ok(b.x > a.x + a.width, `${b.x} > ${a.x} + 10`);
});

test("containerLayout pads a group's box for its header and caches by shape", () => {
  layoutCache.clear();
  const sizes = [SIZE.node, SIZE.node];
  const first = containerLayout(sizes, [[0, 1]], { rightToLeft: false, padded: true });
  assert.equal(first.cached, false);
  assert.ok(first.at[0].y >= SIZE.header + SIZE.pad - 1e-6, "children start below the header");
  assert.ok(first.at[1].x > first.at[0].x + SIZE.node.width, "left to right");
  assert.ok(first.width >= 2 * SIZE.node.width + 2 * SIZE.pad);
  const again = containerLayout(sizes, [[0, 1]], { rightToLeft: false, padded: true });
  assert.equal(again.cached, true);
  assert.deepEqual(again.at, first.at);
  const leftward = containerLayout(sizes, [[0, 1]], { rightToLeft: true, padded: true });
  assert.equal(leftward.cached, false, "the direction is part of the shape");
  assert.ok(leftward.at[1].x < leftward.at[0].x, "right to left");
});

test("layoutFolded nests group boxes without overlaps, children inside their parents", () => {
  const graph = blocks();
  const folded = foldGraph(graph, groupTree(graph), []);
  const { box, bands } = layoutFolded(folded);
  for (const [id, item] of folded.items) {
    assert.ok(box.has(id), id);
    if (item.parent.startsWith("band:")) continue;
    assert.ok(inside(box.get(id), box.get(item.parent)), `${id} inside ${item.parent}`);
  }
  for (const holder of folded.containers.values()) {
    for (const a of holder.children) {
      for (const b of holder.children) {
        if (a < b) assert.ok(!overlap(box.get(a), box.get(b)), `${a} and ${b} overlap`);
      }
    }
  }
  assert.equal(bands.length, 2);
  assert.ok(bands[1].y >= bands[0].y + bands[0].height + SIZE.bandGap - 1e-6, "band 1 below");
  assert.ok(box.get("g1").x < box.get("g0").x, "the gradient band runs right to left");
});

test("identical groups are laid out once; opening one lays out it and its ancestors", () => {
  layoutCache.clear();
  const graph = blocks();
  const tree = groupTree(graph);
  const first = layoutFolded(foldGraph(graph, tree, []));
  // b0 and b1 have the same shape, and so do their function groups: one ELK run each.
  assert.equal(first.stats.hits, 2, JSON.stringify(first.stats));
  const collapsed = ["b0/lin", "b1/lin"];
  const folded = layoutFolded(foldGraph(graph, tree, collapsed));
  const opened = layoutFolded(foldGraph(graph, tree, ["b1/lin"]));
  // Opening b0/lin: b0/lin is cached, b0 and net (and band 0) change shape, b1 is cached.
  assert.ok(opened.stats.runs <= 3, JSON.stringify(opened.stats));
  assert.ok(opened.box.get(G("b0")).width > folded.box.get(G("b0")).width);
  const again = layoutFolded(foldGraph(graph, tree, ["b1/lin"]));
  assert.equal(again.stats.runs, 0, "all from the cache");
});

test("a folded group's box is wide enough for its label, within a limit", () => {
  const item = (label) => ({ type: "group", group: { label } });
  assert.equal(itemSize(item("ab")).width, SIZE.node.width);
  assert.ok(itemSize(item("Conv2d · layer1.0.conv1 and more")).width > SIZE.node.width);
  assert.equal(itemSize(item("x".repeat(200))).width, SIZE.maxGroupWidth);
});

test("backward direction lays the forward band out right to left", () => {
  const graph = { nodes: [op("a", ""), op("b", "")], edges: [edge("a", "b")], groups: {} };
  const folded = foldGraph(graph, groupTree(graph), []);
  const { box } = layoutFolded(folded, { direction: "backward" });
  assert.ok(box.get("b").x < box.get("a").x, "the consumer (loss side) left of the producer");
  const forward = layoutFolded(folded).box;
  assert.ok(forward.get("b").x > forward.get("a").x);
});

test("a long flat level is laid out in pieces, identical pieces once", () => {
  layoutCache.clear();
  const n = 4 * PIECE;
  const sizes = Array.from({ length: n }, () => SIZE.node);
  const pairs = Array.from({ length: n - 1 }, (_, i) => [i, i + 1]);
  const stats = { runs: 0, hits: 0 };
  const layout = piecewiseLayout(sizes, pairs, { rightToLeft: false, padded: false }, stats);
  assert.equal(layout.at.length, n);
  assert.equal(stats.runs, 2, "one run for the four identical pieces, one to place them");
  assert.equal(stats.hits, 3);
  for (let i = 1; i < n; i++) assert.ok(layout.at[i].x > layout.at[i - 1].x, `chain order at ${i}`);
});
