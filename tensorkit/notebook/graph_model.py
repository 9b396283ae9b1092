"""The graph view's data model: nodes, edges in argument order, module groups, bands, layers.

``build_graph`` reads a :class:`~tensorkit.autograd.Tape` (forward ops, optionally backward
ops too) or, for a tensor, walks its backward graph. The result is plain data: tensors never
travel, only their shapes, dtypes, value summaries and the measures the view colours by.

Bands: forward ops are band 0; an op a gradient rule ran is one band below the op whose rule
it is (so the ops of a ``create_graph=True`` backward are band 1, those of a second
differentiation through them band 2). ``links`` tie each backward op to that op.
"""

from __future__ import annotations

import math
from typing import Any

from ..autograd.graph import AccumulateGrad
from ..autograd.tape import Tape, TapeEntry, TensorInfo
from ..tensor import Tensor
from .grouping import collapse_groups, default_collapsed, module_tree
from .layout import layer_bands
from .walk import backward_nodes, node_ids, root_nodes

__all__ = ["build_graph", "to_text"]

MAX_NODES = 5000
COLLAPSE_ABOVE = 150
GRAD_PREFIX = "\u2207"  # module paths of backward ops: "∇" + the forward op's path


def build_graph(
    source: Tape | Tensor,
    *,
    include_backward: bool = False,
    max_nodes: int = MAX_NODES,
    group_by_module: bool = True,
    collapse_above: int = COLLAPSE_ABOVE,
) -> dict:
    """A JSON-serializable graph of a Tape's ops (or of a tensor's backward graph).

    Keys: ``source`` ("tape" or "grad_fn"), ``nodes`` (each with ``band``, ``depth`` within
    its band and ``metrics``: ``time_ns``, ``backward_ns``, ``bytes``, ``grad_norm`` where
    known), ``edges`` (producer -> consumer, with the argument ``position``), ``links``
    (op -> backward op its rule ran), ``groups`` (module path -> parent, children, node ids),
    ``collapsed`` (the module paths a view folds at first: the deepest module level at which
    at most ``collapse_above`` nodes show; empty for smaller graphs), ``layout`` (``layers``:
    ids per depth of band 0, ``bands``: those layers per band) and ``omitted`` (nodes left out
    beyond ``max_nodes``: module groups are collapsed first, deepest level first, then nodes
    are cut, external tensors before ops).
    """
    if isinstance(source, Tape):
        nodes, edges = _from_tape(source, include_backward)
        kind = "tape"
    elif isinstance(source, Tensor):
        nodes, edges = _from_tensor(source)
        kind = "grad_fn"
    else:
        raise TypeError(f"build_graph expects a Tape or a Tensor, got {type(source).__name__}")
    if max_nodes < 1:
        raise ValueError(f"max_nodes must be at least 1, got {max_nodes}")
    groups = module_tree(nodes) if group_by_module else {}
    links = [
        {"source": origin, "target": n["id"]}
        for n in nodes
        for origin in (n.get("backward_of"), n.get("grad_of"))
        if origin is not None
    ]
    omitted = 0
    if len(nodes) > max_nodes and groups:
        nodes, edges = collapse_groups(nodes, edges, groups, max_nodes)
    if len(nodes) > max_nodes:
        omitted = len(nodes) - max_nodes
        kept = {n["id"] for n in sorted(nodes, key=lambda n: n["kind"] == "tensor")[:max_nodes]}
        nodes = [n for n in nodes if n["id"] in kept]
        edges = [e for e in edges if e["source"] in kept and e["target"] in kept]
    links = _shown_links(links, nodes)
    layout = layer_bands(nodes, edges)
    bands = layout["bands"]
    for node in nodes:
        node["depth"] = layout["depth"][node["id"]]
    folded = default_collapsed(nodes, groups, collapse_above) if groups else []
    return {
        "source": kind,
        "nodes": nodes,
        "edges": edges,
        "links": links,
        "groups": groups,
        "collapsed": folded,
        "layout": {"layers": bands[0] if bands else [], "bands": bands},
        "omitted": omitted,
    }


def _shown_links(links: list[dict], nodes: list[dict]) -> list[dict]:
    """Links between the nodes kept, redirected to the group nodes that folded their ends;
    links inside one group and repeats dropped."""
    owner = {m: n["id"] for n in nodes for m in n.get("members", ())}
    owner.update((n["id"], n["id"]) for n in nodes)
    shown: dict[tuple[str, str], None] = {}
    for link in links:
        ends = owner.get(link["source"]), owner.get(link["target"])
        if None not in ends and ends[0] != ends[1]:
            shown[ends] = None
    return [{"source": a, "target": b} for a, b in shown]


