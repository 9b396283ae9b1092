/**
 * Layout of a folded graph (see fold.js) with ELK's layered algorithm (elkjs, bundled):
 * each container (a band's top level, an open group) is laid out on its own, its children
 * at their sizes (an open group's size is its own layout's), and the results are nested.
 * Layouts are cached by the container's shape (children's sizes, edges between them,
 * direction), not by id, so opening a group lays out that group and its ancestors only,
 * and identical blocks (the 16 residual units of a ResNet) are laid out once. Bands stack
 * top to bottom; gradient bands (band > 0) run right to left, as gradients flow.
 */

import { Worker as ElkWorker } from "elkjs/lib/elk-worker.min.js";

/** Box sizes and gaps, in graph units (1 unit = 1 CSS pixel at zoom 1). */
export const SIZE = {
  node: { width: 132, height: 40 },
  header: 18, // a group box's title line
  pad: 10, // a group box's padding around its children
  bandGap: 56, // between bands (room for the band's title)
  charWidth: 7, // estimated width of a label character (for a folded group's width)
  maxGroupWidth: 280,
};

/** ELK options shared by every container's layout. */
const ELK_OPTIONS = {
  "elk.algorithm": "layered",
  "elk.edgeRouting": "POLYLINE",
  "elk.spacing.nodeNode": "18",
  "elk.layered.spacing.nodeNodeBetweenLayers": "36",
  "elk.spacing.edgeNode": "10",
  "elk.layered.considerModelOrder.strategy": "NODES_AND_EDGES",
  "elk.layered.crossingMinimization.greedySwitch.type": "OFF",
  "elk.layered.thoroughness": "3",
};

let elk = null;
let answer = null;

/**
 * Run ELK on `graph` (ELK's JSON graph), synchronously: elkjs's in-thread worker answers
 * at once when its dispatcher is called directly (its promise API would add a timer hop
 * per layout). Returns the laid-out graph.
 * @param {object} graph
 * @returns {object}
 */
export function runElk(graph) {
  if (elk === null) {
    elk = new ElkWorker();
    elk.onmessage = (message) => {
      answer = message.data;
    };
    elk.dispatcher.saveDispatch({ data: { cmd: "register", algorithms: ["layered"], id: 0 } });
  }
  answer = null;
  elk.dispatcher.saveDispatch({ data: { cmd: "layout", graph, layoutOptions: {}, id: 1 } });
  if (answer === null || answer.error) {
    throw new Error(`ELK layout failed: ${answer ? String(answer.error) : "no answer"}`);
  }
  return answer.data;
}

/**
 * Width and height of an item's box: a node's fixed size, a folded group wide enough for
 * its label (up to a limit), in steps of four characters, so that groups whose labels differ
 * a little ("Unit · blocks.3.0", "Unit · blocks.12.0") have one size and share layouts.
 * @param {object} item a fold.js item
 * @returns {{width: number, height: number}}
 */
export function itemSize(item) {
  if (item.type === "node") return SIZE.node;
  const chars = 4 * Math.ceil((item.group.label.length + 2) / 4);
  const width = Math.min(SIZE.maxGroupWidth, Math.max(SIZE.node.width, chars * SIZE.charWidth));
  return { width, height: SIZE.node.height + 4 };
}

/** Layouts by container shape, shared by every view (bounded: the oldest go first). */
export const layoutCache = new Map();
const CACHE_LIMIT = 20_000;

/**
 * One container's layout, from the cache or ELK: children positions (top-left, relative to
 * the container's box, padding included) in `children` order, the box's size and each
 * edge's route around the children ([x0, y0, x1, y1, ...], same frame; null if none).
 * @param {{width: number, height: number}[]} sizes the children's sizes
 * @param {[number, number][]} edges child index pairs
 * @param {{rightToLeft: boolean, padded: boolean}} options
 * @returns {{width: number, height: number, at: {x: number, y: number}[],
 *   routes: (number[]|null)[], cached: boolean}}
 */
