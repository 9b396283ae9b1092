/**
 * A tensor value payload (tensorkit.notebook.values.tensor_payload) on screen: small tensors
 * as a table of numbers, large 2-D ones as a heatmap of block means, other large ones as a
 * histogram, each under a shape/dtype line and (for large ones) the summary line. The pure
 * parts (which view, rows, colours, bars) are exported for tests.
 */

import { h, s } from "./dom.js";
import { numberText, shapeText, summaryText } from "./format.js";

/** Colour of a non-finite value ("nan", "inf", "-inf") in a heatmap. */
export const NONFINITE_COLOR = "rgb(200, 0, 200)";
/** Heatmap cell and histogram sizes, in pixels. */
const CELL = 8;
const HIST = { width: 200, height: 48 };

/**
 * Which view a payload gets: "none", "table", "heatmap", "histogram" or "summary".
 * @param {object|null|undefined} payload
 * @returns {string}
 */
export function payloadKind(payload) {
  if (payload == null) return "none";
  if (payload.values !== undefined) return "table";
  if (payload.heatmap && payload.heatmap.values.length) return "heatmap";
  if (payload.histogram && payload.histogram.counts.length) return "histogram";
  return "summary";
}

/**
 * A small tensor's values as rows of a table: a scalar is one cell, a vector one row, a
 * matrix its rows, and higher ranks are flattened to rows along the last dimension.
 * @param {*} values nested lists as tensor_payload sends them
 * @param {number[]} shape
 * @returns {Array<Array<number|string>>}
 */
export function tableRows(values, shape) {
  if (shape.length === 0) return [[values]];
  if (shape.length === 1) return [values];
  const flat = values.flat(shape.length - 1);
  const width = shape[shape.length - 1];
  const rows = [];
  for (let i = 0; i < flat.length; i += width) rows.push(flat.slice(i, i + width));
  return rows;
}

/**
 * A heatmap cell colour: red above and blue below a white base, deepest at the extremes. The
 * base is 0 when the values have both signs, else the extreme nearest 0 (the minimum of
 * non-negative values, the maximum of non-positive ones). Non-finite values (strings) are
 * magenta.
 * @param {number|string} value
 * @param {number} min
 * @param {number} max
 * @returns {string} "rgb(r, g, b)"
 */
export function heatColor(value, min, max) {
  if (typeof value !== "number") return NONFINITE_COLOR;
  const signed = min < 0 && max > 0;
  const base = signed ? 0 : min >= 0 ? min : max;
  const span = signed ? Math.max(-min, max) : max - min;
  const t = span > 0 ? Math.min(1, Math.abs(value - base) / span) : 0;
  const fade = Math.round(255 * (1 - t));
  return value < base ? `rgb(${fade}, ${fade}, 255)` : `rgb(255, ${fade}, ${fade})`;
}

/**
 * Histogram bars in a width x height box: one per bin, heights scaled to the largest count.
 * @param {{edges: number[], counts: number[]}} histogram
 * @param {number} width
 * @param {number} height
 * @returns {{x: number, y: number, width: number, height: number, count: number,
 *   from: number, to: number}[]}
 */
export function histogramBars(histogram, width, height) {
  const { edges, counts } = histogram;
  const top = Math.max(1, ...counts);
  const bar = width / counts.length;
  return counts.map((count, i) => {
    const tall = (height * count) / top;
    return {
      x: i * bar,
      y: height - tall,
      width: bar,
      height: tall,
      count,
      from: edges[i],
      to: edges[i + 1],
    };
  });
}

/**
 * The element showing a payload ("None" for null).
 * @param {object|null} payload
 * @returns {HTMLElement}
 */
export function payloadElement(payload) {
  const kind = payloadKind(payload);
  if (kind === "none") return h("span", { class: "tk-muted", text: "None" });
  const magnitude = payload.magnitude ? " (magnitudes)" : "";
  const head = h("div", {
    class: "tk-muted",
    text: `${shapeText(payload.shape)} ${payload.dtype}${magnitude}`,
  });
  const parts = [head];
  if (kind === "table") parts.push(numberTable(tableRows(payload.values, payload.shape)));
  else {
    if (payload.summary) parts.push(h("div", { text: summaryText(payload.summary) }));
    if (kind === "heatmap") parts.push(heatmapView(payload.heatmap, payload.shape));
    if (kind !== "summary" && payload.histogram.counts.length) {
      parts.push(histogramView(payload.histogram));
    }
  }
  return h("div", { class: `tk-payload tk-payload-${kind}` }, parts);
}

function numberTable(rows) {
  return h(
    "table",
    { class: "tk-values" },
    rows.map((row) => h("tr", {}, row.map((v) => h("td", { text: numberText(v) })))),
  );
}

function heatmapView(heatmap, shape) {
  const { values, min, max } = heatmap;
  const cols = values[0].length;
  const cells = values.flatMap((row, i) =>
    row.map((v, j) =>
      s(
        "rect",
        { x: j * CELL, y: i * CELL, width: CELL, height: CELL, fill: heatColor(v, min, max) },
        [s("title", { text: numberText(v) })],
      ),
    ),
  );
  const blocks = `${Math.ceil(shape[0] / values.length)}x${Math.ceil(shape[1] / cols)}`;
  const range = `${numberText(min)} … ${numberText(max)}`;
  return h("div", { class: "tk-heatmap" }, [
    s("svg", { width: cols * CELL, height: values.length * CELL, class: "tk-heatmap-svg" }, cells),
    h("div", {
      class: "tk-muted",
      text: `means of ~${blocks} blocks: ${range}, ${heatScale(min, max)}`,
    }),
  ]);
}

/**
 * The heatmap's colour scale in words (see heatColor).
 * @param {number} min
 * @param {number} max
 * @returns {string}
 */
export function heatScale(min, max) {
  if (min < 0 && max > 0) return "blue < 0 (white) < red";
  return min >= 0 ? "white (min) to red (max)" : "blue (min) to white (max)";
}

function histogramView(histogram) {
  const bars = histogramBars(histogram, HIST.width, HIST.height).map((b) =>
    s("rect", { class: "tk-hist-bar", x: b.x, y: b.y, width: b.width, height: b.height }, [
      s("title", { text: `${numberText(b.from)} … ${numberText(b.to)}: ${b.count}` }),
    ]),
  );
  const { edges } = histogram;
  return h("div", { class: "tk-histogram" }, [
    s("svg", { width: HIST.width, height: HIST.height, class: "tk-histogram-svg" }, bars),
    h("div", {
      class: "tk-muted",
      text: `histogram ${numberText(edges[0])} … ${numberText(edges[edges.length - 1])}`,
    }),
  ]);
}
