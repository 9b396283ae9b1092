import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import {
  LOG_SPAN,
  bytesText,
  callSiteText,
  timeText,
  NO_DATA_COLOR,
  colorMode,
  colorScale,
  measureText,
  measuresText,
  nodeColors,
  nodeLabel,
  nodeMeasure,
  nodeShapes,
  nodeTitle,
  numberText,
  scopesText,
  shapeText,
  scaleWeight,
  summaryText,
  weightColor,
} from "../src/format.js";

/** The cases numbers.py is tested on too (tests/notebook/test_numbers.py). */
const CASES = JSON.parse(readFileSync(new URL("./number_cases.json", import.meta.url)));
const NON_FINITE = { nan: NaN, inf: Infinity, "-inf": -Infinity };

test("the shared number cases: numberText, timeText and bytesText", () => {
  for (const [name, format] of [
    ["number", numberText],
    ["time", timeText],
    ["bytes", bytesText],
  ]) {
    for (const [value, text] of CASES[name]) {
      const number = typeof value === "string" ? NON_FINITE[value] : value;
      assert.equal(format(number), text, `${name} of ${value}`);
    }
  }
});

test("shapeText", () => {
  assert.equal(shapeText([2, 3]), "2x3");
  assert.equal(shapeText([]), "scalar");
  assert.equal(shapeText(null), "?");
});

