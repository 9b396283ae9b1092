/**
 * The backward stepper's pure logic: toolbar commands and shortcuts, the status line, which
 * node the graph opens on, node marks (checks, failure, in-place culprit, breakpoints, steps
 * already run) and their legend, the nodes in backward order, chain-rule edge labels, check
 * texts and a rule docstring's inline runs. No DOM here, so node --test covers all of it.
 */

import { numberText } from "./format.js";

/**
 * Toolbar entries: the action sent to Python, the label, the shortcut, and what it needs
 * ("selected": a node clicked in the graph or chosen in the list).
 */
export const TOOLBAR = [
  { action: "reset", label: "Reset", key: "r" },
  { action: "previous", label: "Previous", key: "p" },
  { action: "next", label: "Next", key: "n" },
  { action: "run_to_end", label: "Run to end", key: "e" },
  { action: "run_to", label: "Run to here", key: "h", needs: "selected" },
  { action: "break_at", label: "Break here", key: "b", needs: "selected" },
  { action: "check_node", label: "Check this node", key: "c" },
  { action: "check_graph", label: "Check whole graph", key: "g" },
];

/** The help line listing every shortcut. */
export const HELP = `Keys: ${TOOLBAR.map((e) => `${e.key} ${e.label.toLowerCase()}`).join(" · ")}`;

/**
 * A button's title: what it does and its key.
 * @param {{action: string, label: string, key: string}} entry
 * @returns {string}
 */
export function buttonTitle(entry) {
  const detail = {
    run_to: "run until the selected node has run",
    break_at: "toggle a breakpoint on the selected node",
    check_node: "finite-difference check of the selected node (else the current one)",
    check_graph: "finite-difference check of every node, in backward order",
  }[entry.action];
  return detail ? `${entry.label}: ${detail} (${entry.key})` : `${entry.label} (${entry.key})`;
}

/**
 * The action string a toolbar entry sends, or null when it cannot run now.
 * @param {{action: string, needs?: string}} entry
 * @param {{selected: string, state: object}} context the selected node id ("" for none) and
 *   the stepper state
 * @returns {string|null}
 */
export function commandFor(entry, { selected, state }) {
  if (entry.needs === "selected" && !selected) return null;
  if (entry.action === "run_to") return `run_to:${selected}`;
  if (entry.action === "break_at") {
    const nodes = state.breakpoints ? state.breakpoints.nodes : [];
    const next = nodes.includes(selected)
      ? nodes.filter((id) => id !== selected)
      : [...nodes, selected];
    return `break_at:${next.join(",")}`;
  }
  if (entry.action === "check_node") {
    if (selected) return `check_node:${selected}`;
    return state.step ? "check_node" : null;
  }
  return entry.action;
}

/**
 * The toolbar entry of a key press (null for other keys or with a modifier).
 * @param {{key: string, ctrlKey?: boolean, metaKey?: boolean, altKey?: boolean}} event
 * @returns {object|null}
 */
export function entryForKey(event) {
  if (event.ctrlKey || event.metaKey || event.altKey) return null;
  return TOOLBAR.find((e) => e.key === event.key) || null;
}

/**
 * The action string setting the gradient-norm breakpoint from an input's text ("" clears).
 * @param {string} text
 * @returns {string}
 */
export function gradNormCommand(text) {
  const bound = text.trim();
  return `break_on_grad_norm:${bound === "" ? "none" : bound}`;
}

/**
 * A line saying where the pass is: position, total, and why it stopped.
 * @param {object} state BackwardStepper.state()
 * @returns {string}
 */
