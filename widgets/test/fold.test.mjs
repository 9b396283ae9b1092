import assert from "node:assert/strict";
import { test } from "node:test";

import {
  GROUP_PREFIX,
  allGroups,
  bandId,
  foldGraph,
  groupTree,
  hidingGroups,
  matchesSearch,
  searchMatches,
} from "../src/fold.js";

const node = (id, group, extra = {}) => ({ id, kind: "op", op: id, band: 0, group, ...extra });
const edge = (source, target, position = 0) => ({ source, target, position });
const G = (id) => GROUP_PREFIX + id;

// Opaque ids: "m/a" is a child of "m" (ids are never split), "f#1" a function group in it.
const sample = () => ({
  nodes: [
    node("x", "", { kind: "tensor", op: null }),
    node("a", "m/a"),
    node("b", "f#1", { label: "matmul" }),
    node("c", "f#1"),
    node("d", ""),
    node("g", "∇m", { band: 1 }),
  ],
  edges: [edge("x", "a"), edge("a", "b"), edge("b", "c"), edge("x", "c", 1), edge("c", "d"), edge("d", "g")],
  links: [{ source: "a", target: "g" }, { source: "b", target: "g" }],
  groups: {
    m: { parent: null, children: ["m/a"], label: "Net · m" },
    "m/a": { parent: "m", children: ["f#1"], label: "Linear · m/a" },
    "f#1": { parent: "m/a", children: [], label: "linear", kind: "function" },
    "∇m": { parent: null, children: [], label: "∇ Net · m" },
  },
});

test("groupTree walks parents, takes labels and each group's band from its nodes", () => {
  const tree = groupTree(sample());
  assert.equal(tree.groups.get("f#1").parent, "m/a");
  assert.equal(tree.groups.get("f#1").kind, "function");
  assert.equal(tree.groups.get("m").band, 0);
  assert.equal(tree.groups.get("∇m").band, 1);
  assert.equal(tree.groupOf.get("b"), "f#1");
  assert.equal(tree.groupOf.has("d"), false);
});

test("groupTree falls back to node.module for recordings without node.group", () => {
  const graph = {
    nodes: [{ id: "a", module: "net.0", band: 0 }, { id: "b", module: "", band: 0 }],
    groups: { net: { parent: null, children: ["net.0"] }, "net.0": { parent: "net", children: [] } },
  };
  const tree = groupTree(graph);
  assert.equal(tree.groupOf.get("a"), "net.0");
  assert.equal(tree.groups.get("net.0").label, "net.0", "the id is the label when none is given");
});

test("foldGraph nests open groups and shows a folded group as one item", () => {
  const graph = sample();
  const tree = groupTree(graph);
  const open = foldGraph(graph, tree, []);
  assert.deepEqual(open.containers.get(bandId(0)).children, ["x", G("m"), "d"]);
  assert.deepEqual(open.containers.get(G("m/a")).children, ["a", G("f#1")]);
  assert.equal(open.rep.get("b"), "b");
  assert.equal(open.items.get(G("m")).count, 3);

  const folded = foldGraph(graph, tree, ["m/a"]);
  assert.equal(folded.rep.get("b"), G("m/a"));
  assert.equal(folded.items.get(G("m/a")).open, false);
  assert.equal(folded.items.has(G("f#1")), false, "groups inside a folded one do not show");
  assert.equal(folded.containers.has(G("m/a")), false);
  assert.deepEqual(folded.containers.get(G("m")).children, [G("m/a")]);
});

test("foldGraph lifts edges to the level where their ends meet", () => {
  const graph = sample();
  const folded = foldGraph(graph, groupTree(graph), ["f#1"]);
  const byKey = Object.fromEntries(folded.edges.map((e) => [e.key, e]));
  // a (in m/a) -> f#1 (folded, in m/a): meets inside m/a.
  assert.deepEqual(
    [byKey[`a>${G("f#1")}`].level, byKey[`a>${G("f#1")}`].from, byKey[`a>${G("f#1")}`].to],
    [G("m/a"), "a", G("f#1")],
  );
  // x (top level) -> f#1 twice (a and c's second argument) merges into one edge.
  const fromX = folded.edges.filter((e) => e.source === "x");
  assert.deepEqual(fromX.map((e) => [e.target, e.level, e.to]), [
    ["a", bandId(0), G("m")],
    [G("f#1"), bandId(0), G("m")],
  ]);
  assert.equal(folded.edges.some((e) => e.source === e.target), false, "b -> c folded away");
  const cross = folded.edges.find((e) => e.target === "g");
  assert.equal(cross.level, null, "an edge into the gradient band meets at no level");
});

