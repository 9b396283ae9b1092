/**
 * Folding the graph model's groups: which nodes and group boxes show for a set of folded
 * groups, which container (a band's top level or an open group) holds each, and the edges
 * between what shows, each lifted to the level where its ends' containers meet. Group ids
 * are opaque: only `groups[id].parent` and `children` are walked. Pure functions on plain
 * data.
 */

/** Prefix of the ids given to group items (folded group nodes and open group boxes). */
export const GROUP_PREFIX = "group:";

/** Id of the container holding a band's top level. */
export const bandId = (band) => `band:${band}`;

/**
 * The group tree of a graph model, computed once per graph: each group's parent, label,
 * kind and band; each node's innermost group and its chain of groups (see
 * {@link groupChain}). A node's group is `node.group` (the model's key), else `node.module`
 * where that names a group (recordings made before groups had ids), else none.
 * @param {{nodes: object[], groups?: object}} graph
 * @returns {{groups: Map<string, object>, groupOf: Map<string, string>,
 *   chains: Map<string, string[]>}}
 */
export function groupTree(graph) {
  const source = graph.groups || {};
  const groups = new Map();
  for (const [id, g] of Object.entries(source)) {
    groups.set(id, {
      id,
      parent: g.parent != null && g.parent in source ? g.parent : null,
      label: g.label || id,
      kind: g.kind || "module",
      band: null,
      item: GROUP_PREFIX + id, // the id of the item showing it (see foldGraph)
    });
  }
  const groupOf = new Map();
  for (const node of graph.nodes) {
    const id = node.group !== undefined ? node.group : node.module;
    if (!id || !groups.has(id)) continue;
    groupOf.set(node.id, id);
    // A group's band is its first node's; a node of another band is drawn outside it.
    for (let g = id; g !== null && groups.get(g).band === null; g = groups.get(g).parent) {
      groups.get(g).band = node.band || 0;
    }
  }
  const chains = new Map();
  for (const node of graph.nodes) {
    const chain = [];
    const band = node.band || 0;
    for (let g = groupOf.get(node.id) ?? null; g !== null; g = groups.get(g).parent) {
      if (groups.get(g).band !== band) break;
      chain.push(g);
    }
    chains.set(node.id, chain);
  }
  return { groups, groupOf, chains };
}

/**
 * The groups holding `node`, innermost first, cut where a group belongs to another band.
 * @param {ReturnType<typeof groupTree>} tree
 * @param {object} node
 * @returns {string[]}
 */
export function groupChain(tree, node) {
  return tree.chains.get(node.id) || [];
}

/**
 * What shows with the groups in `collapsed` folded (and, without `showBackward`, the
 * gradient bands, band > 0, hidden).
 *
 * `items`: id -> item, where an item is a node (`{type: "node", node}`) or a group (`{type:
 * "group", group, open, count}`, id GROUP_PREFIX + group id; `count` the shown nodes below
 * it), and every item has `parent` (its container's id), `depth` (1 at a band's top level)
 * and `band`. `containers`: id ->
 * `{id, band, children: item ids in model order}` for each band's top level (bandId) and
 * each open group. `rep`: node id -> the id of the item that shows it. `edges`: the model's
 * edges between the items that show (self-loops dropped; repeats merged when an end is
 * folded, else one per argument), each with `level` (the container where its ends meet,
 * null across bands) and `from`/`to` (that container's children holding the ends).
 * `links`: the same for the model's links (op -> the gradient ops its rule ran).
 * @param {object} graph
 * @param {ReturnType<typeof groupTree>} tree
 * @param {Iterable<string>} collapsed folded group ids
 * @param {{showBackward?: boolean}} [options]
 */
export function foldGraph(graph, tree, collapsed, { showBackward = true } = {}) {
  const folded = new Set(collapsed);
  const items = new Map();
  const containers = new Map();
  const rep = new Map();
  const container = (id, band, depth) => {
    if (!containers.has(id)) containers.set(id, { id, band, depth, children: [] });
    return containers.get(id);
  };
  for (const node of graph.nodes) {
    const band = node.band || 0;
    if (!showBackward && band > 0) continue;
    let holder = container(bandId(band), band, 0);
    let shownAs = null;
    const chain = groupChain(tree, node);
    for (let i = chain.length - 1; i >= 0; i--) {
      const group = tree.groups.get(chain[i]);
      const id = group.item;
      let item = items.get(id);
      if (!item) {
        const open = !folded.has(group.id);
        item = { id, type: "group", group, open, count: 0, band, depth: holder.depth + 1 };
        item.parent = holder.id;
        items.set(id, item);
        holder.children.push(id);
      }
      item.count += 1;
      if (!item.open) {
        shownAs = id;
        break;
      }
      holder = container(id, band, item.depth);
    }
    if (shownAs === null) {
      const depth = holder.depth + 1;
      items.set(node.id, { id: node.id, type: "node", node, parent: holder.id, band, depth });
      holder.children.push(node.id);
      shownAs = node.id;
    }
    rep.set(node.id, shownAs);
  }
  const edges = lift(graph.edges, rep, items, true);
  const links = lift(graph.links || [], rep, items, false);
  return { items, containers, rep, edges, links };
}

