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

/** Significant digits of every number the workbench shows. */
export const DIGITS = 3;

/**
 * A number in `DIGITS` significant digits, trailing zeros dropped ("0.123", "1.5", "12300");
 * integers stay exact ("12345": counts are never rounded); "nan", "inf" and "-inf" for
 * non-finite numbers; strings (a payload's "nan") pass through; "" for null.
 * @param {number|string|null|undefined} value
 * @returns {string}
 */
export function numberText(value) {
  if (value == null) return "";
  if (typeof value !== "number") return String(value);
  if (Number.isNaN(value)) return "nan";
  if (!Number.isFinite(value)) return value > 0 ? "inf" : "-inf";
  if (Number.isInteger(value) && Math.abs(value) < 1e21) return String(value);
  const rounded = Number(value.toPrecision(DIGITS));
  if (rounded === 0) return "0";
  const size = Math.abs(rounded);
  if (size >= 1e21 || size < 1e-4) return rounded.toExponential(DIGITS - 1).replace(/\.?0+e/, "e");
  return String(rounded);
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
 * The title line of a node box: the model's `label` where it has one (older models: the op,
 * grad_fn or kind), and for groups their size.
 * @param {object} node
 * @returns {string}
 */
export function nodeLabel(node) {
  if (node.kind === "group") return `${node.label || node.module} (${node.count})`;
  if (node.label) return node.label;
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
 * The ranges an op ran in, outermost first ("train_step › conv2d"): record_function ranges
 * and the composite functions (conv2d, cross_entropy, ...) tensorkit builds of several ops.
 * @param {object} node
 * @returns {string}
 */
export function scopesText(node) {
  return (node.scopes || []).join(" › ");
}

/**
 * Where the op was called: the call site's `display` ("cell [3], line 2") when the model
 * gives one, else its text ("train.py:14"); "" when unknown.
 * @param {object} node
 * @returns {string}
 */
export function callSiteText(node) {
  const site = node.call_site;
  if (!site) return "";
  return typeof site === "object" ? site.display || "" : String(site);
}

/**
 * The hover title: id, label, shapes, value summary, scopes, call site and the measures known.
 * @param {object} node
 * @returns {string}
 */
export function nodeTitle(node) {
  const lines = [`${node.id}: ${nodeLabel(node)} -> ${nodeShapes(node)}`];
  const summary = summaryText(node.summary);
  if (summary) lines.push(summary);
  if (node.scopes && node.scopes.length) lines.push(`in ${scopesText(node)}`);
  const site = callSiteText(node);
  if (site) lines.push(site);
  const measures = measuresText(node);
  if (measures) lines.push(measures);
  return lines.join("\n");
}

/**
 * The measures known for a node, as "forward time 2 µs, bytes allocated 8 B, ...".
 * @param {object} node
 * @returns {string}
 */
export function measuresText(node) {
  return MEASURES.map((mode) => [COLOR_MODES[mode], nodeMeasure(node, mode)])
    .filter(([, value]) => value !== null)
    .map(([{ label, unit }, value]) => `${label} ${measureText(value, unit)}`)
    .join(", ");
}

/**
 * The colouring modes: a label, the unit of the measure, and the node field it reads
 * (`metrics[key]` as the model computes them; older models had only profiler `records`).
 */
export const COLOR_MODES = {
  none: { label: "none" },
  forward_time: { label: "forward time", unit: "s", key: "time_ns", record: "time_ns" },
  backward_time: { label: "backward time", unit: "s", key: "backward_ns" },
  bytes: { label: "bytes allocated", unit: "B", key: "bytes", record: "alloc_bytes" },
  grad_norm: { label: "gradient norm", unit: "", key: "grad_norm" },
  nan: { label: "NaN / inf" },
};

/** The modes that colour by a measured quantity (all but "none" and "nan"). */
export const MEASURES = ["forward_time", "backward_time", "bytes", "grad_norm"];

/** Older names of modes, still accepted. */
const ALIASES = { time: "forward_time", memory: "bytes" };

/** A scale turns logarithmic when its largest value is this many times its smallest. */
export const LOG_SPAN = 100;

/** Fill of nodes without the measure being shown. */
export const NO_DATA_COLOR = "#eeeeee";

/**
 * The mode a `colorBy` name stands for ("none" for unknown names).
 * @param {string} name
 * @returns {string}
 */
export function colorMode(name) {
  const mode = ALIASES[name] || name;
  return mode in COLOR_MODES ? mode : "none";
}

/**
 * A node's measure for a mode, or null when unknown. "nan": 1 when its values held NaN or
 * inf, 0 when they did not.
 * @param {object} node
 * @param {string} colorBy a mode or its older name
 * @returns {number|null}
 */
export function nodeMeasure(node, colorBy) {
  const mode = colorMode(colorBy);
  if (mode === "nan") {
    const s = node.summary;
    return s ? Number(Boolean(s.nan || s.inf)) : null;
  }
  const spec = COLOR_MODES[mode];
  if (!spec || !spec.key) return null;
  const value = node.metrics?.[spec.key] ?? (spec.record ? node.records?.[spec.record] : null);
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

/**
 * A colour scale over non-negative values: linear from 0 to the largest, or logarithmic
 * from the smallest positive value when the values span `LOG_SPAN` times or more.
 * @param {number[]} values
 * @returns {{min: number, max: number, log: boolean}|null} null for no values
 */
export function colorScale(values) {
  if (!values.length) return null;
  const max = values.reduce((a, b) => Math.max(a, b), -Infinity);
  const smallest = values.filter((v) => v > 0).reduce((a, b) => Math.min(a, b), Infinity);
  if (max > 0 && max / smallest >= LOG_SPAN) return { min: smallest, max, log: true };
  return { min: Math.min(0, ...values.filter((v) => v < 0)), max, log: false };
}

/**
 * Where a value falls on a scale, in [0, 1] (values outside are clamped; a scale of one
 * value puts it at 1).
 * @param {{min: number, max: number, log: boolean}} scale
 * @param {number} value
 * @returns {number}
 */
export function scaleWeight(scale, value) {
  const { min, max, log } = scale;
  if (max <= min) return 1;
  const w = log
    ? (Math.log(Math.max(value, min)) - Math.log(min)) / (Math.log(max) - Math.log(min))
    : (value - min) / (max - min);
  return Math.min(1, Math.max(0, w));
}

/**
 * The fill for a weight: green (0) through yellow to red (1).
 * @param {number} weight
 * @returns {string}
 */
export function weightColor(weight) {
  return `hsl(${Math.round(120 - 120 * weight)}, 70%, 80%)`;
}

/**
 * Fills of the nodes for a colouring mode, and the legend describing them: for a measure,
 * `{mode, label, unit, min, max, log, stops, missing}`; for "nan", `{mode, label, swatches}`;
 * null for "none". Nodes without the measure get `NO_DATA_COLOR`.
 * @param {object[]} nodes
 * @param {string} colorBy
 * @returns {{colors: Map<string, string>, legend: object|null}}
 */
export function nodeColors(nodes, colorBy) {
  const mode = colorMode(colorBy);
  const colors = new Map();
  if (mode === "none") return { colors, legend: null };
  const measured = nodes.map((n) => [n.id, nodeMeasure(n, mode)]);
  const missing = measured.filter(([, v]) => v === null).length;
  for (const [id, v] of measured) if (v === null) colors.set(id, NO_DATA_COLOR);
  const { label, unit } = COLOR_MODES[mode];
  if (mode === "nan") {
    for (const [id, v] of measured) if (v !== null) colors.set(id, weightColor(v));
    const swatches = [
      ["finite", weightColor(0)],
      ["NaN / inf", weightColor(1)],
      ["no data", NO_DATA_COLOR],
    ];
    return { colors, legend: { mode, label, swatches, missing } };
  }
  const values = measured.filter(([, v]) => v !== null);
  const scale = colorScale(values.map(([, v]) => v));
  for (const [id, v] of values) colors.set(id, weightColor(scaleWeight(scale, v)));
  const stops = [0, 0.25, 0.5, 0.75, 1].map(weightColor);
  return { colors, legend: { mode, label, unit, ...(scale || {}), stops, missing } };
}

/** Time units: the factor from nanoseconds, and the name. */
const TIME_UNITS = [
  [1, "ns"],
  [1e3, "µs"],
  [1e6, "ms"],
  [1e9, "s"],
];
/** Byte units, 1024-based. */
const BYTE_UNITS = [
  [1, "B"],
  [2 ** 10, "KiB"],
  [2 ** 20, "MiB"],
  [2 ** 30, "GiB"],
];

/**
 * `value` in the largest of `units` ([factor, name], ascending) that keeps it at 1 or more,
 * in `DIGITS` significant digits; a value that rounds to 1000 moves to the next unit
 * (999.5 ns is "1 µs"); the largest unit takes any size, in whole units from 1000 on.
 * Non-finite values as numberText; "" for null.
 * @param {number} value
 * @param {[number, string][]} units
 * @returns {string}
 */
function unitText(value, units) {
  if (value == null) return "";
  if (!Number.isFinite(value)) return numberText(value);
  let n = 0;
  while (n + 1 < units.length && Math.abs(value) >= units[n + 1][0]) n++;
  let scaled = Number((value / units[n][0]).toPrecision(DIGITS));
  if (Math.abs(scaled) >= 1000 && n + 1 < units.length) {
    n++;
    scaled = Number((value / units[n][0]).toPrecision(DIGITS));
  }
  const whole = Math.abs(scaled) >= 1000; // only in the largest unit: no rounding away digits
  const text = whole ? String(Math.round(value / units[n][0])) : numberText(scaled);
  return `${text} ${units[n][1]}`;
}

/**
 * A duration given in nanoseconds: "0 ns", "850 ns", "194 µs", "1.5 ms", "12.3 s".
 * @param {number} ns
 * @returns {string}
 */
export function timeText(ns) {
  return unitText(ns, TIME_UNITS);
}

/**
 * A byte count in 1024-based units: "0 B", "512 B", "144 KiB", "-1.5 MiB" (freed), "2 GiB".
 * @param {number} bytes
 * @returns {string}
 */
export function bytesText(bytes) {
  return unitText(bytes, BYTE_UNITS);
}

/**
 * A measure with its unit: times (given in ns) as timeText, bytes as bytesText, plain
 * numbers (unit "") as numberText.
 * @param {number} value
 * @param {string} unit "s" (value in ns), "B" or ""
 * @returns {string}
 */
export function measureText(value, unit) {
  if (unit === "s") return timeText(value);
  if (unit === "B") return bytesText(value);
  return numberText(value);
}
