/**
 * Layered layout of the graph model: collapsing module groups, ordering each layer with a
 * barycenter pass to reduce edge crossings, and placing nodes (x by depth, y by order), one
 * band below the other (forward ops, then the ops gradient rules ran). Pure functions on
 * plain data, so they can be tested with node's test runner. Nothing recurses, so a chain
 * of any length lays out.
 */

/** Prefix of the ids given to the stand-in node of a collapsed module group. */
export const GROUP_PREFIX = "group:";

/**
 * The outermost collapsed module that contains `path` (a dotted nn module path), or null.
 * @param {string} path
 * @param {Set<string>} collapsed
 * @returns {string|null}
 */
export function collapsedOwner(path, collapsed) {
  if (!path) return null;
  const parts = path.split(".");
  for (let i = 1; i <= parts.length; i++) {
    const prefix = parts.slice(0, i).join(".");
    if (collapsed.has(prefix)) return prefix;
  }
  return null;
}

/**
 * The nodes, edges and links to draw once the `collapsed` module groups are folded and,
 * without `showBackward`, the gradient bands (band > 0) are hidden: each collapsed group
 * becomes one node (kind "group", with its members' summed times and bytes, largest
 * gradient norm and NaN/inf counts); edges and links are redirected to it, self-loops
 * dropped and duplicates merged (keeping the first position). When a group is folded,
 * depths are recomputed on the folded graph (see {@link relayer}); otherwise the model's
 * depths stand.
 * @param {{nodes: object[], edges: object[], groups: object, links?: object[]}} graph
 * @param {string[]} collapsed
 * @param {{showBackward?: boolean}} [options]
 * @returns {{nodes: object[], edges: object[], links: object[], owner: Map<string, string>}}
 */
export function visibleGraph(graph, collapsed, { showBackward = true } = {}) {
  const folded = new Set(collapsed.filter((path) => path in (graph.groups || {})));
  const owner = new Map();
  const nodes = [];
  const members = new Map();
  const hidden = new Set();
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
  const standIns = nodes.map((n) => (members.has(n.id) ? standIn(n, members.get(n.id)) : n));
  const edges = redirect(graph.edges, owner, hidden, true);
  const links = redirect(graph.links || [], owner, hidden, false);
  const sameBand = bandFilter(standIns);
  return {
    nodes: members.size ? relayer(standIns, edges.filter(sameBand)) : standIns,
    edges,
    links,
    owner,
  };
}

/** A folded group's node: its first member's depth and band, its members' measures. */
function standIn(group, members) {
  const metrics = {};
  for (const m of members) {
    for (const [key, value] of Object.entries(m.metrics || {})) {
      if (key === "grad_norm") metrics[key] = Math.max(metrics[key] ?? value, value);
      else metrics[key] = (metrics[key] || 0) + value;
    }
  }
  const summaries = members.map((m) => m.summary).filter(Boolean);
  const count = (key) => summaries.reduce((acc, s) => acc + (s[key] || 0), 0);
  return {
    ...group,
    depth: members[0].depth,
    band: members[0].band || 0,
    metrics,
    summary: summaries.length ? { nan: count("nan"), inf: count("inf") } : null,
    shapes: { in: [], out: [] },
  };
}

/** `items` ({source, target}) with folded ends redirected, hidden ends, self-loops and
 * repeats dropped. */
function redirect(items, owner, hidden, dropSelf) {
  const seen = new Set();
  const kept = [];
  for (const item of items) {
    if (hidden.has(item.source) || hidden.has(item.target)) continue;
    const source = owner.get(item.source) ?? item.source;
    const target = owner.get(item.target) ?? item.target;
    // Edges into or out of a folded group merge; between visible nodes each argument keeps
    // its own edge (x * x draws two).
    const folded = source !== item.source || target !== item.target;
    const key = folded ? `${source}->${target}` : `${source}->${target}#${item.position}`;
    if ((dropSelf && source === target) || seen.has(key)) continue;
    seen.add(key);
    kept.push({ ...item, source, target });
  }
  return kept;
}

/** A predicate on edges: both ends are in `nodes` and in the same band. */
function bandFilter(nodes) {
  const band = new Map(nodes.map((n) => [n.id, n.band || 0]));
  return (e) => band.has(e.source) && band.get(e.source) === band.get(e.target);
}

