import assert from "node:assert/strict";
import { test } from "node:test";

import {
  HELP,
  MARK_LEGEND,
  RUN_KINDS,
  TOOLBAR,
  backwardOrder,
  buttonTitle,
  bytesText,
  chainLabels,
  chainText,
  checkClass,
  checkInputText,
  checkText,
  chooserText,
  commandFor,
  disagrees,
  docRuns,
  entryForKey,
  focusNode,
  gradNormCommand,
  graphCheckRow,
  graphCheckRows,
  graphCheckText,
  nodeMarks,
  statusText,
} from "../src/stepper_logic.js";

const entry = (action) => TOOLBAR.find((e) => e.action === action);
const idle = {
  position: 0,
  total_steps: 7,
  total_exact: false,
  step: null,
  breakpoints: { nodes: ["n2"] },
};

test("every toolbar entry has a distinct key, shown in its title and in the help line", () => {
  const keys = TOOLBAR.map((e) => e.key);
  assert.equal(new Set(keys).size, keys.length);
  for (const e of TOOLBAR) {
    assert.ok(buttonTitle(e).endsWith(`(${e.key})`));
    assert.ok(HELP.includes(`${e.key} ${e.label.toLowerCase()}`));
  }
  assert.equal(buttonTitle(entry("next")), "Next (n)");
});

test("commandFor builds run_to, break_at toggles and check targets", () => {
  assert.equal(commandFor(entry("next"), { selected: "", state: idle }), "next");
  assert.equal(commandFor(entry("run_to"), { selected: "", state: idle }), null);
  assert.equal(commandFor(entry("run_to"), { selected: "n4", state: idle }), "run_to:n4");
  assert.equal(commandFor(entry("break_at"), { selected: "n4", state: idle }), "break_at:n2,n4");
  assert.equal(commandFor(entry("break_at"), { selected: "n2", state: idle }), "break_at:");
  assert.equal(commandFor(entry("check_node"), { selected: "", state: idle }), null);
  const started = { ...idle, step: { node: { id: "n0" } } };
  assert.equal(commandFor(entry("check_node"), { selected: "", state: started }), "check_node");
  const chosen = { selected: "n3", state: started };
  assert.equal(commandFor(entry("check_node"), chosen), "check_node:n3");
  assert.equal(commandFor(entry("check_graph"), { selected: "", state: idle }), "check_graph");
});

test("entryForKey ignores modified keys", () => {
  assert.equal(entryForKey({ key: "n" }).action, "next");
  assert.equal(entryForKey({ key: "n", ctrlKey: true }), null);
  assert.equal(entryForKey({ key: "z" }), null);
});

test("gradNormCommand clears on empty text", () => {
  assert.equal(gradNormCommand(" 12.5 "), "break_on_grad_norm:12.5");
  assert.equal(gradNormCommand(""), "break_on_grad_norm:none");
});

test("statusText: position, approximate total, stop reason and failure", () => {
  assert.equal(statusText(idle), "step 0 / ~7");
  const stopped = {
    ...idle,
    position: 3,
    total_exact: true,
    stopped_by: { kind: "norm", node: "n2", position: 0, norm: 8.123456 },
  };
  assert.equal(statusText(stopped), "step 3 / 7 · stopped (gradient norm 8.12) at n2");
  const failed = { ...idle, position: 1, error: { type: "RuntimeError", node: { id: "n2" } } };
  assert.equal(statusText(failed), "step 1 / ~7 · backward failed at n2: RuntimeError");
});

test("focusNode opens on the failing node, else the current step", () => {
  assert.equal(focusNode(idle), "");
  const step = { node: { id: "n1" } };
  assert.equal(focusNode({ ...idle, step }), "n1");
  assert.equal(focusNode({ ...idle, step, error: { node: { id: "n2" } } }), "n2");
  assert.equal(focusNode({ ...idle, step, error: { node: null } }), "n1");
});

test("checkClass colours by the relative error", () => {
  assert.equal(checkClass({ ok: true, max_rel_error: 1e-9 }), "tk-check-ok");
  assert.equal(checkClass({ ok: true, max_rel_error: 5e-4 }), "tk-check-ok");
  assert.equal(checkClass({ ok: true, max_rel_error: 0.05 }), "tk-check-warn");
  assert.equal(checkClass({ ok: false, max_rel_error: 0.5 }), "tk-check-bad");
  assert.equal(checkClass({ ok: null, verdict: "not checked" }), "tk-check-skip");
});

