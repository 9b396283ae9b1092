/**
 * The scene: everything one rendering of the graph view draws, as plain data in graph
 * units (group frames, edges with their arrowheads, links, labels, node boxes with their
 * class names), built from the folded graph and its layout. Both painters (SVG for small
 * scenes, canvas for large ones) draw a scene and nothing else, so what is drawn is
 * decided once, here.
 */

import { nodeColors, nodeLabel, nodeShapes, nodeTitle } from "./format.js";
import { SIZE } from "./layout.js";

/** Arrowhead length and half width. */
const ARROW = { length: 8, half: 4 };

/** Cross-band edges and links are drawn for every node below this many, else only for
 * the selected and current nodes (so that no long dashed lines cross the boxes). */
export const ALL_LINKS_BELOW = 40;

/**
 * @typedef {object} Scene
 * @property {object[]} frames open groups: {id, group, x, y, width, height, label, depth}
 * @property {object[]} nodes boxes: {id, x, y, width, height, label, sub, classes, fill,
 *   group (for a folded group: its group id, else null), source (the fold.js item)}
 * @property {object[]} edges {source, target, position, d (a path: [x0, y0] then six
 *   numbers per cubic segment: c1x, c1y, c2x, c2y, x, y), arrow: [x1, y1, x2, y2, x3, y3],
 *   classes}
 * @property {object[]} links {source, target, d, classes}
 * @property {object[]} texts band titles and edge labels: {x, y, text, classes, key}
 * @property {{x: number, y: number, width: number, height: number}} bounds
 * @property {object|null} legend the colour legend (format.js nodeColors)
 */

/**
 * The scene of a folded, laid-out graph for the view's props.
 * @param {ReturnType<import("./fold.js").foldGraph>} folded
 * @param {ReturnType<import("./layout.js").layoutFolded>} layout
 * @param {object} props graphView's props (selected, current, colorBy, marks, edgeLabels,
 *   direction)
 * @param {{nodes: Set<string>, counts: Map<string, number>}|null} matches search matches
 * @returns {Scene}
 */
export function buildScene(folded, layout, props, matches) {
  const { box } = layout;
  const backward = props.direction === "backward";
  const shownNodes = [...folded.items.values()].filter((i) => i.type === "node").map((i) => i.node);
  const { colors, legend } = nodeColors(shownNodes, props.colorBy || "none");
  const focus = new Set(
    [props.selected, props.current].map((id) => folded.rep.get(id)).filter(Boolean),
  );
  const frames = [];
  const nodes = [];
  for (const item of folded.items.values()) {
    const b = box.get(item.id);
    if (!b) continue;
    if (item.type === "group" && item.open) {
      frames.push({ id: item.id, group: item.group.id, ...b, label: `▾ ${item.group.label}` });
      continue;
    }
    nodes.push(nodeBox(item, b, props, colors, matches, focus));
  }
  frames.sort((a, b) => folded.items.get(a.id).depth - folded.items.get(b.id).depth);
  const rightToLeft = (band) => (band > 0) !== backward;
  const arity = new Map();
  for (const e of folded.edges) {
    arity.set(e.target, Math.max(arity.get(e.target) || 0, (e.position || 0) + 1));
  }
  const few = folded.links.length + folded.edges.filter((e) => e.level === null).length;
  const drawAll = few < ALL_LINKS_BELOW;
  const edges = [];
  for (const e of folded.edges) {
    const from = box.get(e.source);
    const to = box.get(e.target);
    if (e.level === null) {
      if (!drawAll && !focus.has(e.source) && !focus.has(e.target)) continue;
      edges.push(edge(e, verticalCurve(from, to), null, ["tk-edge", "tk-edge-cross"]));
      continue;
    }
    const band = folded.items.get(e.source).band;
    const slot = folded.items.get(e.target).type === "node" ? e.position || 0 : 0;
    const side = sideCurve(from, to, rightToLeft(band), slot, arity.get(e.target) || 1);
    const route = layout.route ? layout.route(e.level, e.from, e.to) : null;
    const d = route ? routedPath(side, route, e.source === e.from, e.target === e.to) : side;
    edges.push(edge(e, d, arrowHead(d, backward), ["tk-edge"]));
  }
  const links = folded.links
    .filter((l) => drawAll || focus.has(l.source) || focus.has(l.target))
    .map((l) => edge(l, verticalCurve(box.get(l.source), box.get(l.target)), null, ["tk-link"]));
  const texts = [
    ...layout.bands.slice(1).map((band) => ({
      x: band.x,
      y: band.y - 14,
      text: band.band === 1 ? "gradient ops (backward) ←" : `gradient ops, order ${band.band} ←`,
      classes: ["tk-band-label"],
    })),
    ...edgeTexts(props.edgeLabels || {}, folded, box),
  ];
  const bounds = { x: 0, y: 0, width: layout.width, height: layout.height };
  return { frames, nodes, edges, links, texts, bounds, legend };
}

