import assert from "node:assert/strict";
import { test } from "node:test";

import { SIZE, fitView, revealNode } from "../src/graphview.js";

test("fitView scales a wide graph down and never up", () => {
  const wide = new Map([["a", { x: 0, y: 0 }], ["b", { x: 1000, y: 0 }]]);
  const fitted = fitView(wide, 600, 400);
  assert.ok(fitted.k < 1);
  assert.ok(fitted.x + (1000 + SIZE.width) * fitted.k <= 600);
  assert.equal(fitView(new Map([["a", { x: 0, y: 0 }]]), 600, 400).k, 1);
});

test("revealNode pans only when the node is outside the area", () => {
  const view = { k: 1, x: 0, y: 0 };
  assert.equal(revealNode(view, { x: 100, y: 0 }, 600), view);
  const moved = revealNode(view, { x: 900, y: 0 }, 600);
  const left = moved.x + 900 * moved.k;
  assert.ok(left >= 0 && left + SIZE.width <= 600);
  assert.equal(moved.y, 0);
});
