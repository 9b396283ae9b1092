import assert from "node:assert/strict";
import { test } from "node:test";

import "./fake_dom.mjs"; // a minimal document for the module under test

const { legendView, nodeDetails, NODE_KINDS } = await import("../src/dom.js");
const { nodeColors } = await import("../src/format.js");

test("nodeDetails: one key and one value cell per row, no dl/dt/dd a host could restyle", () => {
  const node = {
    id: "op3",
    kind: "op",
    op: "linear",
    label: "linear",
    shapes: { in: [[2, 4]], out: [[2, 8]] },
    dtypes: ["float32"],
    call_site: { display: "cell [3], line 2", file: "/tmp/ipykernel_1/123.py" },
    metrics: { time_ns: 193_574, bytes: 147_456 },
  };
  const panel = nodeDetails(node);
  assert.equal(panel.tagName, "DIV");
  assert.equal(panel.className, "tk-details");
  const rows = panel.find("tk-details-row");
  const pairs = rows.map((row) => row.children.map((cell) => [cell.className, cell.textContent]));
  for (const [[keyClass], [valueClass]] of pairs) {
    assert.deepEqual([keyClass, valueClass], ["tk-details-key", "tk-details-value"]);
  }
  const shown = Object.fromEntries(pairs.map(([[, key], [, value]]) => [key, value]));
  assert.equal(shown.node, "op3: linear");
  assert.equal(shown["call site"], "cell [3], line 2");
  assert.equal(shown["forward time"], "194 µs");
  assert.equal(shown["bytes allocated"], "144 KiB");
  assert.equal(shown.grad_fn, undefined); // empty rows are left out
  assert.equal(nodeDetails(null).className, "tk-muted");
});

test("legendView: node kinds without a measure, a scale with units, NaN swatches", () => {
  const kinds = legendView(null).find("tk-legend-item");
  assert.equal(kinds.length, NODE_KINDS.length);
  assert.deepEqual(
    kinds.map((item) => item.children[0].className),
    NODE_KINDS.map(([, swatch]) => `tk-swatch ${swatch}`),
  );
  const nodes = [
    { id: "a", metrics: { time_ns: 1000 } },
    { id: "b", metrics: { time_ns: 2_500_000 } },
    { id: "c" },
  ];
  const scale = legendView(nodeColors(nodes, "forward_time").legend);
  assert.equal(scale.find("tk-legend-min")[0].textContent, "1 µs");
  assert.equal(scale.find("tk-legend-max")[0].textContent, "2.5 ms");
  assert.equal(scale.find("tk-legend-item").length, 1); // "no data (1)"
  const nan = legendView(nodeColors([{ id: "a", summary: { nan: 1 } }], "nan").legend);
  assert.equal(nan.find("tk-legend-item").length, 3);
});
