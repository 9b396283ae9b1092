import assert from "node:assert/strict";
import { test } from "node:test";

import {
  HELP,
  MOVES,
  canMove,
  moveForKey,
  moveTo,
  stateAt,
  statusLine,
} from "../src/replay.js";
import { chainLabels, focusNode, statusText } from "../src/stepper_logic.js";

const payload = (values) => ({ shape: [values.length], dtype: "float32", values });
const pass = {
  pass: 0,
  total_steps: 3,
  leaves: [
    { id: "leaf0", shape: [2], grad: payload([10, 10]) },
    { id: "leaf1", shape: [2], grad: null },
  ],
  steps: [
    {
      index: 0,
      node: { id: "n0", name: "MulBackward0" },
      grads_in: [],
      grads_out: [],
      chain: [{ position: 0, to: "leaf0", local: 2, upstream: 1, product: 2, grad: 2 }],
    },
    {
      index: 1,
      node: { id: "leaf0", name: "AccumulateGrad" },
      grads_in: [payload([1, 2])],
      grads_out: [],
      leaf_grad: payload([11, 12]),
    },
    {
      index: 2,
      node: { id: "leaf1", name: "AccumulateGrad" },
      grads_in: [payload([3, 4])],
      grads_out: [],
      leaf_grad: payload([3, 4]),
    },
  ],
};

test("the moves are the stepper's, with its labels and keys", () => {
  assert.deepEqual(
    MOVES.map((e) => [e.action, e.key]),
    [
      ["reset", "r"],
      ["previous", "p"],
      ["next", "n"],
      ["run_to_end", "e"],
    ],
  );
  assert.equal(HELP, "Keys: r reset · p previous · n next · e run to end");
});

test("moveTo steps within [0, total]", () => {
  assert.equal(moveTo("next", 0, 3), 1);
  assert.equal(moveTo("next", 3, 3), 3);
  assert.equal(moveTo("previous", 2, 3), 1);
  assert.equal(moveTo("previous", 0, 3), 0);
  assert.equal(moveTo("reset", 2, 3), 0);
  assert.equal(moveTo("run_to_end", 1, 3), 3);
  assert.throws(() => moveTo("run_to", 0, 3), /unknown replay move "run_to"/);
});

test("canMove says whether a move changes the position", () => {
  assert.equal(canMove("previous", 0, 3), false);
  assert.equal(canMove("reset", 0, 3), false);
  assert.equal(canMove("next", 0, 3), true);
  assert.equal(canMove("next", 3, 3), false);
  assert.equal(canMove("run_to_end", 3, 3), false);
  assert.equal(canMove("previous", 3, 3), true);
});

test("moveForKey maps n p r e, ignores other keys and modifiers", () => {
  assert.equal(moveForKey({ key: "n" }).action, "next");
  assert.equal(moveForKey({ key: "p" }).action, "previous");
  assert.equal(moveForKey({ key: "r" }).action, "reset");
  assert.equal(moveForKey({ key: "e" }).action, "run_to_end");
  assert.equal(moveForKey({ key: "h" }), null); // the stepper's "run to here" needs a kernel
  assert.equal(moveForKey({ key: "n", ctrlKey: true }), null);
});

test("stateAt before the first step: no step, leaves as before the pass", () => {
  const state = stateAt(pass, 0);
  assert.equal(state.step, null);
  assert.equal(state.done, false);
  assert.equal(focusNode(state), "");
  assert.deepEqual(
    state.leaf_grads.map((l) => l.grad),
    [payload([10, 10]), null],
  );
  assert.equal(statusText(state), "step 0 / 3");
});

test("stateAt follows the accumulations into the leaves' .grad", () => {
  const second = stateAt(pass, 2);
  assert.equal(second.step.node.id, "leaf0");
  assert.equal(focusNode(second), "leaf0");
  assert.deepEqual(
    second.leaf_grads.map((l) => l.grad),
    [payload([11, 12]), null],
  );
  const last = stateAt(pass, 3);
  assert.equal(last.done, true);
  assert.equal(statusText(last), "step 3 / 3 · done");
  assert.deepEqual(last.leaf_grads[1].grad, payload([3, 4]));
  assert.deepEqual(last.leaf_grads[0].shape, [2]);
});

test("stateAt gathers the chain-rule products of the steps run", () => {
  assert.deepEqual(stateAt(pass, 0).chain_edges, []);
  const edges = stateAt(pass, 3).chain_edges;
  assert.deepEqual(edges, [{ ...pass.steps[0].chain[0], from: "n0" }]);
  assert.deepEqual(chainLabels(edges), { "leaf0->n0": "2×1=2" });
});

test("stateAt clamps the position", () => {
  assert.equal(stateAt(pass, 7).position, 3);
  assert.equal(stateAt(pass, -1).position, 0);
});

test("statusLine says when the recording holds only the first steps of a pass", () => {
  assert.equal(statusLine(pass, stateAt(pass, 1)), "step 1 / 3");
  const cut = { ...pass, total_steps: 40 };
  assert.equal(statusLine(cut, stateAt(cut, 1)), "step 1 / 3 · first 3 of 40 steps recorded");
});
