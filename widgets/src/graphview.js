/**
 * The graph view shared by the graph, stepper and replay widgets: folds the model's groups
 * (fold.js), lays the result out with ELK (layout.js), builds one scene (scene.js) and
 * paints it, as SVG when small and on a canvas when large. Wheel zoom, drag pan, a tool
 * bar (fit to view, zoom to selection, expand all, collapse all) and a minimap; opening or
 * closing a group keeps that group where it was on screen; a node selected from outside
 * is panned to, opening the groups that hide it.
 */

import { h, s } from "./dom.js";
import { allGroups, foldGraph, groupTree, hidingGroups, searchMatches } from "./fold.js";
import { SIZE, layoutFolded } from "./layout.js";
import { canvasPainter } from "./paint_canvas.js";
import { paintSvg } from "./paint_svg.js";
import { boxTitle, buildScene } from "./scene.js";

/** Scenes with more node boxes than this are painted on a canvas instead of as SVG. */
export const SVG_MAX_NODES = 400;

/** The smallest scale a graph is first shown at: below it labels are not legible, so a
 * larger graph first shows its left part ("fit to view" shows all of it). */
export const MIN_FIT_SCALE = 0.75;

/** The largest zoom. */
export const MAX_SCALE = 4;

/** Margin around the graph when fitted, in pixels. */
const MARGIN = 24;

/**
 * @typedef {object} ViewProps
 * @property {object} graph the model from tensorkit.notebook.build_graph
 * @property {string[]} collapsed folded group ids
 * @property {string} selected selected node id ("" for none); set from outside, the view
 *   pans to it
 * @property {string} query search text: matches are highlighted, folded groups show how
 *   many of their nodes match
 * @property {string} colorBy a key of format.js COLOR_MODES
 * @property {string} current node id to mark as the current step ("" for none)
 * @property {boolean} [showBackward] draw the gradient bands (default true)
 * @property {"forward"|"backward"} [direction] "backward" lays the graph out from the loss
 *   (left) back to the leaves (right), arrows along the gradients' way
 * @property {Object<string, string[]>} [marks] node id -> extra class names of its box
 * @property {Object<string, string>} [edgeLabels] "source->target" -> text at the edge
 */

/**
 * The view transform showing `bounds` in a width x height area: scaled down (never up)
 * to fit, not below `minScale`; centred when it fits, else its left end shown.
 * @param {{x: number, y: number, width: number, height: number}} bounds
 * @param {number} width
 * @param {number} height
 * @param {number} minScale
 * @returns {{k: number, x: number, y: number}}
 */
export function fitTransform(bounds, width, height, minScale) {
  const fit = Math.min(
    1,
    (width - 2 * MARGIN) / Math.max(1, bounds.width),
    (height - 2 * MARGIN) / Math.max(1, bounds.height),
  );
  const k = Math.max(minScale, fit);
  const x = fit >= k ? (width - bounds.width * k) / 2 - bounds.x * k : MARGIN - bounds.x * k;
  const tall = bounds.height * k > height - 2 * MARGIN;
  const y = tall ? MARGIN - bounds.y * k : (height - bounds.height * k) / 2 - bounds.y * k;
  return { k, x, y };
}

/**
 * The view transform with box `b` centred in the area, at scale `k`.
 * @returns {{k: number, x: number, y: number}}
 */
export function centreOn(b, width, height, k) {
  return { k, x: width / 2 - (b.x + b.width / 2) * k, y: height / 2 - (b.y + b.height / 2) * k };
}

/**
 * Whether box `b` lies inside the area under transform `view`.
 * @returns {boolean}
 */
export function boxInView(b, view, width, height) {
  const left = view.x + b.x * view.k;
  const top = view.y + b.y * view.k;
  return left >= 0 && top >= 0 && left + b.width * view.k <= width && top + b.height * view.k <= height;
}

