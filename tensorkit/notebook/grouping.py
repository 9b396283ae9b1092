"""Folding the group tree (:mod:`~tensorkit.notebook.group_tree`): one stand-in node per
folded group, and which groups a view folds at first.

A node's group is its ``group`` (the innermost group holding it); recordings made before
groups had ids of their own use the node's ``module`` path, which was its group's id. A folded
group hides every node below it; where folded groups nest, the outermost one shows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

__all__ = ["collapse_groups", "default_collapsed", "fold_paths", "fold_targets"]

_GROUP_NODE = "g:"  # prefix of a folded group's stand-in node id


def node_group(node: dict) -> str:
    """The id of the innermost group holding ``node`` ("" for none)."""
    return node["group"] if "group" in node else node.get("module") or ""


def fold_targets(groups: dict[str, dict], folded: Iterable[str]) -> dict[str, str | None]:
    """For each group id: the outermost group of ``folded`` among it and its ancestors (the
    group whose stand-in node shows it), or None when it is not folded away."""
    folded = set(folded)
    targets: dict[str, str | None] = {}
    for group_id in groups:
        chain = []
        current: str | None = group_id
        while current is not None and current not in targets:
            chain.append(current)
            current = groups[current].get("parent") if current in groups else None
        above = None if current is None else targets[current]
        for item in reversed(chain):
            if above is None and item in folded:
                above = item
            targets[item] = above
    return targets


def fold_paths(
    nodes: list[dict], edges: list[dict], paths: Iterable[str], groups: dict[str, dict]
) -> tuple[list[dict], list[dict]]:
    """Replace the nodes of each folded group (the outermost of ``paths`` holding a node) by
    one ``group`` node ``g:<id>``; edges are redirected to it, self-loops and repeats
    dropped."""
    targets = fold_targets(groups, paths)
    owner: dict[str, str] = {}
    members: dict[str, list[dict]] = {}
    result: list[dict] = []
    for node in nodes:
        top = targets.get(node_group(node))
        if top is None:
            result.append(node)
            continue
        group_id = _GROUP_NODE + top
        owner[node["id"]] = group_id
        if group_id not in members:
            members[group_id] = []
            result.append({"id": group_id, "path": top})
        members[group_id].append(node)
    for i, node in enumerate(result):
        if node["id"] in members:
            result[i] = _group_node(node["path"], groups[node["path"]], members[node["id"]])
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


def collapse_groups(
    nodes: list[dict], edges: list[dict], groups: dict[str, dict], max_nodes: int
) -> tuple[list[dict], list[dict]]:
    """Fold every function group and, if still above ``max_nodes``, every other group from
    some depth of the tree on: the deepest depth at which the graph fits (the top when none
    does). Marks each group ``collapsed`` when folded or inside a folded group."""
    for folded in _fold_choices(groups, groups):
        targets = fold_targets(groups, folded)
        if _shown(nodes, targets) <= max_nodes:
            break
    for group_id, group in groups.items():
        group["collapsed"] = targets[group_id] is not None
    return fold_paths(nodes, edges, folded, groups)


def default_collapsed(nodes: list[dict], groups: dict[str, dict], limit: int) -> list[str]:
    """The groups a view folds at first: every function group (a composite such as
    ``linear`` shows as one node that opens into its ops) and, when more than ``limit`` nodes
    show even so, every other group of the deepest depth at which at most ``limit`` show (the
    top depth when none is that small). Only groups holding some of ``nodes`` count."""
    present = _present(nodes, groups)
    for folded in _fold_choices(groups, present):
        if len(nodes) <= limit or _shown(nodes, fold_targets(groups, folded)) <= limit:
            break
    return [group_id for group_id in groups if group_id in folded]


def _fold_choices(groups: dict[str, dict], candidates: Iterable[str]) -> list[set[str]]:
    """The folds to try, least folded first: the function groups among ``candidates``, then
    also the other candidates at each depth of the tree, deepest first."""
    depth: dict[str, int] = {}
    for group_id in groups:  # parents first is not guaranteed: walk up where needed
        chain = []
        current: str | None = group_id
        while current is not None and current not in depth:
            chain.append(current)
            current = groups[current].get("parent")
        level = -1 if current is None else depth[current]
        for item in reversed(chain):
            level += 1
            depth[item] = level
    functions = {g for g in candidates if groups[g].get("kind") == "function"}
    others = [g for g in candidates if g not in functions]
    levels = sorted({depth[g] for g in others}, reverse=True)
    return [functions] + [functions | {g for g in others if depth[g] == n} for n in levels]


def _present(nodes: list[dict], groups: dict[str, dict]) -> set[str]:
    """The groups holding some of ``nodes``, with their ancestors."""
    present: set[str] = set()
    for group_id in {node_group(n) for n in nodes}:
        current: str | None = group_id
        while current and current not in present and current in groups:
            present.add(current)
            current = groups[current].get("parent")
    return present


def _shown(nodes: list[dict], targets: dict[str, str | None]) -> int:
    """How many nodes a view shows with the folds ``targets`` describes."""
    shown = set()
    for node in nodes:
        top = targets.get(node_group(node))
        shown.add(node["id"] if top is None else _GROUP_NODE + top)
    return len(shown)


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


def _group_node(group_id: str, group: dict, members: list[dict]) -> dict:
    """The stand-in node of a folded group: its label, count, members and summed measures."""
    time_ns = sum(m["records"].get("time_ns", 0) for m in members)
    return {
        "id": _GROUP_NODE + group_id,
        "kind": "group",
        "op": None,
        "label": group.get("label") or group_id,
        "path": group_id,
        "group": group.get("parent") or "",
        "shapes": {"in": [], "out": members[-1]["shapes"]["out"]},
        "dtypes": members[-1]["dtypes"],
        "device": members[-1]["device"],
        "module": group.get("module", group_id),
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
