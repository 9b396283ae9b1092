import assert from "node:assert/strict";
import { test } from "node:test";

import {
  NONFINITE_COLOR,
  UNCOMPARED_COLOR,
  diffCellSize,
  diffScale,
  heatColor,
  heatScale,
  heatStops,
  histogramBars,
  payloadKind,
  tableRows,
} from "../src/values.js";

test("payloadKind: a table when small, a heatmap when large and 2-D, else a histogram", () => {
  assert.equal(payloadKind(null), "none");
  assert.equal(payloadKind({ shape: [2], values: [1, 2] }), "table");
  const histogram = { edges: [0, 1], counts: [5] };
  const heatmap = { values: [[0.5]], min: 0.5, max: 0.5 };
  assert.equal(payloadKind({ shape: [100, 10], histogram, heatmap }), "heatmap");
  assert.equal(payloadKind({ shape: [10, 10, 10], histogram }), "histogram");
  assert.equal(payloadKind({ shape: [100], histogram: { edges: [], counts: [] } }), "summary");
});

test("tableRows: scalar cell, vector row, matrix rows, higher ranks flattened by last dim", () => {
  assert.deepEqual(tableRows(3, []), [[3]]);
  assert.deepEqual(tableRows([1, 2], [2]), [[1, 2]]);
  assert.deepEqual(tableRows([[1, 2], [3, 4]], [2, 2]), [[1, 2], [3, 4]]);
  const cube = [[[1, 2], [3, 4]], [[5, 6], [7, "nan"]]];
  assert.deepEqual(tableRows(cube, [2, 2, 2]), [[1, 2], [3, 4], [5, 6], [7, "nan"]]);
});

test("heatColor: white base, red above, blue below, magenta for non-finite", () => {
  assert.equal(heatColor(0, -2, 4), "rgb(255, 255, 255)");
  assert.equal(heatColor(4, -2, 4), "rgb(255, 0, 0)");
  assert.equal(heatColor(-4, -4, 2), "rgb(0, 0, 255)");
  assert.equal(heatColor(-2, -4, 4), "rgb(128, 128, 255)");
  assert.equal(heatColor(1, 1, 3), "rgb(255, 255, 255)"); // all positive: white at the minimum
  assert.equal(heatColor(-3, -3, -1), "rgb(0, 0, 255)"); // all negative: white at the maximum
  assert.equal(heatColor(-1, -3, -1), "rgb(255, 255, 255)");
  assert.equal(heatColor(2, 2, 2), "rgb(255, 255, 255)");
  assert.equal(heatColor("nan", 0, 1), NONFINITE_COLOR);
  assert.equal(heatScale(-1, 2), "blue < 0 (white) < red");
  assert.equal(heatScale(0, 2), "white (min) to red (max)");
  assert.equal(heatScale(-3, -1), "blue (min) to white (max)");
});

test("histogramBars scales to the largest count and keeps bin edges", () => {
  const bars = histogramBars({ edges: [0, 1, 2, 3], counts: [2, 4, 0] }, 30, 40);
  assert.deepEqual(
    bars.map((b) => [b.x, b.y, b.width, b.height, b.from, b.to]),
    [
      [0, 20, 10, 20, 0, 1],
      [10, 0, 10, 40, 1, 2],
      [20, 40, 10, 0, 2, 3],
    ],
  );
});

test("heatStops: the colour bar of a difference map, white at 0 for both signs", () => {
  assert.deepEqual(heatStops(-1, 3), [
    `${heatColor(-1, -1, 3)} 0%`,
    "rgb(255, 255, 255) 25%",
    "rgb(255, 0, 0) 100%",
  ]);
  assert.deepEqual(heatStops(0, 2), ["rgb(255, 255, 255) 0%", "rgb(255, 0, 0) 100%"]);
  assert.deepEqual(heatStops(-4, -1), ["rgb(0, 0, 255) 0%", "rgb(255, 255, 255) 100%"]);
  assert.equal(heatStops(0, 0).length, 2); // all differences 0: a plain bar, no division
  assert.notEqual(UNCOMPARED_COLOR, NONFINITE_COLOR);
});

test("diffCellSize: a map about 240 px on its larger side, cells 6 to 24 px", () => {
  assert.equal(diffCellSize(3, 2), 24); // a tiny matrix: big cells, not a 20 px speck
  assert.equal(diffCellSize(32, 32), 7);
  assert.equal(diffCellSize(1, 32), 7);
  assert.equal(diffCellSize(200, 1), 6); // never below 6 px
  assert.equal(diffCellSize(0, 0), 24);
});

test("diffScale: symmetric about 0, never narrower than the tolerance", () => {
  assert.deepEqual(diffScale({ min: -0.5, max: 2 }, 1e-5), { min: -2, max: 2 });
  assert.deepEqual(diffScale({ min: 2e-11, max: 8e-11 }, 1e-5), { min: -1e-5, max: 1e-5 });
  // round-off far below the tolerance is drawn (nearly) white
  const { min, max } = diffScale({ min: 2e-11, max: 8e-11 }, 1e-5);
  assert.equal(heatColor(8e-11, min, max), "rgb(255, 255, 255)");
  assert.equal(diffScale({ min: 0, max: 0 }).max, 0); // no floor, no differences: no span
});