export function statusText(state) {
  const total = state.total_exact ? state.total_steps : `~${state.total_steps}`;
  const parts = [`step ${state.position} / ${total}`];
  if (state.done) parts.push("done");
  const stop = state.stopped_by;
  if (stop) {
    const why = {
      target: "reached",
      node: "breakpoint",
      nonfinite: "non-finite gradient",
      norm: `gradient norm ${numberText(stop.norm)}`,
    }[stop.kind];
    parts.push(`stopped (${why || stop.kind}) at ${stop.node}`);
  }
  if (state.error) {
    const where = state.error.node ? ` at ${state.error.node.id}` : "";
    parts.push(`backward failed${where}: ${state.error.type}`);
  }
  return parts.join(" · ");
}

/**
 * The node the graph shows as current: the failing node after an error, else the node of
 * the last step ("" before the first).
 * @param {object} state
 * @returns {string}
 */
export function focusNode(state) {
  if (state.error && state.error.node && state.error.node.id) return state.error.node.id;
  return state.step ? state.step.node.id : "";
}

/** Relative errors below this colour a passing check plain green; above, amber (finite
 * differences of large outputs alone reach ~1e-4 where the gradient is near 0). */
export const CLOSE_REL_ERROR = 1e-2;

/**
 * The class colouring a node by its check: tk-check-ok, tk-check-warn (passed, but with a
 * relative error above CLOSE_REL_ERROR), tk-check-bad, or tk-check-skip (not checked).
 * @param {{ok: boolean|null, max_rel_error?: number|string}} result
 * @returns {string}
 */
export function checkClass(result) {
  if (result.ok === null || result.ok === undefined) return "tk-check-skip";
  if (!result.ok) return "tk-check-bad";
  return result.max_rel_error > CLOSE_REL_ERROR ? "tk-check-warn" : "tk-check-ok";
}

/**
 * The legend of the graph's marks: each class (as nodeMarks and graphView give it to a
 * node) and what it means. The current step has a colour of its own, unlike any check's.
 */
export const MARK_LEGEND = [
  { mark: "tk-current", label: "current step" },
  { mark: "tk-visited", label: "already run" },
  { mark: "tk-selected", label: "selected" },
  { mark: "tk-breakpoint", label: "breakpoint" },
  { mark: "tk-check-ok", label: "check agrees" },
  { mark: "tk-check-warn", label: `agrees, rel error > ${CLOSE_REL_ERROR}` },
  { mark: "tk-check-bad", label: "check disagrees" },
  { mark: "tk-check-skip", label: "not checked" },
  { mark: "tk-failed", label: "backward failed" },
  { mark: "tk-inplace", label: "modified in place" },
];

/**
 * Extra classes per node id for the graph: steps already run, check results, the
 * whole-graph check's first failure, the failing node of an error, the in-place culprit and
 * breakpoints.
 * @param {object} state
 * @param {{nodes?: object, graph?: object|null}} checks
 * @returns {Object<string, string[]>}
 */
export function nodeMarks(state, checks) {
  const marks = {};
  const add = (id, name) => {
    if (!id) return;
    const list = (marks[id] ||= []);
    if (!list.includes(name)) list.push(name);
  };
  for (const id of state.visited || []) add(id, "tk-visited");
  for (const [id, result] of Object.entries((checks && checks.nodes) || {})) {
    add(id, checkClass(result));
  }
  const report = checks && checks.graph;
  if (report && report.first_failure) add(report.first_failure.id, "tk-check-bad");
  const error = state.error;
  if (error && error.node) add(error.node.id, "tk-failed");
  if (error && error.inplace && error.inplace.node) add(error.inplace.node.id, "tk-inplace");
  for (const id of (state.breakpoints && state.breakpoints.nodes) || []) add(id, "tk-breakpoint");
  return marks;
}

/**
 * Chain-rule labels for the edges (micrograd style): on the edge from an input's node to the
 * node whose rule ran, "local×upstream=product" (compact: edges are short). Two uses of one
 * input give two terms.
 * @param {{from: string, to: string, local: number, upstream: number, product: number}[]}
 *   chainEdges state.chain_edges
 * @returns {Object<string, string>} "source->target" -> text
 */
