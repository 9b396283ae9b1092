/**
 * The profile view widget (anywidget front end): the sortable per-op table, time by module
 * and by function (bars with their phase legend), the memory timeline (with axes and a
 * legend), the allocator's blocks, and a distributed run's ranks (a track per rank: compute
 * and communication side by side, the share hidden under backward). Synced traits: `model`
 * (read) and `selected` (a profiler event index, -1 for none; written on row and timeline
 * clicks).
 */

import { h, legendItem, s } from "./dom.js";
import { bytesText, timeText } from "./format.js";
import {
  blockAt,
  cellText,
  linkedIndices,
  groupBars,
  hiddenText,
  nextSort,
  rankTracks,
  sortRows,
  stateTotals,
  timelineScale,
  visibleColumns,
} from "./profile_logic.js";

/** The memory timeline's size in pixels: its width follows the output (`width` until it is
 * measured), the margins hold the axes' labels. */
const TIMELINE = { width: 640, height: 150, margin: { left: 60, right: 14, top: 10, bottom: 34 } };
const PHASES = ["forward", "backward", "optimizer"];
/** The ranks' timeline: a fixed viewBox that scales to the output's width; per rank a compute
 * lane above a communication lane. */
const RANKS = { width: 640, lane: 12, gap: 3, track: 36, margin: { left: 56, right: 14, top: 6 } };
/** The module name of ops outside any nn module (as tensorkit.notebook.profile_model). */
const NO_MODULE = "(no module)";

function section(title, children) {
  return h("div", { class: "tk-profile-section" }, [
    h("div", { class: "tk-section-title", text: title }),
    ...children,
  ]);
}

/**
 * The op table; `onSelect(index)` on a row click. Returns the element and an `update(selected,
 * linked)` that marks rows.
 */
function opTable(model, onSelect) {
  const columns = visibleColumns(model);
  const rows = model.rows || [];
  const trs = new Map();
  for (const row of rows) {
    const cells = columns.map((c) => {
      const value = c.value(row);
      const attrs = { text: cellText(c, row) };
      if (c.numeric) {
        attrs.class = "tk-num";
        if (value != null) attrs["data-value"] = value;
      }
      return h("td", attrs);
    });
    const tr = h("tr", { "data-index": row.index, class: `tk-phase-${row.phase}` }, cells);
    tr.addEventListener("click", () => onSelect(row.index));
    trs.set(row.index, tr);
  }
  const tbody = h("tbody", {}, [...trs.values()]);
  let sort = null;
  const ths = columns.map((column) => {
    const th = h("th", { "data-sort-key": column.key, "aria-sort": "none", text: column.label });
    th.addEventListener("click", () => {
      sort = nextSort(sort, column);
      for (const other of ths) other.setAttribute("aria-sort", "none");
      th.setAttribute("aria-sort", sort.dir);
      tbody.replaceChildren(...sortRows(rows, column, sort.dir).map((r) => trs.get(r.index)));
    });
    return th;
  });
  const table = h("table", { class: "tk-profile-table" }, [
    h("thead", {}, [h("tr", {}, ths)]),
    tbody,
  ]);
  return {
    element: h("div", { class: "tk-profile-scroll" }, [table]),
    update(selected, linked, reveal) {
      for (const [index, tr] of trs) {
        tr.classList.toggle("tk-selected", index === selected);
        tr.classList.toggle("tk-linked", linked.has(index));
      }
      const tr = trs.get(selected);
      if (reveal && tr && tr.scrollIntoView) tr.scrollIntoView({ block: "nearest" });
    },
  };
}

/** The legend of the op table's row marks. */
function rowLegend() {
  return h("div", { class: "tk-legend tk-row-legend" }, [
    legendItem({ swatchClass: "tk-row-swatch-selected" }, "selected op"),
    legendItem({ swatchClass: "tk-row-swatch-linked" }, "its forward / backward ops"),
  ]);
}

/**
 * The legend of the bars' colours: one swatch per phase that any group has time in.
 * @param {object[]} groups
 * @returns {HTMLElement}
 */
function phaseLegend(groups) {
  const present = new Set(groups.flatMap((g) => Object.keys(g.host_ns || {})));
  const items = PHASES.filter((p) => present.has(p)).map((phase) =>
    legendItem({ swatchClass: `tk-phase-swatch-${phase}` }, phase),
  );
  return h("div", { class: "tk-legend tk-phase-legend" }, [
    h("span", { class: "tk-legend-title", text: "host time" }),
    ...items,
  ]);
}

/**
 * Time by module path or by function (`key`), one stacked bar (forward, backward,
 * optimizer) per group under the phases' legend; `update(name)` marks the selected op's group.
 */
