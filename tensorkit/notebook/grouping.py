"""Module groups: the tree of tk.nn module paths over graph nodes, and collapsing it."""

from __future__ import annotations

from collections import Counter

__all__ = ["collapse_groups", "default_collapsed", "fold_paths", "module_tree"]


def module_tree(nodes: list[dict]) -> dict[str, dict]:
    """Path -> ``{"path", "parent", "children", "nodes", "count"}``; ``nodes`` are the ids
    directly in that module, ``count`` all ids below it. Ancestors are included. Modules come
    in the order their ops ran (tensors placed in a module come after the ops)."""
    groups: dict[str, dict] = {}
    for node in sorted(nodes, key=lambda n: n["kind"] == "tensor"):
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
        paths = {path for path in groups if path.count(".") == level}
        collapsed_nodes, collapsed_edges = fold_paths(nodes, edges, paths)
        if len(collapsed_nodes) <= max_nodes:
            break
    for path, group in groups.items():
        group["collapsed"] = path.count(".") >= level
    return collapsed_nodes, collapsed_edges


def default_collapsed(nodes: list[dict], groups: dict[str, dict], limit: int) -> list[str]:
    """The module paths to fold at first: none when at most ``limit`` nodes, else every
    module of the deepest level at which at most ``limit`` nodes show (the top level when
    none is that small). Folding a path hides its nodes behind one group node."""
    if len(nodes) <= limit or not groups:
        return []
    deepest = max(path.count(".") for path in groups)
    for level in range(deepest, -1, -1):
        shown = {_fold(node["module"], level) or node["id"] for node in nodes}
        if len(shown) <= limit:
            break
    return [path for path in groups if path.count(".") == level]


def _fold(path: str, level: int) -> str:
    """The group at ``level`` that ``path`` folds into ("" when it stays visible)."""
    if not path or path.count(".") < level:
        return ""
    return "g:" + ".".join(path.split(".")[: level + 1])


def fold_paths(
    nodes: list[dict], edges: list[dict], paths: set[str] | list[str]
) -> tuple[list[dict], list[dict]]:
    """Replace the nodes of each folded module (the outermost of ``paths`` holding a node's
    module) by one ``group`` node ``g:<path>``; edges are redirected to it, self-loops and
    repeats dropped."""
    folded = set(paths)
    owner: dict[str, str] = {}
    members: dict[str, list[dict]] = {}
    result: list[dict] = []
    for node in nodes:
        top = _outermost(node["module"], folded)
        if top is None:
            result.append(node)
            continue
        group_id = f"g:{top}"
        owner[node["id"]] = group_id
        if group_id not in members:
            members[group_id] = []
            result.append({"id": group_id, "module": top})
        members[group_id].append(node)
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


def _outermost(path: str, folded: set[str]) -> str | None:
    """The outermost folded module containing ``path``, or None."""
    if not path:
        return None
    parts = path.split(".")
    for n in range(1, len(parts) + 1):
        prefix = ".".join(parts[:n])
        if prefix in folded:
            return prefix
    return None


def _group_metrics(members: list[dict]) -> dict:
    """A group's measures: times and bytes summed over its members, the largest grad norm."""
    metrics: dict = {}
    for member in members:
        for key, value in member.get("metrics", {}).items():
            if key == "grad_norm":
                metrics[key] = max(metrics.get(key, value), value)
            else:
                metrics[key] = metrics.get(key, 0) + value
    return metrics


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
        "band": members[0].get("band", 0),
        "metrics": _group_metrics(members),
    }