test("foldGraph keeps one edge per argument between shown nodes (x * x)", () => {
  const graph = { nodes: [node("x", ""), node("m", "")], edges: [edge("x", "m", 0), edge("x", "m", 1)], groups: {} };
  const folded = foldGraph(graph, groupTree(graph), []);
  assert.deepEqual(folded.edges.map((e) => e.position), [0, 1]);
});

test("foldGraph hides the gradient bands and their links on request", () => {
  const graph = sample();
  const tree = groupTree(graph);
  assert.equal(foldGraph(graph, tree, []).links.length, 2);
  const hidden = foldGraph(graph, tree, [], { showBackward: false });
  assert.equal(hidden.rep.has("g"), false);
  assert.equal(hidden.links.length, 0);
  assert.equal(hidden.containers.has(bandId(1)), false);
  const merged = foldGraph(graph, tree, ["m"]);
  assert.deepEqual(merged.links.map((l) => [l.source, l.target]), [[G("m"), "g"]], "merged");
});

test("a node of another band than its group's is drawn outside the group", () => {
  const graph = {
    nodes: [node("a", "m"), node("g", "m", { band: 1 })],
    edges: [],
    groups: { m: { parent: null, children: [] } },
  };
  const folded = foldGraph(graph, groupTree(graph), []);
  assert.deepEqual(folded.containers.get(bandId(1)).children, ["g"]);
});

test("matchesSearch looks at label, op, grad_fn, id and module, case-insensitively", () => {
  const n = { id: "op3", op: "matmul", label: "linear", grad_fn: "MmBackward0", module: "net.fc" };
  assert.ok(matchesSearch(n, ""));
  assert.ok(matchesSearch(n, "MatM"));
  assert.ok(matchesSearch(n, "LINEAR"), "by its label");
  assert.ok(matchesSearch(n, "mmback"));
  assert.ok(matchesSearch(n, "fc"));
  assert.ok(!matchesSearch(n, "tanh"));
});

test("searchMatches counts matches inside folded groups and their open ancestors", () => {
  const graph = sample();
  const tree = groupTree(graph);
  const folded = foldGraph(graph, tree, ["f#1"]);
  const found = searchMatches(graph, tree, folded, "matmul");
  assert.deepEqual([...found.nodes], ["b"]);
  assert.equal(found.counts.get(G("f#1")), 1, "the folded group holding b");
  assert.equal(found.counts.get(G("m/a")), 1);
  assert.equal(found.counts.get(G("m")), 1);
  assert.equal(searchMatches(graph, tree, folded, "  "), null);
  const none = searchMatches(graph, tree, folded, "nothing");
  assert.equal(none.nodes.size, 0);
  assert.equal(none.counts.size, 0);
  // A group's label matches all its nodes, also when it is folded inside another.
  const byLabel = searchMatches(graph, tree, foldGraph(graph, tree, ["m"]), "Linear · m/a");
  assert.deepEqual([...byLabel.nodes].sort(), ["a", "b", "c"]);
  assert.equal(byLabel.counts.get(G("m")), 3);
});

test("hidingGroups lists the folded groups over a node, outermost first", () => {
  const graph = sample();
  const tree = groupTree(graph);
  const c = graph.nodes.find((n) => n.id === "c");
  assert.deepEqual(hidingGroups(tree, c, ["f#1", "m", "other"]), ["m", "f#1"]);
  assert.deepEqual(hidingGroups(tree, c, []), []);
  assert.deepEqual(allGroups(tree).sort(), ["f#1", "m", "m/a", "∇m"]);
});
