/**
 * The stepper's side panel: the failure (if backward raised), the current node (rule,
 * incoming gradients, produced gradients and where they flow, chain-rule products, saved
 * tensors), finite-difference check results and the leaves' accumulated .grad.
 */

import { h } from "./dom.js";
import { shapeText } from "./format.js";
import { bytesText, chainText, checkText, graphCheckText } from "./stepper_logic.js";
import { payloadElement } from "./values.js";

/**
 * The panel's content.
 * @param {object} state BackwardStepper.state()
 * @param {{nodes: object, graph: object|null}} checks the widget's check results
 * @param {string} selected the selected node id ("" for none)
 * @returns {HTMLElement}
 */
export function panelView(state, checks, selected) {
  const step = state.step;
  const parts = [];
  if (state.error) parts.push(errorView(state.error));
  const idle = h("div", { class: "tk-muted", text: "Not started: press Next (n)." });
  parts.push(step ? stepView(step, state.retain_graph) : idle);
  const nodeChecks = (checks && checks.nodes) || {};
  const ids = [step && step.node.id, selected].filter((id) => id && nodeChecks[id]);
  const report = checks && checks.graph;
  if (ids.length || report) {
    parts.push(
      section("finite-difference checks", [
        ...[...new Set(ids)].map((id) =>
          h("div", { class: "tk-check-result", text: checkText(nodeChecks[id]) }),
        ),
        report ? h("div", { class: "tk-check-graph", text: graphCheckText(report) }) : "",
      ]),
    );
  }
  parts.push(
    section(
      "leaves' .grad so far",
      state.leaf_grads.map((leaf) =>
        labelled(`${leaf.id} (${shapeText(leaf.shape)})`, payloadElement(leaf.grad), "tk-leaf"),
      ),
    ),
  );
  return h("div", { class: "tk-step-panel" }, parts);
}

function section(title, items) {
  const head = h("div", { class: "tk-section-title", text: title });
  return h("div", { class: "tk-section" }, [head, ...items]);
}

function stepView(step, retainGraph) {
  const rule = step.rule || {};
  const leaf = step.grads_out.length === 0 && rule.op === "accumulate_grad";
  return h("div", { class: "tk-step" }, [
    h("div", { class: "tk-step-node", text: `${step.node.id}: ${step.node.name}` }),
    section("rule", [
      h("div", { class: "tk-rule", text: rule.function || rule.op || "" }),
      rule.doc ? h("div", { class: "tk-muted", text: rule.doc }) : "",
      rule.where ? h("div", { class: "tk-muted tk-rule-where", text: rule.where }) : "",
    ]),
    section(
      step.grads_in.length > 1 ? "incoming gradients" : "incoming gradient",
      step.grads_in.map((g, i) =>
        step.grads_in.length > 1 ? labelled(`output ${i}`, payloadElement(g)) : payloadElement(g),
      ),
    ),
    leaf
      ? section("produced", [h("div", { class: "tk-muted", text: "added into the leaf's .grad" })])
      : section(
          "produced gradients",
          step.grads_out.map((g) => {
            const flow = `input ${g.position} → ${g.to ?? "no gradient needed"}`;
            return labelled(flow, payloadElement(g.grad), "tk-grad-out");
          }),
        ),
    step.chain && step.chain.length
      ? section(
          "chain rule",
          step.chain.map((e) => h("div", { class: "tk-chain", text: chainText(e) })),
        )
      : "",
    savedView(step.saved, retainGraph),
  ]);
}

function labelled(label, content, className = "") {
  return h("div", { class: className }, [h("div", { class: "tk-muted", text: label }), content]);
}

function savedView(saved, retainGraph) {
  if (!saved.length) return "";
  const total = saved.reduce((sum, t) => sum + t.bytes, 0);
  const rows = saved.map((t) => {
    const status = t.freed ? "freed" : retainGraph ? "kept (retain_graph=True)" : "alive";
    return h("tr", { class: t.freed ? "tk-saved-freed" : "" }, [
      h("td", { text: t.role }),
      h("td", { text: shapeText(t.shape) }),
      h("td", { text: t.dtype }),
      h("td", { text: bytesText(t.bytes) }),
      h("td", { text: status }),
    ]);
  });
  return section(`saved tensors (${bytesText(total)})`, [h("table", { class: "tk-saved" }, rows)]);
}

function errorView(error) {
  const message = `${error.type}: ${error.message}`;
  const lines = [h("div", { class: "tk-error-message", text: message })];
  if (error.node) {
    lines.push(h("div", { text: `failing node: ${error.node.id}: ${error.node.name}` }));
  }
  const inplace = error.inplace;
  if (inplace) {
    const where = inplace.site ? ` at ${inplace.site}` : "";
    const culprit = inplace.node;
    const node = culprit ? ` (node ${culprit.id ?? "outside this graph"}: ${culprit.name})` : "";
    const versions = `version ${inplace.version}, expected ${inplace.expected_version}`;
    const text = `saved ${inplace.saved} was modified in place by ${inplace.op}${where}${node}`;
    lines.push(h("div", { class: "tk-inplace-culprit", text: `${text}: ${versions}` }));
  }
  if (error.forward_trace) {
    const summary = h("summary", { text: "forward call that created the node" });
    lines.push(h("details", {}, [summary, h("pre", { text: error.forward_trace })]));
  }
  return h("div", { class: "tk-error" }, lines);
}