export function chainLabels(chainEdges) {
  const labels = {};
  for (const e of chainEdges || []) {
    if (!e.to) continue;
    const key = `${e.to}->${e.from}`;
    const term = `${numberText(e.local)}×${numberText(e.upstream)}=${numberText(e.product)}`;
    labels[key] = labels[key] ? `${labels[key]}; ${term}` : term;
  }
  return labels;
}

/**
 * One chain-rule line for the panel: "∂L/∂leaf0 += -3 × 1 = -3".
 * @param {{to: string|null, position: number, local: number, upstream: number,
 *   product: number}} entry
 * @returns {string}
 */
export function chainText(entry) {
  const target = entry.to || `input ${entry.position}`;
  const local = numberText(entry.local);
  const upstream = numberText(entry.upstream);
  return `∂L/∂${target} += ${local} × ${upstream} = ${numberText(entry.product)}`;
}

/**
 * A node check's result in words.
 * @param {object} result check_node's result (ok null: not checked)
 * @returns {string}
 */
export function checkText(result) {
  if (result.ok === null || result.ok === undefined) return result.verdict;
  const rel = numberText(result.max_rel_error);
  const errors = `max rel error ${rel}, max abs error ${numberText(result.max_abs_error)}`;
  const verdict = result.ok ? "agrees" : "DISAGREES";
  return `${result.id} ${result.node}: ${verdict} with finite differences (${errors})`;
}

/**
 * The whole-graph check's report in words.
 * @param {object} report check_graph's result
 * @returns {string}
 */
export function graphCheckText(report) {
  const failure = report.first_failure;
  if (failure) {
    const where = `${failure.id} ${failure.node} at step ${failure.step}`;
    const error = `max rel error ${numberText(failure.max_rel_error)}`;
    return `first disagreeing node: ${where} (${error}); ${report.checked} checked`;
  }
  const skipped = report.skipped.length
    ? `; ${report.skipped.length} skipped (inputs unknown: use step_backward(loss_fn, inputs))`
    : "";
  if (report.error) {
    const where = report.error.node ? ` at ${report.error.node.id}` : "";
    return `backward failed${where} after ${report.checked} agreeing nodes${skipped}`;
  }
  return `all ${report.checked} checked nodes agree${skipped}`;
}

/** Byte counts as the whole workbench writes them ("12 B", "1.5 KiB", "3 MiB"). */
export { bytesText } from "./format.js";

/**
 * The nodes (not folded groups) in the order the backward pass runs them, from the loss back
 * to the leaves: `state.order` (the engine's order) first, then any other node in the
 * graph's order (older states carry no order).
 * @param {object} state
 * @param {{id: string, kind: string}[]} nodes the graph's nodes
 * @returns {object[]}
 */
export function backwardOrder(state, nodes) {
  const byId = new Map(nodes.filter((n) => n.kind !== "group").map((n) => [n.id, n]));
  const ordered = (state.order || []).filter((id) => byId.has(id)).map((id) => byId.get(id));
  const listed = new Set(ordered.map((n) => n.id));
  return [...ordered, ...[...byId.values()].filter((n) => !listed.has(n.id))];
}

/**
 * A node's entry in the node chooser: its place in the backward order, whether its step has
 * run (✓), its id and what it is ("3 ✓ n2: MulBackward0").
 * @param {{id: string, grad_fn?: string, op?: string, kind: string}} node
 * @param {number} index its place in backwardOrder
 * @param {Set<string>} visited ids of the steps run
 * @returns {string}
 */
export function chooserText(node, index, visited) {
  const done = visited.has(node.id) ? " ✓" : "";
  return `${index + 1}${done} ${node.id}: ${node.grad_fn || node.op || node.kind}`;
}

/** Kinds of a docstring's inline runs (tensorkit.notebook.docstring.RUN_KINDS). */
export const RUN_KINDS = ["text", "code", "math", "emphasis", "strong"];