test("nodeMarks gathers checks, graph failure, failing node, in-place culprit, breakpoints", () => {
  const state = {
    ...idle,
    error: { node: { id: "n2" }, inplace: { node: { id: "n1" } } },
    breakpoints: { nodes: ["n2"] },
  };
  const checks = {
    nodes: { n0: { ok: true, max_rel_error: 0 }, n3: { ok: null } },
    graph: { first_failure: { id: "n0" } },
  };
  assert.deepEqual(nodeMarks(state, checks), {
    n0: ["tk-check-ok", "tk-check-bad"],
    n3: ["tk-check-skip"],
    n2: ["tk-failed", "tk-breakpoint"],
    n1: ["tk-inplace"],
  });
  const outside = { ...state, error: { node: { id: "n2" }, inplace: { node: { id: null } } } };
  assert.deepEqual(Object.keys(nodeMarks(outside, {})), ["n2"]);
});

test("chainLabels: edge input->node, local x upstream = product, two uses give two terms", () => {
  const edges = [
    { from: "n0", to: "n1", position: 0, local: 1, upstream: 1, product: 1 },
    { from: "n1", to: "leaf0", position: 0, local: -3, upstream: 0.5, product: -1.5 },
    { from: "n1", to: "leaf0", position: 1, local: -3, upstream: 0.5, product: -1.5 },
    { from: "n1", to: null, position: 2, local: 1, upstream: 1, product: 1 },
  ];
  assert.deepEqual(chainLabels(edges), {
    "n1->n0": "1×1=1",
    "leaf0->n1": "-3×0.5=-1.5; -3×0.5=-1.5",
  });
  assert.equal(chainText(edges[1]), "∂L/∂leaf0 += -3 × 0.5 = -1.5");
  assert.equal(chainText(edges[3]), "∂L/∂input 2 += 1 × 1 = 1");
});

test("check texts name the node, the verdict and the errors", () => {
  const bad = {
    id: "n2",
    node: "WrongCubeBackward",
    ok: false,
    max_rel_error: 0.33333,
    max_abs_error: 2,
  };
  assert.equal(
    checkText(bad),
    "n2 WrongCubeBackward: DISAGREES with finite differences " +
      "(max rel error 0.333, max abs error 2)",
  );
  assert.equal(checkText({ ok: null, verdict: "not checked: no rule" }), "not checked: no rule");
  const report = { checked: 3, skipped: [], error: null, first_failure: { ...bad, step: 2 } };
  assert.equal(
    graphCheckText(report),
    "first disagreeing node: n2 WrongCubeBackward at step 2 (max rel error 0.333); 3 checked",
  );
  const skipped = { checked: 2, skipped: [{ id: "n0" }], error: null, first_failure: null };
  assert.match(graphCheckText(skipped), /^all 2 checked nodes agree; 1 skipped/);
  const failed = { checked: 1, skipped: [], error: { node: { id: "n3" } }, first_failure: null };
  assert.equal(graphCheckText(failed), "backward failed at n3 after 1 agreeing nodes");
});

test("bytesText", () => {
  assert.equal(bytesText(12), "12 B");
  assert.equal(bytesText(1536), "1.5 KiB");
  assert.equal(bytesText(3 * 1024 * 1024), "3 MiB");
});

test("the current step's mark is its own, listed in the legend with every other mark", () => {
  const marks = MARK_LEGEND.map((e) => e.mark);
  assert.equal(new Set(marks).size, marks.length);
  for (const mark of ["tk-current", "tk-check-bad", "tk-check-ok", "tk-breakpoint"]) {
    assert.ok(marks.includes(mark), mark);
  }
  const state = {
    step: { node: { id: "n1" } },
    visited: ["n0", "n1"],
    breakpoints: { nodes: [] },
  };
  const checks = { nodes: { n1: { ok: false } }, graph: null };
  const byNode = nodeMarks(state, checks);
  assert.deepEqual(byNode.n0, ["tk-visited"]);
  assert.deepEqual(byNode.n1, ["tk-visited", "tk-check-bad"]);
  assert.equal(focusNode(state), "n1"); // drawn tk-current by graphView, never tk-check-bad
});

