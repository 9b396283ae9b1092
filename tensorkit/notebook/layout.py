"""A layered layout hint: each node's topological depth, by Kahn's algorithm (iterative)."""

from __future__ import annotations

from collections import deque

__all__ = ["layer_nodes"]


def layer_nodes(node_ids: list[str], edges: list[dict]) -> dict:
    """``{"depth": {id: d}, "layers": [[ids at depth 0], ...]}``; depth = longest path from a
    source (the graphs built here are acyclic: edges only point to later ops)."""
    children: dict[str, list[str]] = {n: [] for n in node_ids}
    indegree = dict.fromkeys(node_ids, 0)
    for edge in edges:
        source, target = edge["source"], edge["target"]
        if source in children and target in indegree:
            children[source].append(target)
            indegree[target] += 1
    depth = dict.fromkeys(node_ids, 0)
    queue = deque(n for n in node_ids if indegree[n] == 0)
    while queue:
        node = queue.popleft()
        for child in children[node]:
            depth[child] = max(depth[child], depth[node] + 1)
            indegree[child] -= 1
            if indegree[child] == 0:
                queue.append(child)
    layers: list[list[str]] = [[] for _ in range(max(depth.values(), default=-1) + 1)]
    for n in node_ids:
        layers[depth[n]].append(n)
    return {"depth": depth, "layers": layers}