/** A scene edge or link: its ends, path, arrowhead (edges within a band) and classes. */
function edge(e, d, arrow, classes) {
  const drawn = { source: e.source, target: e.target, position: e.position || 0, d, classes };
  if (arrow) drawn.arrow = arrow;
  return drawn;
}

/** A node's or folded group's box with its text and classes. */
function nodeBox(item, b, props, colors, matches, focus) {
  const marks = props.marks || {};
  if (item.type === "group") {
    const found = matches ? matches.counts.get(item.id) || 0 : null;
    const classes = ["tk-node", "tk-group", `tk-group-${item.group.kind}`];
    if (item.band > 0) classes.push("tk-backward");
    if (focus.has(item.id)) classes.push("tk-selected");
    if (matches) classes.push(found ? "tk-match" : "tk-dim");
    const count = `${item.count} node${item.count === 1 ? "" : "s"}`;
    return {
      id: item.id,
      group: item.group.id,
      x: b.x,
      y: b.y,
      width: b.width,
      height: b.height,
      label: item.group.label,
      sub: found === null ? count : `${found} of ${item.count} match`,
      source: item,
      classes,
      fill: null,
    };
  }
  const node = item.node;
  const classes = ["tk-node", `tk-${node.kind}`];
  if (node.band > 0) classes.push("tk-backward");
  if (node.id === props.selected) classes.push("tk-selected");
  if (node.id === props.current) classes.push("tk-current");
  if (matches) classes.push(matches.nodes.has(node.id) ? "tk-match" : "tk-dim");
  for (const mark of marks[node.id] || []) classes.push(mark);
  return {
    id: node.id,
    group: null,
    x: b.x,
    y: b.y,
    width: b.width,
    height: b.height,
    label: node.label || nodeLabel(node),
    sub: nodeShapes(node),
    source: item,
    classes,
    fill: colors.get(node.id) || null,
  };
}

/**
 * The hover text of a scene's node box (made when asked for: a scene can hold 20,000).
 * @param {object} box
 * @returns {string}
 */
export function boxTitle(box) {
  const item = box.source;
  if (item.type === "node") return nodeTitle(item.node);
  return `${item.group.label}: ${item.count} node${item.count === 1 ? "" : "s"} (click to open)`;
}

/**
 * Cubic curve from the source box's outgoing side to the target box's incoming side (right
 * to left when `rightToLeft`); the end point spread along the target's side by argument
 * `slot` of `arity`. Returns [x1, y1, c1x, c1y, c2x, c2y, x2, y2].
 */
export function sideCurve(from, to, rightToLeft, slot, arity) {
  const sign = rightToLeft ? -1 : 1;
  const x1 = rightToLeft ? from.x : from.x + from.width;
  const y1 = from.y + from.height / 2;
  const x2 = rightToLeft ? to.x + to.width : to.x;
  const y2 = to.y + (to.height * (slot + 1)) / (arity + 1);
  const bend = sign * Math.max(16, (sign * (x2 - x1)) / 2);
  return [x1, y1, x1 + bend, y1, x2 - bend, y2, x2, y2];
}

/**
 * A path along ELK's route (a polyline [x0, y0, x1, y1, ...] between the boxes of the
 * children where an edge's ends meet), joined by a curve to the source's outgoing point
 * (`side`'s start) unless the source is that child itself, and likewise to the target.
 * @param {number[]} side the direct curve ({@link sideCurve})
 * @param {number[]} route
 * @param {boolean} sourceIsEnd
 * @param {boolean} targetIsEnd
 * @returns {number[]} a path (see Scene.edges)
 */
