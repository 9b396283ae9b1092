import assert from "node:assert/strict";
import { test } from "node:test";

import {
  collapsedOwner,
  countCrossings,
  edgePath,
  matchesSearch,
  orderLayers,
  placeNodes,
  relayer,
  visibleGraph,
} from "../src/layout.js";

const node = (id, depth, module = "") => ({ id, depth, module });
const edge = (source, target, position = 0) => ({ source, target, position });

test("orderLayers groups by depth and keeps the model order without edges", () => {
  const layers = orderLayers([node("a", 0), node("b", 0), node("c", 1)], []);
  assert.deepEqual(layers, [["a", "b"], ["c"]]);
});

test("orderLayers removes the crossing of a swapped pair", () => {
  // a -> d, b -> c drawn in model order crosses once; the barycenter pass untangles it.
  const nodes = [node("a", 0), node("b", 0), node("c", 1), node("d", 1)];
  const edges = [edge("a", "d"), edge("b", "c")];
  assert.equal(countCrossings([["a", "b"], ["c", "d"]], edges), 1);
  const layers = orderLayers(nodes, edges);
  assert.equal(countCrossings(layers, edges), 0);
  assert.deepEqual(layers[1], ["d", "c"]);
});

test("orderLayers never increases crossings on a three-layer graph", () => {
  const nodes = ["a", "b", "c"].map((id) => node(id, 0))
    .concat(["d", "e", "f"].map((id) => node(id, 1)))
    .concat(["g", "h"].map((id) => node(id, 2)));
  const edges = [
    edge("a", "f"), edge("b", "e"), edge("c", "d"),
    edge("d", "h"), edge("f", "g"), edge("e", "g", 1),
  ];
  const before = countCrossings([["a", "b", "c"], ["d", "e", "f"], ["g", "h"]], edges);
  const after = countCrossings(orderLayers(nodes, edges), edges);
  assert.ok(after < before, `${after} < ${before}`);
  assert.equal(after, 0);
});

test("countCrossings counts pairs between adjacent layers only", () => {
  const layers = [["a", "b"], ["c", "d"], ["e"]];
  assert.equal(countCrossings(layers, [edge("a", "d"), edge("b", "c"), edge("a", "e")]), 1);
});

test("placeNodes puts x by layer and centres short layers", () => {
  const size = { width: 100, height: 40, gapX: 20, gapY: 10 };
  const place = placeNodes([["a", "b"], ["c"]], size);
  assert.deepEqual(place.get("a"), { x: 0, y: 0 });
  assert.deepEqual(place.get("b"), { x: 0, y: 50 });
  assert.deepEqual(place.get("c"), { x: 120, y: 25 });
});

test("edgePath runs from the source's right side to the target's argument slot", () => {
  const size = { width: 100, height: 40 };
  const d = edgePath({ x: 0, y: 0 }, { x: 200, y: 0 }, size, 1, 3);
  assert.match(d, /^M100,20 C/);
  assert.match(d, / 200,20$/);
});

test("collapsedOwner finds the outermost collapsed ancestor", () => {
  const collapsed = new Set(["net", "net.0"]);
  assert.equal(collapsedOwner("net.0.fc", collapsed), "net");
  assert.equal(collapsedOwner("other", collapsed), null);
  assert.equal(collapsedOwner("", collapsed), null);
  assert.equal(collapsedOwner("network", collapsed), null);
});

test("visibleGraph folds a collapsed group into one node and redirects edges", () => {
  const graph = {
    nodes: [node("x", 0), node("op0", 1, "net.0"), node("op1", 2, "net.0"), node("op2", 3)],
    edges: [edge("x", "op0"), edge("op0", "op1"), edge("op1", "op2"), edge("x", "op1", 1)],
    groups: { net: { count: 2 }, "net.0": { count: 2 } },
  };
  const open = visibleGraph(graph, []);
  assert.equal(open.nodes.length, 4);
  assert.equal(open.edges.length, 4);
  const folded = visibleGraph(graph, ["net.0"]);
  assert.deepEqual(folded.nodes.map((n) => n.id), ["x", "group:net.0", "op2"]);
  const group = folded.nodes[1];
  assert.equal(group.kind, "group");
  assert.deepEqual(folded.nodes.map((n) => n.depth), [0, 1, 2]);
  assert.equal(group.count, 2);
  assert.deepEqual(
    folded.edges.map((e) => [e.source, e.target]),
    [["x", "group:net.0"], ["group:net.0", "op2"]],
  );
  assert.deepEqual(visibleGraph(graph, ["missing"]).nodes.length, 4);
});

test("matchesSearch looks at op, grad_fn, id and module, case-insensitively", () => {
  const n = { id: "op3", op: "matmul", grad_fn: "MmBackward0", module: "net.fc" };
  assert.ok(matchesSearch(n, ""));
  assert.ok(matchesSearch(n, "MatM"));
  assert.ok(matchesSearch(n, "mmback"));
  assert.ok(matchesSearch(n, "fc"));
  assert.ok(!matchesSearch(n, "tanh"));
});

test("relayer computes longest-path depths and leaves cycles alone", () => {
  const nodes = [node("a", 9), node("b", 9), node("c", 9), node("x", 5), node("y", 6)];
  const edges = [edge("a", "b"), edge("b", "c"), edge("a", "c"), edge("x", "y"), edge("y", "x")];
  const out = relayer(nodes, edges);
  assert.deepEqual(out.map((n) => n.depth), [0, 1, 2, 5, 6]);
  assert.equal(nodes[0].depth, 9, "the input nodes are not modified");
});