/**
 * The node box, else the group frame header, under graph point (x, y): what a click there
 * means. Null for none.
 * @param {import("./scene.js").Scene} scene
 * @returns {{node?: object, frame?: object}|null}
 */
export function hitTest(scene, x, y) {
  for (let i = scene.nodes.length - 1; i >= 0; i--) {
    const n = scene.nodes[i];
    if (x >= n.x && x <= n.x + n.width && y >= n.y && y <= n.y + n.height) return { node: n };
  }
  for (let i = scene.frames.length - 1; i >= 0; i--) {
    const f = scene.frames[i];
    if (x >= f.x && x <= f.x + f.width && y >= f.y && y <= f.y + SIZE.header) return { frame: f };
  }
  return null;
}

/**
 * What a view keeps between updates to redo only what changed: the group tree per graph,
 * the fold and layout per (collapsed, showBackward, direction).
 */
function layoutMemo() {
  let graph = null;
  let tree = null;
  let key = null;
  let folded = null;
  let layout = null;
  return (props) => {
    if (props.graph !== graph) {
      graph = props.graph;
      tree = groupTree(graph);
      key = null;
    }
    const collapsed = (props.collapsed || []).filter((id) => tree.groups.has(id));
    const next = `${[...collapsed].sort().join("\n")}|${props.showBackward !== false}|${props.direction}`;
    if (next !== key) {
      key = next;
      ({ folded, layout } = foldAndLayout(graph, tree, collapsed, props));
    }
    return { tree, folded, layout, collapsed, key };
  };
}

/** The graph folded at `collapsed` and laid out, as the view's props ask. */
function foldAndLayout(graph, tree, collapsed, props) {
  const folded = foldGraph(graph, tree, collapsed, { showBackward: props.showBackward !== false });
  return { folded, layout: layoutFolded(folded, { direction: props.direction || "forward" }) };
}

/**
 * The folded group of the forward pass (else of the first band with one) holding the most
 * nodes, or null: laid out open as a new graph is first drawn, so that ELK's code is warm
 * and the costliest group to open, with every group of its shape, is in the layout cache
 * before the first click, idle time or not.
 * @param {ReturnType<typeof foldGraph>} folded
 * @returns {string|null} its group id
 */
export function largestFolded(folded) {
  let best = null;
  for (const item of folded.items.values()) {
    if (item.type !== "group" || item.open) continue;
    if (!best || item.band < best.band || (item.band === best.band && item.count > best.count)) {
      best = item;
    }
  }
  return best && best.group.id;
}

/** How many folded groups on screen are laid out open ahead of a click, per update. */
export const PRELAYOUT_MAX = 48;

/**
 * The folded groups a click can open next, at most PRELAYOUT_MAX: first those inside a group
 * in `opened` (just opened: the user looks there next, on screen or after a pan), then those
 * whose boxes touch the view (width x height at transform `view`); each part nearest the
 * view's centre first.
 * @param {ReturnType<typeof foldGraph>} folded
 * @param {Map<string, {x: number, y: number, width: number, height: number}>} boxes
 * @param {Set<string>} [opened] item ids of the groups just opened
 * @returns {string[]} their group ids
 */
export function groupsToPrelayout(folded, boxes, view, width, height, opened = new Set()) {
  const cx = (width / 2 - view.x) / view.k;
  const cy = (height / 2 - view.y) / view.k;
  const shown = [];
  for (const item of folded.items.values()) {
    const b = item.type === "group" && !item.open ? boxes.get(item.id) : null;
    if (!b) continue;
    const left = view.x + b.x * view.k;
    const top = view.y + b.y * view.k;
    const touches =
      left < width && top < height && left + b.width * view.k > 0 && top + b.height * view.k > 0;
    const inside = insideAny(folded, item, opened);
    if (!touches && !inside) continue;
    const distance = Math.hypot(b.x + b.width / 2 - cx, b.y + b.height / 2 - cy);
    shown.push([inside ? 0 : 1, distance, item]);
  }
  shown.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  return shown.slice(0, PRELAYOUT_MAX).map(([, , item]) => item.group.id);
}