function groupTable(groups, key) {
  const rows = groupBars(groups || [], key).map(({ name, parts }) => {
    const bar = h(
      "div",
      { class: "tk-profile-bar" },
      parts.map((p) =>
        h("span", {
          class: `tk-phase-${p.phase}`,
          style: `width: ${(100 * p.fraction).toFixed(2)}%`,
          title: `${p.phase}: ${timeText(p.ns)}`,
        }),
      ),
    );
    const text = parts.map((p) => `${p.phase} ${timeText(p.ns)}`).join(", ");
    return h("tr", { "data-group": name }, [
      h("td", { text: name }),
      h("td", { class: "tk-profile-bar-cell" }, [bar]),
      h("td", { class: "tk-muted", text }),
    ]);
  });
  const table = h("table", { class: `tk-profile-groups tk-profile-${key}s` }, [
    h("tbody", {}, rows),
  ]);
  return {
    element: h("div", {}, [phaseLegend(groups || []), table]),
    update(selected) {
      for (const tr of rows) {
        tr.classList.toggle("tk-group-of-selected", tr.dataset.group === selected);
      }
    },
  };
}

/** The timeline's axes: bytes on the left (grid lines at each tick), op index below. */
function timelineAxes(scale, width, height) {
  const yAxis = s(
    "g",
    { class: "tk-axis tk-axis-y" },
    scale.yTicks.flatMap((tick, n) => {
      const y = scale.y(tick).toFixed(1);
      const text = scale.yLabels[n];
      return [
        s("line", { class: "tk-grid", x1: 0, x2: width, y1: y, y2: y }),
        s("text", { x: -6, y, dy: "0.32em", "text-anchor": "end", text }),
      ];
    }),
  );
  const xAxis = s("g", { class: "tk-axis tk-axis-x", transform: `translate(0,${height})` }, [
    s("line", { x1: 0, x2: width, y1: 0, y2: 0 }),
    ...scale.xTicks.flatMap((tick) => {
      const x = scale.x(tick).toFixed(1);
      return [
        s("line", { x1: x, x2: x, y1: 0, y2: 4 }),
        s("text", { x, y: 15, "text-anchor": "middle", text: String(tick) }),
      ];
    }),
    s("text", {
      class: "tk-axis-title",
      x: width / 2,
      y: 29,
      "text-anchor": "middle",
      text: "op index",
    }),
  ]);
  return [yAxis, xAxis];
}

/** The timeline's legend: the lines drawn, then the peak and what a point covers. */
function timelineLegend(memory) {
  const line = (kind, text) =>
    legendItem({ swatchClass: `tk-line-swatch tk-line-swatch-${kind}` }, text);
  const device = memory.device && memory.device !== "cpu" ? ` on ${memory.device}` : "";
  return h("div", { class: "tk-legend tk-memory-legend" }, [
    line("allocated", `allocated${device}`),
    memory.caching ? line("reserved", "reserved (allocator pool)") : "",
    line("peak", "peak so far"),
    memory.backward_start != null
      ? line("backward", `backward starts (op ${memory.backward_start})`)
      : "",
    line("marker", "selected op"),
    h("span", {
      class: "tk-muted",
      text:
        `peak ${bytesText(memory.peak_bytes)} after op ${memory.peak_index}` +
        (memory.stride > 1 ? ` · each point covers ${memory.stride} ops (their largest)` : ""),
    }),
  ]);
}

/**
 * The memory timeline, as wide as its output (redrawn when that changes); `onSelect(index)`
 * on a click. `update(selected)` moves the marker; `dispose()` stops watching the width.
 */
