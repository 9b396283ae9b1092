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
function summaryText(summary) {
  if (!summary) return "";
  const parts = ["min", "max", "mean", "std"].filter((k) => summary[k] != null).map((k) => `${k} ${numberText(summary[k])}`);
  if (summary.nan) parts.push(`${summary.nan} nan`);
  if (summary.inf) parts.push(`${summary.inf} inf`);
  return parts.join(", ");
}
function nodeLabel(node) {
  if (node.kind === "group") return `${node.label || node.module} (${node.count})`;
  if (node.label) return node.label;
  if (node.kind === "tensor") return node.requires_grad ? "param" : "tensor";
  return node.op || node.grad_fn || node.kind;
}
function nodeShapes(node) {
  const out = node.shapes && node.shapes.out || [];
  return out.map(shapeText).join(", ");
}
function scopesText(node) {
  return (node.scopes || []).join(" \u203A ");
}
function callSiteText(node) {
  const site = node.call_site;
  if (!site) return "";
  return typeof site === "object" ? site.display || "" : String(site);
}
function nodeTitle(node) {
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
function measuresText(node) {
  return MEASURES.map((mode) => [COLOR_MODES[mode], nodeMeasure(node, mode)]).filter(([, value]) => value !== null).map(([{ label, unit }, value]) => `${label} ${measureText(value, unit)}`).join(", ");
}
var COLOR_MODES = {
  none: { label: "none" },
  forward_time: { label: "forward time", unit: "s", key: "time_ns", record: "time_ns" },
  backward_time: { label: "backward time", unit: "s", key: "backward_ns" },
  bytes: { label: "bytes allocated", unit: "B", key: "bytes", record: "alloc_bytes" },
  grad_norm: { label: "gradient norm", unit: "", key: "grad_norm" },
  nan: { label: "NaN / inf" }
};
var MEASURES = ["forward_time", "backward_time", "bytes", "grad_norm"];
var ALIASES = { time: "forward_time", memory: "bytes" };
var LOG_SPAN = 100;
var NO_DATA_COLOR = "#eeeeee";
function colorMode(name) {
  const mode = ALIASES[name] || name;
  return mode in COLOR_MODES ? mode : "none";
}
function nodeMeasure(node, colorBy) {
  const mode = colorMode(colorBy);
  if (mode === "nan") {
    const s2 = node.summary;
    return s2 ? Number(Boolean(s2.nan || s2.inf)) : null;
  }
  const spec = COLOR_MODES[mode];
  if (!spec || !spec.key) return null;
  const value = node.metrics?.[spec.key] ?? (spec.record ? node.records?.[spec.record] : null);
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}
function colorScale(values) {
  if (!values.length) return null;
  const max = values.reduce((a, b) => Math.max(a, b), -Infinity);
  const smallest = values.filter((v) => v > 0).reduce((a, b) => Math.min(a, b), Infinity);
  if (max > 0 && max / smallest >= LOG_SPAN) return { min: smallest, max, log: true };
  return { min: Math.min(0, ...values.filter((v) => v < 0)), max, log: false };
}
function scaleWeight(scale, value) {
  const { min, max, log } = scale;
  if (max <= min) return 1;
  const w = log ? (Math.log(Math.max(value, min)) - Math.log(min)) / (Math.log(max) - Math.log(min)) : (value - min) / (max - min);
  return Math.min(1, Math.max(0, w));
}
function weightColor(weight) {
  return `hsl(${Math.round(120 - 120 * weight)}, 70%, 80%)`;
}
function nodeColors(nodes, colorBy) {
  const mode = colorMode(colorBy);
  const colors = /* @__PURE__ */ new Map();
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
      ["no data", NO_DATA_COLOR]
    ];
    return { colors, legend: { mode, label, swatches, missing } };
  }
  const values = measured.filter(([, v]) => v !== null);
  const scale = colorScale(values.map(([, v]) => v));
  for (const [id, v] of values) colors.set(id, weightColor(scaleWeight(scale, v)));
  const stops = [0, 0.25, 0.5, 0.75, 1].map(weightColor);
  return { colors, legend: { mode, label, unit, ...scale || {}, stops, missing } };
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
function measureText(value, unit) {
  if (unit === "s") return timeText(value);
  if (unit === "B") return bytesText(value);
  return numberText(value);
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
function nodeDetails(node) {
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
    })
  ].filter(([, value]) => value);
  return h(
    "div",
    { class: "tk-details", role: "list" },
    rows.map(
      ([key, value]) => h("div", { class: "tk-details-row", role: "listitem" }, [
        h("span", { class: "tk-details-key", text: key }),
        h("span", { class: "tk-details-value", text: value })
      ])
    )
  );
}
var NODE_KINDS = [
  ["op", "tk-swatch-op"],
  ["input / parameter", "tk-swatch-tensor"],
  ["folded group", "tk-swatch-group"],
  ["gradient op", "tk-swatch-backward"],
  ["selected", "tk-swatch-selected"]
];
function legendItem({ color, swatchClass }, text) {
  const swatch = h("span", {
    class: `tk-swatch${swatchClass ? ` ${swatchClass}` : ""}`,
    style: color ? `background: ${color}` : null
  });
  return h("span", { class: "tk-legend-item" }, [swatch, text]);
}
function legendView(legend) {
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
  if (legend.max === void 0) {
    box.append(h("span", { class: "tk-muted", text: "no node has this measure" }));
    return box;
  }
  const bar = `background: linear-gradient(to right, ${legend.stops.join(", ")})`;
  box.append(
    h("span", { class: "tk-legend-min", text: measureText(legend.min, legend.unit) }),
    h("span", { class: "tk-legend-bar", style: bar }),
    h("span", { class: "tk-legend-max", text: measureText(legend.max, legend.unit) })
  );
  if (legend.log) box.append(h("span", { class: "tk-muted", text: "(log scale)" }));
  if (legend.missing) {
    box.append(legendItem({ color: NO_DATA_COLOR }, `no data (${legend.missing})`));
  }
  return box;
}
function redrawOn(model, events, redraw) {
  for (const name of events) model.on(name, redraw);
  redraw();
  return () => {
    for (const name of events) model.off(name, redraw);
  };
}

