import assert from "node:assert/strict";
import { test } from "node:test";

import {
  colorWeights,
  nodeLabel,
  nodeShapes,
  numberText,
  shapeText,
  summaryText,
} from "../src/format.js";

test("shapeText", () => {
  assert.equal(shapeText([2, 3]), "2x3");
  assert.equal(shapeText([]), "scalar");
  assert.equal(shapeText(null), "?");
});

test("numberText keeps 4 significant digits and passes labels through", () => {
  assert.equal(numberText(3.14159265), "3.142");
  assert.equal(numberText(7), "7");
  assert.equal(numberText("nan"), "nan");
});

test("summaryText lists statistics and non-finite counts", () => {
  assert.equal(summaryText({ min: 0, max: 1.5, mean: 0.25, std: 0.5, nan: 2, inf: 0 }),
    "min 0, max 1.5, mean 0.25, std 0.5, 2 nan");
  assert.equal(summaryText(null), "");
});

test("nodeLabel and nodeShapes", () => {
  assert.equal(nodeLabel({ kind: "op", op: "tanh" }), "tanh");
  assert.equal(nodeLabel({ kind: "tensor", requires_grad: true }), "param");
  assert.equal(nodeLabel({ kind: "group", module: "net.0", count: 3 }), "net.0 (3)");
  assert.equal(nodeShapes({ shapes: { out: [[1, 2], []] } }), "1x2, scalar");
});

test("colorWeights scales records by the largest and flags non-finite values", () => {
  const nodes = [
    { id: "a", records: { time_ns: 50 }, summary: { nan: 1, inf: 0 } },
    { id: "b", records: { time_ns: 100 }, summary: { nan: 0, inf: 0 } },
    { id: "c", records: {} },
  ];
  assert.deepEqual([...colorWeights(nodes, "time")], [["a", 0.5], ["b", 1]]);
  assert.deepEqual([...colorWeights(nodes, "nan")], [["a", 1], ["b", 0]]);
  assert.equal(colorWeights(nodes, "none").size, 0);
});
