/**
 * The stepper's side panel, top to bottom: the failure (if backward raised), finite-difference
 * checks (for the selected or current node the rule's gradient beside the finite-difference
 * one, and for matrices a map of their difference; for the whole graph each node's result),
 * the current node (rule with its docstring, incoming gradients, produced gradients and
 * where they flow, chain-rule products, saved tensors) and the leaves' accumulated .grad.
 * Everything is built from DOM nodes and text, never parsed as HTML: recordings may come from
 * untrusted files.
 */

import { h, s } from "./dom.js";
import { numberText, shapeText } from "./format.js";
import {
  MARK_LEGEND,
  bytesText,
  chainText,
  checkInputText,
  checkText,
  disagrees,
  docRuns,
  graphCheckRows,
  graphCheckText,
} from "./stepper_logic.js";
import { differenceMapElement, payloadElement, sideBySide } from "./values.js";

/**
 * The panel's content.
 * @param {object} state BackwardStepper.state()
 * @param {{nodes: object, graph: object|null}} checks the widget's check results
 * @param {string} selected the selected node id ("" for none)
 * @param {(id: string) => void} [onSelect] called with a node id when a row of the
 *   whole-graph check is clicked
 * @returns {HTMLElement}
 */
export function panelView(state, checks, selected, onSelect) {
  const step = state.step;
  const parts = [];
  if (state.error) parts.push(errorView(state.error));
  const nodeChecks = (checks && checks.nodes) || {};
  // the selected node's check, else the current node's
  const shown = [selected, step && step.node.id].find((id) => id && nodeChecks[id]);
  const report = checks && checks.graph;
  if (shown || report) {
    parts.push(
      section("finite-difference checks", [
        shown ? nodeCheckView(nodeChecks[shown]) : "",
        report ? graphCheckView(report, state.order, shown, onSelect) : "",
      ]),
    );
  }
  const idle = h("div", { class: "tk-muted tk-section", text: "Not started: press Next (n)." });
  parts.push(step ? stepView(step, state.retain_graph) : idle);
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
      docView(rule),
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

/** The tag drawing each kind of docstring run (see stepper_logic.js docRuns). */
const RUN_TAGS = { code: "code", math: "var", emphasis: "em", strong: "strong" };

/**
 * A rule's docstring as inline DOM nodes: text as text, code in <code>, math in <var>,
 * emphasis in <em>, strong in <strong> ("" without a docstring).
 * @param {{doc?: string|null, doc_runs?: unknown}} rule
 * @returns {HTMLElement|string}
 */
export function docView(rule) {
  const runs = docRuns(rule);
  if (!runs.length) return "";
  const nodes = runs.map((run) =>
    run.kind === "text"
      ? run.text
      : h(RUN_TAGS[run.kind], { class: `tk-doc-${run.kind}`, text: run.text }),
  );
  return h("div", { class: "tk-muted tk-rule-doc" }, nodes);
}

/**
 * One node's check: its verdict and, per checked input, the rule's gradient beside the
 * finite-difference gradient (disagreeing elements marked) and, for inputs of two or more
 * dimensions, the map of their difference.
 * @param {object} result check_node's result (with its `id`)
 * @returns {HTMLElement}
 */
function nodeCheckView(result) {
  const parts = [h("div", { class: "tk-check-result", text: checkText(result) })];
  const tolerances = { atol: result.atol, rtol: result.rtol };
  for (const entry of result.inputs || []) {
    const sampled = entry.sampled ? " (sampled elements)" : "";
    const compared = [
      h("div", { class: "tk-check-input-title", text: checkInputText(entry) }),
      sideBySide(
        { title: `produced by the rule${sampled}`, payload: entry.produced ?? null },
        { title: `finite differences${sampled}`, payload: entry.expected ?? null },
        (a, b) => disagrees(a, b, tolerances),
      ),
    ];
    if (entry.difference) {
      const errors = `max abs error ${numberText(entry.max_abs_error)} · max rel error ${numberText(
        entry.max_rel_error,
      )}`;
      compared.push(differenceMapElement(entry.difference, errors, result.atol));
    }
    const mark = entry.ok ? "tk-check-input" : "tk-check-input tk-check-input-bad";
    parts.push(h("div", { class: mark }, compared));
  }
  return h("div", { class: "tk-node-check" }, parts);
}

/**
 * The whole-graph check: its summary line and a row per node in backward order (click one to
 * see its check), the row whose check is shown marked.
 * @param {object} report check_graph's result
 * @param {string[]|undefined} order state.order
 * @param {string|undefined} shown the node whose check is shown
 * @param {((id: string) => void)|undefined} onSelect
 * @returns {HTMLElement}
 */
function graphCheckView(report, order, shown, onSelect) {
  const rows = graphCheckRows(report, order).map((row) => {
    const attrs = { class: "tk-graph-check-row", "data-id": row.id, "data-mark": row.mark };
    const tr = h("tr", attrs, [
      h("td", { text: row.step }),
      h("td", { text: row.node }),
      h("td", { text: row.verdict }),
    ]);
    if (row.id === shown) tr.classList.add("tk-shown");
    if (onSelect) tr.addEventListener("click", () => onSelect(row.id));
    return tr;
  });
  const head = h("tr", {}, ["step", "node", "result"].map((text) => h("th", { text })));
  return h("div", { class: "tk-check-graph-view" }, [
    h("div", { class: "tk-check-graph", text: graphCheckText(report) }),
    rows.length ? h("table", { class: "tk-graph-checks" }, [head, ...rows]) : "",
  ]);
}

/**
 * The legend of the graph's marks: each a small box drawn by the same CSS rules as the
 * graph's nodes with that mark (so it follows the theme), and its meaning. The boxes carry
 * the mark as `data-sample`, not as a class: nothing looking for marked nodes finds them.
 * @param {string[]} [marks] the classes to show (default: all of MARK_LEGEND)
 * @returns {HTMLElement}
 */
export function markLegend(marks) {
  const entries = MARK_LEGEND.filter((e) => !marks || marks.includes(e.mark));
  return h(
    "div",
    { class: "tk-legend tk-mark-legend" },
    entries.map(({ mark, label }) =>
      h("span", { class: "tk-legend-item", "data-mark": mark }, [
        s("svg", { class: "tk-mark-swatch", width: 26, height: 16, viewBox: "-4 -4 34 24" }, [
          s("g", { class: "tk-mark-sample", "data-sample": mark }, [
            s("rect", { width: 26, height: 16, rx: 4 }),
          ]),
        ]),
        label,
      ]),
    ),
  );
}