/** Whether `item` lies inside one of the groups whose item ids are in `groups`. */
function insideAny(folded, item, groups) {
  for (let id = item.parent; groups.size && folded.items.has(id); id = folded.items.get(id).parent) {
    if (groups.has(id)) return true;
  }
  return false;
}

/**
 * Create a graph view. `onSelect(id)` (optional) is called on a node click, `onToggle(id)`
 * on a click on a group (its frame's header, or the folded group), `onCollapse(ids)`
 * (optional) to set the folded groups at once (expand all, collapse all, opening the groups
 * that hide a node selected from outside; without it, `onToggle` is called per group).
 * `update` returns the colour legend (format.js nodeColors; null without colouring). The
 * element carries, as `element.tkScene`, the last scene drawn, as `tkView` the view
 * transform ({k, x, y}), as `tkStats` the last layout's ELK runs and cache hits and as
 * `tkDrawMs` the last canvas frame's drawing time, as `tkPrelayoutPending` how many folded
 * groups on screen are still to be laid out open in idle time (for tests and tools).
 * @param {{onSelect?: (id: string) => void, onToggle: (id: string) => void,
 *   onCollapse?: (ids: string[]) => void}} handlers
 * @returns {{element: HTMLElement, update: (props: ViewProps) => {legend: object|null},
 *   destroy: () => void}}
 */