/**
 * A rule's docstring as inline runs to draw: `rule.doc_runs` where it is a list of runs
 * (recordings may come from untrusted files: anything else in it is dropped, an unknown
 * kind reads as text), else the plain `rule.doc` as one text run; [] without a docstring.
 * @param {{doc?: string|null, doc_runs?: unknown}} rule
 * @returns {{kind: string, text: string}[]}
 */
export function docRuns(rule) {
  if (Array.isArray(rule.doc_runs)) {
    return rule.doc_runs
      .filter((run) => run && typeof run.text === "string" && run.text)
      .map((run) => ({ kind: RUN_KINDS.includes(run.kind) ? run.kind : "text", text: run.text }));
  }
  return typeof rule.doc === "string" && rule.doc ? [{ kind: "text", text: rule.doc }] : [];
}

/**
 * Whether the rule's value disagrees with the finite-difference one at one element, by
 * numpy's allclose test (|produced - expected| > atol + rtol |expected|); non-finite values
 * (strings) disagree unless both are the same label.
 * @param {number|string} produced
 * @param {number|string} expected
 * @param {{atol?: number, rtol?: number}} tolerances check_node's (defaults as there)
 * @returns {boolean}
 */
export function disagrees(produced, expected, { atol = 1e-5, rtol = 1e-3 } = {}) {
  if (typeof produced !== "number" || typeof expected !== "number") return produced !== expected;
  return Math.abs(produced - expected) > atol + rtol * Math.abs(expected);
}

/**
 * One checked input's heading: "input 0 (3×2): max abs error 0.1, max rel error 0.5", with
 * how many elements were compared when they were sampled.
 * @param {{position: number, shape?: number[], elements: number, sampled?: boolean,
 *   max_abs_error: number|string, max_rel_error: number|string}} entry
 * @returns {string}
 */
export function checkInputText(entry) {
  const shape = entry.shape ? ` (${entry.shape.join("×") || "scalar"})` : "";
  const sampled = entry.sampled ? `, ${entry.elements} sampled elements` : "";
  const errors = `max abs error ${numberText(entry.max_abs_error)}, max rel error ${numberText(
    entry.max_rel_error,
  )}`;
  return `input ${entry.position}${shape}: ${errors}${sampled}`;
}

/**
 * The whole-graph check's rows, checked and skipped nodes alike, in the backward order
 * `order` (state.order; nodes it does not name come last).
 * @param {{nodes?: object[], skipped?: object[]}} report check_graph's result
 * @param {string[]} order
 * @returns {{id: string, step: string, node: string, verdict: string, mark: string}[]}
 */
export function graphCheckRows(report, order) {
  const skipped = (report.skipped || []).map((s) => ({
    ...s,
    ok: null,
    verdict: `not checked: ${s.reason}`,
  }));
  const place = (id) => {
    const at = (order || []).indexOf(id);
    return at < 0 ? Infinity : at;
  };
  return [...(report.nodes || []), ...skipped]
    .map((result) => ({ id: result.id, ...graphCheckRow(result), at: place(result.id) }))
    .sort((a, b) => a.at - b.at)
    .map(({ at, ...row }) => row);
}

/**
 * One row of the whole-graph check's list: step, node and verdict.
 * @param {{id: string, node: string, step?: number, ok: boolean|null, verdict: string,
 *   max_rel_error?: number|string}} result
 * @returns {{step: string, node: string, verdict: string, mark: string}}
 */
export function graphCheckRow(result) {
  const verdict =
    result.ok === null || result.ok === undefined
      ? result.verdict
      : `${result.ok ? "agrees" : "DISAGREES"} (max rel error ${numberText(result.max_rel_error)})`;
  return {
    step: result.step === undefined ? "" : String(result.step),
    node: `${result.id} ${result.node}`,
    verdict,
    mark: checkClass(result),
  };
}