// widgets/src/layout.js
var GROUP_PREFIX = "group:";
function collapsedOwner(path, collapsed) {
  if (!path) return null;
  const parts = path.split(".");
  for (let i = 1; i <= parts.length; i++) {
    const prefix = parts.slice(0, i).join(".");
    if (collapsed.has(prefix)) return prefix;
  }
  return null;
}
function visibleGraph(graph, collapsed, { showBackward = true } = {}) {
  const folded = new Set(collapsed.filter((path) => path in (graph.groups || {})));
  const owner = /* @__PURE__ */ new Map();
  const nodes = [];
  const members = /* @__PURE__ */ new Map();
  const hidden = /* @__PURE__ */ new Set();
  for (const node of graph.nodes) {
    if (!showBackward && node.band > 0) {
      hidden.add(node.id);
      continue;
    }
    const path = collapsedOwner(node.module, folded);
    if (path === null) {
      nodes.push(node);
      continue;
    }
    const id = GROUP_PREFIX + path;
    owner.set(node.id, id);
    if (members.has(id)) {
      members.get(id).push(node);
      continue;
    }
    members.set(id, [node]);
    nodes.push({ id, kind: "group", op: path, module: path, count: graph.groups[path].count });
  }
  const standIns = nodes.map((n) => members.has(n.id) ? standIn(n, members.get(n.id)) : n);
  const edges = redirect(graph.edges, owner, hidden, true);
  const links = redirect(graph.links || [], owner, hidden, false);
  const sameBand = bandFilter(standIns);
  return {
    nodes: members.size ? relayer(standIns, edges.filter(sameBand)) : standIns,
    edges,
    links,
    owner
  };
}
function standIn(group, members) {
  const metrics = {};
  for (const m of members) {
    for (const [key, value] of Object.entries(m.metrics || {})) {
      if (key === "grad_norm") metrics[key] = Math.max(metrics[key] ?? value, value);
      else metrics[key] = (metrics[key] || 0) + value;
    }
  }
  const summaries = members.map((m) => m.summary).filter(Boolean);
  const count = (key) => summaries.reduce((acc, s2) => acc + (s2[key] || 0), 0);
  return {
    ...group,
    depth: members[0].depth,
    band: members[0].band || 0,
    metrics,
    summary: summaries.length ? { nan: count("nan"), inf: count("inf") } : null,
    shapes: { in: [], out: [] }
  };
}
function redirect(items, owner, hidden, dropSelf) {
  const seen = /* @__PURE__ */ new Set();
  const kept = [];
  for (const item of items) {
    if (hidden.has(item.source) || hidden.has(item.target)) continue;
    const source = owner.get(item.source) ?? item.source;
    const target = owner.get(item.target) ?? item.target;
    const folded = source !== item.source || target !== item.target;
    const key = folded ? `${source}->${target}` : `${source}->${target}#${item.position}`;
    if (dropSelf && source === target || seen.has(key)) continue;
    seen.add(key);
    kept.push({ ...item, source, target });
  }
  return kept;
}
function bandFilter(nodes) {
  const band = new Map(nodes.map((n) => [n.id, n.band || 0]));
  return (e) => band.has(e.source) && band.get(e.source) === band.get(e.target);
}
function bandLayout(nodes, edges, size, gap) {
  const byBand = /* @__PURE__ */ new Map();
  for (const node of nodes) {
    const band = node.band || 0;
    if (!byBand.has(band)) byBand.set(band, []);
    byBand.get(band).push(node);
  }
  const inside = edges.filter(bandFilter(nodes));
  const layered = [...byBand.keys()].sort((a, b) => a - b).map((band) => [band, orderLayers(byBand.get(band), inside)]);
  const columns = layered.reduce((most, [, layers]) => Math.max(most, layers.length), 0);
  const step = size.width + size.gapX;
  const place = /* @__PURE__ */ new Map();
  const bands = [];
  let top = 0;
  for (const [band, layers] of layered) {
    let bottom = top;
    for (const [id, at] of placeNodes(layers, size)) {
      const y = at.y + top;
      const x = band > 0 ? (columns - 1) * step - at.x : at.x;
      place.set(id, { x, y });
      bottom = Math.max(bottom, y + size.height);
    }
    bands.push({ band, top, bottom });
    top = bottom + gap;
  }
  return { place, bands };
}
function relayer(nodes, edges) {
  const depth = new Map(nodes.map((n) => [n.id, 0]));
  const indegree = new Map(nodes.map((n) => [n.id, 0]));
  const children = new Map(nodes.map((n) => [n.id, []]));
  for (const { source, target } of edges) {
    if (!children.has(source) || !indegree.has(target)) continue;
    children.get(source).push(target);
    indegree.set(target, indegree.get(target) + 1);
  }
  const queue = nodes.filter((n) => indegree.get(n.id) === 0).map((n) => n.id);
  const done = /* @__PURE__ */ new Set();
  for (let head = 0; head < queue.length; head++) {
    const id = queue[head];
    done.add(id);
    for (const child of children.get(id)) {
      depth.set(child, Math.max(depth.get(child), depth.get(id) + 1));
      indegree.set(child, indegree.get(child) - 1);
      if (indegree.get(child) === 0) queue.push(child);
    }
  }
  for (let i = queue.length - 1; i >= 0; i--) {
    const next = children.get(queue[i]).filter((c) => done.has(c));
    if (next.length) {
      depth.set(queue[i], next.reduce((m, c) => Math.min(m, depth.get(c)), Infinity) - 1);
    }
  }
  alignSideComponents(nodes, edges, depth);
  return nodes.map((n) => ({ ...n, depth: done.has(n.id) ? depth.get(n.id) : n.depth }));
}
function alignSideComponents(nodes, edges, depth) {
  const root = new Map(nodes.map((n) => [n.id, n.id]));
  const find = (id) => {
    while (root.get(id) !== id) {
      root.set(id, root.get(root.get(id)));
      id = root.get(id);
    }
    return id;
  };
  for (const { source, target } of edges) {
    if (root.has(source) && root.has(target)) root.set(find(source), find(target));
  }
  const pieces = /* @__PURE__ */ new Map();
  for (const n of nodes) {
    const key = find(n.id);
    if (!pieces.has(key)) pieces.set(key, []);
    pieces.get(key).push(n);
  }
  if (pieces.size < 2) return;
  const main = [...pieces.values()].reduce((a, b) => b.length > a.length ? b : a);
  const start = /* @__PURE__ */ new Map();
  for (const n of main) {
    for (let path = n.module || ""; path; path = parentPath(path)) {
      start.set(path, Math.min(start.get(path) ?? Infinity, depth.get(n.id)));
    }
  }
  for (const piece of pieces.values()) {
    if (piece === main) continue;
    const anchor = piece.map((n) => knownPrefix(n.module || "", start)).find(Boolean);
    if (!anchor) continue;
    const first = piece.reduce((m, n) => Math.min(m, depth.get(n.id)), Infinity);
    const shift = start.get(anchor) - first;
    if (shift > 0) for (const n of piece) depth.set(n.id, depth.get(n.id) + shift);
  }
}
function knownPrefix(path, known) {
  while (path && !known.has(path)) path = parentPath(path);
  return path || null;
}
function parentPath(path) {
  return path.slice(0, Math.max(0, path.lastIndexOf(".")));
}
function orderLayers(nodes, edges, sweeps = 2) {
  const layers = [];
  for (const node of nodes) {
    while (layers.length <= node.depth) layers.push([]);
    layers[node.depth].push(node.id);
  }
  const inputs = new Map(nodes.map((n) => [n.id, []]));
  const outputs = new Map(nodes.map((n) => [n.id, []]));
  for (const edge of edges) {
    if (!inputs.has(edge.target) || !outputs.has(edge.source)) continue;
    inputs.get(edge.target).push(edge.source);
    outputs.get(edge.source).push(edge.target);
  }
  const position = /* @__PURE__ */ new Map();
  for (const layer of layers) layer.forEach((id, i) => position.set(id, i));
  for (let sweep = 0; sweep < sweeps; sweep++) {
    for (let d = 1; d < layers.length; d++) reorder(layers[d], inputs, position);
    for (let d = layers.length - 2; d >= 0; d--) reorder(layers[d], outputs, position);
  }
  return layers;
}
function reorder(layer, neighbours, position) {
  const key = /* @__PURE__ */ new Map();
  for (const [i, id] of layer.entries()) {
    const known = neighbours.get(id);
    const sum = known.reduce((acc, n) => acc + position.get(n), 0);
    key.set(id, known.length ? sum / known.length : i);
  }
  layer.sort((a, b) => key.get(a) - key.get(b));
  layer.forEach((id, i) => position.set(id, i));
}
function placeNodes(layers, size) {
  const tallest = layers.reduce((most, l) => Math.max(most, l.length), 0);
  const place = /* @__PURE__ */ new Map();
  layers.forEach((layer, d) => {
    const offset = (tallest - layer.length) * (size.height + size.gapY) / 2;
    layer.forEach((id, i) => {
      place.set(id, {
        x: d * (size.width + size.gapX),
        y: offset + i * (size.height + size.gapY)
      });
    });
  });
  return place;
}
function edgePath(from, to, size, position, arity, leftward = false) {
  const sign = leftward ? -1 : 1;
  const x1 = leftward ? from.x : from.x + size.width;
  const y1 = from.y + size.height / 2;
  const x2 = leftward ? to.x + size.width : to.x;
  const y2 = to.y + size.height * (position + 1) / (arity + 1);
  const bend = sign * Math.max(20, sign * (x2 - x1) / 2);
  return `M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}`;
}
function linkPath(from, to, size) {
  const x1 = from.x + size.width / 2;
  const y1 = from.y + size.height;
  const x2 = to.x + size.width / 2;
  const y2 = to.y;
  const bend = Math.max(20, Math.abs(y2 - y1) / 2);
  return `M${x1},${y1} C${x1},${y1 + bend} ${x2},${y2 - bend} ${x2},${y2}`;
}
function matchesSearch(node, query) {
  const q = query.trim().toLowerCase();
  if (!q) return true;
  return [node.op, node.grad_fn, node.id, node.module].filter(Boolean).some((text) => String(text).toLowerCase().includes(q));
}

