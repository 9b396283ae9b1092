/**
 * The recorded view: a tensorkit recording (the JSON of `Tape.save`, or the smaller one that
 * every widget output carries as `application/vnd.tensorkit.recording+json`) drawn with no
 * kernel, by the same graph, profile and replay front ends as the live widgets, each on a
 * local model. Used by the JupyterLab extension (extensions/) and by the outputs' text/html
 * fallback (bundled as a plain script into tensorkit/notebook/static/recording_view.js).
 *
 * A recording's `view` (written by tensorkit/notebook/recorded.py) says what to show:
 * `sections` (any of "graph", "profile", "replay", in order), the graph's `collapsed` groups and
 * `color_by`, the `replay` passes with the `position` to open at, and the profile's `links`
 * (profiler index <-> graph node). A file without `view` shows its graph and profile.
 */

import { h } from "./dom.js";
import graph from "./graph.js";
import profile from "./profile.js";
import replay from "./replay.js";

export const MIME_TYPE = "application/vnd.tensorkit.recording+json";
export const SAVED_NOTE =
  "Saved recording: the kernel that made this widget is not running, so this is the view " +
  "recorded when the cell ran (the graph, backward steps and profile work here; run the cell " +
  "again for the live widget).";
export const RECORDING_NOTE =
  "tensorkit recording: the graph, backward steps and profile that Tape.save recorded.";
export const STATIC_NOTE =
  "Recorded when the cell ran: the graph, backward steps and profile work here with no kernel.";

/**
 * A model with the anywidget interface (get, set, on, off, save_changes) over plain state.
 * @param {object} state
 */
export function localModel(state) {
  const values = { ...state };
  const listeners = {};
  const pending = new Set();
  return {
    get: (name) => values[name],
    set: (name, value) => {
      values[name] = value;
      pending.add(name);
    },
    on: (event, fn) => {
      (listeners[event] = listeners[event] || []).push(fn);
    },
    off: (event, fn) => {
      listeners[event] = (listeners[event] || []).filter((f) => f !== fn);
    },
    save_changes: () => {
      const names = [...pending];
      pending.clear();
      for (const name of names) for (const fn of listeners["change:" + name] || []) fn();
    },
  };
}

/**
 * What a recording shows: its sections, in order, each present in the data.
 * @param {object} recording
 * @returns {string[]}
 */
export function sectionsOf(recording) {
  const view = recording.view || {};
  const wanted = view.sections || ["graph", "profile", "replay"];
  const present = {
    graph: Boolean(recording.graph && (recording.graph.nodes || []).length),
    profile: Boolean(recording.profile),
    replay: Boolean(view.replay && view.replay.length),
  };
  return wanted.filter((name) => present[name]);
}

/**
 * Problems that keep a value from being drawn as a recording ([] when it can be).
 * @param {unknown} recording
 * @returns {string[]}
 */
export function recordingProblems(recording) {
  if (!recording || typeof recording !== "object" || Array.isArray(recording)) {
    return ["expected a JSON object"];
  }
  if (recording.format !== "tensorkit.recording") {
    return [`'format' is ${JSON.stringify(recording.format)}, expected "tensorkit.recording"`];
  }
  if (!sectionsOf(recording).length) return ["it holds no graph, profile or backward steps"];
  return [];
}

/**
 * Draw `recording` into `el`, under `note` (if any); returns the cleanup function.
 * @param {HTMLElement} el
 * @param {object} recording
 * @param {{note?: string}} [options]
 * @returns {() => void}
 */
export function renderRecording(el, recording, { note = "" } = {}) {
  const root = h("div", { class: "tk-recorded" });
  el.append(root);
  const problems = recordingProblems(recording);
  if (problems.length) {
    root.append(h("div", { class: "tk-recorded-note tk-error", text: cannotShow(problems) }));
    return () => root.remove();
  }
  if (note) root.append(h("div", { class: "tk-recorded-note", text: note }));
  const view = recording.view || {};
  const cleanups = [];
  const models = {};
  const mount = (name, widget, state) => {
    const slot = h("div", { class: `tk-recorded-${name}` });
    root.append(slot);
    models[name] = localModel(state);
    const cleanup = widget.render({ model: models[name], el: slot });
    if (typeof cleanup === "function") cleanups.push(cleanup);
  };
  for (const name of sectionsOf(recording)) {
    if (name === "graph") {
      mount("graph", graph, {
        graph: recording.graph,
        selected: "",
        collapsed: view.collapsed || recording.graph.collapsed || [],
        color_by: view.color_by || "none",
        show_backward: view.show_backward ?? true,
      });
    } else if (name === "profile") {
      mount("profile", profile, { model: recording.profile, selected: -1 });
    } else {
      const pass = Math.min(view.pass_index || 0, view.replay.length - 1);
      const total = view.replay[pass].steps.length;
      const position = Math.max(0, Math.min(view.position || 0, total));
      mount("replay", replay, { passes: view.replay, pass_index: pass, position });
    }
  }
  if (models.graph && models.profile && view.links) {
    cleanups.push(linkSelections(models.graph, models.profile, view.links));
  }
  return () => {
    for (const cleanup of cleanups) cleanup();
    root.remove();
  };
}

/**
 * Keep the graph's selected node and the profile's selected row together; returns the
 * function that unlinks them.
 * @param {object} graphModel
 * @param {object} profileModel
 * @param {{node_of: object, index_of: object}} links
 */
export function linkSelections(graphModel, profileModel, links) {
  let syncing = false;
  const follow = (target, name, value) => {
    if (syncing) return;
    syncing = true;
    try {
      target.set(name, value);
      target.save_changes();
    } finally {
      syncing = false;
    }
  };
  const onRow = () =>
    follow(graphModel, "selected", links.node_of[profileModel.get("selected")] || "");
  const onNode = () => {
    const index = links.index_of[graphModel.get("selected")];
    follow(profileModel, "selected", index === undefined ? -1 : index);
  };
  profileModel.on("change:selected", onRow);
  graphModel.on("change:selected", onNode);
  return () => {
    profileModel.off("change:selected", onRow);
    graphModel.off("change:selected", onNode);
  };
}

function cannotShow(problems) {
  return `Cannot show this tensorkit recording: ${problems.join("; ")}.`;
}
