/**
 * The backward stepper widget (anywidget front end): a toolbar (Reset, Previous, Next, Run to
 * end; keys r, p, n, e), the current step's node with its incoming and produced gradients,
 * and the graph with the current node highlighted. Buttons set the synced `action` trait,
 * which Python handles and clears; the new `state` comes back as a trait.
 */

import { h, payloadView } from "./dom.js";
import { graphView } from "./graphview.js";

/** Toolbar buttons: action sent to Python, label, keyboard shortcut. */
const ACTIONS = [
  ["reset", "Reset", "r"],
  ["previous", "Previous", "p"],
  ["next", "Next", "n"],
  ["run_to_end", "Run to end", "e"],
];

/**
 * A line saying where the pass is: position, total, and why it stopped.
 * @param {object} state BackwardStepper.state()
 * @returns {string}
 */
function statusText(state) {
  const total = state.total_exact ? state.total_steps : `~${state.total_steps}`;
  const parts = [`step ${state.position} / ${total}`];
  if (state.done) parts.push("done");
  if (state.stopped_by) parts.push(`stopped: ${state.stopped_by.kind} at ${state.stopped_by.node}`);
  if (state.error) parts.push(`error: ${state.error.message || JSON.stringify(state.error)}`);
  return parts.join(" · ");
}

/**
 * The current step: node name, rule location, incoming gradients, produced gradients.
 * @param {object|null} step
 * @returns {HTMLElement}
 */
function stepView(step) {
  if (!step) return h("div", { class: "tk-muted", text: "Not started: press Next (n)." });
  const section = (title, items) =>
    h("div", { class: "tk-section" }, [
      h("div", { class: "tk-section-title", text: title }),
      ...items,
    ]);
  return h("div", { class: "tk-step" }, [
    h("div", { class: "tk-step-node", text: `${step.node.id}: ${step.node.name}` }),
    step.rule && step.rule.where ? h("div", { class: "tk-muted", text: step.rule.where }) : "",
    section("incoming gradient", step.grads_in.map(payloadView)),
    section(
      "produced gradients",
      step.grads_out.map((g) =>
        h("div", { class: "tk-grad-out" }, [
          h("div", { class: "tk-muted", text: `input ${g.position} → ${g.to ?? "none"}` }),
          payloadView(g.grad),
        ]),
      ),
    ),
  ]);
}

/**
 * Render into `el`; returns the cleanup function that anywidget calls on removal.
 * @param {{model: object, el: HTMLElement}} context
 * @returns {() => void}
 */
function render({ model, el }) {
  const send = (action) => {
    model.set("action", "");
    model.set("action", action);
    model.save_changes();
  };
  const buttons = ACTIONS.map(([action, label, key]) => {
    const button = h("button", { class: "tk-button", title: `${label} (${key})`, text: label });
    button.addEventListener("click", () => send(action));
    return button;
  });
  const status = h("span", { class: "tk-status" });
  const details = h("div", { class: "tk-panel" });
  let collapsed = [];
  const view = graphView({
    onToggle(path) {
      collapsed = collapsed.includes(path)
        ? collapsed.filter((p) => p !== path)
        : [...collapsed, path];
      redraw();
    },
  });
  const root = h("div", { class: "tk-widget tk-stepper-widget", tabindex: 0 }, [
    h("div", { class: "tk-toolbar" }, [...buttons, status]),
    h("div", { class: "tk-body" }, [h("div", { class: "tk-canvas" }, [view.element]), details]),
  ]);
  el.append(root);

  const onKey = (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const match = ACTIONS.find(([, , key]) => key === event.key);
    if (!match) return;
    event.preventDefault();
    send(match[0]);
  };
  root.addEventListener("keydown", onKey);

  function redraw() {
    const state = model.get("state");
    const step = state.step;
    status.textContent = statusText(state);
    details.replaceChildren(stepView(step));
    view.update({
      graph: model.get("graph"),
      collapsed,
      selected: "",
      query: "",
      colorBy: "none",
      current: step ? step.node.id : "",
    });
  }
  model.on("change:state", redraw);
  model.on("change:graph", redraw);
  redraw();

  return () => {
    model.off("change:state", redraw);
    model.off("change:graph", redraw);
    root.removeEventListener("keydown", onKey);
    view.destroy();
    root.remove();
  };
}

export default { render };