// widgets/src/graphview.js
var SIZE = { width: 132, height: 40, gapX: 56, gapY: 30 };
function framePad(level, deepest) {
  return 6 + 16 * (deepest - level);
}
var HEADER = 14;
var MIN_FIT_SCALE = 0.75;
function graphView({ onSelect, onToggle }) {
  const viewport = s("g", { class: "tk-viewport" });
  const svg = s("svg", { class: "tk-graph-svg" }, [viewport]);
  const view = { k: 1, x: 16, y: 28 };
  const apply = () => viewport.setAttribute("transform", `translate(${view.x},${view.y}) scale(${view.k})`);
  apply();
  const onWheel = (event) => {
    event.preventDefault();
    const box = svg.getBoundingClientRect();
    const px = event.clientX - box.left;
    const py = event.clientY - box.top;
    const k = Math.min(4, Math.max(0.2, view.k * Math.exp(-event.deltaY * 1e-3)));
    view.x = px - (px - view.x) * k / view.k;
    view.y = py - (py - view.y) * k / view.k;
    view.k = k;
    apply();
  };
  let drag = null;
  const onDown = (event) => {
    drag = { x: event.clientX, y: event.clientY, moved: false };
  };
  const onMove = (event) => {
    if (!drag || !(event.buttons & 1)) return;
    const dx = event.clientX - drag.x;
    const dy = event.clientY - drag.y;
    if (!drag.moved && Math.hypot(dx, dy) < 4) return;
    drag.moved = true;
    view.x += dx;
    view.y += dy;
    drag.x = event.clientX;
    drag.y = event.clientY;
    apply();
  };
  const onClickCapture = (event) => {
    if (drag && drag.moved) event.stopPropagation();
    drag = null;
  };
  svg.addEventListener("wheel", onWheel, { passive: false });
  svg.addEventListener("pointerdown", onDown);
  svg.addEventListener("pointermove", onMove);
  svg.addEventListener("click", onClickCapture, true);
  let fitted = null;
  let last = null;
  const position = () => {
    const width = svg.clientWidth;
    const height = svg.clientHeight;
    if (!last || !width || !height) return;
    const { props, place } = last;
    const key = `${(props.collapsed || []).join("\n")}|${props.showBackward !== false}`;
    if (!fitted || fitted.graph !== props.graph || fitted.key !== key) {
      fitted = { graph: props.graph, key };
      Object.assign(view, fitView(place, width, height));
    }
    const at = place.get(props.current);
    if (at) Object.assign(view, revealNode(view, at, width));
    apply();
  };
  const observer = typeof ResizeObserver === "undefined" ? null : new ResizeObserver(position);
  if (observer) observer.observe(svg);
  return {
    element: svg,
    update(props) {
      const { elements, place, legend } = drawGraph(props, { onSelect, onToggle });
      viewport.replaceChildren();
      for (const element of elements) viewport.appendChild(element);
      last = { props, place };
      position();
      return { legend };
    },
    destroy() {
      if (observer) observer.disconnect();
      svg.removeEventListener("wheel", onWheel);
      svg.removeEventListener("pointerdown", onDown);
      svg.removeEventListener("pointermove", onMove);
      svg.removeEventListener("click", onClickCapture, true);
      svg.remove();
    }
  };
}
function drawGraph(props, handlers) {
  const { graph } = props;
  if (!graph || !graph.nodes) return { elements: [], place: /* @__PURE__ */ new Map(), legend: null };
  const visible = visibleGraph(graph, props.collapsed, {
    showBackward: props.showBackward !== false
  });
  const deepest = deepestLevel(graph);
  const outer = framePad(0, deepest);
  const gap = 2 * outer + HEADER + 24;
  const { place, bands } = bandLayout(visible.nodes, visible.edges, SIZE, gap);
  const { colors, legend } = nodeColors(visible.nodes, props.colorBy);
  const elements = [
    ...drawBands(bands, outer),
    ...drawGroups(graph, visible, place, new Set(props.collapsed), handlers.onToggle),
    ...drawEdges(visible.edges, place, bandOf(visible.nodes)),
    ...drawLinks(visible.links, place),
    ...drawEdgeLabels(props.edgeLabels || {}, visible.owner, place),
    ...drawNodes(visible.nodes, place, { ...props, colors }, handlers)
  ];
  return { elements, place, legend };
}
function fitView(place, width, height) {
  let right = 0;
  let bottom = 0;
  for (const p of place.values()) {
    right = Math.max(right, p.x + SIZE.width);
    bottom = Math.max(bottom, p.y + SIZE.height);
  }
  const margin = 40;
  const fit = Math.min(1, (width - 2 * margin) / right, (height - 2 * margin) / bottom);
  return { k: Math.max(MIN_FIT_SCALE, fit), x: margin, y: margin };
}
function revealNode(view, at, width) {
  const left = view.x + at.x * view.k;
  const right = left + SIZE.width * view.k;
  if (left >= 0 && right <= width) return view;
  return { ...view, x: width / 2 - (at.x + SIZE.width / 2) * view.k };
}
function deepestLevel(graph) {
  const paths = Object.keys(graph.groups || {});
  return paths.reduce((most, p) => Math.max(most, p.split(".").length - 1), 0);
}
function drawGroups(graph, visible, place, collapsed, onToggle) {
  const frames = [];
  const paths = Object.keys(graph.groups || {});
  const deepest = deepestLevel(graph);
  for (const path of paths) {
    if (collapsedOwner(path, collapsed) !== null) continue;
    const members = visible.nodes.filter(
      (n) => n.module === path || (n.module || "").startsWith(`${path}.`)
    );
    if (!members.length) continue;
    const level = path.split(".").length - 1;
    const pad = framePad(level, deepest);
    const xs = members.map((n) => place.get(n.id).x);
    const ys = members.map((n) => place.get(n.id).y);
    const x = Math.min(...xs) - pad;
    const y = Math.min(...ys) - pad - HEADER;
    const width = Math.max(...xs) + SIZE.width + pad - x;
    const height = Math.max(...ys) + SIZE.height + pad - y;
    const label = `\u25BE ${path}`;
    const header = s("text", { class: "tk-group-header", x: x + 4, y: y + 11, text: label });
    header.addEventListener("click", () => onToggle(path));
    frames.push(
      s("g", { class: "tk-group", "data-path": path }, [
        s("rect", { x, y, width, height, rx: 6 }),
        header
      ])
    );
  }
  return frames;
}
function bandOf(nodes) {
  return new Map(nodes.map((n) => [n.id, n.band || 0]));
}
function drawBands(bands, outer) {
  return bands.slice(1).map(
    ({ band }, i) => s("text", {
      class: "tk-band-label",
      x: 0,
      y: bands[i].bottom + outer + 16,
      text: band === 1 ? "gradient ops (backward) \u2190" : `gradient ops, order ${band} \u2190`
    })
  );
}
function drawEdges(edges, place, band) {
  const arity = /* @__PURE__ */ new Map();
  for (const e of edges) arity.set(e.target, Math.max(arity.get(e.target) || 0, e.position + 1));
  return edges.filter((e) => place.has(e.source) && place.has(e.target)).map((e) => {
    const inside = band.get(e.source) === band.get(e.target);
    return s("path", {
      class: inside ? "tk-edge" : "tk-edge tk-edge-cross",
      d: edgePath(
        place.get(e.source),
        place.get(e.target),
        SIZE,
        e.position,
        arity.get(e.target),
        inside && band.get(e.source) > 0
      ),
      "data-position": e.position,
      "data-source": e.source,
      "data-target": e.target
    });
  });
}
function drawLinks(links, place) {
  return links.filter((l) => place.has(l.source) && place.has(l.target)).map(
    (l) => s("path", {
      class: "tk-link",
      d: linkPath(place.get(l.source), place.get(l.target), SIZE),
      "data-source": l.source,
      "data-target": l.target
    })
  );
}
function drawEdgeLabels(labels, owner, place) {
  const texts = [];
  for (const [key, text] of Object.entries(labels)) {
    const [source, target] = key.split("->").map((id) => owner.get(id) ?? id);
    const from = place.get(source);
    const to = place.get(target);
    if (!from || !to || source === target) continue;
    const x = (from.x + SIZE.width + to.x) / 2;
    const y = (from.y + to.y + SIZE.height) / 2 - 4;
    texts.push(s("text", { class: "tk-edge-label", x, y, "data-edge": key, text }));
  }
  return texts;
}
function drawNodes(nodes, place, props, handlers) {
  const marks = props.marks || {};
  return nodes.map((node) => {
    const { x, y } = place.get(node.id);
    const classes = ["tk-node", `tk-${node.kind}`];
    if (node.band > 0) classes.push("tk-backward");
    if (node.id === props.selected) classes.push("tk-selected");
    if (node.id === props.current) classes.push("tk-current");
    if (!matchesSearch(node, props.query)) classes.push("tk-dim");
    classes.push(...marks[node.id] || []);
    const box = s("rect", {
      width: SIZE.width,
      height: SIZE.height,
      rx: node.kind === "op" || node.kind === "grad_fn" ? 8 : SIZE.height / 2
    });
    if (props.colors.has(node.id)) box.setAttribute("style", `fill: ${props.colors.get(node.id)}`);
    const transform = `translate(${x},${y})`;
    const attrs = { class: classes.join(" "), "data-id": node.id, transform };
    const g = s("g", attrs, [
      s("title", { text: nodeTitle(node) }),
      box,
      s("text", { class: "tk-node-op", x: SIZE.width / 2, y: 16, text: clip(nodeLabel(node)) }),
      s("text", { class: "tk-node-shape", x: SIZE.width / 2, y: 31, text: clip(nodeShapes(node)) })
    ]);
    g.addEventListener(
      "click",
      () => node.id.startsWith(GROUP_PREFIX) ? handlers.onToggle(node.module) : handlers.onSelect?.(node.id)
    );
    return g;
  });
}
function clip(text) {
  return text.length > 20 ? `${text.slice(0, 19)}\u2026` : text;
}

