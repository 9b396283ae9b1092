import assert from "node:assert/strict";
import { test } from "node:test";

import "./fake_dom.mjs"; // a minimal document for the module under test

const { breakText, isFused, jitSections, kernelGroup } = await import("../src/jit_panel.js");

const GRAPH = {
  nodes: [
    { id: "n0", kind: "op", op: "matmul", group: "Net.fc" },
    { id: "n1.0", kind: "op", op: "add", group: "Net.fc/fused#1" },
    { id: "n1.1", kind: "op", op: "tanh", group: "Net.fc/fused#1" },
  ],
  groups: {
    "Net.fc": { kind: "module", label: "Linear · fc", parent: null },
    "Net.fc/fused#1": {
      kind: "fused",
      label: "fused: add·tanh (2 ops)",
      parent: "Net.fc",
      source: "def kernel(a, b):\n    return tanh(a + b)",
    },
  },
  jit: {
    title: "tk.compile of Net: guard set 1 of 1",
    guards: ["grad mode on", "argument 0: float32[2, 4] on cpu, requires_grad=False"],
    breaks: [
      { kind: "value_read", reason: "Tensor.item() reads a value", site: "cell [3], line 2", guarded: true, value: "0.5" },
      { kind: "value_read", reason: "Tensor.numpy() reads a value", site: "", guarded: false, value: null },
    ],
  },
};
const texts = (sections, name) => sections.flatMap((s) => s.find(name)).map((e) => e.textContent);

test("kernelGroup: the selected op's fused group, else the one opened last", () => {
  const member = GRAPH.nodes[1];
  assert.equal(kernelGroup(GRAPH, member, "").label, "fused: add·tanh (2 ops)");
  assert.equal(kernelGroup(GRAPH, GRAPH.nodes[0], ""), null);
  assert.equal(kernelGroup(GRAPH, null, "Net.fc/fused#1").source.startsWith("def kernel"), true);
  assert.equal(kernelGroup(GRAPH, null, "Net.fc"), null); // a module group has no kernel
  assert.equal(isFused(GRAPH, "Net.fc/fused#1"), true);
  assert.equal(isFused(GRAPH, "Net.fc"), false);
  assert.equal(isFused(GRAPH, "missing"), false);
});

test("jitSections: the kernel as a code block, the breaks with call sites, the guards", () => {
  const sections = jitSections(GRAPH, GRAPH.nodes[2], "");
  assert.deepEqual(texts(sections, "tk-code"), ["def kernel(a, b):\n    return tanh(a + b)"]);
  assert.deepEqual(texts(sections, "tk-section-title"), [
    "kernel of fused: add·tanh (2 ops)",
    "graph breaks (2)",
    "guards",
  ]);
  const [breaks, guards] = [sections[2].find("li"), sections[3].find("li")];
  assert.deepEqual(
    breaks.map((li) => li.textContent),
    [
      "Tensor.item() reads a value (at cell [3], line 2): guarded on 0.5",
      "Tensor.numpy() reads a value: the call runs eagerly",
    ],
  );
  assert.deepEqual(guards.map((li) => li.textContent), GRAPH.jit.guards);
  assert.equal(sections[0].className, "tk-jit-title");
  assert.equal(sections[0].textContent, "tk.compile of Net: guard set 1 of 1");
});

test("jitSections: no kernel outside fused groups, no breaks said so, nothing for tape graphs", () => {
  const clean = { ...GRAPH, jit: { ...GRAPH.jit, breaks: [], title: "" } };
  const sections = jitSections(clean, GRAPH.nodes[0], "");
  assert.deepEqual(texts(sections, "tk-code"), []);
  assert.deepEqual(texts(sections, "tk-section-title"), ["graph breaks (0)", "guards"]);
  assert.deepEqual(texts(sections, "tk-muted"), ["none: the call is one graph"]);
  assert.deepEqual(jitSections({ nodes: [], groups: {} }, null, ""), []);
});

test("jitSections: the passes' rewrites after the guards, where the model lists them", () => {
  const rewrites = ["fused kernels: 2", "convolutions run channels last: 1 (Net.conv)"];
  const rewritten = { ...GRAPH, jit: { ...GRAPH.jit, rewrites } };
  const sections = jitSections(rewritten, null, "");
  assert.deepEqual(texts(sections, "tk-section-title"), ["graph breaks (2)", "guards", "rewrites"]);
  assert.deepEqual(sections.at(-1).find("li").map((li) => li.textContent), rewrites);
  const none = jitSections({ ...GRAPH, jit: { ...GRAPH.jit, rewrites: [] } }, null, "");
  assert.deepEqual(texts(none, "tk-section-title"), ["graph breaks (2)", "guards"]);
});

test("breakText: a model recorded before guards (no guarded field) reads as eager", () => {
  assert.equal(breakText({ reason: "Tensor.item() reads", site: "f.py:3" }), "Tensor.item() reads (at f.py:3): the call runs eagerly");
  assert.equal(breakText({ reason: "r", site: "", guarded: true, value: "[1, 2]" }), "r: guarded on [1, 2]");
});
