/**
 * The graph as SVG: module group frames, edges in argument order, node boxes, the gradient
 * ops' band below the forward ops with dashed links to the ops whose rules ran them; zoom
 * with the wheel and pan by dragging. Shared by the graph widget and the stepper widget.
 */

import { s } from "./dom.js";
import { nodeColors, nodeLabel, nodeShapes, nodeTitle } from "./format.js";
import {
  GROUP_PREFIX,
  bandLayout,
  collapsedOwner,
  edgePath,
  linkPath,
  matchesSearch,
  visibleGraph,
} from "./layout.js";

/** Node box size and gaps between layers / rows, in SVG units. */
export const SIZE = { width: 132, height: 40, gapX: 56, gapY: 30 };

/** Padding of a module group's frame around its nodes, `level` of `deepest` (outer frames
 * pad more, so nested frames do not touch). */
function framePad(level, deepest) {
  return 6 + 16 * (deepest - level);
}

/** Height of a frame's header line. */
const HEADER = 14;

/** The smallest scale fitting a graph to the view uses: below it labels are not legible,
 * so a larger graph shows its top-left part (zoom out with the wheel to see all). */
export const MIN_FIT_SCALE = 0.75;

/**
 * @typedef {object} ViewProps
 * @property {object} graph the model from tensorkit.notebook.build_graph
 * @property {string[]} collapsed collapsed module paths
 * @property {string} selected selected node id ("" for none)
 * @property {string} query search text
 * @property {string} colorBy a key of format.js COLOR_MODES ("none", "forward_time",
 *   "backward_time", "bytes", "grad_norm", "nan"; "time" and "memory" are aliases)
 * @property {string} current node id to highlight as the current step ("" for none)
 * @property {boolean} [showBackward] draw the gradient bands (default true)
 * @property {Object<string, string[]>} [marks] node id -> extra class names of its <g>
 * @property {Object<string, string>} [edgeLabels] "source->target" -> text drawn at the
 *   middle of that edge (class tk-edge-label)
 */

/**
 * Create a graph view. `onSelect(id)` (optional) is called on a node click, `onToggle(path)`
 * on a group header (or collapsed group) click. `update` returns the colour legend (see
 * format.js nodeColors; null without colouring).
 * @param {{onSelect?: (id: string) => void, onToggle: (path: string) => void}} handlers
 * @returns {{element: SVGSVGElement, update: (props: ViewProps) => {legend: object|null},
 *   destroy: () => void}}
 */
export function graphView({ onSelect, onToggle }) {
  const viewport = s("g", { class: "tk-viewport" });
  const svg = s("svg", { class: "tk-graph-svg" }, [viewport]);
  const view = { k: 1, x: 16, y: 28 };
  const apply = () =>
    viewport.setAttribute("transform", `translate(${view.x},${view.y}) scale(${view.k})`);
  apply();

  const onWheel = (event) => {
    event.preventDefault();
    const box = svg.getBoundingClientRect();
    const px = event.clientX - box.left;
    const py = event.clientY - box.top;
    const k = Math.min(4, Math.max(0.2, view.k * Math.exp(-event.deltaY * 0.001)));
    view.x = px - ((px - view.x) * k) / view.k;
    view.y = py - ((py - view.y) * k) / view.k;
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

  // The view is fitted whenever what is drawn changes shape (another graph, other folded
  // modules, gradient bands shown or hidden), not on selection; the current node is revealed.
  // Before the SVG is on the page it has no size: the observer fits it once it has one.
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
      viewport.replaceChildren(); // then one by one: a huge graph overflows spread arguments
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
    },
  };
}

/**
 * The SVG elements of one rendering (band titles, group frames, edges, links, edge labels,
 * then nodes), the nodes' places and the colour legend.
 * @param {ViewProps} props
 * @param {{onSelect?: Function, onToggle: Function}} handlers
 * @returns {{elements: SVGElement[], place: Map<string, {x: number, y: number}>,
 *   legend: object|null}}
 */
