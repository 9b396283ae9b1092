"""Common-subexpression elimination: one node for each distinct computation."""

from __future__ import annotations

from typing import Any

from ..ir import Graph, Node, Ref, map_refs

__all__ = ["eliminate_common_subexpressions"]


def eliminate_common_subexpressions(graph: Graph) -> Graph:
    """Merge nodes with the same op, arguments, attributes and cast (after renaming the
    arguments of merged ones); random draws and opaque functions are never merged. A guard
    that repeats an earlier one (the same read of the same value, expecting the same Python
    value) is dropped: the earlier check already decided it."""
    renamed: dict[int, int] = {}
    graph.nodes = _merge(graph.nodes, renamed)
    graph.backward = _merge(graph.backward, renamed)
    graph.rename(renamed)
    return graph


def _merge(nodes: list[Node], renamed: dict[int, int]) -> list[Node]:
    seen: dict[Any, Node] = {}
    kept = []
    for node in nodes:
        node.args = tuple(Ref(renamed.get(a.id, a.id)) if type(a) is Ref else a for a in node.args)
        node.attrs = {
            k: map_refs(v, lambda ref: Ref(renamed.get(ref.id, ref.id)))
            for k, v in node.attrs.items()
        }
        key = _key(node)
        earlier = None if key is None else seen.get(key)
        if earlier is None:
            if key is not None:
                seen[key] = node
            kept.append(node)
            continue
        for mine, theirs in zip(node.outputs, earlier.outputs, strict=True):
            renamed[mine.id] = theirs.id
    return kept


def _key(node: Node) -> Any:
    """A hashable identity of the computation, or None when it must not be merged."""
    if node.kind == "guard":
        attrs = {"value": node.attrs["value"]}  # not its number: that says where it was
    elif node.kind == "op":
        attrs = node.attrs
    else:
        return None
    try:
        key = (node.kind, node.op, _frozen(node.args), _frozen(attrs), node.cast)
        hash(key)
    except TypeError:  # an attribute that cannot be compared cheaply (an index array)
        return None
    return key


def _frozen(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return (type(value).__name__, tuple(_frozen(v) for v in value))
    if isinstance(value, slice):
        return ("slice", value.start, value.stop, value.step)
    if isinstance(value, float):
        return ("float", value)  # 1.0 and 1 and True must not merge
    if isinstance(value, bool | int):
        return (type(value).__name__, value)
    return value
