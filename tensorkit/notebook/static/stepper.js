/* tensorkit widgets bundle: esbuild 0.28.2, widgets/src sha256=6221e5dbe86a74570b04ca49e433eae0a731a43c9d3ecb398e0e63e02143f777 */

// widgets/src/format.js
function shapeText(shape) {
  if (shape == null) return "?";
  return shape.length ? shape.join("x") : "scalar";
}
function numberText(value) {
  if (typeof value !== "number") return String(value);
  if (Number.isInteger(value)) return String(value);
  return Number(value.toPrecision(4)).toString();
}
function summaryText(summary) {
  if (!summary) return "";
  const parts = ["min", "max", "mean", "std"].filter((k) => summary[k] != null).map((k) => `${k} ${numberText(summary[k])}`);
  if (summary.nan) parts.push(`${summary.nan} nan`);
  if (summary.inf) parts.push(`${summary.inf} inf`);
  return parts.join(", ");
}
function nodeLabel(node) {
  if (node.kind === "group") return `${node.module} (${node.count})`;
  if (node.kind === "tensor") return node.requires_grad ? "param" : "tensor";
  return node.op || node.grad_fn || node.kind;
}
function nodeShapes(node) {
  const out = node.shapes && node.shapes.out || [];
  return out.map(shapeText).join(", ");
}
function nodeTitle(node) {
  const lines = [`${node.id}: ${nodeLabel(node)} -> ${nodeShapes(node)}`];
  const summary = summaryText(node.summary);
  if (summary) lines.push(summary);
  if (node.call_site) lines.push(node.call_site);
  return lines.join("\n");
}
var RECORD_KEYS = { time: "time_ns", memory: "alloc_bytes" };
function colorWeights(nodes, colorBy) {
  const weights = /* @__PURE__ */ new Map();
  if (colorBy === "nan") {
    for (const node of nodes) {
      const s2 = node.summary;
      if (s2) weights.set(node.id, s2.nan || s2.inf ? 1 : 0);
    }
    return weights;
  }
  const key = RECORD_KEYS[colorBy];
  if (!key) return weights;
  const values = nodes.filter((n) => n.records && typeof n.records[key] === "number").map((n) => [n.id, n.records[key]]);
  const top = Math.max(0, ...values.map(([, v]) => v));
  for (const [id, v] of values) weights.set(id, top > 0 ? v / top : 0);
  return weights;
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
function payloadView(payload) {
  if (payload == null) return h("span", { class: "tk-muted", text: "None" });
  const head = `${shapeText(payload.shape)} ${payload.dtype}`;
  const values = payload.values;
  if (values === void 0 || payload.shape.length > 2) {
    const text = values === void 0 ? summaryText(payload.summary) : "values hidden (> 2-D)";
    return h("div", { class: "tk-payload" }, [h("div", { class: "tk-muted", text: head }), text]);
  }
  const rank = payload.shape.length;
  const rows = rank === 0 ? [[values]] : rank === 1 ? [values] : values;
  const table = h(
    "table",
    { class: "tk-values" },
    rows.map((row) => h("tr", {}, row.map((v) => h("td", { text: numberText(v) }))))
  );
  return h("div", { class: "tk-payload" }, [h("div", { class: "tk-muted", text: head }), table]);
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
function visibleGraph(graph, collapsed) {
  const folded = new Set(collapsed.filter((path) => path in (graph.groups || {})));
  const owner = /* @__PURE__ */ new Map();
  const nodes = [];
  const groupNodes = /* @__PURE__ */ new Map();
  for (const node of graph.nodes) {
    const path = collapsedOwner(node.module, folded);
    if (path === null) {
      nodes.push(node);
      continue;
    }
    const id = GROUP_PREFIX + path;
    owner.set(node.id, id);
    if (groupNodes.has(id)) continue;
    const stand = {
      id,
      kind: "group",
      op: path,
      module: path,
      depth: node.depth,
      count: graph.groups[path].count,
      shapes: { in: [], out: [] }
    };
    groupNodes.set(id, stand);
    nodes.push(stand);
  }
  const seen = /* @__PURE__ */ new Set();
  const edges = [];
  for (const edge of graph.edges) {
    const source = owner.get(edge.source) ?? edge.source;
    const target = owner.get(edge.target) ?? edge.target;
    const key = `${source}->${target}`;
    if (source === target || seen.has(key)) continue;
    seen.add(key);
    edges.push({ ...edge, source, target });
  }
  return { nodes: groupNodes.size ? relayer(nodes, edges) : nodes, edges, owner };
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
  while (queue.length) {
    const id = queue.shift();
    done.add(id);
    for (const child of children.get(id)) {
      depth.set(child, Math.max(depth.get(child), depth.get(id) + 1));
      indegree.set(child, indegree.get(child) - 1);
      if (indegree.get(child) === 0) queue.push(child);
    }
  }
  return nodes.map((n) => ({ ...n, depth: done.has(n.id) ? depth.get(n.id) : n.depth }));
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
  for (let sweep = 0; sweep < sweeps; sweep++) {
    for (let d = 1; d < layers.length; d++) reorder(layers, d, inputs);
    for (let d = layers.length - 2; d >= 0; d--) reorder(layers, d, outputs);
  }
  return layers;
}
function reorder(layers, d, neighbours) {
  const position = /* @__PURE__ */ new Map();
  for (const layer of layers) layer.forEach((id, i) => position.set(id, i));
  const key = /* @__PURE__ */ new Map();
  for (const [i, id] of layers[d].entries()) {
    const known = neighbours.get(id).filter((n) => position.has(n));
    const sum = known.reduce((acc, n) => acc + position.get(n), 0);
    key.set(id, known.length ? sum / known.length : i);
  }
  layers[d].sort((a, b) => key.get(a) - key.get(b));
}
function placeNodes(layers, size) {
  const tallest = Math.max(0, ...layers.map((l) => l.length));
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
function edgePath(from, to, size, position, arity) {
  const x1 = from.x + size.width;
  const y1 = from.y + size.height / 2;
  const x2 = to.x;
  const y2 = to.y + size.height * (position + 1) / (arity + 1);
  const bend = Math.max(20, (x2 - x1) / 2);
  return `M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}`;
}
function matchesSearch(node, query) {
  const q = query.trim().toLowerCase();
  if (!q) return true;
  return [node.op, node.grad_fn, node.id, node.module].filter(Boolean).some((text) => String(text).toLowerCase().includes(q));
}

// widgets/src/graphview.js
var SIZE = { width: 132, height: 40, gapX: 56, gapY: 30 };
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
  let shown = null;
  return {
    element: svg,
    update(props) {
      const { elements, place } = drawGraph(props, { onSelect, onToggle });
      viewport.replaceChildren(...elements);
      const width = svg.clientWidth;
      const height = svg.clientHeight;
      if (!width || !height) return;
      if (props.graph !== shown) {
        shown = props.graph;
        Object.assign(view, fitView(place, width, height));
      }
      const at = place.get(props.current);
      if (at) Object.assign(view, revealNode(view, at, width));
      apply();
    },
    destroy() {
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
  if (!graph || !graph.nodes) return { elements: [], place: /* @__PURE__ */ new Map() };
  const visible = visibleGraph(graph, props.collapsed);
  const place = placeNodes(orderLayers(visible.nodes, visible.edges), SIZE);
  const elements = [
    ...drawGroups(graph, visible, place, new Set(props.collapsed), handlers.onToggle),
    ...drawEdges(visible.edges, place),
    ...drawNodes(visible.nodes, place, props, handlers)
  ];
  return { elements, place };
}
function fitView(place, width, height) {
  const points = [...place.values()];
  const right = Math.max(0, ...points.map((p) => p.x + SIZE.width));
  const bottom = Math.max(0, ...points.map((p) => p.y + SIZE.height));
  const margin = 40;
  const fit = Math.min(1, (width - 2 * margin) / right, (height - 2 * margin) / bottom);
  const k = Math.max(0.2, fit);
  return { k, x: margin, y: margin };
}
function revealNode(view, at, width) {
  const left = view.x + at.x * view.k;
  const right = left + SIZE.width * view.k;
  if (left >= 0 && right <= width) return view;
  return { ...view, x: width / 2 - (at.x + SIZE.width / 2) * view.k };
}
function drawGroups(graph, visible, place, collapsed, onToggle) {
  const frames = [];
  const paths = Object.keys(graph.groups || {});
  const deepest = Math.max(0, ...paths.map((p) => p.split(".").length - 1));
  for (const path of paths) {
    if (collapsedOwner(path, collapsed) !== null) continue;
    const members = visible.nodes.filter(
      (n) => n.module === path || (n.module || "").startsWith(`${path}.`)
    );
    if (!members.length) continue;
    const level = path.split(".").length - 1;
    const pad = 6 + 16 * (deepest - level);
    const xs = members.map((n) => place.get(n.id).x);
    const ys = members.map((n) => place.get(n.id).y);
    const x = Math.min(...xs) - pad;
    const y = Math.min(...ys) - pad - 14;
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
function drawEdges(edges, place) {
  const arity = /* @__PURE__ */ new Map();
  for (const e of edges) arity.set(e.target, Math.max(arity.get(e.target) || 0, e.position + 1));
  return edges.filter((e) => place.has(e.source) && place.has(e.target)).map(
    (e) => s("path", {
      class: "tk-edge",
      d: edgePath(
        place.get(e.source),
        place.get(e.target),
        SIZE,
        e.position,
        arity.get(e.target)
      ),
      "data-position": e.position
    })
  );
}
function drawNodes(nodes, place, props, handlers) {
  const weights = colorWeights(nodes, props.colorBy);
  return nodes.map((node) => {
    const { x, y } = place.get(node.id);
    const classes = ["tk-node", `tk-${node.kind}`];
    if (node.id === props.selected) classes.push("tk-selected");
    if (node.id === props.current) classes.push("tk-current");
    if (!matchesSearch(node, props.query)) classes.push("tk-dim");
    const box = s("rect", {
      width: SIZE.width,
      height: SIZE.height,
      rx: node.kind === "op" || node.kind === "grad_fn" ? 8 : SIZE.height / 2
    });
    if (weights.has(node.id)) {
      box.setAttribute("style", `fill: hsl(${120 - 120 * weights.get(node.id)}, 70%, 85%)`);
    }
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

// widgets/src/stepper.js
var ACTIONS = [
  ["reset", "Reset", "r"],
  ["previous", "Previous", "p"],
  ["next", "Next", "n"],
  ["run_to_end", "Run to end", "e"]
];
function statusText(state) {
  const total = state.total_exact ? state.total_steps : `~${state.total_steps}`;
  const parts = [`step ${state.position} / ${total}`];
  if (state.done) parts.push("done");
  if (state.stopped_by) parts.push(`stopped: ${state.stopped_by.kind} at ${state.stopped_by.node}`);
  if (state.error) parts.push(`error: ${state.error.message || JSON.stringify(state.error)}`);
  return parts.join(" \xB7 ");
}
function stepView(step) {
  if (!step) return h("div", { class: "tk-muted", text: "Not started: press Next (n)." });
  const section = (title, items) => h("div", { class: "tk-section" }, [
    h("div", { class: "tk-section-title", text: title }),
    ...items
  ]);
  return h("div", { class: "tk-step" }, [
    h("div", { class: "tk-step-node", text: `${step.node.id}: ${step.node.name}` }),
    step.rule && step.rule.where ? h("div", { class: "tk-muted", text: step.rule.where }) : "",
    section("incoming gradient", step.grads_in.map(payloadView)),
    section(
      "produced gradients",
      step.grads_out.map(
        (g) => h("div", { class: "tk-grad-out" }, [
          h("div", { class: "tk-muted", text: `input ${g.position} \u2192 ${g.to ?? "none"}` }),
          payloadView(g.grad)
        ])
      )
    )
  ]);
}
function render({ model, el }) {
  const send = (action) => {
    model.set("action", "");
    model.set("action", action);
    model.save_changes();
  };
  const buttons = ACTIONS.map(([action, label, key]) => {
    const button = h("button", { class: "tk-button", title: `${label} (${key})`, text: label });
    button.addEventListener("click", () => send(action));
    return button;
  });
  const status = h("span", { class: "tk-status" });
  const details = h("div", { class: "tk-panel" });
  let collapsed = [];
  const view = graphView({
    onToggle(path) {
      collapsed = collapsed.includes(path) ? collapsed.filter((p) => p !== path) : [...collapsed, path];
      redraw();
    }
  });
  const root = h("div", { class: "tk-widget tk-stepper-widget", tabindex: 0 }, [
    h("div", { class: "tk-toolbar" }, [...buttons, status]),
    h("div", { class: "tk-body" }, [h("div", { class: "tk-canvas" }, [view.element]), details])
  ]);
  el.append(root);
  const onKey = (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const match = ACTIONS.find(([, , key]) => key === event.key);
    if (!match) return;
    event.preventDefault();
    send(match[0]);
  };
  root.addEventListener("keydown", onKey);
  function redraw() {
    const state = model.get("state");
    const step = state.step;
    status.textContent = statusText(state);
    details.replaceChildren(stepView(step));
    view.update({
      graph: model.get("graph"),
      collapsed,
      selected: "",
      query: "",
      colorBy: "none",
      current: step ? step.node.id : ""
    });
  }
  model.on("change:state", redraw);
  model.on("change:graph", redraw);
  redraw();
  return () => {
    model.off("change:state", redraw);
    model.off("change:graph", redraw);
    root.removeEventListener("keydown", onKey);
    view.destroy();
    root.remove();
  };
}
var stepper_default = { render };
export {
  stepper_default as default
};