def _from_tape(tape: Tape, include_backward: bool) -> tuple[list[dict], list[dict]]:
    raw = tape.graph(phase=None if include_backward else "forward")
    entries = {e.index: e for e in tape.entries}
    metrics = _tape_metrics(tape)
    nodes = [_tape_node(n, entries, metrics) for n in raw["nodes"]]
    edges = [
        {
            "source": e["source"],
            "target": e["target"],
            "position": e["position"],
            "shape": e["shape"],
        }
        for e in raw["edges"]
    ]
    _place_tensors_in_modules(nodes, edges)
    if _place_accumulations(nodes):  # the gradients they copied follow them
        _place_tensors_in_modules(nodes, edges)
    return nodes, edges


def _place_accumulations(nodes: list[dict]) -> bool:
    """Gradient ops no rule ran (the copies of gradients into ``.grad``) go in the gradient
    group of their leaf's module when the leaf is known (alive), else in one
    ``∇AccumulateGrad`` group per band; whether any moved."""
    module = {n["id"]: (n["module"], n["band"]) for n in nodes if n["kind"] == "tensor"}
    moved = False
    for node in nodes:
        if node["kind"] != "op" or not node["band"] or node["module"] or node["backward_of"]:
            continue
        leaf = module.get(node["grad_of"])
        if leaf is not None and leaf[0]:
            node["module"] = _grad_path(leaf[0], leaf[1] + 1)
        else:
            node["module"] = _grad_path("AccumulateGrad", node["band"])
        moved = True
    return moved


def _tape_node(raw: dict, entries: dict[int, TapeEntry], metrics: dict) -> dict:
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
            "band": 0,
            "metrics": metrics["tensors"].get(raw["tensor"], {}),
        }
    outputs = raw["outputs"]
    index = raw["index"]
    band = metrics["bands"][index]
    module = raw["module_path"]
    forward = raw["backward_of"]
    grad_of = metrics["grad_of"].get(index)
    if band and not module and forward is not None:
        module = _grad_path(entries[forward].module_path, band)
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
        "module": module,
        "call_site": raw["call_site"],
        "scopes": raw.get("scopes") or [],
        "summary": outputs[0]["summary"] if outputs else None,
        "records": raw["records"],
        "grad_fn": raw["grad_fn"],
        "attrs": raw["attrs"],
        "band": band,
        "backward_of": None if forward is None else f"op{forward}",
        "grad_of": None if grad_of is None else f"t{grad_of}",
        "metrics": metrics["ops"][index],
    }


def _grad_path(path: str, band: int) -> str:
    """The module path backward ops of band ``band`` are grouped under ("" stays "")."""
    return GRAD_PREFIX * band + path if path else ""


def _place_tensors_in_modules(nodes: list[dict], edges: list[dict]) -> None:
    """An external tensor (a parameter, an incoming gradient) joins the band of its first
    consumers and the innermost module holding all its consumers in that band, so that
    folding the module folds it too."""
    by_id = {n["id"]: n for n in nodes}
    consumers: dict[str, list[dict]] = {}
    for edge in edges:
        consumers.setdefault(edge["source"], []).append(by_id[edge["target"]])
    for node in nodes:
        if node["kind"] == "tensor" and node["id"] in consumers:
            band = min(c["band"] for c in consumers[node["id"]])
            node["band"] = band
            node["module"] = _common_path(
                [c["module"] for c in consumers[node["id"]] if c["band"] == band]
            )


def _common_path(paths: list[str]) -> str:
    common = paths[0].split(".") if paths[0] else []
    for path in paths[1:]:
        parts = path.split(".") if path else []
        n = 0
        while n < min(len(common), len(parts)) and common[n] == parts[n]:
            n += 1
        common = common[:n]
    return ".".join(common)


def _tape_metrics(tape: Tape) -> dict:
    """Per entry: its band and ``metrics`` (own ``time_ns``, ``backward_ns`` of the ops its
    gradient rule ran, ``bytes`` allocated (the profiler's ``alloc_bytes`` when recorded,
    else its outputs' size), ``grad_norm`` of the gradients its rule produced); per external
    tensor id: the ``grad_norm`` of its ``.grad`` when the tensor is still alive."""
    bands: dict[int, int] = {}
    ops: dict[int, dict] = {}
    rules: dict[int, list[TapeEntry]] = {}
    for entry in tape.entries:  # a rule's ops come after the op they differentiate
        forward = entry.backward_of
        bands[entry.index] = 0 if entry.phase == "forward" else 1 + bands.get(forward, 0)
        records = entry.records
        alloc = records.get("alloc_bytes")
        ops[entry.index] = {
            "time_ns": entry.duration_ns,
            "bytes": alloc if isinstance(alloc, int) else sum(o.nbytes for o in entry.outputs),
        }
        if forward is not None:
            rules.setdefault(forward, []).append(entry)
    tensors, grad_of = _leaf_grads(tape)
    for forward, rule in rules.items():
        ops[forward]["backward_ns"] = sum(e.duration_ns for e in rule)
        norm = _results_norm(rule)
        if norm is not None:
            ops[forward]["grad_norm"] = norm
    return {"bands": bands, "ops": ops, "tensors": tensors, "grad_of": grad_of}


