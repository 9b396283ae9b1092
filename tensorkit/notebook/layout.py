"""A layered layout hint: each node's topological depth within its band, by Kahn's algorithm
(iterative, so any depth works)."""

from __future__ import annotations

from collections import deque

__all__ = ["align_side_components", "layer_bands", "layer_nodes"]


def layer_nodes(node_ids: list[str], edges: list[dict]) -> dict:
    """``{"depth": {id: d}, "layers": [[ids at depth 0], ...]}``; depth = longest path from a
    source (the graphs built here are acyclic: edges only point to later ops); then each node
    with consumers moves as late as they allow, so that a parameter, and the ops that only
    reshape it, sit just before the op using them."""
    children: dict[str, list[str]] = {n: [] for n in node_ids}
    indegree = dict.fromkeys(node_ids, 0)
    for edge in edges:
        source, target = edge["source"], edge["target"]
        if source in children and target in indegree:
            children[source].append(target)
            indegree[target] += 1
    depth = dict.fromkeys(node_ids, 0)
    queue = deque(n for n in node_ids if indegree[n] == 0)
    order = []
    while queue:
        node = queue.popleft()
        order.append(node)
        for child in children[node]:
            depth[child] = max(depth[child], depth[node] + 1)
            indegree[child] -= 1
            if indegree[child] == 0:
                queue.append(child)
    for n in reversed(order):
        if children[n]:
            depth[n] = min(depth[c] for c in children[n]) - 1
    layers: list[list[str]] = [[] for _ in range(max(depth.values(), default=-1) + 1)]
    for n in node_ids:
        layers[depth[n]].append(n)
    return {"depth": depth, "layers": layers}


def layer_bands(nodes: list[dict], edges: list[dict]) -> dict:
    """:func:`layer_nodes` per band (a node's ``band``, 0 when absent; edges between bands
    do not count), each side computation then aligned with its module (see
    :func:`align_side_components`): ``{"depth": {id: d}, "bands": [layers of band 0, ...]}``."""
    by_band: dict[int, list[str]] = {}
    for node in nodes:
        by_band.setdefault(node.get("band", 0), []).append(node["id"])
    module = {n["id"]: n.get("module", "") for n in nodes}
    depth: dict[str, int] = {}
    bands = []
    for band in sorted(by_band):
        ids = by_band[band]
        band_depth = layer_nodes(ids, edges)["depth"]
        align_side_components(ids, edges, band_depth, module)
        depth.update(band_depth)
        layers: list[list[str]] = [[] for _ in range(max(band_depth.values()) + 1)]
        for n in ids:
            layers[band_depth[n]].append(n)
        bands.append(layers)
    return {"depth": depth, "bands": bands}


def align_side_components(
    ids: list[str], edges: list[dict], depth: dict[str, int], module: dict[str, str]
) -> None:
    """Shift (in ``depth``) each connected piece of the graph apart from the largest (a
    BatchNorm's running-statistics update, say) right, to where the ops of its module start
    in the largest piece, instead of at the far left."""
    root = {n: n for n in ids}

    def find(n: str) -> str:
        while root[n] != n:
            root[n] = root[root[n]]
            n = root[n]
        return n

    for edge in edges:
        if edge["source"] in root and edge["target"] in root:
            root[find(edge["source"])] = find(edge["target"])
    pieces: dict[str, list[str]] = {}
    for n in ids:
        pieces.setdefault(find(n), []).append(n)
    if len(pieces) < 2:
        return
    main = max(pieces.values(), key=len)
    start: dict[str, int] = {}
    for n in main:
        path = module.get(n, "")
        while path:
            start[path] = min(start.get(path, depth[n]), depth[n])
            path = path.rpartition(".")[0]
    for piece in pieces.values():
        if piece is main:
            continue
        prefixes = (_known_prefix(module.get(n, ""), start) for n in piece)
        anchor = next((path for path in prefixes if path), None)
        shift = 0 if anchor is None else start[anchor] - min(depth[n] for n in piece)
        for n in piece if shift > 0 else ():
            depth[n] += shift


def _known_prefix(path: str, known: dict[str, int]) -> str | None:
    """The longest prefix of ``path`` (itself included) that is a key of ``known``."""
    while path and path not in known:
        path = path.rpartition(".")[0]
    return path or None
