import assert from "node:assert/strict";
import { test } from "node:test";

import {
  bandLayout,
  collapsedOwner,
  countCrossings,
  edgePath,
  linkPath,
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

test("edgePath runs leftward from the source's left side in a right-to-left band", () => {
  const size = { width: 100, height: 40 };
  const d = edgePath({ x: 200, y: 0 }, { x: 0, y: 0 }, size, 0, 1, true);
  assert.match(d, /^M200,20 C/);
  assert.match(d, / 100,20$/);
  assert.match(d, /C150,20 150,20/, "the curve bends toward the target");
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

test("visibleGraph keeps one edge per argument (x * x) unless an end is folded", () => {
  const graph = {
    nodes: [node("x", 0), node("mul", 1, "net.0"), node("out", 2)],
    edges: [edge("x", "mul", 0), edge("x", "mul", 1), edge("mul", "out")],
    groups: { net: { count: 1 }, "net.0": { count: 1 } },
  };
  const open = visibleGraph(graph, []);
  assert.deepEqual(
    open.edges.map((e) => [e.source, e.target, e.position]),
    [["x", "mul", 0], ["x", "mul", 1], ["mul", "out", 0]],
  );
  const folded = visibleGraph(graph, ["net.0"]);
  assert.deepEqual(
    folded.edges.map((e) => [e.source, e.target]),
    [["x", "group:net.0"], ["group:net.0", "out"]],
  );
});

test("matchesSearch looks at op, grad_fn, id and module, case-insensitively", () => {
  const n = { id: "op3", op: "matmul", grad_fn: "MmBackward0", module: "net.fc" };
  assert.ok(matchesSearch(n, ""));
  assert.ok(matchesSearch(n, "MatM"));
  assert.ok(matchesSearch(n, "mmback"));
  assert.ok(matchesSearch(n, "fc"));
  assert.ok(!matchesSearch(n, "tanh"));
});

test("relayer moves a parameter branch next to the op using it", () => {
  const nodes = ["x", "a", "b", "c", "w", "v", "d"].map((id) => node(id, 0));
  const edges = ["xa", "ab", "bc", "wv", "vc", "xd"].map(([s, t]) => edge(s, t));
  const depths = Object.fromEntries(relayer(nodes, edges).map((n) => [n.id, n.depth]));
  assert.deepEqual(depths, { x: 0, a: 1, b: 2, c: 3, w: 1, v: 2, d: 1 });
});

test("relayer aligns a side computation with the start of its module", () => {
  // main: x -> m.a -> bn.b -> bn.c; side, in module bn: s -> bn.u (a running-stat update).
  const nodes = [
    node("x", 0),
    node("a", 0, "m"),
    node("b", 0, "m.bn"),
    node("c", 0, "m.bn"),
    node("s", 0, "m.bn"),
    node("u", 0, "m.bn"),
    node("lone", 0),
  ];
  const edges = [edge("x", "a"), edge("a", "b"), edge("b", "c"), edge("s", "u")];
  const depths = Object.fromEntries(relayer(nodes, edges).map((n) => [n.id, n.depth]));
  assert.deepEqual(depths, { x: 0, a: 1, b: 2, c: 3, s: 2, u: 3, lone: 0 });
});

test("relayer computes longest-path depths and leaves cycles alone", () => {
  const nodes = [node("a", 9), node("b", 9), node("c", 9), node("x", 5), node("y", 6)];
  const edges = [edge("a", "b"), edge("b", "c"), edge("a", "c"), edge("x", "y"), edge("y", "x")];
  const out = relayer(nodes, edges);
  assert.deepEqual(out.map((n) => n.depth), [0, 1, 2, 5, 6]);
  assert.equal(nodes[0].depth, 9, "the input nodes are not modified");
});

const bandNode = (id, depth, band, module = "", extra = {}) => ({
  id,
  depth,
  band,
  module,
  ...extra,
});

// op0 (forward, in net.0) -> op1 (forward); its rule ran g0 -> g1 (band 1, in ∇net.0).
const banded = () => ({
  nodes: [
    bandNode("op0", 0, 0, "net.0", { metrics: { time_ns: 10, grad_norm: 2 } }),
    bandNode("op1", 1, 0, "", { metrics: { time_ns: 5 } }),
    bandNode("g0", 0, 1, "∇net.0", { metrics: { time_ns: 3, grad_norm: 4 } }),
    bandNode("g1", 1, 1, "∇net.0", { metrics: { time_ns: 4 }, summary: { nan: 1, inf: 0 } }),
  ],
  edges: [edge("op0", "op1"), edge("g0", "g1"), edge("op0", "g1", 1)],
  links: [{ source: "op0", target: "g0" }, { source: "op0", target: "g1" }],
  groups: {
    net: { count: 1 },
    "net.0": { count: 1 },
    "∇net": { count: 2 },
    "∇net.0": { count: 2 },
  },
});

test("visibleGraph hides the gradient bands and their links on request", () => {
  const shown = visibleGraph(banded(), []);
  assert.equal(shown.nodes.length, 4);
  assert.equal(shown.links.length, 2);
  const hidden = visibleGraph(banded(), [], { showBackward: false });
  assert.deepEqual(hidden.nodes.map((n) => n.id), ["op0", "op1"]);
  assert.deepEqual(hidden.edges.map((e) => [e.source, e.target]), [["op0", "op1"]]);
  assert.equal(hidden.links.length, 0);
});

test("a folded gradient group sums times, keeps the largest norm and counts NaNs", () => {
  const folded = visibleGraph(banded(), ["∇net"]);
  const group = folded.nodes.find((n) => n.id === "group:∇net");
  assert.equal(group.band, 1);
  assert.deepEqual(group.metrics, { time_ns: 7, grad_norm: 4 });
  assert.deepEqual(group.summary, { nan: 1, inf: 0 });
  assert.deepEqual(
    folded.links.map((l) => [l.source, l.target]),
    [["op0", "group:∇net"]],
    "the two links merge into one",
  );
  assert.equal(group.depth, 0, "depths count edges within a band only");
});

test("bandLayout stacks the bands, lays each out on its own, gradients right to left", () => {
  const graph = banded();
  const size = { width: 100, height: 40, gapX: 20, gapY: 10 };
  const { place, bands } = bandLayout(graph.nodes, graph.edges, size, 60);
  assert.deepEqual(bands, [
    { band: 0, top: 0, bottom: 40 },
    { band: 1, top: 100, bottom: 140 },
  ]);
  assert.deepEqual(place.get("op0"), { x: 0, y: 0 });
  assert.deepEqual(place.get("op1"), { x: 120, y: 0 });
  assert.deepEqual(place.get("g0"), { x: 120, y: 100 }, "under op1, right to left");
  assert.deepEqual(place.get("g1"), { x: 0, y: 100 }, "the edge from op0 does not shift g1");
});

test("linkPath runs from the bottom of the op to the top of the gradient op", () => {
  const d = linkPath({ x: 0, y: 0 }, { x: 200, y: 100 }, { width: 100, height: 40 });
  assert.match(d, /^M50,40 C/);
  assert.match(d, / 250,100$/);
});

test("a 10,000-node chain lays out without recursion", () => {
  const n = 10_000;
  const nodes = Array.from({ length: n }, (_, i) => ({ id: `op${i}`, depth: 0, module: "" }));
  const edges = nodes.slice(1).map((node, i) => edge(`op${i}`, node.id));
  const depths = relayer(nodes, edges);
  assert.equal(depths.at(-1).depth, n - 1);
  const size = { width: 10, height: 10, gapX: 0, gapY: 0 };
  const { place } = bandLayout(depths, edges, size, 0);
  assert.equal(place.size, n);
  assert.deepEqual(place.get(`op${n - 1}`), { x: (n - 1) * 10, y: 0 });
});
