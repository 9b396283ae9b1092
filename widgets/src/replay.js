/**
 * The replay widget (anywidget front end, also rendered by tape.to_html pages with no
 * kernel): recorded backward steps stepped entirely in the browser. A toolbar (Reset,
 * Previous, Next, Run to end; keys r p n e, as in the stepper), a pass chooser when several
 * passes were recorded, the pass's backward graph drawn in backward order with the current
 * node and the steps run marked as the stepper marks them (with the same legend), and the
 * stepper's panel of the current step. The model holds `passes`
 * (tensorkit.notebook.replay.replay_passes), `pass_index` and `position` (steps run); the
 * front end sets `position` and `pass_index` itself.
 */

import { h, onShortcut, redrawOn } from "./dom.js";
import { graphView } from "./graphview.js";
import { markLegend, panelView } from "./stepper_panel.js";
import { TOOLBAR, chainLabels, focusNode, nodeMarks, statusText } from "./stepper_logic.js";

/** Chain-rule sums are drawn on the edges of graphs this small (as the stepper does). */
export const CHAIN_RULE_MAX_NODES = 40;

/** The stepper's moves that a replay offers (same labels and keys). */
export const MOVES = TOOLBAR.filter((e) =>
  ["reset", "previous", "next", "run_to_end"].includes(e.action),
);

/** The help line listing the shortcuts. */
export const HELP = `Keys: ${MOVES.map((e) => `${e.key} ${e.label.toLowerCase()}`).join(" · ")}`;

/**
 * The position after a move over `total` recorded steps.
 * @param {string} action "reset", "previous", "next" or "run_to_end"
 * @param {number} position steps run now
 * @param {number} total
 * @returns {number}
 */
export function moveTo(action, position, total) {
  switch (action) {
    case "reset":
      return 0;
    case "previous":
      return Math.max(position - 1, 0);
    case "next":
      return Math.min(position + 1, total);
    case "run_to_end":
      return total;
    default:
      throw new Error(`unknown replay move ${JSON.stringify(action)}`);
  }
}

/**
 * Whether a move changes the position (its button is enabled).
 * @param {string} action
 * @param {number} position
 * @param {number} total
 * @returns {boolean}
 */
export function canMove(action, position, total) {
  return moveTo(action, position, total) !== position;
}

/**
 * The move of a key press (null for other keys or with a modifier).
 * @param {{key: string, ctrlKey?: boolean, metaKey?: boolean, altKey?: boolean}} event
 * @returns {object|null}
 */
export function moveForKey(event) {
  if (event.ctrlKey || event.metaKey || event.altKey) return null;
  return MOVES.find((e) => e.key === event.key) || null;
}

/**
 * The stepper state (see BackwardStepper.state) after `position` recorded steps of a pass:
 * the last step run, the nodes run so far (`order` and `visited`), the chain-rule products
 * so far (`chain_edges`, for scalar nodes) and each leaf's .grad as its last accumulation
 * so far left it (before any, as it was before the pass).
 * @param {{steps: object[], leaves: object[]}} pass a replay model
 * @param {number} position
 * @returns {object}
 */
export function stateAt(pass, position) {
  const total = pass.steps.length;
  const at = Math.min(Math.max(position, 0), total);
  const grads = new Map();
  const chainEdges = [];
  for (const step of pass.steps.slice(0, at)) {
    if ("leaf_grad" in step) grads.set(step.node.id, step.leaf_grad);
    for (const entry of step.chain || []) chainEdges.push({ ...entry, from: step.node.id });
  }
  return {
    position: at,
    total_steps: total,
    total_exact: true,
    done: at === total,
    stopped_by: null,
    error: null,
    breakpoints: { nonfinite: false, nodes: [], grad_norm: null },
    retain_graph: false,
    step: at ? pass.steps[at - 1] : null,
    order: pass.steps.map((step) => step.node.id),
    visited: pass.steps.slice(0, at).map((step) => step.node.id),
    chain_edges: chainEdges,
    leaf_grads: pass.leaves.map((leaf) =>
      grads.has(leaf.id) ? { ...leaf, grad: grads.get(leaf.id) } : leaf,
    ),
  };
}

