/**
 * The side panel's part for a tk.jit graph (tensorkit/notebook/jit_graph.py): the generated
 * kernel of a fused group (the selected op's, else the fused group opened last) as a code
 * block, the graph breaks with their reasons, call sites and verdicts (guarded on a value, or
 * eager), and the guards a replay checks.
 * Text only (DOM nodes, never HTML): a recording may come from an untrusted file.
 */

import { h } from "./dom.js";

/**
 * The fused group to show the kernel of: the one holding `node`, else `opened` (a group id,
 * "" for none) when it is a fused group of `graph`; null for none.
 * @param {object} graph the model (its `groups`)
 * @param {object|null} node the selected node
 * @param {string} opened the fused group the user opened last
 * @returns {object|null} the group ({label, source, ops, ...})
 */
export function kernelGroup(graph, node, opened) {
  const groups = graph.groups || {};
  const fused = (id) => (id && groups[id] && groups[id].kind === "fused" ? groups[id] : null);
  return (node && fused(node.group)) || fused(opened);
}

/**
 * Whether group `id` of `graph` is a fused group.
 * @param {object} graph
 * @param {string} id
 * @returns {boolean}
 */
export function isFused(graph, id) {
  return kernelGroup(graph, null, id) !== null;
}

/**
 * The panel's sections for a tk.jit graph (none for other graphs): the kernel, the breaks,
 * the guards, and what the passes rewrote (fused kernels, convolutions run channels last),
 * when the model lists it.
 * @param {object} graph
 * @param {object|null} node the selected node
 * @param {string} opened the fused group opened last ("" for none)
 * @returns {HTMLElement[]}
 */
export function jitSections(graph, node, opened) {
  const jit = graph.jit;
  if (!jit) return [];
  const sections = [];
  const group = kernelGroup(graph, node, opened);
  if (group) {
    sections.push(
      section(`kernel of ${group.label}`, [h("pre", { class: "tk-code", text: group.source || "" })]),
    );
  }
  const breaks = jit.breaks || [];
  sections.push(
    section(
      `graph breaks (${breaks.length})`,
      breaks.length
        ? [list(breaks.map(breakText), "tk-jit-breaks")]
        : [h("div", { class: "tk-muted", text: "none: the call is one graph" })],
    ),
    section("guards", [list(jit.guards || [], "tk-jit-guards")]),
  );
  if (jit.rewrites && jit.rewrites.length) {
    sections.push(section("rewrites", [list(jit.rewrites, "tk-jit-rewrites")]));
  }
  if (jit.title) sections.unshift(h("div", { class: "tk-jit-title", text: jit.title }));
  return sections;
}

/**
 * One graph break in words: its reason, call site, and what a compiled call does there (a
 * guarded break checks its recorded value; any other runs the call eagerly).
 * @param {{reason: string, site: string, guarded?: boolean, value?: string}} b
 * @returns {string}
 */
export function breakText(b) {
  const where = b.site ? `${b.reason} (at ${b.site})` : b.reason;
  return b.guarded ? `${where}: guarded on ${b.value}` : `${where}: the call runs eagerly`;
}

function section(title, children) {
  return h("div", { class: "tk-section" }, [h("div", { class: "tk-section-title", text: title }), ...children]);
}

function list(items, className) {
  return h(
    "ul",
    { class: `tk-jit-list ${className}` },
    items.map((text) => h("li", { text })),
  );
}
