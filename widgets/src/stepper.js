/**
 * The backward stepper widget (anywidget front end): a toolbar (Reset, Previous, Next, Run to
 * end, Run to here, Break here, Check this node, Check whole graph; each with a key), a node
 * chooser listing the nodes in backward order, the breakpoint settings (NaN/inf,
 * gradient-norm bound, nodes), the graph drawn in backward order (the loss first, the leaves
 * last) with the current node in a colour of its own, marks for steps run, checks, failures
 * and breakpoints (with their legend) and, toggleable, chain-rule sums on the edges; and the
 * panel of the current node. Every control sets the
 * synced `action` trait (see stepper_widget.py), which Python runs and clears; the new
 * `state` and `checks` come back as traits, and `notice` says why an action failed.
 * `chain_rule` is synced both ways.
 */

import { h, onShortcut, redrawOn } from "./dom.js";
import { graphView } from "./graphview.js";
import { actionSender } from "./kernel_watch.js";
import { markLegend, panelView } from "./stepper_panel.js";
import {
  HELP,
  TOOLBAR,
  backwardOrder,
  buttonTitle,
  chainLabels,
  chooserText,
  commandFor,
  entryForKey,
  focusNode,
  gradNormCommand,
  nodeMarks,
  statusText,
} from "./stepper_logic.js";

/**
 * Render into `el`; returns the cleanup function that anywidget calls on removal.
 * @param {{model: object, el: HTMLElement}} context
 * @returns {() => void}
 */
function render({ model, el }) {
  let selected = "";
  let collapsed = [];
  const kernelNotice = h("div", { class: "tk-kernel-notice", role: "alert", hidden: true });
  const sender = actionSender(model, (problem) => {
    kernelNotice.textContent = problem;
    kernelNotice.hidden = !problem;
  });
  const send = (action) => {
    if (action) sender.send(action);
  };
  const context = () => ({ selected, state: model.get("state") });

  const buttons = TOOLBAR.map((entry) => {
    const attrs = { class: "tk-button", title: buttonTitle(entry), text: entry.label };
    const button = h("button", attrs);
    button.addEventListener("click", () => send(commandFor(entry, context())));
    return { entry, button };
  });
  const chooser = h("select", { class: "tk-node-chooser", title: "Select a node (or click it)" });
  chooser.addEventListener("change", () => {
    selected = chooser.value;
    redraw();
  });
  const nonfinite = h("input", { type: "checkbox", class: "tk-break-nonfinite" });
  nonfinite.addEventListener("change", () => send(`break_on_nonfinite:${nonfinite.checked}`));
  const norm = h("input", {
    type: "number",
    min: "0",
    step: "any",
    class: "tk-break-norm",
    placeholder: "none",
    title: "Stop when a produced gradient's L2 norm exceeds this (empty: never)",
  });
  // Enter commits (a number input fires "change" only on blur), and so does leaving it
  // changed; a bound equal to the one in force is not sent again.
  const commitNorm = () => {
    const bound = model.get("state").breakpoints.grad_norm;
    const command = gradNormCommand(norm.value);
    if (command !== gradNormCommand(bound == null ? "" : String(bound))) send(command);
  };
  norm.addEventListener("change", commitNorm);
  norm.addEventListener("keydown", (event) => {
    if (event.key === "Enter") commitNorm();
  });
  const chain = h("input", { type: "checkbox", class: "tk-chain-toggle" });
  chain.addEventListener("change", () => {
    model.set("chain_rule", chain.checked);
    model.save_changes();
  });
  const breakNodes = h("span", { class: "tk-muted tk-break-nodes" });
  const status = h("span", { class: "tk-status" });
  const notice = h("span", { class: "tk-notice" });
  const panel = h("div", { class: "tk-panel" });

  const select = (id) => {
    selected = selected === id ? "" : id;
    redraw();
  };
  const view = graphView({
    onSelect: select,
    onToggle(path) {
      collapsed = collapsed.includes(path)
        ? collapsed.filter((p) => p !== path)
        : [...collapsed, path];
      redraw();
    },
  });
  const root = h("div", { class: "tk-widget tk-stepper-widget", tabindex: 0 }, [
    h("div", { class: "tk-toolbar" }, [...buttons.map((b) => b.button), chooser, status, notice]),
    h("div", { class: "tk-toolbar tk-breakpoints" }, [
      h("label", { class: "tk-toggle" }, [nonfinite, "break on NaN/inf"]),
      h("label", { class: "tk-toggle" }, ["break if ‖grad‖ >", norm]),
      breakNodes,
      h("label", { class: "tk-toggle" }, [chain, "chain rule on edges"]),
    ]),
    h("div", { class: "tk-muted tk-help", text: HELP }),
    markLegend(),
    kernelNotice,
    h("div", { class: "tk-body" }, [h("div", { class: "tk-canvas" }, [view.element]), panel]),
  ]);
  el.append(root);

  const stopKeys = onShortcut(root, entryForKey, (entry) => send(commandFor(entry, context())));

  function redraw() {
    const state = model.get("state");
    const graph = model.get("graph");
    const checks = model.get("checks") || { nodes: {}, graph: null };
    const nodes = backwardOrder(state, graph.nodes || []);
    if (selected && !nodes.some((n) => n.id === selected)) selected = "";
    const visited = new Set(state.visited || []);
    chooser.replaceChildren(
      h("option", { value: "", text: "(select a node: in backward order)" }),
      ...nodes.map((n, i) => h("option", { value: n.id, text: chooserText(n, i, visited) })),
    );
    chooser.value = selected;
    for (const { entry, button } of buttons) {
      button.disabled = commandFor(entry, context()) === null;
    }
    const points = state.breakpoints || { nonfinite: false, nodes: [], grad_norm: null };
    nonfinite.checked = points.nonfinite;
    if (root.ownerDocument.activeElement !== norm) norm.value = points.grad_norm ?? "";
    breakNodes.textContent = points.nodes.length ? `break at ${points.nodes.join(", ")}` : "";
    chain.checked = model.get("chain_rule");
    status.textContent = statusText(state);
    notice.textContent = model.get("notice") || "";
    panel.replaceChildren(panelView(state, checks, selected, select));
    view.update({
      graph,
      collapsed,
      selected,
      query: "",
      colorBy: "none",
      direction: "backward",
      current: focusNode(state),
      marks: nodeMarks(state, checks),
      edgeLabels: chain.checked ? chainLabels(state.chain_edges) : {},
    });
  }
  const events = [
    "change:state",
    "change:graph",
    "change:checks",
    "change:chain_rule",
    "change:notice",
  ];
  const stop = redrawOn(model, events, redraw);

  return () => {
    stop();
    stopKeys();
    sender.stop();
    view.destroy();
    root.remove();
  };
}

export default { render };