/**
 * The status line: the stepper's, and how many of the pass's steps were recorded when the
 * Tape's `step_details` cut it short.
 * @param {{steps: object[], total_steps: number}} pass
 * @param {object} state stateAt(pass, ...)
 * @returns {string}
 */
export function statusLine(pass, state) {
  const recorded = pass.steps.length;
  const cut = pass.total_steps > recorded;
  const note = cut ? ` · first ${recorded} of ${pass.total_steps} steps recorded` : "";
  return statusText(state) + note;
}

/**
 * Render into `el`; returns the cleanup function.
 * @param {{model: object, el: HTMLElement}} context
 * @returns {() => void}
 */
function render({ model, el }) {
  let selected = "";
  const current = () => model.get("passes")[model.get("pass_index")];
  const move = (action) => {
    const pass = current();
    const position = moveTo(action, model.get("position"), pass.steps.length);
    if (position === model.get("position")) return;
    model.set("position", position);
    model.save_changes();
  };
  const buttons = MOVES.map((entry) => {
    const button = h("button", {
      class: "tk-button",
      title: `${entry.label} (${entry.key})`,
      text: entry.label,
      "data-action": entry.action,
    });
    button.addEventListener("click", () => move(entry.action));
    return { entry, button };
  });
  const chooser = h("select", { class: "tk-pass-chooser", title: "The backward pass shown" });
  chooser.addEventListener("change", () => {
    model.set("pass_index", Number(chooser.value));
    model.set("position", 0);
    model.save_changes();
  });
  const status = h("span", { class: "tk-status" });
  const panel = h("div", { class: "tk-panel" });
  const view = graphView({
    onSelect(id) {
      selected = selected === id ? "" : id;
      redraw();
    },
    onToggle() {},
  });
  const root = h("div", { class: "tk-widget tk-stepper-widget tk-replay-widget", tabindex: 0 }, [
    h("div", { class: "tk-toolbar" }, [...buttons.map((b) => b.button), chooser, status]),
    h("div", { class: "tk-muted tk-help", text: HELP }),
    markLegend(["tk-current", "tk-visited", "tk-selected"]),
    h("div", { class: "tk-body" }, [h("div", { class: "tk-canvas" }, [view.element]), panel]),
  ]);
  el.append(root);

  const stopKeys = onShortcut(root, moveForKey, (entry) => move(entry.action));

  function redraw() {
    const passes = model.get("passes");
    const pass = current();
    const state = stateAt(pass, model.get("position"));
    chooser.hidden = passes.length < 2;
    chooser.replaceChildren(
      ...passes.map((p, i) => h("option", { value: String(i), text: `pass ${p.pass}` })),
    );
    chooser.value = String(model.get("pass_index"));
    for (const { entry, button } of buttons) {
      button.disabled = !canMove(entry.action, state.position, state.total_steps);
    }
    status.textContent = statusLine(pass, state);
    panel.replaceChildren(panelView(state, { nodes: {}, graph: null }, selected));
    view.update({
      graph: pass.graph,
      collapsed: [],
      selected,
      query: "",
      colorBy: "none",
      direction: "backward",
      current: focusNode(state),
      marks: nodeMarks(state, { nodes: {}, graph: null }),
      edgeLabels:
        pass.graph.nodes.length <= CHAIN_RULE_MAX_NODES ? chainLabels(state.chain_edges) : {},
    });
  }
  const events = ["change:passes", "change:pass_index", "change:position"];
  const stop = redrawOn(model, events, redraw);

  return () => {
    stop();
    stopKeys();
    view.destroy();
    root.remove();
  };
}

export default { render };