test("numberText keeps 3 significant digits, integers whole, labels passed through", () => {
  assert.equal(numberText(3.14159265), "3.14");
  assert.equal(numberText(0.0012345), "0.00123");
  assert.equal(numberText(-2.71828), "-2.72");
  assert.equal(numberText(12345.6), "12300");
  assert.equal(numberText(12345), "12345");
  assert.equal(numberText(7), "7");
  assert.equal(numberText(0), "0");
  assert.equal(numberText(-1e-9), "-1e-9");
  assert.equal(numberText(1.23456e-7), "1.23e-7");
  assert.equal(numberText(NaN), "nan");
  assert.equal(numberText(Infinity), "inf");
  assert.equal(numberText(-Infinity), "-inf");
  assert.equal(numberText("nan"), "nan");
  assert.equal(numberText(null), "");
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

test("colorMode resolves the old names and rejects unknown ones", () => {
  assert.equal(colorMode("time"), "forward_time");
  assert.equal(colorMode("memory"), "bytes");
  assert.equal(colorMode("grad_norm"), "grad_norm");
  assert.equal(colorMode("rainbow"), "none");
});

test("nodeMeasure reads metrics, falls back to profiler records, flags non-finite values", () => {
  const node = { metrics: { time_ns: 5, grad_norm: 0.5 }, records: { alloc_bytes: 64 } };
  assert.equal(nodeMeasure(node, "forward_time"), 5);
  assert.equal(nodeMeasure(node, "bytes"), 64);
  assert.equal(nodeMeasure(node, "grad_norm"), 0.5);
  assert.equal(nodeMeasure(node, "backward_time"), null);
  assert.equal(nodeMeasure({ records: { time_ns: 7 } }, "time"), 7);
  assert.equal(nodeMeasure({ summary: { nan: 0, inf: 2 } }, "nan"), 1);
  assert.equal(nodeMeasure({ summary: { nan: 0, inf: 0 } }, "nan"), 0);
  assert.equal(nodeMeasure({}, "nan"), null);
});

test("colorScale is linear from 0 unless values span LOG_SPAN times", () => {
  assert.deepEqual(colorScale([50, 100]), { min: 0, max: 100, log: false });
  assert.deepEqual(colorScale([0, 1, LOG_SPAN]), { min: 1, max: LOG_SPAN, log: true });
  assert.deepEqual(colorScale([3]), { min: 0, max: 3, log: false });
  assert.equal(colorScale([]), null);
});

test("scaleWeight places values on linear and log scales, clamped", () => {
  assert.equal(scaleWeight({ min: 0, max: 100, log: false }, 25), 0.25);
  const log = { min: 1, max: 1e4, log: true };
  assert.ok(Math.abs(scaleWeight(log, 100) - 0.5) < 1e-12);
  assert.equal(scaleWeight(log, 0), 0);
  assert.equal(scaleWeight(log, 1e6), 1);
  assert.equal(scaleWeight({ min: 2, max: 2, log: false }, 2), 1);
});

test("nodeColors colours measured nodes, greys the rest and describes the legend", () => {
  const nodes = [
    { id: "a", metrics: { bytes: 1 }, summary: { nan: 1, inf: 0 } },
    { id: "b", metrics: { bytes: 1e4 }, summary: { nan: 0, inf: 0 } },
    { id: "c", metrics: {} },
  ];
  const bytes = nodeColors(nodes, "memory");
  assert.equal(bytes.colors.get("a"), weightColor(0));
  assert.equal(bytes.colors.get("b"), weightColor(1));
  assert.equal(bytes.colors.get("c"), NO_DATA_COLOR);
  assert.equal(bytes.legend.mode, "bytes");
  assert.equal(bytes.legend.unit, "B");
  assert.deepEqual([bytes.legend.min, bytes.legend.max, bytes.legend.log], [1, 1e4, true]);
  assert.equal(bytes.legend.missing, 1);
  assert.equal(bytes.legend.stops[0], weightColor(0));
  const nan = nodeColors(nodes, "nan");
  assert.equal(nan.colors.get("a"), weightColor(1));
  assert.equal(nan.colors.get("b"), weightColor(0));
  assert.deepEqual(nan.legend.swatches.map(([label]) => label), ["finite", "NaN / inf", "no data"]);
  const none = nodeColors(nodes, "none");
  assert.equal(none.colors.size, 0);
  assert.equal(none.legend, null);
  const empty = nodeColors([{ id: "c" }], "grad_norm");
  assert.equal(empty.legend.max, undefined);
  assert.equal(empty.legend.missing, 1);
});

test("weightColor runs from green to red", () => {
  assert.equal(weightColor(0), "hsl(120, 70%, 80%)");
  assert.equal(weightColor(1), "hsl(0, 70%, 80%)");
});

test("timeText: ns, µs, ms, s in 3 significant digits; 999.5 rounds up a unit", () => {
  assert.equal(timeText(0), "0 ns");
  assert.equal(timeText(250), "250 ns");
  assert.equal(timeText(999.4), "999 ns");
  assert.equal(timeText(999.5), "1 µs");
  assert.equal(timeText(193_574), "194 µs");
  assert.equal(timeText(999_500), "1 ms");
  assert.equal(timeText(1_500_000), "1.5 ms");
  assert.equal(timeText(2.5e9), "2.5 s");
  assert.equal(timeText(4321e9), "4321 s");
  assert.equal(timeText(-2000), "-2 µs");
  assert.equal(timeText(NaN), "nan");
  assert.equal(timeText(null), "");
});

test("bytesText: B, KiB, MiB, GiB (1024-based); negatives for freed bytes", () => {
  assert.equal(bytesText(0), "0 B");
  assert.equal(bytesText(100), "100 B");
  assert.equal(bytesText(999), "999 B");
  assert.equal(bytesText(1000), "0.977 KiB");
  assert.equal(bytesText(144 * 1024), "144 KiB");
  assert.equal(bytesText(999.5 * 1024), "0.976 MiB");
  assert.equal(bytesText(1.5 * 2 ** 20), "1.5 MiB");
  assert.equal(bytesText(-1536), "-1.5 KiB");
  assert.equal(bytesText(3 * 2 ** 30), "3 GiB");
  assert.equal(bytesText(2048 * 2 ** 30), "2048 GiB");
  assert.equal(bytesText(NaN), "nan");
});

test("measureText picks the formatter by unit", () => {
  assert.equal(measureText(1_500_000, "s"), timeText(1_500_000));
  assert.equal(measureText(2048, "B"), "2 KiB");
  assert.equal(measureText(0.123456, ""), "0.123");
});

test("callSiteText reads the model's display text or the plain site", () => {
  assert.equal(callSiteText({ call_site: { display: "cell [3], line 2", file: "x" } }),
    "cell [3], line 2");
  assert.equal(callSiteText({ call_site: "train.py:14" }), "train.py:14");
  assert.equal(callSiteText({}), "");
});

test("nodeLabel prefers the model's label", () => {
  assert.equal(nodeLabel({ kind: "tensor", label: "x" }), "x");
  assert.equal(nodeLabel({ kind: "op", op: "linear", label: "linear" }), "linear");
  assert.equal(nodeLabel({ kind: "group", label: "Conv2d · c1", module: "c1", count: 4 }),
    "Conv2d · c1 (4)");
});

test("nodeTitle ends with the node's measures", () => {
  const node = {
    id: "op1",
    kind: "op",
    op: "mul",
    shapes: { out: [[2]] },
    call_site: "cell.py:3",
    metrics: { time_ns: 2000, bytes: 8, grad_norm: 1.5 },
  };
  assert.equal(measuresText(node), "forward time 2 µs, bytes allocated 8 B, gradient norm 1.5");
  assert.equal(nodeTitle(node), `op1: mul -> 2\ncell.py:3\n${measuresText(node)}`);
  assert.equal(measuresText({ id: "x" }), "");
});

test("nodeTitle names the ranges an op ran in", () => {
  const node = {
    id: "op2",
    kind: "op",
    op: "im2col",
    shapes: { out: [[4]] },
    scopes: ["train_step", "conv2d"],
    call_site: "cell.py:7",
  };
  assert.equal(scopesText(node), "train_step › conv2d");
  assert.equal(nodeTitle(node), "op2: im2col -> 4\nin train_step › conv2d\ncell.py:7");
  assert.equal(scopesText({ id: "t1" }), "");
});
