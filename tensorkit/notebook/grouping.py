"""Module groups: the tree of tk.nn module paths over graph nodes, and collapsing it."""

from __future__ import annotations

from collections import Counter

__all__ = ["collapse_groups", "module_tree"]


def module_tree(nodes: list[dict]) -> dict[str, dict]:
    """Path -> ``{"path", "parent", "children", "nodes", "count"}``; ``nodes`` are the ids
    directly in that module, ``count`` all ids below it. Ancestors are included."""
    groups: dict[str, dict] = {}
    for node in nodes:
        path = node["module"]
        if not path:
            continue
        _ensure(groups, path)["nodes"].append(node["id"])
        while path:
            groups[path]["count"] += 1
            path = groups[path]["parent"] or ""
    return groups


def _ensure(groups: dict[str, dict], path: str) -> dict:
    """The group at ``path``, creating it and its missing ancestors (iteratively)."""
    missing = []
    current: str | None = path
    while current and current not in groups:
        missing.append(current)
        current = current.rpartition(".")[0] or None
    for item in reversed(missing):
        parent = item.rpartition(".")[0] or None
        groups[item] = {"path": item, "parent": parent, "children": [], "nodes": [], "count": 0}
        if parent is not None:
            groups[parent]["children"].append(item)
    return groups[path]


def collapse_groups(
    nodes: list[dict], edges: list[dict], groups: dict[str, dict], max_nodes: int
) -> tuple[list[dict], list[dict]]:
    """Replace each module below some depth by one ``group`` node, choosing the deepest level
    at which the graph fits ``max_nodes`` (or the top level when none does)."""
    deepest = max(path.count(".") for path in groups)
    for level in range(deepest, -1, -1):
        collapsed_nodes, collapsed_edges = _collapse_at(nodes, edges, level)
        if len(collapsed_nodes) <= max_nodes:
            break
    for path, group in groups.items():
        group["collapsed"] = path.count(".") >= level
    return collapsed_nodes, collapsed_edges


def _collapse_at(nodes: list[dict], edges: list[dict], level: int) -> tuple[list, list]:
    owner: dict[str, str] = {}
    members: dict[str, list[dict]] = {}
    result: list[dict] = []
    for node in nodes:
        path = node["module"]
        if path and path.count(".") >= level:
            top = ".".join(path.split(".")[: level + 1])
            group_id = f"g:{top}"
            owner[node["id"]] = group_id
            if group_id not in members:
                members[group_id] = []
                result.append({"id": group_id, "module": top})
            members[group_id].append(node)
        else:
            result.append(node)
    for i, node in enumerate(result):
        if node["id"] in members:
            result[i] = _group_node(node["id"], node["module"], members[node["id"]])
    seen = set()
    kept = []
    for edge in edges:
        source = owner.get(edge["source"], edge["source"])
        target = owner.get(edge["target"], edge["target"])
        if source == target or (source, target, edge["position"]) in seen:
            continue
        seen.add((source, target, edge["position"]))
        kept.append({**edge, "source": source, "target": target})
    return result, kept


def _group_node(group_id: str, path: str, members: list[dict]) -> dict:
    time_ns = sum(m["records"].get("time_ns", 0) for m in members)
    return {
        "id": group_id,
        "kind": "group",
        "op": None,
        "shapes": {"in": [], "out": members[-1]["shapes"]["out"]},
        "dtypes": members[-1]["dtypes"],
        "device": members[-1]["device"],
        "module": path,
        "call_site": None,
        "summary": members[-1]["summary"],
        "records": {"time_ns": time_ns} if time_ns else {},
        "grad_fn": None,
        "count": len(members),
        "ops": dict(Counter(m["op"] for m in members)),
        "members": [m["id"] for m in members],
    }
