/* tensorkit widgets bundle: esbuild 0.28.2, widgets/src sha256=bb0b32b7661ae7f592b566bda4e2e8c11d8317f9e546704575a9954cdab873c5 */

// widgets/src/format.js
function shapeText(shape) {
  if (shape == null) return "?";
  return shape.length ? shape.join("x") : "scalar";
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

// widgets/src/profile_logic.js
function timeText(ns) {
  if (ns >= 1e9) return `${(ns / 1e9).toFixed(3)}s`;
  if (ns >= 1e6) return `${(ns / 1e6).toFixed(3)}ms`;
  return `${(ns / 1e3).toFixed(3)}us`;
}
function bytesText(n) {
  for (const [unit, size] of [
    ["Gb", 2 ** 30],
    ["Mb", 2 ** 20],
    ["Kb", 2 ** 10]
  ]) {
    if (Math.abs(n) >= size) return `${(n / size).toFixed(2)} ${unit}`;
  }
  return `${n} b`;
}
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
function timelineScale(memory, width, height) {
  const index = memory.index;
  const first = index.length ? index[0] : 0;
  const last = index.length ? index[index.length - 1] + (memory.stride || 1) : 1;
  const span = Math.max(1, last - first);
  const values = ["allocated", "reserved", "peak"].flatMap((k) => memory[k] || []);
  const top = Math.max(1, ...values.filter((v) => v != null));
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
  return { x, y, top, paths, indexAt };
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
var TIMELINE = { width: 640, height: 120 };
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
  return {
    element: h("table", { class: `tk-profile-groups tk-profile-${key}s` }, [h("tbody", {}, rows)]),
    update(selected) {
      for (const tr of rows) {
        tr.classList.toggle("tk-group-of-selected", tr.dataset.group === selected);
      }
    }
  };
}
function timeline(memory, onSelect) {
  const { width, height } = TIMELINE;
  const scale = timelineScale(memory, width, height);
  const marker = s("line", { class: "tk-profile-marker", y1: 0, y2: height, visibility: "hidden" });
  const children = [
    s("path", { class: "tk-mem-reserved", d: scale.paths.reserved }),
    s("path", { class: "tk-mem-peak", d: scale.paths.peak }),
    s("path", { class: "tk-mem-allocated", d: scale.paths.allocated }),
    marker
  ];
  if (memory.backward_start != null) {
    const x = scale.x(memory.backward_start);
    children.push(s("line", { class: "tk-mem-backward", x1: x, x2: x, y1: 0, y2: height }));
  }
  const svg = s(
    "svg",
    {
      class: "tk-profile-timeline",
      viewBox: `0 0 ${width} ${height}`,
      preserveAspectRatio: "none"
    },
    children
  );
  svg.addEventListener("click", (event) => {
    const box = svg.getBoundingClientRect();
    if (box.width) onSelect(scale.indexAt((event.clientX - box.left) / box.width * width));
  });
  const legend = h("div", { class: "tk-muted" }, [
    `allocated (blue), reserved (grey), peak (red) \xB7 peak ${bytesText(memory.peak_bytes)}`,
    ` after op ${memory.peak_index} \xB7 top of scale ${bytesText(scale.top)}`,
    memory.backward_start != null ? ` \xB7 backward starts at op ${memory.backward_start}` : "",
    memory.stride > 1 ? ` \xB7 every ${memory.stride} ops per point` : ""
  ]);
  return {
    element: h("div", {}, [svg, legend, h("div", { class: "tk-muted", text: memory.allocator })]),
    update(selected) {
      const visible = selected >= 0;
      marker.setAttribute("visibility", visible ? "visible" : "hidden");
      if (visible) {
        marker.setAttribute("x1", scale.x(selected));
        marker.setAttribute("x2", scale.x(selected));
      }
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
  return h("div", {}, [h("div", { class: "tk-toolbar" }, [slider, label]), strip]);
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
      section("Ops (click a header to sort, a row to select)", [table.element]),
      section("Time by module", [modules.element]),
      section("Time by function (conv2d, linear, ... with their ops; other ops by name)", [
        functions.element
      ]),
      memory ? section("Memory", [memory.element]) : "",
      data.blocks ? section("Allocator blocks", [blockView(data.blocks)]) : ""
    );
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
    root.remove();
  };
}
var profile_default = { render };
export {
  profile_default as default
};