/**
 * Each band laid out by {@link orderLayers} and {@link placeNodes} (edges between bands do
 * not count), the bands stacked top to bottom `gap` apart. Gradient bands (band > 0) run
 * right to left, as gradients flow, so that an op's gradient ops sit under it; all bands
 * share the right edge of the widest.
 * @param {{id: string, depth: number, band?: number}[]} nodes
 * @param {{source: string, target: string}[]} edges
 * @param {{width: number, height: number, gapX: number, gapY: number}} size
 * @param {number} gap
 * @returns {{place: Map<string, {x: number, y: number}>, bands: {band: number, top: number,
 *   bottom: number}[]}}
 */
export function bandLayout(nodes, edges, size, gap) {
  const byBand = new Map();
  for (const node of nodes) {
    const band = node.band || 0;
    if (!byBand.has(band)) byBand.set(band, []);
    byBand.get(band).push(node);
  }
  const inside = edges.filter(bandFilter(nodes));
  const layered = [...byBand.keys()]
    .sort((a, b) => a - b)
    .map((band) => [band, orderLayers(byBand.get(band), inside)]);
  const columns = layered.reduce((most, [, layers]) => Math.max(most, layers.length), 0);
  const step = size.width + size.gapX;
  const place = new Map();
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

/**
 * Copies of `nodes` with `depth` set to the longest path from a source (Kahn's algorithm),
 * then each node with consumers moved as late as they allow, as the model computes it;
 * nodes on a cycle (folding can create one) keep their depth.
 * @param {{id: string, depth: number}[]} nodes
 * @param {{source: string, target: string}[]} edges
 * @returns {object[]}
 */
export function relayer(nodes, edges) {
  const depth = new Map(nodes.map((n) => [n.id, 0]));
  const indegree = new Map(nodes.map((n) => [n.id, 0]));
  const children = new Map(nodes.map((n) => [n.id, []]));
  for (const { source, target } of edges) {
    if (!children.has(source) || !indegree.has(target)) continue;
    children.get(source).push(target);
    indegree.set(target, indegree.get(target) + 1);
  }
  const queue = nodes.filter((n) => indegree.get(n.id) === 0).map((n) => n.id);
  const done = new Set();
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

/**
 * Shift (in `depth`) each connected piece of the graph apart from the largest (a
 * BatchNorm's running-statistics update, say) right, to where the ops of its module start
 * in the largest piece, instead of at the far left; as the model does.
 * @param {{id: string, module?: string}[]} nodes
 * @param {{source: string, target: string}[]} edges
 * @param {Map<string, number>} depth
 */
export function alignSideComponents(nodes, edges, depth) {
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
  const pieces = new Map();
  for (const n of nodes) {
    const key = find(n.id);
    if (!pieces.has(key)) pieces.set(key, []);
    pieces.get(key).push(n);
  }
  if (pieces.size < 2) return;
  const main = [...pieces.values()].reduce((a, b) => (b.length > a.length ? b : a));
  const start = new Map();
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

/** The longest prefix of a dotted `path` (itself included) that is a key of `known`. */
function knownPrefix(path, known) {
  while (path && !known.has(path)) path = parentPath(path);
  return path || null;
}

/** "a.b.c" -> "a.b"; "a" -> "". */
function parentPath(path) {
  return path.slice(0, Math.max(0, path.lastIndexOf(".")));
}

/**
 * Nodes grouped by depth, each layer ordered to reduce crossings: start from the model's
 * order, then alternate a downward sweep (sort by the mean position of a node's inputs) and
 * an upward sweep (by the mean position of its consumers). Nodes with no neighbour on the
 * side being looked at keep their position. Sorting is stable, so ties keep their order.
 * @param {{id: string, depth: number}[]} nodes
 * @param {{source: string, target: string}[]} edges
 * @param {number} [sweeps=2] down+up sweep pairs
 * @returns {string[][]} ids per layer
 */
export function orderLayers(nodes, edges, sweeps = 2) {
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
  const position = new Map();
  for (const layer of layers) layer.forEach((id, i) => position.set(id, i));
  for (let sweep = 0; sweep < sweeps; sweep++) {
    for (let d = 1; d < layers.length; d++) reorder(layers[d], inputs, position);
    for (let d = layers.length - 2; d >= 0; d--) reorder(layers[d], outputs, position);
  }
  return layers;
}

/**
 * Sort `layer` in place by the barycenter of each node's `neighbours` positions, and
 * record its nodes' new positions.
 * @param {string[]} layer
 * @param {Map<string, string[]>} neighbours
 * @param {Map<string, number>} position index of each node within its layer
 */
function reorder(layer, neighbours, position) {
  const key = new Map();
  for (const [i, id] of layer.entries()) {
    const known = neighbours.get(id);
    const sum = known.reduce((acc, n) => acc + position.get(n), 0);
    key.set(id, known.length ? sum / known.length : i);
  }
  layer.sort((a, b) => key.get(a) - key.get(b));
  layer.forEach((id, i) => position.set(id, i));
}

/**
 * Number of crossing edge pairs between adjacent layers (edges spanning more layers are
 * ignored): the quantity the ordering tries to reduce.
 * @param {string[][]} layers
 * @param {{source: string, target: string}[]} edges
 * @returns {number}
 */
export function countCrossings(layers, edges) {
  const where = new Map();
  layers.forEach((layer, d) => layer.forEach((id, i) => where.set(id, [d, i])));
  const spans = edges
    .map((e) => [where.get(e.source), where.get(e.target)])
    .filter(([s, t]) => s && t && t[0] === s[0] + 1);
  let crossings = 0;
  for (let a = 0; a < spans.length; a++) {
    for (let b = a + 1; b < spans.length; b++) {
      const [s1, t1] = spans[a];
      const [s2, t2] = spans[b];
      if (s1[0] === s2[0] && (s1[1] - s2[1]) * (t1[1] - t2[1]) < 0) crossings++;
    }
  }
  return crossings;
}

/**
 * Top-left corner of each node's box: x by layer, y by order, each layer centred vertically
 * on the tallest one.
 * @param {string[][]} layers
 * @param {{width: number, height: number, gapX: number, gapY: number}} size
 * @returns {Map<string, {x: number, y: number}>}
 */
export function placeNodes(layers, size) {
  const tallest = layers.reduce((most, l) => Math.max(most, l.length), 0);
  const place = new Map();
  layers.forEach((layer, d) => {
    const offset = ((tallest - layer.length) * (size.height + size.gapY)) / 2;
    layer.forEach((id, i) => {
      place.set(id, {
        x: d * (size.width + size.gapX),
        y: offset + i * (size.height + size.gapY),
      });
    });
  });
  return place;
}

/**
 * SVG path from the right edge of the source box to the left edge of the target box (from
 * the left edge to the right edge in a right-to-left band: `leftward`); the end point is
 * spread along the target's edge by argument `position` of `arity`.
 * @param {{x: number, y: number}} from
 * @param {{x: number, y: number}} to
 * @param {{width: number, height: number}} size
 * @param {number} position
 * @param {number} arity
 * @param {boolean} [leftward]
 * @returns {string}
 */
export function edgePath(from, to, size, position, arity, leftward = false) {
  const sign = leftward ? -1 : 1;
  const x1 = leftward ? from.x : from.x + size.width;
  const y1 = from.y + size.height / 2;
  const x2 = leftward ? to.x + size.width : to.x;
  const y2 = to.y + (size.height * (position + 1)) / (arity + 1);
  const bend = sign * Math.max(20, (sign * (x2 - x1)) / 2);
  return `M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}`;
}

/**
 * Dashed link from the bottom middle of an op's box to the top middle of a gradient op
 * its rule ran (one band below).
 * @param {{x: number, y: number}} from
 * @param {{x: number, y: number}} to
 * @param {{width: number, height: number}} size
 * @returns {string}
 */
export function linkPath(from, to, size) {
  const x1 = from.x + size.width / 2;
  const y1 = from.y + size.height;
  const x2 = to.x + size.width / 2;
  const y2 = to.y;
  const bend = Math.max(20, Math.abs(y2 - y1) / 2);
  return `M${x1},${y1} C${x1},${y1 + bend} ${x2},${y2 - bend} ${x2},${y2}`;
}

/**
 * Whether a node matches the search box: its op name, grad_fn name, id or module contain
 * the query (case-insensitive). An empty query matches everything.
 * @param {object} node
 * @param {string} query
 * @returns {boolean}
 */
export function matchesSearch(node, query) {
  const q = query.trim().toLowerCase();
  if (!q) return true;
  return [node.op, node.grad_fn, node.id, node.module]
    .filter(Boolean)
    .some((text) => String(text).toLowerCase().includes(q));
}
