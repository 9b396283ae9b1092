/**
 * A tensor value payload (tensorkit.notebook.values.tensor_payload) on screen: small tensors
 * as a table of numbers, large 2-D ones as a heatmap of block means, other large ones as a
 * histogram, each under a shape/dtype line and (for large ones) the summary line; two
 * payloads side by side (a rule's gradient and the finite-difference one, disagreeing cells
 * marked) and a difference map with its colour legend. The pure parts (which view, rows,
 * colours, bars, legend stops) are exported for tests.
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

/** Colour of a difference-map cell where no element was compared. */
export const UNCOMPARED_COLOR = "rgb(225, 225, 225)";
/** A difference map's larger side, in pixels, and the bounds of its cells' size. */
const DIFF_MAP = { side: 240, minCell: 6, maxCell: 24 };

/**
 * The size of a difference map's cells, in pixels: the map's larger side fills about
 * DIFF_MAP.side, with cells neither too small to see nor huge for a tiny matrix.
 * @param {number} rows
 * @param {number} cols
 * @returns {number}
 */
export function diffCellSize(rows, cols) {
  const fit = Math.floor(DIFF_MAP.side / Math.max(rows, cols, 1));
  return Math.min(DIFF_MAP.maxCell, Math.max(DIFF_MAP.minCell, fit));
}

/**
 * The CSS gradient stops of a colour bar from `min` to `max` in heatColor's colours (white
 * at the base: 0 for values of both signs).
 * @param {number} min
 * @param {number} max
 * @returns {string[]} e.g. ["rgb(0, 0, 255) 0%", "rgb(255, 255, 255) 50%", ...]
 */
export function heatStops(min, max) {
  const at = (value, percent) => `${heatColor(value, min, max)} ${percent}%`;
  if (!(max > min)) return [at(min, 0), at(max, 100)];
  const signed = min < 0 && max > 0;
  const zero = Math.round((100 * -min) / (max - min));
  return signed ? [at(min, 0), at(0, zero), at(max, 100)] : [at(min, 0), at(max, 100)];
}

/**
 * Two payloads side by side, under their titles: as two number tables when both are small
 * and of one shape (cells where `differs(a, b)` marked tk-mismatch in both), else each in
 * its own bounded view (payloadElement).
 * @param {{title: string, payload: object|null}} left
 * @param {{title: string, payload: object|null}} right
 * @param {(a: number|string, b: number|string) => boolean} differs
 * @returns {HTMLElement}
 */
export function sideBySide(left, right, differs) {
  const [a, b] = [left.payload, right.payload];
  const paired =
    payloadKind(a) === "table" &&
    payloadKind(b) === "table" &&
    shapeText(a.shape) === shapeText(b.shape);
  const views = paired ? markedTables(a, b, differs) : [payloadElement(a), payloadElement(b)];
  return h(
    "div",
    { class: "tk-compare" },
    [left, right].map(({ title }, i) =>
      h("div", { class: "tk-side" }, [h("div", { class: "tk-side-title", text: title }), views[i]]),
    ),
  );
}

/** Two small payloads of one shape as number tables, disagreeing cells marked in both. */
function markedTables(a, b, differs) {
  const rowsA = tableRows(a.values, a.shape);
  const rowsB = tableRows(b.values, b.shape);
  const wrong = rowsA.map((row, i) => row.map((v, j) => differs(v, rowsB[i][j])));
  return [
    [a, rowsA],
    [b, rowsB],
  ].map(([payload, rows]) => {
    const head = h("div", {
      class: "tk-muted",
      text: `${shapeText(payload.shape)} ${payload.dtype}`,
    });
    const table = h(
      "table",
      { class: "tk-values" },
      rows.map((row, i) =>
        h(
          "tr",
          {},
          row.map((v, j) =>
            h("td", { class: wrong[i][j] ? "tk-mismatch" : null, text: numberText(v) }),
          ),
        ),
      ),
    );
    return h("div", { class: "tk-payload tk-payload-table" }, [head, table]);
  });
}

/**
 * The colour scale of a difference map: symmetric about 0 (white), out to the largest
 * difference or `floor` (the check's absolute tolerance), whichever is larger, so that
 * round-off far below the tolerance stays white instead of filling the scale.
 * @param {{min: number, max: number}} map
 * @param {number} floor
 * @returns {{min: number, max: number}}
 */
export function diffScale(map, floor) {
  const span = Math.max(Math.abs(map.min), Math.abs(map.max), floor || 0);
  return { min: -span, max: span };
}

/**
 * A difference map (tensorkit.notebook.check.difference_map) as an SVG heat map, with its
 * colour legend (diffScale), a swatch for cells not compared and a line saying what a cell
 * holds; `caption` (the max abs/rel errors) under it.
 * @param {{rows: number, cols: number, block: number[], values: Array<Array<number|string|null>>,
 *   min: number, max: number}} map
 * @param {string} caption
 * @param {number} [floor] the smallest half-width of the colour scale (diffScale)
 * @returns {HTMLElement}
 */
export function differenceMapElement(map, caption, floor = 0) {
  const { values } = map;
  const { min, max } = diffScale(map, floor);
  const cell = diffCellSize(values.length, (values[0] || []).length);
  const cells = values.flatMap((row, i) =>
    row.map((v, j) => {
      const fill = v === null ? UNCOMPARED_COLOR : heatColor(v, min, max);
      const title = v === null ? "not compared" : `produced − expected: ${numberText(v)}`;
      return s(
        "rect",
        { x: j * cell, y: i * cell, width: cell, height: cell, fill },
        [s("title", { text: title })],
      );
    }),
  );
  const width = (values[0] || []).length * cell;
  const svg = s("svg", { width, height: values.length * cell, class: "tk-diff-svg" }, cells);
  const [blockRows, blockCols] = map.block;
  const per =
    blockRows * blockCols > 1 ? `, each cell the largest of ~${blockRows}×${blockCols}` : "";
  const matrix = `${map.rows}×${map.cols}`;
  const bar = `background: linear-gradient(to right, ${heatStops(min, max).join(", ")})`;
  const legend = h("div", { class: "tk-legend tk-diff-legend" }, [
    h("span", { class: "tk-legend-min", text: numberText(min) }),
    h("span", { class: "tk-legend-bar", style: bar }),
    h("span", { class: "tk-legend-max", text: numberText(max) }),
    h("span", { class: "tk-legend-item" }, [
      h("span", { class: "tk-swatch", style: `background: ${UNCOMPARED_COLOR}` }),
      "not compared",
    ]),
    h("span", { class: "tk-legend-item" }, [
      h("span", { class: "tk-swatch", style: `background: ${NONFINITE_COLOR}` }),
      "nan/inf",
    ]),
  ]);
  return h("div", { class: "tk-diff-map" }, [
    h("div", { class: "tk-side-title", text: `produced − expected (${matrix}${per})` }),
    svg,
    legend,
    h("div", { class: "tk-diff-errors", text: caption }),
  ]);
}