test("backwardOrder follows the engine's order and keeps nodes it does not name", () => {
  const nodes = [
    { id: "leaf0", kind: "leaf" },
    { id: "n1", kind: "grad_fn" },
    { id: "n0", kind: "grad_fn" },
    { id: "group:a", kind: "group" },
    { id: "n2", kind: "grad_fn" },
  ];
  const order = backwardOrder({ order: ["n0", "n1", "leaf0", "gone"] }, nodes);
  assert.deepEqual(
    order.map((n) => n.id),
    ["n0", "n1", "leaf0", "n2"],
  );
  assert.deepEqual(
    backwardOrder({}, nodes).map((n) => n.id),
    ["leaf0", "n1", "n0", "n2"],
  );
  const node = { id: "n1", grad_fn: "MulBackward0", kind: "grad_fn" };
  assert.equal(chooserText(node, 1, new Set(["n1"])), "2 ✓ n1: MulBackward0");
  assert.equal(chooserText(node, 1, new Set()), "2 n1: MulBackward0");
});

test("docRuns keeps well-formed runs only and falls back to the plain docstring", () => {
  const runs = [
    { kind: "text", text: "Twice " },
    { kind: "code", text: "grad" },
    { kind: "script", text: "<b>x</b>" },
    { kind: "code" },
    null,
    { kind: "math", text: "" },
  ];
  assert.deepEqual(docRuns({ doc_runs: runs, doc: "ignored" }), [
    { kind: "text", text: "Twice " },
    { kind: "code", text: "grad" },
    { kind: "text", text: "<b>x</b>" },
  ]);
  assert.deepEqual(docRuns({ doc: "Old recording." }), [{ kind: "text", text: "Old recording." }]);
  assert.deepEqual(docRuns({ doc: null }), []);
  assert.deepEqual(docRuns({ doc_runs: "not a list", doc: "plain" }), [
    { kind: "text", text: "plain" },
  ]);
  assert.deepEqual(RUN_KINDS, ["text", "code", "math", "emphasis", "strong"]);
});

test("disagrees is numpy's allclose per element; labels match only themselves", () => {
  assert.equal(disagrees(1.0, 1.0005), false); // within rtol 1e-3
  assert.equal(disagrees(1.0, 1.01), true);
  assert.equal(disagrees(1e-6, 0, { atol: 1e-5, rtol: 0 }), false);
  assert.equal(disagrees(2e-5, 0, { atol: 1e-5, rtol: 0 }), true);
  assert.equal(disagrees("nan", "nan"), false);
  assert.equal(disagrees("nan", 1), true);
});

test("check texts: a checked input's errors, and the whole graph's rows in backward order", () => {
  const entry = {
    position: 0,
    shape: [3, 2],
    elements: 6,
    sampled: false,
    max_abs_error: 0.25,
    max_rel_error: 0.5,
  };
  assert.equal(checkInputText(entry), "input 0 (3×2): max abs error 0.25, max rel error 0.5");
  const sampled = { ...entry, shape: [40, 50], elements: 256, sampled: true };
  assert.ok(checkInputText(sampled).endsWith(", 256 sampled elements"));
  const report = {
    nodes: [
      { id: "n2", node: "CubeBackward", step: 2, ok: false, max_rel_error: 0.5 },
      { id: "n0", node: "SumBackward0", step: 0, ok: true, max_rel_error: 1e-9 },
    ],
    skipped: [{ id: "n1", node: "AddBackward0", reason: "no inputs" }],
  };
  const rows = graphCheckRows(report, ["n0", "n1", "n2"]);
  assert.deepEqual(
    rows.map((r) => [r.id, r.step, r.mark]),
    [
      ["n0", "0", "tk-check-ok"],
      ["n1", "", "tk-check-skip"],
      ["n2", "2", "tk-check-bad"],
    ],
  );
  assert.equal(rows[2].verdict, "DISAGREES (max rel error 0.5)");
  assert.equal(rows[1].verdict, "not checked: no inputs");
  assert.deepEqual(graphCheckRow({ id: "n9", node: "X", ok: true, max_rel_error: 0 }).step, "");
});
