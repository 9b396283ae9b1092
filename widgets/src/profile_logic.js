/**
 * The profile view's pure logic: table columns and sorting, rows linked to a selection, the
 * memory timeline's scales, axes and paths, and allocator block states. Times and bytes are
 * written by format.js, as everywhere in the workbench.
 */

import { bytesText, numberText, shapeText, timeText } from "./format.js";

const shapeList = (shapes) => (shapes || []).map(shapeText).join(", ");

/**
 * The op table's columns: sort key, header, whether numeric, the sort value and the cell text.
 * `needs` names the model's `has` flag without which the column is hidden.
 */
export const COLUMNS = [
  { key: "index", label: "#", numeric: true, value: (r) => r.index },
  { key: "name", label: "op", value: (r) => r.name },
  { key: "phase", label: "phase", value: (r) => r.phase },
  { key: "module", label: "module", value: (r) => r.module || "" },
  {
    key: "shapes",
    label: "shapes",
    needs: "shapes",
    value: (r) =>
      r.output_shapes == null
        ? ""
        : `${shapeList(r.input_shapes)} -> ${shapeList(r.output_shapes)}`,
  },
  {
    key: "host_time",
    label: "host time",
    numeric: true,
    value: (r) => r.host_time_ns,
    format: timeText,
  },
  {
    key: "gpu_time",
    label: "GPU time",
    numeric: true,
    needs: "gpu_time",
    value: (r) => r.gpu_time_ns,
    format: timeText,
  },
  {
    key: "bytes",
    label: "allocated",
    numeric: true,
    needs: "memory",
    value: (r) => r.alloc_bytes,
    format: bytesText,
  },
  { key: "call_site", label: "call site", needs: "call_sites", value: (r) => r.call_site || "" },
];

/**
 * The columns shown for a model (those whose data was recorded).
 * @param {object} model
 * @returns {object[]}
 */
export function visibleColumns(model) {
  const has = (model && model.has) || {};
  return COLUMNS.filter((c) => !c.needs || has[c.needs]);
}

/**
 * The cell text of `column` for `row` ("" when unknown).
 * @param {object} column
 * @param {object} row
 * @returns {string}
 */
export function cellText(column, row) {
  const value = column.value(row);
  if (value == null) return "";
  return column.format ? column.format(value) : String(value);
}

/**
 * The sort after clicking the header of `column`: a new column sorts numbers descending and
 * text ascending; the same column again reverses.
 * @param {{key: string, dir: string}|null} sort
 * @param {object} column
 * @returns {{key: string, dir: string}}
 */
export function nextSort(sort, column) {
  if (sort && sort.key === column.key) {
    return { key: column.key, dir: sort.dir === "ascending" ? "descending" : "ascending" };
  }
  return { key: column.key, dir: column.numeric ? "descending" : "ascending" };
}

/**
 * `rows` sorted by `column` in direction `dir` (stable, by op index on ties); unknown values
 * go last either way.
 * @param {object[]} rows
 * @param {object} column
 * @param {string} dir "ascending" | "descending"
 * @returns {object[]}
 */
export function sortRows(rows, column, dir) {
  const sign = dir === "descending" ? -1 : 1;
  const compare = (a, b) => {
    const x = column.value(a);
    const y = column.value(b);
    if (x == null || y == null) return (x == null) - (y == null);
    if (column.numeric) return sign * (x - y);
    return sign * String(x).localeCompare(String(y));
  };
  return [...rows].sort((a, b) => compare(a, b) || a.index - b.index);
}

/**
 * The op indices linked to the selected one: a forward op's backward ops, a backward op's
 * forward op and its siblings.
 * @param {object[]} rows
 * @param {number} selected
 * @returns {Set<number>}
 */
export function linkedIndices(rows, selected) {
  const linked = new Set();
  if (selected < 0) return linked;
  const row = rows.find((r) => r.index === selected);
  const forward = row && row.forward_index != null ? row.forward_index : selected;
  if (forward !== selected) linked.add(forward);
  for (const r of rows) {
    if (r.forward_index === forward && r.index !== selected) linked.add(r.index);
  }
  return linked;
}

