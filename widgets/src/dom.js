/**
 * Small DOM helpers shared by the widgets: element creation, tensor payload tables and the
 * node details panel.
 */

import {
  COLOR_MODES,
  callSiteText,
  MEASURES,
  NO_DATA_COLOR,
  measureText,
  nodeLabel,
  nodeMeasure,
  numberText,
  scopesText,
  shapeText,
  summaryText,
} from "./format.js";

const SVG_NS = "http://www.w3.org/2000/svg";

/**
 * An HTML element with a class name, attributes and children (strings become text).
 * @param {string} tag
 * @param {object} [attrs] `class`, `text` and plain attributes
 * @param {(Node|string)[]} [children]
 * @returns {HTMLElement}
 */
export function h(tag, attrs = {}, children = []) {
  return fill(document.createElement(tag), attrs, children);
}

/**
 * An SVG element, like {@link h}.
 * @param {string} tag
 * @param {object} [attrs]
 * @param {(Node|string)[]} [children]
 * @returns {SVGElement}
 */
export function s(tag, attrs = {}, children = []) {
  return fill(document.createElementNS(SVG_NS, tag), attrs, children);
}

function fill(element, attrs, children) {
  for (const [key, value] of Object.entries(attrs)) {
    if (value == null) continue;
    if (key === "text") element.textContent = value;
    else element.setAttribute(key, String(value));
  }
  for (const child of children) element.append(child);
  return element;
}

/**
 * A tensor payload (see tensorkit.notebook.values.tensor_payload) as a small table of
 * numbers (up to 2-D), or as its summary line and shape for larger or deeper ones.
 * @param {object|null} payload
 * @returns {HTMLElement}
 */
export function payloadView(payload) {
  if (payload == null) return h("span", { class: "tk-muted", text: "None" });
  const head = `${shapeText(payload.shape)} ${payload.dtype}`;
  const values = payload.values;
  if (values === undefined || payload.shape.length > 2) {
    const text = values === undefined ? summaryText(payload.summary) : "values hidden (> 2-D)";
    return h("div", { class: "tk-payload" }, [h("div", { class: "tk-muted", text: head }), text]);
  }
  const rank = payload.shape.length;
  const rows = rank === 0 ? [[values]] : rank === 1 ? [values] : values;
  const table = h(
    "table",
    { class: "tk-values" },
    rows.map((row) => h("tr", {}, row.map((v) => h("td", { text: numberText(v) })))),
  );
  return h("div", { class: "tk-payload" }, [h("div", { class: "tk-muted", text: head }), table]);
}

/**
 * The node details panel: a two-column grid of keys and values (kind, shapes, dtypes, call
 * site, summary, measures). Plain divs under the widget's own classes, so that a host's rules
 * for dl/dt/dd (JupyterLab's output area has some) cannot rearrange it.
 * @param {object|null} node
 * @returns {HTMLElement}
 */
export function nodeDetails(node) {
  if (!node) return h("div", { class: "tk-muted", text: "Click a node to see its details." });
  const shapes = node.shapes || { in: [], out: [] };
  const rows = [
    ["node", `${node.id}: ${nodeLabel(node)}`],
    ["kind", node.kind],
    ["grad_fn", node.grad_fn],
    ["inputs", (shapes.in || []).map(shapeText).join(", ")],
    ["outputs", (shapes.out || []).map(shapeText).join(", ")],
    ["dtypes", (node.dtypes || []).join(", ")],
    ["device", node.device],
    ["module", node.module],
    ["in", scopesText(node)],
    ["call site", callSiteText(node)],
    ["values", summaryText(node.summary)],
    ...MEASURES.map((mode) => {
      const { label, unit } = COLOR_MODES[mode];
      const value = nodeMeasure(node, mode);
      return [label, value === null ? "" : measureText(value, unit)];
    }),
  ].filter(([, value]) => value);
  return h(
    "div",
    { class: "tk-details", role: "list" },
    rows.map(([key, value]) =>
      h("div", { class: "tk-details-row", role: "listitem" }, [
        h("span", { class: "tk-details-key", text: key }),
        h("span", { class: "tk-details-value", text: value }),
      ]),
    ),
  );
}