export function containerLayout(sizes, edges, { rightToLeft, padded }) {
  const key =
    `${rightToLeft ? "L" : "R"}${padded ? "p" : ""}|` +
    sizes.map((s) => `${s.width}x${s.height}`).join(",") +
    "|" +
    edges.map(([a, b]) => `${a}>${b}`).join(",");
  const hit = layoutCache.get(key);
  if (hit) return { ...hit, cached: true };
  const padding = padded
    ? `[top=${SIZE.header + SIZE.pad},left=${SIZE.pad},bottom=${SIZE.pad},right=${SIZE.pad}]`
    : "[top=0,left=0,bottom=0,right=0]";
  const result = runElk({
    id: "root",
    layoutOptions: {
      ...ELK_OPTIONS,
      "elk.direction": rightToLeft ? "LEFT" : "RIGHT",
      "elk.padding": padding,
    },
    children: sizes.map((s, i) => ({ id: String(i), width: s.width, height: s.height })),
    edges: edges.map(([a, b], i) => ({ id: `e${i}`, sources: [String(a)], targets: [String(b)] })),
  });
  const at = new Array(sizes.length);
  for (const child of result.children) at[Number(child.id)] = { x: child.x, y: child.y };
  const routes = new Array(edges.length).fill(null);
  for (const e of result.edges || []) {
    const section = e.sections && e.sections[0];
    if (!section) continue;
    const points = [section.startPoint, ...(section.bendPoints || []), section.endPoint];
    routes[Number(e.id.slice(1))] = points.flatMap((p) => [p.x, p.y]);
  }
  const layout = { width: result.width, height: result.height, at, routes };
  if (layoutCache.size >= CACHE_LIMIT) layoutCache.delete(layoutCache.keys().next().value);
  layoutCache.set(key, layout);
  return { ...layout, cached: false };
}

/** A container with more children than this is laid out in pieces of this many. */
export const PIECE = 60;

/**
 * A container's layout like {@link containerLayout}, but one with more than PIECE children
 * (a long flat tape with no groups) is cut into runs of PIECE consecutive children (model
 * order), each laid out on its own and then placed as one box: ELK's time grows faster
 * than the graph, and identical runs (a repeated loop body) come from the cache.
 * @param {{width: number, height: number}[]} sizes
 * @param {[number, number][]} pairs
 * @param {{rightToLeft: boolean, padded: boolean}} options
 * @param {{runs: number, hits: number}} stats counts ELK runs and cache hits
 * @returns {{width: number, height: number, at: {x: number, y: number}[]}}
 */
export function piecewiseLayout(sizes, pairs, options, stats) {
  if (sizes.length <= PIECE) {
    const layout = containerLayout(sizes, pairs, options);
    if (layout.cached) stats.hits++;
    else stats.runs++;
    return layout;
  }
  const pieces = Math.ceil(sizes.length / PIECE);
  const inner = [];
  for (let p = 0; p < pieces; p++) {
    const start = p * PIECE;
    const own = pairs
      .filter(([a, b]) => Math.floor(a / PIECE) === p && Math.floor(b / PIECE) === p)
      .map(([a, b]) => [a - start, b - start]);
    const part = sizes.slice(start, start + PIECE);
    inner.push(piecewiseLayout(part, own, { ...options, padded: false }, stats));
  }
  const between = new Set();
  for (const [a, b] of pairs) {
    const from = Math.floor(a / PIECE);
    const to = Math.floor(b / PIECE);
    if (from !== to) between.add(`${from}>${to}`);
  }
  const outerPairs = [...between].map((key) => key.split(">").map(Number));
  const outer = piecewiseLayout(inner, outerPairs, options, stats);
  const at = sizes.map((_, i) => {
    const p = Math.floor(i / PIECE);
    const local = inner[p].at[i - p * PIECE];
    return { x: outer.at[p].x + local.x, y: outer.at[p].y + local.y };
  });
  // Routes are ELK's within a piece: those of edges between pieces are left to the scene.
  const index = new Map(pairs.map(([a, b], i) => [`${a}>${b}`, i]));
  const routes = new Array(pairs.length).fill(null);
  inner.forEach((piece, p) => {
    const own = pairs.filter(([a, b]) => Math.floor(a / PIECE) === p && Math.floor(b / PIECE) === p);
    own.forEach(([a, b], i) => {
      const r = piece.routes[i];
      if (r) routes[index.get(`${a}>${b}`)] = r.map((v, j) => v + (j % 2 ? outer.at[p].y : outer.at[p].x));
    });
  });
  return { width: outer.width, height: outer.height, at, routes };
}