/**
 * The smallest step of 1, 2 or 5 times a power of ten that cuts `span` into at most `count`
 * parts.
 * @param {number} span
 * @param {number} count
 * @returns {number}
 */
export function niceStep(span, count) {
  if (!(span > 0)) return 1;
  const raw = span / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((m) => m >= raw * (1 - 1e-12));
  return step;
}

/**
 * Ticks of the op-index axis from `first` to `last`: whole indices, at most `count` + 1.
 * @param {number} first
 * @param {number} last
 * @param {number} [count]
 * @returns {number[]}
 */
export function indexTicks(first, last, count = 6) {
  const step = Math.max(1, niceStep(last - first, count));
  const ticks = [];
  for (let t = Math.ceil(first / step) * step; t <= last; t += step) ticks.push(t);
  return ticks;
}

const BYTE_UNIT_NAMES = ["B", "KiB", "MiB", "GiB"];

/**
 * The bytes axis up to `max`: steps of 1, 2 or 5 in the binary unit (B, KiB, MiB, GiB) of
 * `max` (whole bytes below 1 KiB), labelled in that one unit ("0 MiB", "0.5 MiB", "1 MiB");
 * `top` is the last tick (at least 1).
 * @param {number} max
 * @param {number} [count]
 * @returns {{top: number, ticks: number[], labels: string[]}}
 */
export function byteTicks(max, count = 4) {
  const top = Math.max(1, max);
  let power = 0;
  while (1024 ** (power + 1) <= top && power < BYTE_UNIT_NAMES.length - 1) power++;
  const unit = 1024 ** power;
  const step = power ? niceStep(top / unit, count) : Math.max(1, niceStep(top, count));
  const ticks = [];
  for (let n = 0; n * step * unit < top * (1 - 1e-12); n++) ticks.push(n * step);
  ticks.push(ticks.length * step);
  const labels = ticks.map((t) => `${numberText(t)} ${BYTE_UNIT_NAMES[power]}`);
  return { top: ticks[ticks.length - 1] * unit, ticks: ticks.map((t) => t * unit), labels };
}

/**
 * Scales, axes and SVG paths of the memory timeline in a `width` x `height` plot area: step
 * lines of allocated, reserved and peak bytes over the op index; the bytes axis runs from 0
 * to its last tick.
 * @param {object} memory the model's `memory`
 * @param {number} width
 * @param {number} height
 * @returns {{x: (i: number) => number, y: (b: number) => number, top: number,
 *   xTicks: number[], yTicks: number[], yLabels: string[],
 *   paths: {allocated: string, reserved: string, peak: string},
 *   indexAt: (px: number) => number}}
 */
export function timelineScale(memory, width, height) {
  const index = memory.index;
  const first = index.length ? index[0] : 0;
  const last = index.length ? index[index.length - 1] + (memory.stride || 1) : 1;
  const span = Math.max(1, last - first);
  const values = ["allocated", "reserved", "peak"].flatMap((k) => memory[k] || []);
  const axis = byteTicks(Math.max(0, ...values.filter((v) => v != null)));
  const top = axis.top;
  const x = (i) => ((i - first) / span) * width;
  const y = (b) => height - (b / top) * height;
  const path = (series) => {
    let d = "";
    let pen = false;
    series.forEach((v, n) => {
      if (v == null) {
        pen = false;
        return;
      }
      const x0 = x(index[n]).toFixed(1);
      const x1 = x(n + 1 < index.length ? index[n + 1] : last).toFixed(1);
      const yv = y(v).toFixed(1);
      d += `${pen ? "L" : "M"}${x0},${yv}L${x1},${yv}`;
      pen = true;
    });
    return d;
  };
  const indexAt = (px) => {
    const wanted = first + (px / width) * span;
    let best = index[0];
    for (const i of index) if (i <= wanted) best = i;
    return best;
  };
  const paths = {
    allocated: path(memory.allocated || []),
    reserved: path(memory.reserved || []),
    peak: path(memory.peak || []),
  };
  const xTicks = indexTicks(first, last - (memory.stride || 1));
  return { x, y, top, xTicks, yTicks: axis.ticks, yLabels: axis.labels, paths, indexAt };
}

