import assert from "node:assert/strict";
import { test } from "node:test";

import {
  linkSelections,
  localModel,
  recordingProblems,
  sectionsOf,
} from "../src/recording_view.js";

const graph = { nodes: [{ id: "op0" }], edges: [] };
const pass = { pass: 0, graph, steps: [{}], leaves: [], total_steps: 1 };

test("sections: as the view lists them, each only with its data", () => {
  const recording = {
    format: "tensorkit.recording",
    graph,
    profile: null,
    view: { sections: ["replay", "graph", "profile"], replay: [pass] },
  };
  assert.deepEqual(sectionsOf(recording), ["replay", "graph"]);
  assert.deepEqual(sectionsOf({ ...recording, view: undefined }), ["graph"]);
  assert.deepEqual(sectionsOf({ graph: { nodes: [] }, profile: { rows: [] } }), ["profile"]);
});

test("problems name what keeps a value from being a recording", () => {
  assert.deepEqual(recordingProblems([1]), ["expected a JSON object"]);
  assert.deepEqual(recordingProblems({ format: "other" }), [
    `'format' is "other", expected "tensorkit.recording"`,
  ]);
  assert.deepEqual(recordingProblems({ format: "tensorkit.recording", graph: { nodes: [] } }), [
    "it holds no graph, profile or backward steps",
  ]);
  assert.deepEqual(recordingProblems({ format: "tensorkit.recording", graph }), []);
});

test("a local model notifies on save_changes, once per changed name", () => {
  const model = localModel({ position: 0 });
  const seen = [];
  const listener = () => seen.push(model.get("position"));
  model.on("change:position", listener);
  model.set("position", 2);
  assert.deepEqual(seen, []);
  model.save_changes();
  model.save_changes();
  assert.deepEqual(seen, [2]);
  model.off("change:position", listener);
  model.set("position", 3);
  model.save_changes();
  assert.deepEqual(seen, [2]);
});

test("linked selections follow each other through the links, and unlink", () => {
  const graphModel = localModel({ selected: "" });
  const profileModel = localModel({ selected: -1 });
  const unlink = linkSelections(graphModel, profileModel, {
    node_of: { 4: "op1", 5: "op1" },
    index_of: { op1: 4 },
  });
  profileModel.set("selected", 5); // a backward op: its forward op's node
  profileModel.save_changes();
  assert.equal(graphModel.get("selected"), "op1");
  assert.equal(profileModel.get("selected"), 5, "the row clicked stays selected");
  graphModel.set("selected", "x");
  graphModel.save_changes();
  assert.equal(profileModel.get("selected"), -1);
  unlink();
  graphModel.set("selected", "op1");
  graphModel.save_changes();
  assert.equal(profileModel.get("selected"), -1);
});