/** The node kinds' colours, as the graph draws them when no measure colours the nodes. */
export const NODE_KINDS = [
  ["op", "tk-swatch-op"],
  ["input / parameter", "tk-swatch-tensor"],
  ["folded group", "tk-swatch-group"],
  ["gradient op", "tk-swatch-backward"],
  ["selected", "tk-swatch-selected"],
];

/**
 * A legend entry: a swatch (coloured by `color`, or by the CSS class `swatchClass`) and text.
 * @param {{color?: string, swatchClass?: string}} look
 * @param {string} text
 * @returns {HTMLElement}
 */
export function legendItem({ color, swatchClass }, text) {
  const swatch = h("span", {
    class: `tk-swatch${swatchClass ? ` ${swatchClass}` : ""}`,
    style: color ? `background: ${color}` : null,
  });
  return h("span", { class: "tk-legend-item" }, [swatch, text]);
}

/**
 * The colour legend (see format.js nodeColors): a colour bar between the smallest and
 * largest value with units ("log" when the scale is logarithmic) or, for NaN/inf, swatches;
 * and a "no data" swatch. Without a legend (colouring "none"), the node kinds' colours.
 * @param {object|null} legend
 * @returns {HTMLElement}
 */
export function legendView(legend) {
  const box = h("div", { class: "tk-legend" });
  if (!legend) {
    box.append(...NODE_KINDS.map(([text, swatchClass]) => legendItem({ swatchClass }, text)));
    return box;
  }
  box.append(h("span", { class: "tk-legend-title", text: legend.label }));
  if (legend.swatches) {
    box.append(...legend.swatches.map(([text, color]) => legendItem({ color }, text)));
    return box;
  }
  if (legend.max === undefined) {
    box.append(h("span", { class: "tk-muted", text: "no node has this measure" }));
    return box;
  }
  const bar = `background: linear-gradient(to right, ${legend.stops.join(", ")})`;
  box.append(
    h("span", { class: "tk-legend-min", text: measureText(legend.min, legend.unit) }),
    h("span", { class: "tk-legend-bar", style: bar }),
    h("span", { class: "tk-legend-max", text: measureText(legend.max, legend.unit) }),
  );
  if (legend.log) box.append(h("span", { class: "tk-muted", text: "(log scale)" }));
  if (legend.missing) {
    box.append(legendItem({ color: NO_DATA_COLOR }, `no data (${legend.missing})`));
  }
  return box;
}

/**
 * Draw now, and again whenever one of the model's `events` fires; returns the function that
 * stops listening (for the widget's cleanup).
 * @param {{on: Function, off: Function}} model the anywidget model
 * @param {string[]} events e.g. ["change:state"]
 * @param {() => void} redraw
 * @returns {() => void}
 */
export function redrawOn(model, events, redraw) {
  for (const name of events) model.on(name, redraw);
  redraw();
  return () => {
    for (const name of events) model.off(name, redraw);
  };
}

/**
 * Keyboard shortcuts on `root`: `find(event)` names the entry for a key (or nothing), and
 * `run(entry)` carries it out. Keys typed into a text box or a menu are left alone. Returns
 * the function that stops listening.
 * @param {HTMLElement} root
 * @param {(event: KeyboardEvent) => any} find
 * @param {(entry: any) => void} run
 * @returns {() => void}
 */
export function onShortcut(root, find, run) {
  const onKey = (event) => {
    const tag = event.target && event.target.tagName;
    if (tag === "INPUT" || tag === "SELECT") return;
    const entry = find(event);
    if (!entry) return;
    event.preventDefault();
    run(entry);
  };
  root.addEventListener("keydown", onKey);
  return () => root.removeEventListener("keydown", onKey);
}