/**
 * A block's state and size after event number `event`: the last entry of its history at or
 * before it; state "none" (size 0) before its first event.
 * @param {[number, string, number][]} history [event number, state, size] entries
 * @param {number} event
 * @returns {{state: string, size: number}}
 */
export function blockAt(history, event) {
  let found = { state: "none", size: 0 };
  for (const [at, state, size] of history) {
    if (at > event) break;
    found = { state, size };
  }
  return found;
}

/**
 * Bytes per state (in_use, cached, returned) over `blocks` after event number `event`.
 * @param {object[]} blocks
 * @param {number} event
 * @returns {{in_use: number, cached: number, returned: number}}
 */
export function stateTotals(blocks, event) {
  const totals = { in_use: 0, cached: 0, returned: 0 };
  for (const block of blocks) {
    const { state, size } = blockAt(block.history, event);
    if (state in totals) totals[state] += size;
  }
  return totals;
}

/**
 * Bar segments of each group's time by phase, as fractions of the largest group total.
 * @param {object[]} groups the model's `modules` or `functions`
 * @param {string} key the field naming a group ("module" or "function")
 * @returns {{name: string, parts: {phase: string, fraction: number, ns: number}[]}[]}
 */
export function groupBars(groups, key) {
  const top = Math.max(1, ...groups.map((g) => g.total_ns));
  return groups.map((g) => ({
    name: g[key],
    parts: Object.entries(g.host_ns).map(([phase, ns]) => ({ phase, ns, fraction: ns / top })),
  }));
}

/**
 * Round ticks of a time axis from 0 to `spanNs` (at most `count` + 1), in nanoseconds.
 * @param {number} spanNs
 * @param {number} [count]
 * @returns {number[]}
 */
export function timeTicks(spanNs, count = 5) {
  const step = niceStep(spanNs, count);
  const ticks = [];
  for (let n = 0; n * step <= spanNs * (1 + 1e-12); n++) ticks.push(n * step);
  return ticks;
}

/**
 * "42% hidden under backward", or what there is to say when a rank had no communication.
 * @param {number|null} share
 * @returns {string}
 */
export function hiddenText(share) {
  if (share == null) return "no communication";
  return `${numberText(Math.round(share * 100))}% hidden under backward`;
}

/**
 * The ranks' tracks in a plot `width` pixels wide: per rank its compute bars (by phase) and its
 * communication bars as {x, w} in pixels (at least 1 px wide, so a short collective stays
 * visible), the summary line under its label and the time axis's ticks.
 * @param {object} ranks the model's `ranks` (rank_model.build_ranks)
 * @param {number} width
 * @returns {{x: (ns: number) => number, ticks: number[], tracks: {rank: number, summary: string,
 *   compute: {x: number, w: number, phase: string, title: string}[],
 *   comm: {x: number, w: number, title: string}[]}[]}}
 */
export function rankTracks(ranks, width) {
  const span = Math.max(1, ranks.span_ns);
  const x = (ns) => (ns / span) * width;
  const bar = (start, stop) => ({ x: x(start), w: Math.max(1, x(stop) - x(start)) });
  const tracks = ranks.ranks.map((r) => ({
    rank: r.rank,
    summary:
      `compute ${timeText(r.compute_ns)} · communication ${timeText(r.comm_ns)}` +
      ` (${r.collectives} collectives, ${bytesText(r.bytes)}; waited ${timeText(r.wait_ns)})` +
      ` · ${hiddenText(r.hidden_share)}`,
    compute: r.compute.map(([start, stop, phase]) => ({
      ...bar(start, stop),
      phase,
      title: `${phase} ${timeText(stop - start)}`,
    })),
    comm: r.comm.map(([start, stop, names]) => ({
      ...bar(start, stop),
      title: `${names.join(", ")} ${timeText(stop - start)}`,
    })),
  }));
  return { x, ticks: timeTicks(span), tracks };
}