// widgets/src/graph.js
function render({ model, el }) {
  const search = h("input", { class: "tk-search", type: "search", placeholder: "Filter by op" });
  const colorBy = h(
    "select",
    { class: "tk-color-by", title: "Colour nodes by" },
    Object.entries(COLOR_MODES).map(
      ([mode, { label }]) => h("option", { value: mode, text: mode === "none" ? "no colour" : label })
    )
  );
  const backward = h("input", { class: "tk-show-backward", type: "checkbox" });
  const backwardToggle = h("label", { class: "tk-toggle" }, [backward, "gradient ops"]);
  const legend = h("div", { class: "tk-legend-slot" });
  const panel = h("div", { class: "tk-panel" });
  const set = (name, value) => {
    model.set(name, value);
    model.save_changes();
  };
  const view = graphView({
    onSelect(id) {
      set("selected", model.get("selected") === id ? "" : id);
    },
    onToggle(path) {
      const collapsed = model.get("collapsed");
      set(
        "collapsed",
        collapsed.includes(path) ? collapsed.filter((p) => p !== path) : [...collapsed, path]
      );
    }
  });
  const root = h("div", { class: "tk-widget tk-graph-widget" }, [
    h("div", { class: "tk-toolbar" }, [search, colorBy, backwardToggle, legend]),
    h("div", { class: "tk-body" }, [h("div", { class: "tk-canvas" }, [view.element]), panel])
  ]);
  el.append(root);
  const redraw = () => {
    const graph = model.get("graph");
    const selected = model.get("selected");
    const showBackward = model.get("show_backward") ?? true;
    colorBy.value = colorMode(model.get("color_by") || "none");
    backward.checked = showBackward;
    backwardToggle.hidden = !(graph.nodes || []).some((n) => n.band > 0);
    const drawn = view.update({
      graph,
      collapsed: model.get("collapsed") || [],
      selected,
      query: search.value,
      colorBy: colorBy.value,
      current: "",
      showBackward
    });
    legend.replaceChildren(legendView(drawn.legend));
    const node = (graph.nodes || []).find((n) => n.id === selected);
    panel.replaceChildren(nodeDetails(node));
  };
  const events = [
    "change:graph",
    "change:selected",
    "change:collapsed",
    "change:color_by",
    "change:show_backward"
  ];
  search.addEventListener("input", redraw);
  colorBy.addEventListener("change", () => set("color_by", colorBy.value));
  backward.addEventListener("change", () => set("show_backward", backward.checked));
  const stop = redrawOn(model, events, redraw);
  return () => {
    stop();
    view.destroy();
    root.remove();
  };
}
var graph_default = { render };
export {
  graph_default as default
};
