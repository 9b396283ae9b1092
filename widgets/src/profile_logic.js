/**
 * The profile view's pure logic: table columns and sorting, time and byte text, rows linked
 * to a selection, the memory timeline's scales and paths, and allocator block states.
 */

import { shapeText } from "./format.js";

/**
 * Time in PyTorch's style (as tensorkit.profiler.report.format_time): us below 1 ms, then ms, s.
 * @param {number} ns
 * @returns {string}
 */
export function timeText(ns) {
  if (ns >= 1e9) return `${(ns / 1e9).toFixed(3)}s`;
  if (ns >= 1e6) return `${(ns / 1e6).toFixed(3)}ms`;
  return `${(ns / 1e3).toFixed(3)}us`;
}

/**
 * Bytes as b / Kb / Mb / Gb, 1024-based (as tensorkit.profiler.report.format_bytes).
 * @param {number} n
 * @returns {string}
 */
export function bytesText(n) {
  for (const [unit, size] of [
    ["Gb", 2 ** 30],
    ["Mb", 2 ** 20],
    ["Kb", 2 ** 10],
  ]) {
    if (Math.abs(n) >= size) return `${(n / size).toFixed(2)} ${unit}`;
  }
  return `${n} b`;
}

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
 * Scales and SVG paths of the memory timeline in a `width` x `height` box: step lines of
 * allocated, reserved and peak bytes over the op index.
 * @param {object} memory the model's `memory`
 * @param {number} width
 * @param {number} height
 * @returns {{x: (i: number) => number, y: (b: number) => number, top: number,
 *   paths: {allocated: string, reserved: string, peak: string}, indexAt: (px: number) => number}}
 */
export function timelineScale(memory, width, height) {
  const index = memory.index;
  const first = index.length ? index[0] : 0;
  const last = index.length ? index[index.length - 1] + (memory.stride || 1) : 1;
  const span = Math.max(1, last - first);
  const values = ["allocated", "reserved", "peak"].flatMap((k) => memory[k] || []);
  const top = Math.max(1, ...values.filter((v) => v != null));
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
  return { x, y, top, paths, indexAt };
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