def _results_norm(rule: list[TapeEntry]) -> float | None:
    """L2 norm over the tensors a rule's ops made and did not use themselves (its results),
    from their value summaries; None when a summary is missing or not finite."""
    used = {i.id for e in rule for i in e.inputs if isinstance(i, TensorInfo)}
    squares = 0.0
    for info in (o for e in rule for o in e.outputs if o.id not in used):
        norm = _summary_norm(info)
        if norm is None:
            return None
        squares += norm * norm
    return math.sqrt(squares) if math.isfinite(squares) else None


def _summary_norm(info: TensorInfo) -> float | None:
    """sqrt(n * (std^2 + mean^2)) (the summary's std is the population std)."""
    s = info.summary
    if not s or s["nan"] or s["inf"] or s["mean"] is None:
        return None
    return math.sqrt(math.prod(info.shape)) * math.hypot(s["std"], s["mean"])


def _leaf_grads(tape: Tape) -> tuple[dict[int, dict], dict[int, int]]:
    """For tensors the tape saw that are alive and have a ``.grad``: tape id ->
    ``{"grad_norm": ...}``, and the index of the entry that made that ``.grad`` -> tape id."""
    norms: dict[int, dict] = {}
    made_by: dict[int, int] = {}
    for ref, tensor_id in list(tape._ids.values()):  # the tape holds tensors only weakly
        tensor = ref()
        if tensor is None or tensor.grad is None:
            continue
        norm = _norm(tensor.grad)
        norms[tensor_id] = {} if norm is None else {"grad_norm": norm}
        entry = tape.entry_for(tensor.grad) if _seen(tape, tensor.grad) else None
        if entry is not None:
            made_by[entry.index] = tensor_id
    return norms, made_by


def _seen(tape: Tape, tensor: Tensor) -> bool:
    known = tape._ids.get(id(tensor))
    return known is not None and known[0]() is tensor


def _norm(tensor: Tensor) -> float | None:
    value = float(tensor.detach().double().norm().item())
    return value if math.isfinite(value) else None


def _from_tensor(tensor: Tensor) -> tuple[list[dict], list[dict]]:
    order = backward_nodes(root_nodes(tensor))
    ids = node_ids(order)
    nodes: list[dict] = []
    edges: list[dict] = []
    for node in order:
        leaf = node.variable if type(node) is AccumulateGrad else None
        meta = [None if m is None else list(m[0]) for m in node.input_meta]
        grad = None if leaf is None or leaf.grad is None else _norm(leaf.grad)
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
                "band": 0,
                "metrics": {} if grad is None else {"grad_norm": grad},
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
    """One line per node, band by band in layer order: depth, id, op, inputs, output shapes,
    module."""
    by_id = {n["id"]: n for n in graph["nodes"]}
    inputs: dict[str, list[str]] = {n: [] for n in by_id}
    for edge in sorted(graph["edges"], key=lambda e: e["position"]):
        inputs[edge["target"]].append(edge["source"])
    lines = []
    for band, layers in enumerate(graph["layout"]["bands"]):
        if band:
            lines.append(f"-- gradient ops, band {band}")
        lines += _layer_lines(layers, by_id, inputs)
    if graph["omitted"]:
        lines.append(f"... {graph['omitted']} more nodes omitted")
    return "\n".join(lines)


def _layer_lines(layers: list[list[str]], by_id: dict, inputs: dict) -> list[str]:
    lines = []
    for depth, layer in enumerate(layers):
        for node_id in layer:
            node = by_id[node_id]
            label = node["op"] or node.get("grad_fn") or node["kind"]
            if node["kind"] == "group":
                label = f"[{node['module']}] {node['count']} ops"
            shapes = ", ".join(_shape_text(s) for s in (node["shapes"]["out"] or []))
            args = ", ".join(inputs[node_id])
            where = f"  [{node['module']}]" if node["module"] and node["kind"] != "group" else ""
            lines.append(f"{depth:4d} {node_id:>8} {label}({args}) -> {shapes}{where}")
    return lines


def _shape_text(shape: list | None) -> str:
    if shape is None:
        return "?"
    return "x".join(map(str, shape)) or "scalar"
