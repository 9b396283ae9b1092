/**
 * Text for shapes, value summaries, node labels and node colours. Pure functions.
 */

/**
 * "2x3", "scalar" for [], "?" when unknown.
 * @param {number[]|null|undefined} shape
 * @returns {string}
 */
export function shapeText(shape) {
  if (shape == null) return "?";
  return shape.length ? shape.join("x") : "scalar";
}

/**
 * A number in at most 4 significant digits; strings ("nan", "inf") pass through.
 * @param {number|string} value
 * @returns {string}
 */
export function numberText(value) {
  if (typeof value !== "number") return String(value);
  if (Number.isInteger(value)) return String(value);
  return Number(value.toPrecision(4)).toString();
}

/**
 * One line for a value summary ({min, max, mean, std, nan, inf}) or null.
 * @param {object|null|undefined} summary
 * @returns {string}
 */
export function summaryText(summary) {
  if (!summary) return "";
  const parts = ["min", "max", "mean", "std"]
    .filter((k) => summary[k] != null)
    .map((k) => `${k} ${numberText(summary[k])}`);
  if (summary.nan) parts.push(`${summary.nan} nan`);
  if (summary.inf) parts.push(`${summary.inf} inf`);
  return parts.join(", ");
}

/**
 * The title line of a node box: the op (or grad_fn, or kind), and for groups their size.
 * @param {object} node
 * @returns {string}
 */
export function nodeLabel(node) {
  if (node.kind === "group") return `${node.module} (${node.count})`;
  if (node.kind === "tensor") return node.requires_grad ? "param" : "tensor";
  return node.op || node.grad_fn || node.kind;
}

/**
 * The shape line of a node box: its output shapes.
 * @param {object} node
 * @returns {string}
 */
export function nodeShapes(node) {
  const out = (node.shapes && node.shapes.out) || [];
  return out.map(shapeText).join(", ");
}

/**
 * The hover title: id, label, shapes and value summary.
 * @param {object} node
 * @returns {string}
 */
export function nodeTitle(node) {
  const lines = [`${node.id}: ${nodeLabel(node)} -> ${nodeShapes(node)}`];
  const summary = summaryText(node.summary);
  if (summary) lines.push(summary);
  if (node.call_site) lines.push(node.call_site);
  return lines.join("\n");
}

/** Record key behind each colouring mode. */
const RECORD_KEYS = { time: "time_ns", memory: "alloc_bytes" };

/**
 * A colouring weight in [0, 1] per node id for `colorBy` ("time", "memory", "nan");
 * nodes without the measure are left out. "time"/"memory" scale by the largest record.
 * @param {object[]} nodes
 * @param {string} colorBy
 * @returns {Map<string, number>}
 */
export function colorWeights(nodes, colorBy) {
  const weights = new Map();
  if (colorBy === "nan") {
    for (const node of nodes) {
      const s = node.summary;
      if (s) weights.set(node.id, s.nan || s.inf ? 1 : 0);
    }
    return weights;
  }
  const key = RECORD_KEYS[colorBy];
  if (!key) return weights;
  const values = nodes
    .filter((n) => n.records && typeof n.records[key] === "number")
    .map((n) => [n.id, n.records[key]]);
  const top = Math.max(0, ...values.map(([, v]) => v));
  for (const [id, v] of values) weights.set(id, top > 0 ? v / top : 0);
  return weights;
}
