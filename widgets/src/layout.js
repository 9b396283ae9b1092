/**
 * Layered layout of the graph model: collapsing module groups, ordering each layer with a
 * barycenter pass to reduce edge crossings, and placing nodes (x by depth, y by order).
 * Pure functions on plain data, so they can be tested with node's test runner.
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
 * The nodes and edges to draw once the `collapsed` module groups are folded: each collapsed
 * group becomes one node (kind "group"); edges are redirected to it, self-loops dropped and
 * duplicates merged (keeping the first position). When a group is folded, depths are
 * recomputed on the folded graph (see {@link relayer}); otherwise the model's depths stand.
 * @param {{nodes: object[], edges: object[], groups: object}} graph
 * @param {string[]} collapsed
 * @returns {{nodes: object[], edges: object[], owner: Map<string, string>}}
 */
export function visibleGraph(graph, collapsed) {
  const folded = new Set(collapsed.filter((path) => path in (graph.groups || {})));
  const owner = new Map();
  const nodes = [];
  const groupNodes = new Map();
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
      shapes: { in: [], out: [] },
    };
    groupNodes.set(id, stand);
    nodes.push(stand);
  }
  const seen = new Set();
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

/**
 * Copies of `nodes` with `depth` set to the longest path from a source (Kahn's algorithm),
 * as the model computes it; nodes on a cycle (folding can create one) keep their depth.
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
  for (let sweep = 0; sweep < sweeps; sweep++) {
    for (let d = 1; d < layers.length; d++) reorder(layers, d, inputs);
    for (let d = layers.length - 2; d >= 0; d--) reorder(layers, d, outputs);
  }
  return layers;
}

/**
 * Sort layer `d` in place by the barycenter of each node's `neighbours` positions.
 * @param {string[][]} layers
 * @param {number} d
 * @param {Map<string, string[]>} neighbours
 */
function reorder(layers, d, neighbours) {
  const position = new Map();
  for (const layer of layers) layer.forEach((id, i) => position.set(id, i));
  const key = new Map();
  for (const [i, id] of layers[d].entries()) {
    const known = neighbours.get(id).filter((n) => position.has(n));
    const sum = known.reduce((acc, n) => acc + position.get(n), 0);
    key.set(id, known.length ? sum / known.length : i);
  }
  layers[d].sort((a, b) => key.get(a) - key.get(b));
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
  const tallest = Math.max(0, ...layers.map((l) => l.length));
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
 * SVG path from the right edge of the source box to the left edge of the target box; the
 * end point is spread along the target's edge by argument `position` of `arity`.
 * @param {{x: number, y: number}} from
 * @param {{x: number, y: number}} to
 * @param {{width: number, height: number}} size
 * @param {number} position
 * @param {number} arity
 * @returns {string}
 */
export function edgePath(from, to, size, position, arity) {
  const x1 = from.x + size.width;
  const y1 = from.y + size.height / 2;
  const x2 = to.x;
  const y2 = to.y + (size.height * (position + 1)) / (arity + 1);
  const bend = Math.max(20, (x2 - x1) / 2);
  return `M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}`;
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
