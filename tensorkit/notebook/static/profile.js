/* tensorkit widgets bundle: esbuild 0.28.2, widgets/src sha256=c1b143f07c7202a7c172c207e3980bbf87c7ddb984bfd0e387c50dea7c2b79fb */

// widgets/src/format.js
function shapeText(shape) {
  if (shape == null) return "?";
  return shape.length ? shape.join("x") : "scalar";
}
var DIGITS = 3;
function numberText(value) {
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
var TIME_UNITS = [
  [1, "ns"],
  [1e3, "\xB5s"],
  [1e6, "ms"],
  [1e9, "s"]
];
var BYTE_UNITS = [
  [1, "B"],
  [2 ** 10, "KiB"],
  [2 ** 20, "MiB"],
  [2 ** 30, "GiB"]
];
function unitText(value, units) {
  if (value == null) return "";
  if (!Number.isFinite(value)) return numberText(value);
  let n = 0;
  while (n + 1 < units.length && Math.abs(value) >= units[n + 1][0]) n++;
  let scaled = Number((value / units[n][0]).toPrecision(DIGITS));
  if (Math.abs(scaled) >= 1e3 && n + 1 < units.length) {
    n++;
    scaled = Number((value / units[n][0]).toPrecision(DIGITS));
  }
  const whole = Math.abs(scaled) >= 1e3;
  const text = whole ? String(Math.round(value / units[n][0])) : numberText(scaled);
  return `${text} ${units[n][1]}`;
}
function timeText(ns) {
  return unitText(ns, TIME_UNITS);
}
function bytesText(bytes) {
  return unitText(bytes, BYTE_UNITS);
}

// widgets/src/dom.js
var SVG_NS = "http://www.w3.org/2000/svg";
function h(tag, attrs = {}, children = []) {
  return fill(document.createElement(tag), attrs, children);
}
function s(tag, attrs = {}, children = []) {
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
function legendItem({ color, swatchClass }, text) {
  const swatch = h("span", {
    class: `tk-swatch${swatchClass ? ` ${swatchClass}` : ""}`,
    style: color ? `background: ${color}` : null
  });
  return h("span", { class: "tk-legend-item" }, [swatch, text]);
}

// widgets/src/profile_logic.js
var shapeList = (shapes) => (shapes || []).map(shapeText).join(", ");
var COLUMNS = [
  { key: "index", label: "#", numeric: true, value: (r) => r.index },
  { key: "name", label: "op", value: (r) => r.name },
  { key: "phase", label: "phase", value: (r) => r.phase },
  { key: "module", label: "module", value: (r) => r.module || "" },
  {
    key: "shapes",
    label: "shapes",
    needs: "shapes",
    value: (r) => r.output_shapes == null ? "" : `${shapeList(r.input_shapes)} -> ${shapeList(r.output_shapes)}`
  },
  {
    key: "host_time",
    label: "host time",
    numeric: true,
    value: (r) => r.host_time_ns,
    format: timeText
  },
  {
    key: "gpu_time",
    label: "GPU time",
    numeric: true,
    needs: "gpu_time",
    value: (r) => r.gpu_time_ns,
    format: timeText
  },
  {
    key: "bytes",
    label: "allocated",
    numeric: true,
    needs: "memory",
    value: (r) => r.alloc_bytes,
    format: bytesText
  },
  { key: "call_site", label: "call site", needs: "call_sites", value: (r) => r.call_site || "" }
];
function visibleColumns(model) {
  const has = model && model.has || {};
  return COLUMNS.filter((c) => !c.needs || has[c.needs]);
}
function cellText(column, row) {
  const value = column.value(row);
  if (value == null) return "";
  return column.format ? column.format(value) : String(value);
}
function nextSort(sort, column) {
  if (sort && sort.key === column.key) {
    return { key: column.key, dir: sort.dir === "ascending" ? "descending" : "ascending" };
  }
  return { key: column.key, dir: column.numeric ? "descending" : "ascending" };
}
function sortRows(rows, column, dir) {
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
function linkedIndices(rows, selected) {
  const linked = /* @__PURE__ */ new Set();
  if (selected < 0) return linked;
  const row = rows.find((r) => r.index === selected);
  const forward = row && row.forward_index != null ? row.forward_index : selected;
  if (forward !== selected) linked.add(forward);
  for (const r of rows) {
    if (r.forward_index === forward && r.index !== selected) linked.add(r.index);
  }
  return linked;
}
function niceStep(span, count) {
  if (!(span > 0)) return 1;
  const raw = span / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((m) => m >= raw * (1 - 1e-12));
  return step;
}
function indexTicks(first, last, count = 6) {
  const step = Math.max(1, niceStep(last - first, count));
  const ticks = [];
  for (let t = Math.ceil(first / step) * step; t <= last; t += step) ticks.push(t);
  return ticks;
}
var BYTE_UNIT_NAMES = ["B", "KiB", "MiB", "GiB"];
function byteTicks(max, count = 4) {
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
function timelineScale(memory, width, height) {
  const index = memory.index;
  const first = index.length ? index[0] : 0;
  const last = index.length ? index[index.length - 1] + (memory.stride || 1) : 1;
  const span = Math.max(1, last - first);
  const values = ["allocated", "reserved", "peak"].flatMap((k) => memory[k] || []);
  const axis = byteTicks(Math.max(0, ...values.filter((v) => v != null)));
  const top = axis.top;
  const x = (i) => (i - first) / span * width;
  const y = (b) => height - b / top * height;
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
    const wanted = first + px / width * span;
    let best = index[0];
    for (const i of index) if (i <= wanted) best = i;
    return best;
  };
  const paths = {
    allocated: path(memory.allocated || []),
    reserved: path(memory.reserved || []),
    peak: path(memory.peak || [])
  };
  const xTicks = indexTicks(first, last - (memory.stride || 1));
  return { x, y, top, xTicks, yTicks: axis.ticks, yLabels: axis.labels, paths, indexAt };
}
function blockAt(history, event) {
  let found = { state: "none", size: 0 };
  for (const [at, state, size] of history) {
    if (at > event) break;
    found = { state, size };
  }
  return found;
}
function stateTotals(blocks, event) {
  const totals = { in_use: 0, cached: 0, returned: 0 };
  for (const block of blocks) {
    const { state, size } = blockAt(block.history, event);
    if (state in totals) totals[state] += size;
  }
  return totals;
}
function groupBars(groups, key) {
  const top = Math.max(1, ...groups.map((g) => g.total_ns));
  return groups.map((g) => ({
    name: g[key],
    parts: Object.entries(g.host_ns).map(([phase, ns]) => ({ phase, ns, fraction: ns / top }))
  }));
}

// widgets/src/profile.js
var TIMELINE = { width: 640, height: 150, margin: { left: 60, right: 14, top: 10, bottom: 34 } };
var PHASES = ["forward", "backward", "optimizer"];
var NO_MODULE = "(no module)";
function section(title, children) {
  return h("div", { class: "tk-profile-section" }, [
    h("div", { class: "tk-section-title", text: title }),
    ...children
  ]);
}
function opTable(model, onSelect) {
  const columns = visibleColumns(model);
  const rows = model.rows || [];
  const trs = /* @__PURE__ */ new Map();
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
    tbody
  ]);
  return {
    element: h("div", { class: "tk-profile-scroll" }, [table]),
    update(selected, linked, reveal) {
      for (const [index, tr2] of trs) {
        tr2.classList.toggle("tk-selected", index === selected);
        tr2.classList.toggle("tk-linked", linked.has(index));
      }
      const tr = trs.get(selected);
      if (reveal && tr && tr.scrollIntoView) tr.scrollIntoView({ block: "nearest" });
    }
  };
}
function rowLegend() {
  return h("div", { class: "tk-legend tk-row-legend" }, [
    legendItem({ swatchClass: "tk-row-swatch-selected" }, "selected op"),
    legendItem({ swatchClass: "tk-row-swatch-linked" }, "its forward / backward ops")
  ]);
}
function phaseLegend(groups) {
  const present = new Set(groups.flatMap((g) => Object.keys(g.host_ns || {})));
  const items = PHASES.filter((p) => present.has(p)).map(
    (phase) => legendItem({ swatchClass: `tk-phase-swatch-${phase}` }, phase)
  );
  return h("div", { class: "tk-legend tk-phase-legend" }, [
    h("span", { class: "tk-legend-title", text: "host time" }),
    ...items
  ]);
}
function groupTable(groups, key) {
  const rows = groupBars(groups || [], key).map(({ name, parts }) => {
    const bar = h(
      "div",
      { class: "tk-profile-bar" },
      parts.map(
        (p) => h("span", {
          class: `tk-phase-${p.phase}`,
          style: `width: ${(100 * p.fraction).toFixed(2)}%`,
          title: `${p.phase}: ${timeText(p.ns)}`
        })
      )
    );
    const text = parts.map((p) => `${p.phase} ${timeText(p.ns)}`).join(", ");
    return h("tr", { "data-group": name }, [
      h("td", { text: name }),
      h("td", { class: "tk-profile-bar-cell" }, [bar]),
      h("td", { class: "tk-muted", text })
    ]);
  });
  const table = h("table", { class: `tk-profile-groups tk-profile-${key}s` }, [
    h("tbody", {}, rows)
  ]);
  return {
    element: h("div", {}, [phaseLegend(groups || []), table]),
    update(selected) {
      for (const tr of rows) {
        tr.classList.toggle("tk-group-of-selected", tr.dataset.group === selected);
      }
    }
  };
}
function timelineAxes(scale, width, height) {
  const yAxis = s(
    "g",
    { class: "tk-axis tk-axis-y" },
    scale.yTicks.flatMap((tick, n) => {
      const y = scale.y(tick).toFixed(1);
      const text = scale.yLabels[n];
      return [
        s("line", { class: "tk-grid", x1: 0, x2: width, y1: y, y2: y }),
        s("text", { x: -6, y, dy: "0.32em", "text-anchor": "end", text })
      ];
    })
  );
  const xAxis = s("g", { class: "tk-axis tk-axis-x", transform: `translate(0,${height})` }, [
    s("line", { x1: 0, x2: width, y1: 0, y2: 0 }),
    ...scale.xTicks.flatMap((tick) => {
      const x = scale.x(tick).toFixed(1);
      return [
        s("line", { x1: x, x2: x, y1: 0, y2: 4 }),
        s("text", { x, y: 15, "text-anchor": "middle", text: String(tick) })
      ];
    }),
    s("text", {
      class: "tk-axis-title",
      x: width / 2,
      y: 29,
      "text-anchor": "middle",
      text: "op index"
    })
  ]);
  return [yAxis, xAxis];
}
function timelineLegend(memory) {
  const line = (kind, text) => legendItem({ swatchClass: `tk-line-swatch tk-line-swatch-${kind}` }, text);
  const device = memory.device && memory.device !== "cpu" ? ` on ${memory.device}` : "";
  return h("div", { class: "tk-legend tk-memory-legend" }, [
    line("allocated", `allocated${device}`),
    memory.caching ? line("reserved", "reserved (allocator pool)") : "",
    line("peak", "peak so far"),
    memory.backward_start != null ? line("backward", `backward starts (op ${memory.backward_start})`) : "",
    line("marker", "selected op"),
    h("span", {
      class: "tk-muted",
      text: `peak ${bytesText(memory.peak_bytes)} after op ${memory.peak_index}` + (memory.stride > 1 ? ` \xB7 each point covers ${memory.stride} ops (their largest)` : "")
    })
  ]);
}
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
      s("path", { class: "tk-mem-allocated", d: scale.paths.allocated })
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
      s("g", { class: "tk-plot", transform: `translate(${margin.left},${margin.top})` }, children)
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
    h("div", { class: "tk-muted", text: memory.allocator })
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
    }
  };
}
function blockView(view) {
  const last = Math.max(0, view.events - 1);
  const slider = h("input", { type: "range", min: 0, max: last, value: last });
  const label = h("span", { class: "tk-muted" });
  const strip = h("div", { class: "tk-blocks" });
  const cells = view.blocks.map((b) => {
    const where = [b.op, b.call_site].filter(Boolean).join(" at ");
    const title = `${b.device}:0x${Number(b.addr).toString(16)} ${bytesText(b.size)}` + (where ? ` (${where})` : "");
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
    label.textContent = `event ${event} / ${last} \xB7 in use ${bytesText(t.in_use)} \xB7 cached ${bytesText(t.cached)} \xB7 returned ${bytesText(t.returned)}` + (view.omitted_blocks ? ` \xB7 ${view.omitted_blocks} smaller blocks not shown` : "");
  };
  slider.addEventListener("input", draw);
  draw();
  const legend = h(
    "div",
    { class: "tk-legend" },
    [
      ["in_use", "in use"],
      ["cached", "cached (free, still reserved)"],
      ["returned", "returned to the device"]
    ].map(([state, text]) => legendItem({ swatchClass: `tk-block-swatch-${state}` }, text))
  );
  return h("div", {}, [h("div", { class: "tk-toolbar" }, [slider, label]), legend, strip]);
}
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
    const summary = `${data.total_ops || 0} ops` + (omitted.count ? ` \xB7 showing the ${rows.length} most expensive; ${omitted.count} more (${timeText(omitted.host_time_ns)} host time) not shown` : "");
    root.replaceChildren(
      h("div", { class: "tk-toolbar" }, [
        h("span", { text: summary }),
        h("span", { class: "tk-status", text: `timing: ${data.timing_mode || "?"}` })
      ]),
      section("Ops (click a header to sort, a row to select)", [rowLegend(), table.element]),
      section("Time by module", [modules.element]),
      section("Time by function (conv2d, linear, ... with their ops; other ops by name)", [
        functions.element
      ]),
      memory ? section("Memory", [memory.element]) : "",
      data.blocks ? section("Allocator blocks", [blockView(data.blocks)]) : ""
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
var profile_default = { render };
export {
  profile_default as default
};
