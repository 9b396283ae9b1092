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
function redrawOn(model, events, redraw) {
  for (const name of events) model.on(name, redraw);
  redraw();
  return () => {
    for (const name of events) model.off(name, redraw);
  };
}
function onShortcut(root, find, run) {
  const onKey = (event) => {
    const tag = event.target && event.target.tagName;
    if (tag === "INPUT" || tag === "SELECT") return;
    const entry = find(event);
    if (!entry) return;
    event.preventDefault();
    run(entry);
  };
  root.addEventListener("keydown", onKey);
  return () => root.removeEventListener("keydown", onKey);
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

// widgets/src/stepper_logic.js
var TOOLBAR = [
  { action: "reset", label: "Reset", key: "r" },
  { action: "previous", label: "Previous", key: "p" },
  { action: "next", label: "Next", key: "n" },
  { action: "run_to_end", label: "Run to end", key: "e" },
  { action: "run_to", label: "Run to here", key: "h", needs: "selected" },
  { action: "break_at", label: "Break here", key: "b", needs: "selected" },
  { action: "check_node", label: "Check this node", key: "c" },
  { action: "check_graph", label: "Check whole graph", key: "g" }
];
var HELP = `Keys: ${TOOLBAR.map((e) => `${e.key} ${e.label.toLowerCase()}`).join(" \xB7 ")}`;
function statusText(state) {
  const total = state.total_exact ? state.total_steps : `~${state.total_steps}`;
  const parts = [`step ${state.position} / ${total}`];
  if (state.done) parts.push("done");
  const stop = state.stopped_by;
  if (stop) {
    const why = {
      target: "reached",
      node: "breakpoint",
      nonfinite: "non-finite gradient",
      norm: `gradient norm ${numberText(stop.norm)}`
    }[stop.kind];
    parts.push(`stopped (${why || stop.kind}) at ${stop.node}`);
  }
  if (state.error) {
    const where = state.error.node ? ` at ${state.error.node.id}` : "";
    parts.push(`backward failed${where}: ${state.error.type}`);
  }
  return parts.join(" \xB7 ");
}
function focusNode(state) {
  if (state.error && state.error.node && state.error.node.id) return state.error.node.id;
  return state.step ? state.step.node.id : "";
}
var CLOSE_REL_ERROR = 0.01;
function checkClass(result) {
  if (result.ok === null || result.ok === void 0) return "tk-check-skip";
  if (!result.ok) return "tk-check-bad";
  return result.max_rel_error > CLOSE_REL_ERROR ? "tk-check-warn" : "tk-check-ok";
}
var MARK_LEGEND = [
  { mark: "tk-current", label: "current step" },
  { mark: "tk-visited", label: "already run" },
  { mark: "tk-selected", label: "selected" },
  { mark: "tk-breakpoint", label: "breakpoint" },
  { mark: "tk-check-ok", label: "check agrees" },
  { mark: "tk-check-warn", label: `agrees, rel error > ${CLOSE_REL_ERROR}` },
  { mark: "tk-check-bad", label: "check disagrees" },
  { mark: "tk-check-skip", label: "not checked" },
  { mark: "tk-failed", label: "backward failed" },
  { mark: "tk-inplace", label: "modified in place" }
];
function nodeMarks(state, checks) {
  const marks = {};
  const add = (id, name) => {
    if (!id) return;
    const list = marks[id] || (marks[id] = []);
    if (!list.includes(name)) list.push(name);
  };
  for (const id of state.visited || []) add(id, "tk-visited");
  for (const [id, result] of Object.entries(checks && checks.nodes || {})) {
    add(id, checkClass(result));
  }
  const report = checks && checks.graph;
  if (report && report.first_failure) add(report.first_failure.id, "tk-check-bad");
  const error = state.error;
  if (error && error.node) add(error.node.id, "tk-failed");
  if (error && error.inplace && error.inplace.node) add(error.inplace.node.id, "tk-inplace");
  for (const id of state.breakpoints && state.breakpoints.nodes || []) add(id, "tk-breakpoint");
  return marks;
}
function chainLabels(chainEdges) {
  const labels = {};
  for (const e of chainEdges || []) {
    if (!e.to) continue;
    const key = `${e.to}->${e.from}`;
    const term = `${numberText(e.local)}\xD7${numberText(e.upstream)}=${numberText(e.product)}`;
    labels[key] = labels[key] ? `${labels[key]}; ${term}` : term;
  }
  return labels;
}
function chainText(entry) {
  const target = entry.to || `input ${entry.position}`;
  const local = numberText(entry.local);
  const upstream = numberText(entry.upstream);
  return `\u2202L/\u2202${target} += ${local} \xD7 ${upstream} = ${numberText(entry.product)}`;
}
function checkText(result) {
  if (result.ok === null || result.ok === void 0) return result.verdict;
  const rel = numberText(result.max_rel_error);
  const errors = `max rel error ${rel}, max abs error ${numberText(result.max_abs_error)}`;
  const verdict = result.ok ? "agrees" : "DISAGREES";
  return `${result.id} ${result.node}: ${verdict} with finite differences (${errors})`;
}
function graphCheckText(report) {
  const failure = report.first_failure;
  if (failure) {
    const where = `${failure.id} ${failure.node} at step ${failure.step}`;
    const error = `max rel error ${numberText(failure.max_rel_error)}`;
    return `first disagreeing node: ${where} (${error}); ${report.checked} checked`;
  }
  const skipped = report.skipped.length ? `; ${report.skipped.length} skipped (inputs unknown: use step_backward(loss_fn, inputs))` : "";
  if (report.error) {
    const where = report.error.node ? ` at ${report.error.node.id}` : "";
    return `backward failed${where} after ${report.checked} agreeing nodes${skipped}`;
  }
  return `all ${report.checked} checked nodes agree${skipped}`;
}
var RUN_KINDS = ["text", "code", "math", "emphasis", "strong"];
function docRuns(rule) {
  if (Array.isArray(rule.doc_runs)) {
    return rule.doc_runs.filter((run) => run && typeof run.text === "string" && run.text).map((run) => ({ kind: RUN_KINDS.includes(run.kind) ? run.kind : "text", text: run.text }));
  }
  return typeof rule.doc === "string" && rule.doc ? [{ kind: "text", text: rule.doc }] : [];
}
function disagrees(produced, expected, { atol = 1e-5, rtol = 1e-3 } = {}) {
  if (typeof produced !== "number" || typeof expected !== "number") return produced !== expected;
  return Math.abs(produced - expected) > atol + rtol * Math.abs(expected);
}
function checkInputText(entry) {
  const shape = entry.shape ? ` (${entry.shape.join("\xD7") || "scalar"})` : "";
  const sampled = entry.sampled ? `, ${entry.elements} sampled elements` : "";
  const errors = `max abs error ${numberText(entry.max_abs_error)}, max rel error ${numberText(
    entry.max_rel_error
  )}`;
  return `input ${entry.position}${shape}: ${errors}${sampled}`;
}
function graphCheckRows(report, order) {
  const skipped = (report.skipped || []).map((s2) => ({
    ...s2,
    ok: null,
    verdict: `not checked: ${s2.reason}`
  }));
  const place = (id) => {
    const at = (order || []).indexOf(id);
    return at < 0 ? Infinity : at;
  };
  return [...report.nodes || [], ...skipped].map((result) => ({ id: result.id, ...graphCheckRow(result), at: place(result.id) })).sort((a, b) => a.at - b.at).map(({ at, ...row }) => row);
}
function graphCheckRow(result) {
  const verdict = result.ok === null || result.ok === void 0 ? result.verdict : `${result.ok ? "agrees" : "DISAGREES"} (max rel error ${numberText(result.max_rel_error)})`;
  return {
    step: result.step === void 0 ? "" : String(result.step),
    node: `${result.id} ${result.node}`,
    verdict,
    mark: checkClass(result)
  };
}

// widgets/src/values.js
var NONFINITE_COLOR = "rgb(200, 0, 200)";
var CELL = 8;
var HIST = { width: 200, height: 48 };
function payloadKind(payload) {
  if (payload == null) return "none";
  if (payload.values !== void 0) return "table";
  if (payload.heatmap && payload.heatmap.values.length) return "heatmap";
  if (payload.histogram && payload.histogram.counts.length) return "histogram";
  return "summary";
}
function tableRows(values, shape) {
  if (shape.length === 0) return [[values]];
  if (shape.length === 1) return [values];
  const flat = values.flat(shape.length - 1);
  const width = shape[shape.length - 1];
  const rows = [];
  for (let i = 0; i < flat.length; i += width) rows.push(flat.slice(i, i + width));
  return rows;
}
function heatColor(value, min, max) {
  if (typeof value !== "number") return NONFINITE_COLOR;
  const signed = min < 0 && max > 0;
  const base = signed ? 0 : min >= 0 ? min : max;
  const span = signed ? Math.max(-min, max) : max - min;
  const t = span > 0 ? Math.min(1, Math.abs(value - base) / span) : 0;
  const fade = Math.round(255 * (1 - t));
  return value < base ? `rgb(${fade}, ${fade}, 255)` : `rgb(255, ${fade}, ${fade})`;
}
function histogramBars(histogram, width, height) {
  const { edges, counts } = histogram;
  const top = Math.max(1, ...counts);
  const bar = width / counts.length;
  return counts.map((count, i) => {
    const tall = height * count / top;
    return {
      x: i * bar,
      y: height - tall,
      width: bar,
      height: tall,
      count,
      from: edges[i],
      to: edges[i + 1]
    };
  });
}
function payloadElement(payload) {
  const kind = payloadKind(payload);
  if (kind === "none") return h("span", { class: "tk-muted", text: "None" });
  const magnitude = payload.magnitude ? " (magnitudes)" : "";
  const head = h("div", {
    class: "tk-muted",
    text: `${shapeText(payload.shape)} ${payload.dtype}${magnitude}`
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
    rows.map((row) => h("tr", {}, row.map((v) => h("td", { text: numberText(v) }))))
  );
}
function heatmapView(heatmap, shape) {
  const { values, min, max } = heatmap;
  const cols = values[0].length;
  const cells = values.flatMap(
    (row, i) => row.map(
      (v, j) => s(
        "rect",
        { x: j * CELL, y: i * CELL, width: CELL, height: CELL, fill: heatColor(v, min, max) },
        [s("title", { text: numberText(v) })]
      )
    )
  );
  const blocks = `${Math.ceil(shape[0] / values.length)}x${Math.ceil(shape[1] / cols)}`;
  const range = `${numberText(min)} \u2026 ${numberText(max)}`;
  return h("div", { class: "tk-heatmap" }, [
    s("svg", { width: cols * CELL, height: values.length * CELL, class: "tk-heatmap-svg" }, cells),
    h("div", {
      class: "tk-muted",
      text: `means of ~${blocks} blocks: ${range}, ${heatScale(min, max)}`
    })
  ]);
}
function heatScale(min, max) {
  if (min < 0 && max > 0) return "blue < 0 (white) < red";
  return min >= 0 ? "white (min) to red (max)" : "blue (min) to white (max)";
}
function histogramView(histogram) {
  const bars = histogramBars(histogram, HIST.width, HIST.height).map(
    (b) => s("rect", { class: "tk-hist-bar", x: b.x, y: b.y, width: b.width, height: b.height }, [
      s("title", { text: `${numberText(b.from)} \u2026 ${numberText(b.to)}: ${b.count}` })
    ])
  );
  const { edges } = histogram;
  return h("div", { class: "tk-histogram" }, [
    s("svg", { width: HIST.width, height: HIST.height, class: "tk-histogram-svg" }, bars),
    h("div", {
      class: "tk-muted",
      text: `histogram ${numberText(edges[0])} \u2026 ${numberText(edges[edges.length - 1])}`
    })
  ]);
}
var UNCOMPARED_COLOR = "rgb(225, 225, 225)";
var DIFF_MAP = { side: 240, minCell: 6, maxCell: 24 };
function diffCellSize(rows, cols) {
  const fit = Math.floor(DIFF_MAP.side / Math.max(rows, cols, 1));
  return Math.min(DIFF_MAP.maxCell, Math.max(DIFF_MAP.minCell, fit));
}
function heatStops(min, max) {
  const at = (value, percent) => `${heatColor(value, min, max)} ${percent}%`;
  if (!(max > min)) return [at(min, 0), at(max, 100)];
  const signed = min < 0 && max > 0;
  const zero = Math.round(100 * -min / (max - min));
  return signed ? [at(min, 0), at(0, zero), at(max, 100)] : [at(min, 0), at(max, 100)];
}
function sideBySide(left, right, differs) {
  const [a, b] = [left.payload, right.payload];
  const paired = payloadKind(a) === "table" && payloadKind(b) === "table" && shapeText(a.shape) === shapeText(b.shape);
  const views = paired ? markedTables(a, b, differs) : [payloadElement(a), payloadElement(b)];
  return h(
    "div",
    { class: "tk-compare" },
    [left, right].map(
      ({ title }, i) => h("div", { class: "tk-side" }, [h("div", { class: "tk-side-title", text: title }), views[i]])
    )
  );
}
function markedTables(a, b, differs) {
  const rowsA = tableRows(a.values, a.shape);
  const rowsB = tableRows(b.values, b.shape);
  const wrong = rowsA.map((row, i) => row.map((v, j) => differs(v, rowsB[i][j])));
  return [
    [a, rowsA],
    [b, rowsB]
  ].map(([payload, rows]) => {
    const head = h("div", {
      class: "tk-muted",
      text: `${shapeText(payload.shape)} ${payload.dtype}`
    });
    const table = h(
      "table",
      { class: "tk-values" },
      rows.map(
        (row, i) => h(
          "tr",
          {},
          row.map(
            (v, j) => h("td", { class: wrong[i][j] ? "tk-mismatch" : null, text: numberText(v) })
          )
        )
      )
    );
    return h("div", { class: "tk-payload tk-payload-table" }, [head, table]);
  });
}
function diffScale(map, floor) {
  const span = Math.max(Math.abs(map.min), Math.abs(map.max), floor || 0);
  return { min: -span, max: span };
}
function differenceMapElement(map, caption, floor = 0) {
  const { values } = map;
  const { min, max } = diffScale(map, floor);
  const cell = diffCellSize(values.length, (values[0] || []).length);
  const cells = values.flatMap(
    (row, i) => row.map((v, j) => {
      const fill2 = v === null ? UNCOMPARED_COLOR : heatColor(v, min, max);
      const title = v === null ? "not compared" : `produced \u2212 expected: ${numberText(v)}`;
      return s(
        "rect",
        { x: j * cell, y: i * cell, width: cell, height: cell, fill: fill2 },
        [s("title", { text: title })]
      );
    })
  );
  const width = (values[0] || []).length * cell;
  const svg = s("svg", { width, height: values.length * cell, class: "tk-diff-svg" }, cells);
  const [blockRows, blockCols] = map.block;
  const per = blockRows * blockCols > 1 ? `, each cell the largest of ~${blockRows}\xD7${blockCols}` : "";
  const matrix = `${map.rows}\xD7${map.cols}`;
  const bar = `background: linear-gradient(to right, ${heatStops(min, max).join(", ")})`;
  const legend = h("div", { class: "tk-legend tk-diff-legend" }, [
    h("span", { class: "tk-legend-min", text: numberText(min) }),
    h("span", { class: "tk-legend-bar", style: bar }),
    h("span", { class: "tk-legend-max", text: numberText(max) }),
    h("span", { class: "tk-legend-item" }, [
      h("span", { class: "tk-swatch", style: `background: ${UNCOMPARED_COLOR}` }),
      "not compared"
    ]),
    h("span", { class: "tk-legend-item" }, [
      h("span", { class: "tk-swatch", style: `background: ${NONFINITE_COLOR}` }),
      "nan/inf"
    ])
  ]);
  return h("div", { class: "tk-diff-map" }, [
    h("div", { class: "tk-side-title", text: `produced \u2212 expected (${matrix}${per})` }),
    svg,
    legend,
    h("div", { class: "tk-diff-errors", text: caption })
  ]);
}

// widgets/src/stepper_panel.js
function panelView(state, checks, selected, onSelect) {
  const step = state.step;
  const parts = [];
  if (state.error) parts.push(errorView(state.error));
  const nodeChecks = checks && checks.nodes || {};
  const shown = [selected, step && step.node.id].find((id) => id && nodeChecks[id]);
  const report = checks && checks.graph;
  if (shown || report) {
    parts.push(
      section("finite-difference checks", [
        shown ? nodeCheckView(nodeChecks[shown]) : "",
        report ? graphCheckView(report, state.order, shown, onSelect) : ""
      ])
    );
  }
  const idle = h("div", { class: "tk-muted tk-section", text: "Not started: press Next (n)." });
  parts.push(step ? stepView(step, state.retain_graph) : idle);
  parts.push(
    section(
      "leaves' .grad so far",
      state.leaf_grads.map(
        (leaf) => labelled(`${leaf.id} (${shapeText(leaf.shape)})`, payloadElement(leaf.grad), "tk-leaf")
      )
    )
  );
  return h("div", { class: "tk-step-panel" }, parts);
}
function section(title, items) {
  const head = h("div", { class: "tk-section-title", text: title });
  return h("div", { class: "tk-section" }, [head, ...items]);
}
function stepView(step, retainGraph) {
  const rule = step.rule || {};
  const leaf = step.grads_out.length === 0 && rule.op === "accumulate_grad";
  return h("div", { class: "tk-step" }, [
    h("div", { class: "tk-step-node", text: `${step.node.id}: ${step.node.name}` }),
    section("rule", [
      h("div", { class: "tk-rule", text: rule.function || rule.op || "" }),
      docView(rule),
      rule.where ? h("div", { class: "tk-muted tk-rule-where", text: rule.where }) : ""
    ]),
    section(
      step.grads_in.length > 1 ? "incoming gradients" : "incoming gradient",
      step.grads_in.map(
        (g, i) => step.grads_in.length > 1 ? labelled(`output ${i}`, payloadElement(g)) : payloadElement(g)
      )
    ),
    leaf ? section("produced", [h("div", { class: "tk-muted", text: "added into the leaf's .grad" })]) : section(
      "produced gradients",
      step.grads_out.map((g) => {
        const flow = `input ${g.position} \u2192 ${g.to ?? "no gradient needed"}`;
        return labelled(flow, payloadElement(g.grad), "tk-grad-out");
      })
    ),
    step.chain && step.chain.length ? section(
      "chain rule",
      step.chain.map((e) => h("div", { class: "tk-chain", text: chainText(e) }))
    ) : "",
    savedView(step.saved, retainGraph)
  ]);
}
function labelled(label, content, className = "") {
  return h("div", { class: className }, [h("div", { class: "tk-muted", text: label }), content]);
}
function savedView(saved, retainGraph) {
  if (!saved.length) return "";
  const total = saved.reduce((sum, t) => sum + t.bytes, 0);
  const rows = saved.map((t) => {
    const status = t.freed ? "freed" : retainGraph ? "kept (retain_graph=True)" : "alive";
    return h("tr", { class: t.freed ? "tk-saved-freed" : "" }, [
      h("td", { text: t.role }),
      h("td", { text: shapeText(t.shape) }),
      h("td", { text: t.dtype }),
      h("td", { text: bytesText(t.bytes) }),
      h("td", { text: status })
    ]);
  });
  return section(`saved tensors (${bytesText(total)})`, [h("table", { class: "tk-saved" }, rows)]);
}
function errorView(error) {
  const message = `${error.type}: ${error.message}`;
  const lines = [h("div", { class: "tk-error-message", text: message })];
  if (error.node) {
    lines.push(h("div", { text: `failing node: ${error.node.id}: ${error.node.name}` }));
  }
  const inplace = error.inplace;
  if (inplace) {
    const where = inplace.site ? ` at ${inplace.site}` : "";
    const culprit = inplace.node;
    const node = culprit ? ` (node ${culprit.id ?? "outside this graph"}: ${culprit.name})` : "";
    const versions = `version ${inplace.version}, expected ${inplace.expected_version}`;
    const text = `saved ${inplace.saved} was modified in place by ${inplace.op}${where}${node}`;
    lines.push(h("div", { class: "tk-inplace-culprit", text: `${text}: ${versions}` }));
  }
  if (error.forward_trace) {
    const summary = h("summary", { text: "forward call that created the node" });
    lines.push(h("details", {}, [summary, h("pre", { text: error.forward_trace })]));
  }
  return h("div", { class: "tk-error" }, lines);
}
var RUN_TAGS = { code: "code", math: "var", emphasis: "em", strong: "strong" };
function docView(rule) {
  const runs = docRuns(rule);
  if (!runs.length) return "";
  const nodes = runs.map(
    (run) => run.kind === "text" ? run.text : h(RUN_TAGS[run.kind], { class: `tk-doc-${run.kind}`, text: run.text })
  );
  return h("div", { class: "tk-muted tk-rule-doc" }, nodes);
}
function nodeCheckView(result) {
  const parts = [h("div", { class: "tk-check-result", text: checkText(result) })];
  const tolerances = { atol: result.atol, rtol: result.rtol };
  for (const entry of result.inputs || []) {
    const sampled = entry.sampled ? " (sampled elements)" : "";
    const compared = [
      h("div", { class: "tk-check-input-title", text: checkInputText(entry) }),
      sideBySide(
        { title: `produced by the rule${sampled}`, payload: entry.produced ?? null },
        { title: `finite differences${sampled}`, payload: entry.expected ?? null },
        (a, b) => disagrees(a, b, tolerances)
      )
    ];
    if (entry.difference) {
      const errors = `max abs error ${numberText(entry.max_abs_error)} \xB7 max rel error ${numberText(
        entry.max_rel_error
      )}`;
      compared.push(differenceMapElement(entry.difference, errors, result.atol));
    }
    const mark = entry.ok ? "tk-check-input" : "tk-check-input tk-check-input-bad";
    parts.push(h("div", { class: mark }, compared));
  }
  return h("div", { class: "tk-node-check" }, parts);
}
function graphCheckView(report, order, shown, onSelect) {
  const rows = graphCheckRows(report, order).map((row) => {
    const attrs = { class: "tk-graph-check-row", "data-id": row.id, "data-mark": row.mark };
    const tr = h("tr", attrs, [
      h("td", { text: row.step }),
      h("td", { text: row.node }),
      h("td", { text: row.verdict })
    ]);
    if (row.id === shown) tr.classList.add("tk-shown");
    if (onSelect) tr.addEventListener("click", () => onSelect(row.id));
    return tr;
  });
  const head = h("tr", {}, ["step", "node", "result"].map((text) => h("th", { text })));
  return h("div", { class: "tk-check-graph-view" }, [
    h("div", { class: "tk-check-graph", text: graphCheckText(report) }),
    rows.length ? h("table", { class: "tk-graph-checks" }, [head, ...rows]) : ""
  ]);
}
function markLegend(marks) {
  const entries = MARK_LEGEND.filter((e) => !marks || marks.includes(e.mark));
  return h(
    "div",
    { class: "tk-legend tk-mark-legend" },
    entries.map(
      ({ mark, label }) => h("span", { class: "tk-legend-item", "data-mark": mark }, [
        s("svg", { class: "tk-mark-swatch", width: 26, height: 16, viewBox: "-4 -4 34 24" }, [
          s("g", { class: "tk-mark-sample", "data-sample": mark }, [
            s("rect", { width: 26, height: 16, rx: 4 })
          ])
        ]),
        label
      ])
    )
  );
}

// widgets/src/replay.js
var CHAIN_RULE_MAX_NODES = 40;
var MOVES = TOOLBAR.filter(
  (e) => ["reset", "previous", "next", "run_to_end"].includes(e.action)
);
var HELP2 = `Keys: ${MOVES.map((e) => `${e.key} ${e.label.toLowerCase()}`).join(" \xB7 ")}`;
function moveTo(action, position, total) {
  switch (action) {
    case "reset":
      return 0;
    case "previous":
      return Math.max(position - 1, 0);
    case "next":
      return Math.min(position + 1, total);
    case "run_to_end":
      return total;
    default:
      throw new Error(`unknown replay move ${JSON.stringify(action)}`);
  }
}
function canMove(action, position, total) {
  return moveTo(action, position, total) !== position;
}
function moveForKey(event) {
  if (event.ctrlKey || event.metaKey || event.altKey) return null;
  return MOVES.find((e) => e.key === event.key) || null;
}
function stateAt(pass, position) {
  const total = pass.steps.length;
  const at = Math.min(Math.max(position, 0), total);
  const grads = /* @__PURE__ */ new Map();
  const chainEdges = [];
  for (const step of pass.steps.slice(0, at)) {
    if ("leaf_grad" in step) grads.set(step.node.id, step.leaf_grad);
    for (const entry of step.chain || []) chainEdges.push({ ...entry, from: step.node.id });
  }
  return {
    position: at,
    total_steps: total,
    total_exact: true,
    done: at === total,
    stopped_by: null,
    error: null,
    breakpoints: { nonfinite: false, nodes: [], grad_norm: null },
    retain_graph: false,
    step: at ? pass.steps[at - 1] : null,
    order: pass.steps.map((step) => step.node.id),
    visited: pass.steps.slice(0, at).map((step) => step.node.id),
    chain_edges: chainEdges,
    leaf_grads: pass.leaves.map(
      (leaf) => grads.has(leaf.id) ? { ...leaf, grad: grads.get(leaf.id) } : leaf
    )
  };
}
function statusLine(pass, state) {
  const recorded = pass.steps.length;
  const cut = pass.total_steps > recorded;
  const note = cut ? ` \xB7 first ${recorded} of ${pass.total_steps} steps recorded` : "";
  return statusText(state) + note;
}
function render({ model, el }) {
  let selected = "";
  const current = () => model.get("passes")[model.get("pass_index")];
  const move = (action) => {
    const pass = current();
    const position = moveTo(action, model.get("position"), pass.steps.length);
    if (position === model.get("position")) return;
    model.set("position", position);
    model.save_changes();
  };
  const buttons = MOVES.map((entry) => {
    const button = h("button", {
      class: "tk-button",
      title: `${entry.label} (${entry.key})`,
      text: entry.label,
      "data-action": entry.action
    });
    button.addEventListener("click", () => move(entry.action));
    return { entry, button };
  });
  const chooser = h("select", { class: "tk-pass-chooser", title: "The backward pass shown" });
  chooser.addEventListener("change", () => {
    model.set("pass_index", Number(chooser.value));
    model.set("position", 0);
    model.save_changes();
  });
  const status = h("span", { class: "tk-status" });
  const panel = h("div", { class: "tk-panel" });
  const view = graphView({
    onSelect(id) {
      selected = selected === id ? "" : id;
      redraw();
    },
    onToggle() {
    }
  });
  const root = h("div", { class: "tk-widget tk-stepper-widget tk-replay-widget", tabindex: 0 }, [
    h("div", { class: "tk-toolbar" }, [...buttons.map((b) => b.button), chooser, status]),
    h("div", { class: "tk-muted tk-help", text: HELP2 }),
    markLegend(["tk-current", "tk-visited", "tk-selected"]),
    h("div", { class: "tk-body" }, [h("div", { class: "tk-canvas" }, [view.element]), panel])
  ]);
  el.append(root);
  const stopKeys = onShortcut(root, moveForKey, (entry) => move(entry.action));
  function redraw() {
    const passes = model.get("passes");
    const pass = current();
    const state = stateAt(pass, model.get("position"));
    chooser.hidden = passes.length < 2;
    chooser.replaceChildren(
      ...passes.map((p, i) => h("option", { value: String(i), text: `pass ${p.pass}` }))
    );
    chooser.value = String(model.get("pass_index"));
    for (const { entry, button } of buttons) {
      button.disabled = !canMove(entry.action, state.position, state.total_steps);
    }
    status.textContent = statusLine(pass, state);
    panel.replaceChildren(panelView(state, { nodes: {}, graph: null }, selected));
    view.update({
      graph: pass.graph,
      collapsed: [],
      selected,
      query: "",
      colorBy: "none",
      direction: "backward",
      current: focusNode(state),
      marks: nodeMarks(state, { nodes: {}, graph: null }),
      edgeLabels: pass.graph.nodes.length <= CHAIN_RULE_MAX_NODES ? chainLabels(state.chain_edges) : {}
    });
  }
  const events = ["change:passes", "change:pass_index", "change:position"];
  const stop = redrawOn(model, events, redraw);
  return () => {
    stop();
    stopKeys();
    view.destroy();
    root.remove();
  };
}
var replay_default = { render };
export {
  CHAIN_RULE_MAX_NODES,
  HELP2 as HELP,
  MOVES,
  canMove,
  replay_default as default,
  moveForKey,
  moveTo,
  stateAt,
  statusLine
};