/**
 * Boxes for everything that shows: `box` maps each item id (nodes, folded groups, open
 * groups) to `{x, y, width, height}` in graph units; `bands` lists each band's extent.
 * `direction` "backward" lays the forward band out right to left (from the loss back to
 * the leaves) and the gradient bands left to right. `route(level, from, to)` gives ELK's
 * route of an edge between two children of a container. `stats` counts ELK runs and cache
 * hits.
 * @param {ReturnType<import("./fold.js").foldGraph>} folded
 * @param {{direction?: "forward"|"backward"}} [options]
 * @returns {{box: Map<string, object>, bands: {band: number, x: number, y: number,
 *   width: number, height: number}[], width: number, height: number,
 *   stats: {runs: number, hits: number}}}
 */
export function layoutFolded(folded, { direction = "forward" } = {}) {
  const stats = { runs: 0, hits: 0 };
  const edgesAt = new Map();
  for (const e of folded.edges) {
    if (e.level === null) continue;
    if (!edgesAt.has(e.level)) edgesAt.set(e.level, new Set());
    edgesAt.get(e.level).add(`${e.from}\n${e.to}`);
  }
  const local = new Map(); // container id -> {width, height, at, routes}
  const pairIndex = new Map(); // container id -> "from\nto" -> index of its route
  const sizeOf = (id) => {
    const item = folded.items.get(id);
    if (item.type === "group" && item.open) {
      const inner = lay(id);
      return { width: inner.width, height: inner.height };
    }
    return itemSize(item);
  };
  const lay = (id) => {
    if (local.has(id)) return local.get(id);
    const holder = folded.containers.get(id);
    const index = new Map(holder.children.map((child, i) => [child, i]));
    const sizes = holder.children.map(sizeOf);
    const keys = [...(edgesAt.get(id) || [])];
    const pairs = keys.map((key) => {
      const [from, to] = key.split("\n");
      return [index.get(from), index.get(to)];
    });
    pairIndex.set(id, new Map(keys.map((key, i) => [key, i])));
    const reversed = direction === "backward";
    const rightToLeft = holder.band > 0 ? !reversed : reversed;
    const layout = piecewiseLayout(sizes, pairs, { rightToLeft, padded: !id.startsWith("band:") }, stats);
    local.set(id, layout);
    return layout;
  };
  const roots = [...folded.containers.values()]
    .filter((c) => c.id.startsWith("band:"))
    .sort((a, b) => a.band - b.band);
  const laid = roots.map((root) => ({ root, layout: lay(root.id) }));
  const width = laid.reduce((most, { layout }) => Math.max(most, layout.width), 0);
  const box = new Map();
  const bands = [];
  let top = 0;
  for (const { root, layout } of laid) {
    // Bands running right to left share the right edge of the widest band.
    const x = (root.band > 0) !== (direction === "backward") ? width - layout.width : 0;
    bands.push({ band: root.band, x, y: top, width: layout.width, height: layout.height });
    place(root.id, x, top, folded, local, box);
    box.set(root.id, { x, y: top, width: layout.width, height: layout.height });
    top += layout.height + SIZE.bandGap;
  }
  /** ELK's route of the edge between children `from` and `to` of container `level`, in
   * graph units ([x0, y0, x1, y1, ...]), or null. */
  const route = (level, from, to) => {
    const i = pairIndex.get(level)?.get(`${from}\n${to}`);
    const points = i === undefined ? null : local.get(level).routes[i];
    if (!points) return null;
    const origin = box.get(level);
    return points.map((v, j) => v + (j % 2 ? origin.y : origin.x));
  };
  return { box, bands, route, width, height: Math.max(0, top - SIZE.bandGap), stats };
}

/** Absolute boxes of a container's children (and, for open groups, of theirs), iteratively. */
function place(rootId, x0, y0, folded, local, box) {
  const stack = [[rootId, x0, y0]];
  while (stack.length) {
    const [id, x, y] = stack.pop();
    const layout = local.get(id);
    folded.containers.get(id).children.forEach((child, i) => {
      const at = layout.at[i];
      const item = folded.items.get(child);
      const size = item.type === "group" && item.open ? local.get(child) : itemSize(item);
      const cx = x + at.x;
      const cy = y + at.y;
      box.set(child, { x: cx, y: cy, width: size.width, height: size.height });
      if (item.type === "group" && item.open) stack.push([child, cx, cy]);
    });
  }
}