export function graphView({ onSelect, onToggle, onCollapse }) {
  const viewport = s("g", { class: "tk-viewport" });
  const svg = s("svg", { class: "tk-graph-svg" }, [viewport]);
  const canvas = h("canvas", { class: "tk-graph-canvas" });
  const minimap = h("canvas", { class: "tk-minimap", title: "Overview: click to move there" });
  const button = (text, title, action) => {
    const b = h("button", { class: "tk-button tk-graph-tool", title, text, "data-action": action });
    b.addEventListener("click", () => tools[action]());
    return b;
  };
  const toolbar = h("div", { class: "tk-graph-tools" }, [
    button("⤢", "Fit the whole graph in view", "fit"),
    button("◎", "Zoom to the selected node", "focus"),
    button("⊞", "Expand all groups", "expand"),
    button("⊟", "Collapse all groups", "collapse"),
  ]);
  const element = h("div", { class: "tk-graph-view" }, [svg, canvas, toolbar, minimap]);
  const painter = canvasPainter(canvas, element);
  const memo = layoutMemo();
  const view = { k: 1, x: MARGIN, y: MARGIN };
  let state = null; // {props, tree, folded, layout, collapsed, scene, mode, key}
  let fittedGraph = null;
  let anchor = null; // {id, sx, sy}: keep this item's box at screen point (sx, sy)
  let reveal = ""; // a node selected from outside, to pan to once it shows
  let frame = 0;

  // Sizes as the ResizeObserver last reported them: reading clientWidth right after a redraw
  // would make the browser lay the new boxes out at once, twice per update (20 ms on a big
  // graph). Without a report yet (or without ResizeObserver), the element is measured.
  const reported = new Map();
  const measure = (el) => reported.get(el) || { width: el.clientWidth, height: el.clientHeight };
  const size = () => measure(element);
  const apply = () => {
    if (!state) return;
    if (state.mode === "svg") {
      viewport.setAttribute("transform", `translate(${view.x},${view.y}) scale(${view.k})`);
    } else if (!frame) {
      frame = requestAnimationFrame(() => {
        frame = 0;
        const start = performance.now();
        painter.draw(state.scene, view);
        element.tkDrawMs = performance.now() - start;
      });
    }
    drawMinimap();
  };
  const setView = (next) => {
    const { width, height } = size();
    const floor = state ? Math.min(0.2, fitTransform(state.scene.bounds, width, height, 0).k) : 0.2;
    view.k = Math.min(MAX_SCALE, Math.max(floor, next.k));
    view.x = next.x;
    view.y = next.y;
    apply();
  };
  const setCollapsed = (ids) => {
    if (onCollapse) onCollapse(ids);
    else {
      const now = new Set(state.props.collapsed || []);
      const want = new Set(ids);
      for (const id of new Set([...now, ...want])) if (now.has(id) !== want.has(id)) onToggle(id);
    }
  };
  const toggle = (groupId, itemId) => {
    const b = state.layout.box.get(itemId);
    if (b) anchor = { id: itemId, sx: view.x + b.x * view.k, sy: view.y + b.y * view.k };
    onToggle(groupId);
  };
  const tools = {
    fit() {
      if (!state) return;
      const { width, height } = size();
      setView(fitTransform(state.scene.bounds, width, height, 0));
    },
    focus() {
      const id = state && (state.props.selected || state.props.current);
      const b = id && state.layout.box.get(state.folded.rep.get(id));
      if (!b) return;
      const { width, height } = size();
      setView(centreOn(b, width, height, Math.max(view.k, 1)));
    },
    expand() {
      if (state) setCollapsed([]);
    },
    collapse() {
      if (state) setCollapsed(allGroups(state.tree));
    },
  };
  const handlers = {
    onNode(box) {
      if (box.group !== null) toggle(box.group, box.id);
      else onSelect?.(box.id);
    },
    onFrame(f) {
      toggle(f.group, f.id);
    },
  };

  // Wheel zoom about the pointer, drag to pan; a drag does not click.
  const onWheel = (event) => {
    event.preventDefault();
    const box = element.getBoundingClientRect();
    const px = event.clientX - box.left;
    const py = event.clientY - box.top;
    const k = Math.min(MAX_SCALE, view.k * Math.exp(-event.deltaY * 0.0015));
    setView({ k, x: px - ((px - view.x) * k) / view.k, y: py - ((py - view.y) * k) / view.k });
  };
  let drag = null;
  const onDown = (event) => {
    if (event.target === minimap || toolbar.contains(event.target)) return;
    drag = { x: event.clientX, y: event.clientY, moved: false };
  };
  const onMove = (event) => {
    if (!drag || !(event.buttons & 1)) {
      if (state && state.mode === "canvas" && event.target === canvas) hover(event);
      return;
    }
    const dx = event.clientX - drag.x;
    const dy = event.clientY - drag.y;
    if (!drag.moved && Math.hypot(dx, dy) < 4) return;
    drag.moved = true;
    drag.x = event.clientX;
    drag.y = event.clientY;
    setView({ k: view.k, x: view.x + dx, y: view.y + dy });
  };
  const onClickCapture = (event) => {
    if (drag && drag.moved) event.stopPropagation();
    drag = null;
  };
  const graphPoint = (event) => {
    const box = canvas.getBoundingClientRect();
    return [(event.clientX - box.left - view.x) / view.k, (event.clientY - box.top - view.y) / view.k];
  };
  const hover = (event) => {
    const hit = hitTest(state.scene, ...graphPoint(event));
    canvas.title = hit ? (hit.node ? boxTitle(hit.node) : hit.frame.label) : "";
    canvas.style.cursor = hit ? "pointer" : "";
  };
  const onCanvasClick = (event) => {
    const hit = state && hitTest(state.scene, ...graphPoint(event));
    if (hit && hit.node) handlers.onNode(hit.node);
    else if (hit) handlers.onFrame(hit.frame);
  };
  const onMinimap = (event) => {
    if (!state) return;
    const { scale, x0, y0 } = minimapTransform();
    const box = minimap.getBoundingClientRect();
    const gx = (event.clientX - box.left - x0) / scale;
    const gy = (event.clientY - box.top - y0) / scale;
    const { width, height } = size();
    setView({ k: view.k, x: width / 2 - gx * view.k, y: height / 2 - gy * view.k });
  };
  element.addEventListener("wheel", onWheel, { passive: false });
  element.addEventListener("pointerdown", onDown);
  element.addEventListener("pointermove", onMove);
  element.addEventListener("click", onClickCapture, true);
  canvas.addEventListener("click", onCanvasClick);
  minimap.addEventListener("click", onMinimap);

  // The minimap: the whole scene, its boxes only, and the area in view.
  let minimapImage = null;
  const minimapTransform = () => {
    const b = state.scene.bounds;
    const { width, height } = measure(minimap);
    const scale = Math.min(width / Math.max(1, b.width), height / Math.max(1, b.height));
    return { scale, x0: (width - b.width * scale) / 2, y0: (height - b.height * scale) / 2 };
  };
  function drawMinimap() {
    const { width, height } = size();
    const bounds = state.scene.bounds;
    minimap.hidden = !width || (bounds.width * view.k <= width && bounds.height * view.k <= height);
    const shown = measure(minimap);
    if (minimap.hidden || !shown.width) return;
    const ctx = minimap.getContext("2d");
    if (minimap.width !== shown.width) minimap.width = shown.width;
    if (minimap.height !== shown.height) minimap.height = shown.height;
    const { scale, x0, y0 } = minimapTransform();
    if (!minimapImage || minimapImage.scene !== state.scene) {
      const image = document.createElement("canvas");
      image.width = minimap.width;
      image.height = minimap.height;
      const draw = image.getContext("2d");
      draw.setTransform(scale, 0, 0, scale, x0, y0);
      draw.strokeStyle = "rgba(110, 90, 160, 0.5)";
      draw.lineWidth = 1 / scale;
      for (const f of state.scene.frames) draw.strokeRect(f.x, f.y, f.width, f.height);
      draw.fillStyle = "rgba(74, 111, 165, 0.7)";
      for (const n of state.scene.nodes) draw.fillRect(n.x, n.y, n.width, n.height);
      minimapImage = { scene: state.scene, image };
    }
    ctx.clearRect(0, 0, minimap.width, minimap.height);
    ctx.drawImage(minimapImage.image, 0, 0);
    ctx.strokeStyle = "#d9822b";
    ctx.lineWidth = 1.5;
    ctx.strokeRect(x0 + (-view.x / view.k) * scale, y0 + (-view.y / view.k) * scale, (width / view.k) * scale, (height / view.k) * scale);
  }

  // Place the view after a change: fit a new graph, keep a toggled group where it was,
  // pan to a node selected from outside.
  // In idle time after each update, the folded groups on screen are laid out open (their
  // interiors and ancestors land in the layout cache, and ELK's code gets warm), so that the
  // click that opens one mostly reads the cache. A newer update drops the pending work.
  let prelayoutRun = 0;
  const prelayout = (opened) => {
    const run = ++prelayoutRun;
    if (typeof requestIdleCallback !== "function" || !state) return;
    const { props, tree, folded, layout } = state;
    const { width, height } = size();
    const queue = groupsToPrelayout(folded, layout.box, view, width, height, opened);
    element.tkPrelayoutPending = queue.length;
    const step = (deadline) => {
      if (run !== prelayoutRun) return;
      while (queue.length && deadline.timeRemaining() > 0) {
        const open = queue.shift();
        const collapsed = (props.collapsed || []).filter((id) => id !== open && tree.groups.has(id));
        foldAndLayout(props.graph, tree, collapsed, props);
      }
      element.tkPrelayoutPending = queue.length;
      if (queue.length) requestIdleCallback(step);
    };
    requestIdleCallback(step);
  };
  const position = () => {
    if (!state) return;
    const { width, height } = size();
    if (!width || !height) return;
    const { scene, layout, folded, props } = state;
    if (fittedGraph !== props.graph) {
      fittedGraph = props.graph;
      Object.assign(view, fitTransform(scene.bounds, width, height, Math.min(MIN_FIT_SCALE, 1)));
    }
    const kept = anchor && layout.box.get(anchor.id);
    if (kept) {
      view.x = anchor.sx - kept.x * view.k;
      view.y = anchor.sy - kept.y * view.k;
    }
    anchor = null;
    for (const id of [reveal, props.current]) {
      const b = id && folded.items.has(id) && layout.box.get(id);
      if (b && !boxInView(b, view, width, height)) Object.assign(view, centreOn(b, width, height, view.k));
      if (b && id === reveal) reveal = "";
    }
    apply();
  };
  const resized = (entries) => {
    for (const { target } of entries) {
      reported.set(target, { width: target.clientWidth, height: target.clientHeight });
    }
    position();
  };
  const observer = typeof ResizeObserver === "undefined" ? null : new ResizeObserver(resized);
  if (observer) {
    observer.observe(element);
    observer.observe(minimap);
  }

  return {
    element,
    update(props) {
      if (!props.graph || !props.graph.nodes) {
        viewport.replaceChildren();
        state = null;
        return { legend: null };
      }
      const previous = state;
      const { tree, folded, layout, collapsed, key } = memo(props);
      if (props.selected && (!previous || previous.props.selected !== props.selected)) {
        reveal = props.selected;
        const node = props.graph.nodes.find((n) => n.id === props.selected);
        const hiding = node ? hidingGroups(tree, node, props.collapsed || []) : [];
        if (hiding.length) {
          const open = new Set(hiding);
          queueMicrotask(() => setCollapsed((props.collapsed || []).filter((id) => !open.has(id))));
        }
      }
      if (previous && previous.key !== key && !anchor) anchor = changedAnchor(previous, folded, layout, view);
      const matches = searchMatches(props.graph, tree, folded, props.query);
      const scene = buildScene(folded, layout, props, matches);
      const mode = scene.nodes.length > SVG_MAX_NODES ? "canvas" : "svg";
      state = { props, tree, folded, layout, collapsed, scene, mode, key };
      element.dataset.renderer = mode;
      element.tkScene = scene;
      element.tkStats = layout.stats;
      element.tkView = view;
      svg.style.display = mode === "svg" ? "" : "none";
      canvas.style.display = mode === "canvas" ? "" : "none";
      if (mode === "svg") paintSvg(viewport, scene, handlers);
      else viewport.replaceChildren();
      position();
      const largest = previous && previous.props.graph === props.graph ? null : largestFolded(folded);
      if (largest) foldAndLayout(props.graph, tree, collapsed.filter((id) => id !== largest), props);
      const before = new Set(previous ? previous.collapsed : []);
      const now = new Set(collapsed);
      prelayout(new Set([...before].filter((id) => !now.has(id) && tree.groups.has(id)).map((id) => tree.groups.get(id).item)));
      return { legend: scene.legend };
    },
    destroy() {
      prelayoutRun += 1; // drops the idle work still pending
      if (observer) observer.disconnect();
      if (frame) cancelAnimationFrame(frame);
      element.removeEventListener("wheel", onWheel);
      element.removeEventListener("pointerdown", onDown);
      element.removeEventListener("pointermove", onMove);
      element.removeEventListener("click", onClickCapture, true);
      canvas.removeEventListener("click", onCanvasClick);
      minimap.removeEventListener("click", onMinimap);
      painter.destroy();
      element.remove();
    },
  };
}

/** After the folded groups changed without a click here (from Python, expand all): the
 * first changed group shown before and after, to keep in place on screen. */
function changedAnchor(previous, folded, layout, view) {
  for (const [id, item] of folded.items) {
    if (item.type !== "group") continue;
    const before = previous.folded.items.get(id);
    const was = before && previous.layout.box.get(id);
    if (was && before.open !== item.open && layout.box.has(id)) {
      return { id, sx: view.x + was.x * view.k, sy: view.y + was.y * view.k };
    }
  }
  return null;
}
