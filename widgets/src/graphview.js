/**
 * The graph as SVG: module group frames, edges in argument order, node boxes; zoom with the
 * wheel and pan by dragging. Shared by the graph widget and the stepper widget.
 */

import { s } from "./dom.js";
import { colorWeights, nodeLabel, nodeShapes, nodeTitle } from "./format.js";
import {
  GROUP_PREFIX,
  collapsedOwner,
  edgePath,
  matchesSearch,
  orderLayers,
  placeNodes,
  visibleGraph,
} from "./layout.js";

/** Node box size and gaps between layers / rows, in SVG units. */
export const SIZE = { width: 132, height: 40, gapX: 56, gapY: 30 };

/**
 * @typedef {object} ViewProps
 * @property {object} graph the model from tensorkit.notebook.build_graph
 * @property {string[]} collapsed collapsed module paths
 * @property {string} selected selected node id ("" for none)
 * @property {string} query search text
 * @property {string} colorBy "none" | "time" | "memory" | "nan"
 * @property {string} current node id to highlight as the current step ("" for none)
 */

/**
 * Create a graph view. `onSelect(id)` (optional) is called on a node click, `onToggle(path)`
 * on a group header (or collapsed group) click.
 * @param {{onSelect?: (id: string) => void, onToggle: (path: string) => void}} handlers
 * @returns {{element: SVGSVGElement, update: (props: ViewProps) => void, destroy: () => void}}
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
    },
  };
}

/**
 * The SVG elements of one rendering (group frames, then edges, then nodes) and the nodes'
 * places.
 * @param {ViewProps} props
 * @param {{onSelect?: Function, onToggle: Function}} handlers
 * @returns {{elements: SVGElement[], place: Map<string, {x: number, y: number}>}}
 */
function drawGraph(props, handlers) {
  const { graph } = props;
  if (!graph || !graph.nodes) return { elements: [], place: new Map() };
  const visible = visibleGraph(graph, props.collapsed);
  const place = placeNodes(orderLayers(visible.nodes, visible.edges), SIZE);
  const elements = [
    ...drawGroups(graph, visible, place, new Set(props.collapsed), handlers.onToggle),
    ...drawEdges(visible.edges, place),
    ...drawNodes(visible.nodes, place, props, handlers),
  ];
  return { elements, place };
}

/**
 * The view transform showing all nodes, scaled down (not up) to fit a width x height area.
 * @param {Map<string, {x: number, y: number}>} place
 * @param {number} width
 * @param {number} height
 * @returns {{k: number, x: number, y: number}}
 */
export function fitView(place, width, height) {
  const points = [...place.values()];
  const right = Math.max(0, ...points.map((p) => p.x + SIZE.width));
  const bottom = Math.max(0, ...points.map((p) => p.y + SIZE.height));
  const margin = 40;
  const fit = Math.min(1, (width - 2 * margin) / right, (height - 2 * margin) / bottom);
  const k = Math.max(0.2, fit);
  return { k, x: margin, y: margin };
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

function drawGroups(graph, visible, place, collapsed, onToggle) {
  const frames = [];
  const paths = Object.keys(graph.groups || {});
  const deepest = Math.max(0, ...paths.map((p) => p.split(".").length - 1));
  for (const path of paths) {
    if (collapsedOwner(path, collapsed) !== null) continue;
    const members = visible.nodes.filter(
      (n) => n.module === path || (n.module || "").startsWith(`${path}.`),
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

function drawEdges(edges, place) {
  const arity = new Map();
  for (const e of edges) arity.set(e.target, Math.max(arity.get(e.target) || 0, e.position + 1));
  return edges
    .filter((e) => place.has(e.source) && place.has(e.target))
    .map((e) =>
      s("path", {
        class: "tk-edge",
        d: edgePath(
          place.get(e.source),
          place.get(e.target),
          SIZE,
          e.position,
          arity.get(e.target),
        ),
        "data-position": e.position,
      }),
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
      rx: node.kind === "op" || node.kind === "grad_fn" ? 8 : SIZE.height / 2,
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