function timeline(memory, onSelect) {
  const { height, margin } = TIMELINE;
  const plotHeight = height - margin.top - margin.bottom;
  const svg = s("svg", { class: "tk-profile-timeline", height });
  let selected = -1;
  let scale = null;
  let width = 0;
  const draw = (outer) => {
    width = Math.max(120, outer) - margin.left - margin.right;
    scale = timelineScale(memory, width, plotHeight);
    const children = [...timelineAxes(scale, width, plotHeight)];
    if (memory.caching) {
      children.push(s("path", { class: "tk-mem-reserved", d: scale.paths.reserved }));
    }
    children.push(
      s("path", { class: "tk-mem-peak", d: scale.paths.peak }),
      s("path", { class: "tk-mem-allocated", d: scale.paths.allocated }),
    );
    if (memory.backward_start != null) {
      const x = scale.x(memory.backward_start);
      children.push(s("line", { class: "tk-mem-backward", x1: x, x2: x, y1: 0, y2: plotHeight }));
    }
    if (selected >= 0) {
      const x = scale.x(selected);
      children.push(s("line", { class: "tk-profile-marker", x1: x, x2: x, y1: 0, y2: plotHeight }));
    }
    svg.setAttribute("viewBox", `0 0 ${width + margin.left + margin.right} ${height}`);
    svg.replaceChildren(
      s("g", { class: "tk-plot", transform: `translate(${margin.left},${margin.top})` }, children),
    );
  };
  svg.addEventListener("click", (event) => {
    const box = svg.getBoundingClientRect();
    const px = event.clientX - box.left - margin.left;
    if (scale && px >= 0 && px <= width) onSelect(scale.indexAt(px));
  });
  const element = h("div", { class: "tk-memory" }, [
    svg,
    timelineLegend(memory),
    h("div", { class: "tk-muted", text: memory.allocator }),
  ]);
  draw(TIMELINE.width);
  let observer = null;
  if (typeof ResizeObserver !== "undefined") {
    observer = new ResizeObserver(() => {
      const outer = Math.round(element.clientWidth);
      if (outer && outer !== width + margin.left + margin.right) draw(outer);
    });
    observer.observe(element);
  }
  return {
    element,
    update(index) {
      selected = index;
      draw(width + margin.left + margin.right);
    },
    dispose() {
      if (observer) observer.disconnect();
    },
  };
}

/**
 * A distributed run's ranks: one track per rank (its compute bars coloured by phase, its
 * collectives below them, on the ranks' common clock), a summary line per rank and the share
 * of all communication hidden under backward.
 */
function rankView(ranks) {
  const { width, lane, gap, track, margin } = RANKS;
  const layout = rankTracks(ranks, width);
  const axisY = layout.tracks.length * track;
  const height = margin.top + axisY + 30;
  const rect = (b, cls) =>
    s("rect", { class: cls, x: b.x.toFixed(1), width: b.w.toFixed(1), height: lane }, [
      s("title", { text: b.title }),
    ]);
  const tracks = layout.tracks.map((t, n) => {
    const label = `rank ${t.rank}`;
    const place = `translate(0,${n * track})`;
    return s("g", { class: "tk-rank-track", "data-rank": t.rank, transform: place }, [
      s("text", { class: "tk-rank-label", x: -6, y: lane, "text-anchor": "end", text: label }),
      s("g", { class: "tk-rank-compute" }, t.compute.map((b) => rect(b, `tk-rank-${b.phase}`))),
      s(
        "g",
        { class: "tk-rank-comm", transform: `translate(0,${lane + gap})` },
        t.comm.map((b) => rect(b, "tk-rank-collective")),
      ),
    ]);
  });
  const axis = s("g", { class: "tk-axis tk-axis-x", transform: `translate(0,${axisY})` }, [
    s("line", { x1: 0, x2: width, y1: 0, y2: 0 }),
    ...layout.ticks.flatMap((tick) => {
      const x = layout.x(tick).toFixed(1);
      return [
        s("line", { x1: x, x2: x, y1: 0, y2: 4 }),
        s("text", { x, y: 15, "text-anchor": "middle", text: timeText(tick) }),
      ];
    }),
  ]);
  const svg = s(
    "svg",
    {
      class: "tk-profile-ranks",
      viewBox: `0 0 ${width + margin.left + margin.right} ${height}`,
    },
    [s("g", { transform: `translate(${margin.left},${margin.top})` }, [...tracks, axis])],
  );
  const legend = h("div", { class: "tk-legend" }, [
    ...PHASES.map((phase) => legendItem({ swatchClass: `tk-phase-swatch-${phase}` }, phase)),
    legendItem({ swatchClass: "tk-rank-swatch-collective" }, "collective (start to completion)"),
  ]);
  const total =
    ranks.hidden_share == null
      ? "no communication recorded"
      : `all ranks: ${hiddenText(ranks.hidden_share)} (${timeText(ranks.hidden_ns)} of ` +
        `${timeText(ranks.comm_ns)} communication)`;
  const summaries = layout.tracks.map((t) =>
    h("tr", { "data-rank": t.rank }, [
      h("td", { text: `rank ${t.rank}` }),
      h("td", { class: "tk-muted", text: t.summary }),
    ]),
  );
  return h("div", { class: "tk-ranks" }, [
    h("div", { class: "tk-rank-share", text: total }),
    legend,
    svg,
    h("table", { class: "tk-profile-groups tk-rank-summary" }, [h("tbody", {}, summaries)]),
  ]);
}