/** `list` ({source, target, position?, shape?}) between the items showing their ends: each
 * with its key and meeting level; hidden ends, self-loops and repeats dropped. */
function lift(list, rep, items, perArgument) {
  const seen = new Set();
  const kept = [];
  for (const item of list) {
    const source = rep.get(item.source);
    const target = rep.get(item.target);
    if (source === undefined || target === undefined || source === target) continue;
    const folded = source !== item.source || target !== item.target;
    const key =
      perArgument && !folded ? `${source}>${target}#${item.position}` : `${source}>${target}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const { level, from, to } = meeting(source, target, items);
    // Named fields, not a spread of `item`: a spread costs 4x as much on a whole graph.
    const { position, shape } = item;
    kept.push({ source, target, position, shape, key, level, from, to });
  }
  return kept;
}

/** The container where the containers of items `a` and `b` meet and its children that hold
 * them (neither holds the other: both show); level null when they are in different bands. */
function meeting(a, b, items) {
  let x = items.get(a);
  let y = items.get(b);
  while (x.depth > y.depth) x = items.get(x.parent);
  while (y.depth > x.depth) y = items.get(y.parent);
  while (x.parent !== y.parent) {
    if (x.depth === 1) return { level: null, from: a, to: b };
    x = items.get(x.parent);
    y = items.get(y.parent);
  }
  return { level: x.parent, from: x.id, to: y.id };
}

/**
 * Whether a node matches the search text: its label, op, grad_fn, id or module contain it
 * (case-insensitive). An empty query matches everything.
 * @param {object} node
 * @param {string} query
 * @returns {boolean}
 */
export function matchesSearch(node, query) {
  const q = (query || "").trim().toLowerCase();
  if (!q) return true;
  return [node.label, node.op, node.grad_fn, node.id, node.module]
    .filter(Boolean)
    .some((text) => String(text).toLowerCase().includes(q));
}

/**
 * The nodes matching a non-empty `query` (by {@link matchesSearch}, or because a group
 * holding them is labelled with it: "batch_norm" finds the ops of every batch_norm) and,
 * per group item (folded or open), how many matching nodes it holds: search reaches into
 * folded groups. Null for an empty query.
 * @param {object} graph
 * @param {ReturnType<typeof groupTree>} tree
 * @param {ReturnType<typeof foldGraph>} folded
 * @param {string} query
 * @returns {{nodes: Set<string>, counts: Map<string, number>}|null}
 */
export function searchMatches(graph, tree, folded, query) {
  if (!(query || "").trim()) return null;
  const nodes = new Set();
  const counts = new Map();
  const q = query.trim().toLowerCase();
  const labelled = new Set(
    [...tree.groups.values()].filter((g) => g.label.toLowerCase().includes(q)).map((g) => g.id),
  );
  for (const node of graph.nodes) {
    const shown = folded.rep.get(node.id);
    if (shown === undefined) continue;
    const inLabelled = () => groupChain(tree, node).some((g) => labelled.has(g));
    if (!matchesSearch(node, query) && !inLabelled()) continue;
    nodes.add(node.id);
    const item = folded.items.get(shown);
    const start = item.type === "group" ? item.id : item.parent;
    for (let id = start; folded.items.has(id); id = folded.items.get(id).parent) {
      counts.set(id, (counts.get(id) || 0) + 1);
    }
  }
  return { nodes, counts };
}

/**
 * The folded groups that hide node `id` (to open so that it shows), outermost first.
 * @param {ReturnType<typeof groupTree>} tree
 * @param {object} node
 * @param {Iterable<string>} collapsed
 * @returns {string[]}
 */
export function hidingGroups(tree, node, collapsed) {
  const folded = new Set(collapsed);
  return groupChain(tree, node)
    .filter((g) => folded.has(g))
    .reverse();
}

/**
 * Every group id of the tree (for "collapse all"): folding them all shows each band's top
 * level only.
 * @param {ReturnType<typeof groupTree>} tree
 * @returns {string[]}
 */
export function allGroups(tree) {
  return [...tree.groups.keys()];
}
