"""The graph view's data model: nodes, edges in argument order, module groups, layers.

``build_graph`` reads a :class:`~tensorkit.autograd.Tape` (forward ops, optionally backward
ops too) or, for a tensor, walks its backward graph. The result is plain data: tensors never
travel, only their shapes, dtypes and value summaries.
"""

from __future__ import annotations

from typing import Any

from ..autograd.graph import AccumulateGrad
from ..autograd.tape import Tape
from ..tensor import Tensor
from .grouping import collapse_groups, module_tree
from .layout import layer_nodes
from .walk import backward_nodes, node_ids, root_nodes

__all__ = ["build_graph", "to_text"]

MAX_NODES = 2000


def build_graph(
    source: Tape | Tensor,
    *,
    include_backward: bool = False,
    max_nodes: int = MAX_NODES,
    group_by_module: bool = True,
) -> dict:
    """A JSON-serializable graph of a Tape's ops (or of a tensor's backward graph).

    Keys: ``source`` ("tape" or "grad_fn"), ``nodes``, ``edges`` (producer -> consumer, with
    the argument ``position``), ``groups`` (module path -> parent, children, node ids),
    ``layout`` (depth per node id, layers) and ``omitted`` (nodes left out beyond
    ``max_nodes``: module groups are collapsed first, deepest level first, then nodes are cut,
    external tensors before ops).
    """
    if isinstance(source, Tape):
        nodes, edges = _from_tape(source, include_backward)
        kind = "tape"
    elif isinstance(source, Tensor):
        nodes, edges = _from_tensor(source)
        kind = "grad_fn"
    else:
        raise TypeError(f"build_graph expects a Tape or a Tensor, got {type(source).__name__}")
    groups = module_tree(nodes) if group_by_module else {}
    omitted = 0
    if len(nodes) > max_nodes and groups:
        nodes, edges = collapse_groups(nodes, edges, groups, max_nodes)
    if len(nodes) > max_nodes:
        omitted = len(nodes) - max_nodes
        kept = {n["id"] for n in sorted(nodes, key=lambda n: n["kind"] == "tensor")[:max_nodes]}
        nodes = [n for n in nodes if n["id"] in kept]
        edges = [e for e in edges if e["source"] in kept and e["target"] in kept]
    layout = layer_nodes([n["id"] for n in nodes], edges)
    for node in nodes:
        node["depth"] = layout["depth"][node["id"]]
    return {
        "source": kind,
        "nodes": nodes,
        "edges": edges,
        "groups": groups,
        "layout": {"layers": layout["layers"]},
        "omitted": omitted,
    }


def _from_tape(tape: Tape, include_backward: bool) -> tuple[list[dict], list[dict]]:
    raw = tape.graph(phase=None if include_backward else "forward")
    nodes = [_tape_node(n) for n in raw["nodes"]]
    edges = [
        {
            "source": e["source"],
            "target": e["target"],
            "position": e["position"],
            "shape": e["shape"],
        }
        for e in raw["edges"]
    ]
    return nodes, edges


def _tape_node(raw: dict) -> dict:
    if raw["kind"] == "tensor":
        return {
            "id": raw["id"],
            "kind": "tensor",
            "op": None,
            "shapes": {"in": [], "out": [raw["shape"]]},
            "dtypes": [raw["dtype"]],
            "device": raw["device"],
            "module": "",
            "call_site": None,
            "summary": raw["summary"],
            "records": {},
            "grad_fn": None,
            "requires_grad": raw["requires_grad"],
        }
    outputs = raw["outputs"]
    return {
        "id": raw["id"],
        "kind": "op",
        "op": raw["name"],
        "phase": raw["phase"],
        "shapes": {
            "in": [i.get("shape") for i in raw["inputs"]],
            "out": [o["shape"] for o in outputs],
        },
        "dtypes": [o["dtype"] for o in outputs],
        "device": outputs[0]["device"] if outputs else None,
        "module": raw["module_path"],
        "call_site": raw["call_site"],
        "summary": outputs[0]["summary"] if outputs else None,
        "records": raw["records"],
        "grad_fn": raw["grad_fn"],
        "attrs": raw["attrs"],
    }


def _from_tensor(tensor: Tensor) -> tuple[list[dict], list[dict]]:
    order = backward_nodes(root_nodes(tensor))
    ids = node_ids(order)
    nodes: list[dict] = []
    edges: list[dict] = []
    for node in order:
        leaf = node.variable if type(node) is AccumulateGrad else None
        meta = [None if m is None else list(m[0]) for m in node.input_meta]
        nodes.append(
            {
                "id": ids[node],
                "kind": "leaf" if leaf is not None else "grad_fn",
                "op": getattr(node.op, "name", None),
                "shapes": {"in": meta, "out": _output_shapes(node)},
                "dtypes": [None if m is None else str(m[1]) for m in node.input_meta],
                "device": None if leaf is None else str(leaf.device),
                "module": "",
                "call_site": None,
                "summary": None,
                "records": {},
                "grad_fn": node.name(),
                "saved": node.saved_summary(),
            }
        )
        for position, edge in enumerate(node.edges):
            if edge is not None:
                edges.append(
                    {
                        "source": ids[edge[0]],
                        "target": ids[node],
                        "position": position,
                        "shape": meta[position],
                    }
                )
    _fill_output_shapes(nodes, edges, tensor)
    return nodes, edges


def _fill_output_shapes(nodes: list[dict], edges: list[dict], root: Tensor) -> None:
    """Single-output nodes do not record their output shape: take it from a consuming edge."""
    consumed = {e["source"]: e["shape"] for e in edges}
    for node in nodes:
        if node["shapes"]["out"] is None:
            shape = consumed.get(node["id"])
            node["shapes"]["out"] = [shape if shape is not None else list(root.shape)]


def _output_shapes(node: Any) -> list | None:
    if type(node) is AccumulateGrad:
        return [list(node.input_meta[0][0])]
    meta = node.output_meta
    return None if meta is None else [list(m[0]) for m in meta]


def to_text(graph: dict) -> str:
    """One line per node, in layer order: id, kind, op, output shapes, inputs, module."""
    by_id = {n["id"]: n for n in graph["nodes"]}
    inputs: dict[str, list[str]] = {n: [] for n in by_id}
    for edge in sorted(graph["edges"], key=lambda e: e["position"]):
        inputs[edge["target"]].append(edge["source"])
    lines = []
    for depth, layer in enumerate(graph["layout"]["layers"]):
        for node_id in layer:
            node = by_id[node_id]
            label = node["op"] or node.get("grad_fn") or node["kind"]
            if node["kind"] == "group":
                label = f"[{node['module']}] {node['count']} ops"
            shapes = ", ".join(_shape_text(s) for s in (node["shapes"]["out"] or []))
            args = ", ".join(inputs[node_id])
            where = f"  [{node['module']}]" if node["module"] and node["kind"] != "group" else ""
            lines.append(f"{depth:4d} {node_id:>8} {label}({args}) -> {shapes}{where}")
    if graph["omitted"]:
        lines.append(f"... {graph['omitted']} more nodes omitted")
    return "\n".join(lines)


def _shape_text(shape: list | None) -> str:
    if shape is None:
        return "?"
    return "x".join(map(str, shape)) or "scalar"