/** The allocator's blocks, coloured by state after the event chosen with a slider. */
function blockView(view) {
  const last = Math.max(0, view.events - 1);
  const slider = h("input", { type: "range", min: 0, max: last, value: last });
  const label = h("span", { class: "tk-muted" });
  const strip = h("div", { class: "tk-blocks" });
  const cells = view.blocks.map((b) => {
    const where = [b.op, b.call_site].filter(Boolean).join(" at ");
    const title =
      `${b.device}:0x${Number(b.addr).toString(16)} ${bytesText(b.size)}` +
      (where ? ` (${where})` : "");
    const cell = h("span", { class: "tk-block", title, style: `flex-grow: ${Number(b.size)}` });
    strip.append(cell);
    return cell;
  });
  const draw = () => {
    const event = Number(slider.value);
    view.blocks.forEach((b, n) => {
      cells[n].className = `tk-block tk-block-${blockAt(b.history, event).state}`;
    });
    const t = stateTotals(view.blocks, event);
    label.textContent =
      `event ${event} / ${last} · in use ${bytesText(t.in_use)} · cached ` +
      `${bytesText(t.cached)} · returned ${bytesText(t.returned)}` +
      (view.omitted_blocks ? ` · ${view.omitted_blocks} smaller blocks not shown` : "");
  };
  slider.addEventListener("input", draw);
  draw();
  const legend = h(
    "div",
    { class: "tk-legend" },
    [
      ["in_use", "in use"],
      ["cached", "cached (free, still reserved)"],
      ["returned", "returned to the device"],
    ].map(([state, text]) => legendItem({ swatchClass: `tk-block-swatch-${state}` }, text)),
  );
  return h("div", {}, [h("div", { class: "tk-toolbar" }, [slider, label]), legend, strip]);
}

/**
 * Render into `el`; returns the cleanup function that anywidget calls on removal.
 * @param {{model: object, el: HTMLElement}} context
 * @returns {() => void}
 */
function render({ model, el }) {
  const root = h("div", { class: "tk-widget tk-profile" });
  el.append(root);
  let parts = null;
  const select = (index) => {
    const next = model.get("selected") === index ? -1 : index;
    model.set("selected", next);
    model.save_changes();
    mark(false);
  };
  const mark = (reveal) => {
    if (!parts) return;
    const selected = model.get("selected");
    parts.table.update(selected, linkedIndices(parts.rows, selected), reveal);
    const row = parts.rows.find((r) => r.index === selected);
    parts.modules.update(row ? row.module || NO_MODULE : null);
    parts.functions.update(row ? row.function : null);
    if (parts.timeline) parts.timeline.update(selected);
  };
  const build = () => {
    const data = model.get("model") || {};
    const rows = data.rows || [];
    const table = opTable(data, select);
    const modules = groupTable(data.modules, "module");
    const functions = groupTable(data.functions, "function");
    const memory = data.memory ? timeline(data.memory, select) : null;
    const omitted = data.omitted || {};
    const ranks = data.ranks;
    const ops = rows.length > 0 || !ranks; // a ranks-only model (show_ranks) has no op table
    const summary =
      (ops ? `${data.total_ops || 0} ops` : `${ranks.ranks.length} ranks`) +
      (omitted.count
        ? ` · showing the ${rows.length} most expensive; ${omitted.count} more ` +
          `(${timeText(omitted.host_time_ns)} host time) not shown`
        : "");
    root.replaceChildren(
      h("div", { class: "tk-toolbar" }, [
        h("span", { text: summary }),
        h("span", { class: "tk-status", text: `timing: ${data.timing_mode || "?"}` }),
      ]),
      ranks
        ? section("Ranks: compute and communication (hover a bar for its time)", [
            rankView(ranks),
          ])
        : "",
      ops
        ? section("Ops (click a header to sort, a row to select)", [rowLegend(), table.element])
        : "",
      ops ? section("Time by module", [modules.element]) : "",
      ops
        ? section("Time by function (conv2d, linear, ... with their ops; other ops by name)", [
            functions.element,
          ])
        : "",
      memory ? section("Memory", [memory.element]) : "",
      data.blocks ? section("Allocator blocks", [blockView(data.blocks)]) : "",
    );
    if (parts && parts.timeline) parts.timeline.dispose();
    parts = { rows, table, modules, functions, timeline: memory };
    mark(false);
  };
  const onSelected = () => mark(true);
  model.on("change:model", build);
  model.on("change:selected", onSelected);
  build();
  return () => {
    model.off("change:model", build);
    model.off("change:selected", onSelected);
    if (parts && parts.timeline) parts.timeline.dispose();
    root.remove();
  };
}

export default { render };