export function drawGraph(props, handlers) {
  const { graph } = props;
  if (!graph || !graph.nodes) return { elements: [], place: new Map(), legend: null };
  const visible = visibleGraph(graph, props.collapsed, {
    showBackward: props.showBackward !== false,
  });
  const deepest = deepestLevel(graph);
  const outer = framePad(0, deepest);
  const gap = 2 * outer + HEADER + 24; // the frames of both bands and the band's title
  const { place, bands } = bandLayout(visible.nodes, visible.edges, SIZE, gap);
  const { colors, legend } = nodeColors(visible.nodes, props.colorBy);
  const elements = [
    ...drawBands(bands, outer),
    ...drawGroups(graph, visible, place, new Set(props.collapsed), handlers.onToggle),
    ...drawEdges(visible.edges, place, bandOf(visible.nodes)),
    ...drawLinks(visible.links, place),
    ...drawEdgeLabels(props.edgeLabels || {}, visible.owner, place),
    ...drawNodes(visible.nodes, place, { ...props, colors }, handlers),
  ];
  return { elements, place, legend };
}

/**
 * The view transform showing all nodes, scaled down (not up) to fit a width x height area,
 * but not below `MIN_FIT_SCALE`: then the top-left part shows.
 * @param {Map<string, {x: number, y: number}>} place
 * @param {number} width
 * @param {number} height
 * @returns {{k: number, x: number, y: number}}
 */
export function fitView(place, width, height) {
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

/**
 * The view transform, panned horizontally so that a node at `at` is inside the area.
 * @param {{k: number, x: number, y: number}} view
 * @param {{x: number, y: number}} at
 * @param {number} width
 * @returns {{k: number, x: number, y: number}}
 */
export function revealNode(view, at, width) {
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
      (n) => n.module === path || (n.module || "").startsWith(`${path}.`),
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
    const label = `▾ ${path}`;
    const header = s("text", { class: "tk-group-header", x: x + 4, y: y + 11, text: label });
    header.addEventListener("click", () => onToggle(path));
    frames.push(
      s("g", { class: "tk-group", "data-path": path }, [
        s("rect", { x, y, width, height, rx: 6 }),
        header,
      ]),
    );
  }
  return frames;
}

function bandOf(nodes) {
  return new Map(nodes.map((n) => [n.id, n.band || 0]));
}

function drawBands(bands, outer) {
  return bands.slice(1).map(({ band }, i) =>
    s("text", {
      class: "tk-band-label",
      x: 0,
      y: bands[i].bottom + outer + 16,
      text: band === 1 ? "gradient ops (backward) ←" : `gradient ops, order ${band} ←`,
    }),
  );
}

function drawEdges(edges, place, band) {
  const arity = new Map();
  for (const e of edges) arity.set(e.target, Math.max(arity.get(e.target) || 0, e.position + 1));
  return edges
    .filter((e) => place.has(e.source) && place.has(e.target))
    .map((e) => {
      const inside = band.get(e.source) === band.get(e.target);
      return s("path", {
        class: inside ? "tk-edge" : "tk-edge tk-edge-cross",
        d: edgePath(
          place.get(e.source),
          place.get(e.target),
          SIZE,
          e.position,
          arity.get(e.target),
          inside && band.get(e.source) > 0,
        ),
        "data-position": e.position,
        "data-source": e.source,
        "data-target": e.target,
      });
    });
}

function drawLinks(links, place) {
  return links
    .filter((l) => place.has(l.source) && place.has(l.target))
    .map((l) =>
      s("path", {
        class: "tk-link",
        d: linkPath(place.get(l.source), place.get(l.target), SIZE),
        "data-source": l.source,
        "data-target": l.target,
      }),
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
    classes.push(...(marks[node.id] || []));
    const box = s("rect", {
      width: SIZE.width,
      height: SIZE.height,
      rx: node.kind === "op" || node.kind === "grad_fn" ? 8 : SIZE.height / 2,
    });
    if (props.colors.has(node.id)) box.setAttribute("style", `fill: ${props.colors.get(node.id)}`);
    const transform = `translate(${x},${y})`;
    const attrs = { class: classes.join(" "), "data-id": node.id, transform };
    const g = s("g", attrs, [
      s("title", { text: nodeTitle(node) }),
      box,
      s("text", { class: "tk-node-op", x: SIZE.width / 2, y: 16, text: clip(nodeLabel(node)) }),
      s("text", { class: "tk-node-shape", x: SIZE.width / 2, y: 31, text: clip(nodeShapes(node)) }),
    ]);
    g.addEventListener("click", () =>
      node.id.startsWith(GROUP_PREFIX)
        ? handlers.onToggle(node.module)
        : handlers.onSelect?.(node.id),
    );
    return g;
  });
}

function clip(text) {
  return text.length > 20 ? `${text.slice(0, 19)}…` : text;
}