export function routedPath(side, route, sourceIsEnd, targetIsEnd) {
  const n = route.length;
  const d = sourceIsEnd ? [route[0], route[1]] : [side[0], side[1]];
  const joint = (x0, y0, x1, y1) => {
    const bend = (x1 - x0) / 2;
    d.push(x0 + bend, y0, x1 - bend, y1, x1, y1);
  };
  if (!sourceIsEnd) joint(side[0], side[1], route[0], route[1]);
  for (let i = 2; i < n; i += 2) {
    const [x0, y0, x1, y1] = [route[i - 2], route[i - 1], route[i], route[i + 1]];
    d.push(x0 + (x1 - x0) / 3, y0 + (y1 - y0) / 3, x0 + (2 * (x1 - x0)) / 3, y0 + (2 * (y1 - y0)) / 3, x1, y1);
  }
  if (!targetIsEnd) joint(route[n - 2], route[n - 1], side[6], side[7]);
  return d;
}

/** Curve from the bottom middle of one box to the top middle of another (one band below). */
export function verticalCurve(from, to) {
  const x1 = from.x + from.width / 2;
  const y1 = from.y + from.height;
  const x2 = to.x + to.width / 2;
  const y2 = to.y;
  const bend = Math.max(20, Math.abs(y2 - y1) / 2);
  return [x1, y1, x1, y1 + bend, x2, y2 - bend, x2, y2];
}

/**
 * The arrowhead triangle of path `d` at its end (at its start, pointing back, for a
 * graph read backward: gradients flow from consumers to producers).
 * @param {number[]} d
 * @param {boolean} atStart
 * @returns {number[]} [tipX, tipY, x2, y2, x3, y3]
 */
export function arrowHead(d, atStart) {
  const n = d.length;
  const [tx, ty, cx, cy] = atStart ? [d[0], d[1], d[2], d[3]] : [d[n - 2], d[n - 1], d[n - 4], d[n - 3]];
  let dx = tx - cx;
  let dy = ty - cy;
  const length = Math.hypot(dx, dy) || 1;
  dx /= length;
  dy /= length;
  const bx = tx - dx * ARROW.length;
  const by = ty - dy * ARROW.length;
  return [tx, ty, bx - dy * ARROW.half, by + dx * ARROW.half, bx + dy * ARROW.half, by - dx * ARROW.half];
}

function edgeTexts(labels, folded, box) {
  const texts = [];
  for (const [key, text] of Object.entries(labels)) {
    const [source, target] = key.split("->").map((id) => folded.rep.get(id));
    const from = box.get(source);
    const to = box.get(target);
    if (!from || !to || source === target) continue;
    texts.push({
      x: (from.x + from.width / 2 + to.x + to.width / 2) / 2,
      y: (from.y + to.y + SIZE.node.height) / 2 - 4,
      text,
      key,
      classes: ["tk-edge-label"],
    });
  }
  return texts;
}

/**
 * The scene's items whose boxes meet a rectangle (graph units), for drawing only what
 * shows: frames, nodes, edges and links (by their curves' bounding boxes) and texts.
 * @param {Scene} scene
 * @param {{x: number, y: number, width: number, height: number}} area
 * @returns {{frames: object[], nodes: object[], edges: object[], links: object[],
 *   texts: object[]}}
 */
export function visibleItems(scene, area) {
  const x2 = area.x + area.width;
  const y2 = area.y + area.height;
  const meets = (b) => b.x <= x2 && b.x + b.width >= area.x && b.y <= y2 && b.y + b.height >= area.y;
  const curveMeets = (d) => {
    let [left, right, top, bottom] = [d[0], d[0], d[1], d[1]];
    for (let i = 2; i < d.length; i += 2) {
      left = Math.min(left, d[i]);
      right = Math.max(right, d[i]);
      top = Math.min(top, d[i + 1]);
      bottom = Math.max(bottom, d[i + 1]);
    }
    return left <= x2 && right >= area.x && top <= y2 && bottom >= area.y;
  };
  return {
    frames: scene.frames.filter(meets),
    nodes: scene.nodes.filter(meets),
    edges: scene.edges.filter((e) => curveMeets(e.d)),
    links: scene.links.filter((l) => curveMeets(l.d)),
    texts: scene.texts.filter((t) => t.x <= x2 && t.x + 400 >= area.x && t.y <= y2 + 20 && t.y >= area.y - 20),
  };
}
