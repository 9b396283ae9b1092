"""The graph view's data model: nodes, edges in argument order, groups, bands, layers.

``build_graph`` reads a :class:`~tensorkit.autograd.Tape` (forward ops, optionally backward
ops too) or, for a tensor, walks its backward graph. The result is plain data: tensors never
travel, only their shapes, dtypes, value summaries and the measures the view colours by.

Groups (:mod:`~tensorkit.notebook.group_tree`): nn modules, the composite functions they
call (``linear``, ``conv2d``, ``batch_norm``: one node by default, opening into their ops)
and ``record_function`` ranges. Parameters and inputs join the innermost module or range
holding all the ops using them (never a function: a folded ``linear`` shows its weight as an
input), gradient ops the "∇" mirror of their op's group.

Bands: forward ops are band 0; an op a gradient rule ran is one band below the op whose rule
it is (so the ops of a ``create_graph=True`` backward are band 1, those of a second
differentiation through them band 2). ``links`` tie each backward op to that op.
"""

from __future__ import annotations

import contextlib
import gc
import math
from collections.abc import Iterator
from typing import Any

from .._callsite import call_site_info
from ..autograd.graph import AccumulateGrad
from ..autograd.tape import Tape, TapeEntry, TensorInfo
from ..tensor import Tensor
from .group_tree import GRAD_PREFIX, GroupTree
from .grouping import collapse_groups, default_collapsed
from .layout import layer_bands
from .walk import backward_nodes, node_ids, root_nodes

__all__ = ["build_graph", "to_text"]

MAX_NODES = 5000
COLLAPSE_ABOVE = 150


def build_graph(
    source: Tape | Tensor,
    *,
    include_backward: bool = False,
    max_nodes: int = MAX_NODES,
    group_by_module: bool = True,
    collapse_above: int = COLLAPSE_ABOVE,
) -> dict:
    """A JSON-serializable graph of a Tape's ops (or of a tensor's backward graph).

    Keys: ``source`` ("tape" or "grad_fn"), ``nodes``, ``edges`` (producer -> consumer, with
    the argument ``position``), ``links`` (op -> backward op its rule ran), ``groups``,
    ``collapsed``, ``layout`` (``layers``: ids per depth of band 0, ``bands``: those layers
    per band) and ``omitted`` (nodes left out beyond ``max_nodes``: function groups are
    folded first, then the other groups from the deepest depth up, then nodes are cut,
    external tensors before ops).

    Each node has ``label`` (the text of its box: the op as PyTorch names it, a parameter's
    qualified name "0.weight", an input's variable name at its call site "x", else "tensor"),
    ``group`` (the innermost group holding it, "" for none), ``module`` (its nn module path),
    ``call_site`` (None, or ``{"site", "file", "line", "cell", "display"}`` with ``display``
    "cell [3], line 2" for a notebook cell, "train.py:14" otherwise), ``band``, ``depth``
    within its band and ``metrics`` (``time_ns``, ``backward_ns``, ``bytes``, ``grad_norm``
    where known).

    ``groups`` maps opaque ids to ``{"path": id, "parent", "children", "nodes" (ids directly
    inside), "count" (all node ids below), "kind" ("module", "function" for a composite
    function of ``nn.functional`` or "range" for a ``record_function`` range), "label"
    ("Conv2d · layer1.0.conv1", "linear", "∇ Conv2d · layer1.0.conv1" for a gradient group),
    "module" (the nn path)}``; function and range groups also have ``name``. ``collapsed``
    lists the groups a view folds at first: every function group and, when more than
    ``collapse_above`` nodes show even so, the other groups of the deepest depth at which at
    most that many show. ``group_by_module=False`` leaves the graph flat (no groups).
    """
    with _collector_paused():
        return _build(source, include_backward, max_nodes, group_by_module, collapse_above)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector: building makes hundreds of thousands of small
    dicts and lists, none in a cycle, and each collection it would trigger walks every object
    alive (a long tape's too): more than half of the build's time on a 20,000-op tape."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _build(
    source: Tape | Tensor,
    include_backward: bool,
    max_nodes: int,
    group_by_module: bool,
    collapse_above: int,
) -> dict:
    if isinstance(source, Tape):
        nodes, edges, groups = _from_tape(source, include_backward, group_by_module)
        kind = "tape"
    elif isinstance(source, Tensor):
        nodes, edges = _from_tensor(source)
        groups = {}
        kind = "grad_fn"
    else:
        raise TypeError(f"build_graph expects a Tape or a Tensor, got {type(source).__name__}")
    if max_nodes < 1:
        raise ValueError(f"max_nodes must be at least 1, got {max_nodes}")
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


def _from_tape(
    tape: Tape, include_backward: bool, grouped: bool
) -> tuple[list[dict], list[dict], dict[str, dict]]:
    raw = tape.graph(phase=None if include_backward else "forward")
    metrics = _tape_metrics(tape)
    sites: dict[str, dict | None] = {}
    nodes = [_tape_node(n, metrics, sites) for n in raw["nodes"]]
    edges = [
        {
            "source": e["source"],
            "target": e["target"],
            "position": e["position"],
            "shape": e["shape"],
        }
        for e in raw["edges"]
    ]
    tree = GroupTree(tape.module_classes) if grouped else None
    _place_ops(nodes, tape.entries, tree)
    _place_tensors(nodes, edges, tree)
    if _place_accumulations(nodes, tree):  # the gradients they copied follow them
        _place_tensors(nodes, edges, tree)
    return nodes, edges, {} if tree is None else tree.finish(nodes)


def _place_ops(nodes: list[dict], entries: list[TapeEntry], tree: GroupTree | None) -> None:
    """Each op's group: from its module path and ranges (a forward op, or a gradient op that
    ran inside a module), else the gradient mirror of its forward op's group (placed first:
    an op comes after the op whose rule ran it). A gradient op's module is "∇" + its forward
    op's (once per band)."""
    by_id = {n["id"]: n for n in nodes}
    mirrored = []
    for node in nodes:
        if node["kind"] != "op":
            continue
        if node["band"] and not node["module"] and node["backward_of"] is not None:
            mirrored.append(node)
        elif tree is not None:
            entry = entries[int(node["id"].removeprefix("op"))]
            node["group"] = tree.forward_group(entry.module_path, entry.scopes, entry.scope_calls)
    if tree is not None:
        tree.resolve_parents()
    for node in mirrored:
        forward = by_id.get(node["backward_of"])
        if forward is None:  # its op is not on this graph (the tape saw only the rule)
            continue
        node["module"] = _grad_path(forward["module"])
        if tree is not None:
            node["group"] = tree.gradient_group(forward["group"])


def _place_accumulations(nodes: list[dict], tree: GroupTree | None) -> bool:
    """Gradient ops no rule ran (the copies of gradients into ``.grad``) go in the gradient
    group of their leaf's group when the leaf is known (alive), else in one
    ``∇AccumulateGrad`` group per band; whether any moved."""
    leaves = {n["id"]: n for n in nodes if n["kind"] == "tensor"}
    moved = False
    for node in nodes:
        if node["kind"] != "op" or not node["band"] or node["module"] or node["backward_of"]:
            continue
        leaf = leaves.get(node["grad_of"])
        if leaf is not None and (leaf["group"] or leaf["module"]):
            node["module"] = _grad_path(leaf["module"])
            forward_group = leaf["group"]
        else:
            node["module"] = GRAD_PREFIX * node["band"] + "AccumulateGrad"
            forward_group = node["module"][1:]
        if tree is not None:
            node["group"] = tree.gradient_group(forward_group)
        moved = True
    return moved


def _tape_node(raw: dict, metrics: dict, sites: dict[str, dict | None]) -> dict:
    if raw["kind"] == "tensor":
        return {
            "id": raw["id"],
            "kind": "tensor",
            "op": None,
            "label": raw.get("name") or "tensor",
            "group": "",
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
    forward = raw["backward_of"]
    grad_of = metrics["grad_of"].get(index)
    site = raw["call_site"]
    if site is not None and site not in sites:
        sites[site] = call_site_info(site)
    return {
        "id": raw["id"],
        "kind": "op",
        "op": raw["name"],
        "label": raw["name"],
        "group": "",
        "phase": raw["phase"],
        "shapes": {
            "in": [i.get("shape") for i in raw["inputs"]],
            "out": [o["shape"] for o in outputs],
        },
        "dtypes": [o["dtype"] for o in outputs],
        "device": outputs[0]["device"] if outputs else None,
        "module": raw["module_path"],
        "call_site": None if site is None else sites[site],
        "scopes": raw.get("scopes") or [],
        "summary": outputs[0]["summary"] if outputs else None,
        "records": raw["records"],
        "grad_fn": raw["grad_fn"],
        "attrs": raw["attrs"],
        "band": metrics["bands"][index],
        "backward_of": None if forward is None else f"op{forward}",
        "grad_of": None if grad_of is None else f"t{grad_of}",
        "metrics": metrics["ops"][index],
    }


def _grad_path(path: str) -> str:
    """The module path of the gradient ops of an op at ``path`` ("" stays "")."""
    return GRAD_PREFIX + path if path else ""


def _place_tensors(nodes: list[dict], edges: list[dict], tree: GroupTree | None) -> None:
    """An external tensor (a parameter, an incoming gradient) joins the band of its first
    consumers, the innermost module holding all its consumers in that band and the innermost
    group holding them that is not a function, so that folding the module folds it too and a
    folded function shows it as an input."""
    by_id = {n["id"]: n for n in nodes}
    consumers: dict[str, list[dict]] = {}
    for edge in edges:
        consumers.setdefault(edge["source"], []).append(by_id[edge["target"]])
    for node in nodes:
        if node["kind"] == "tensor" and node["id"] in consumers:
            band = min(c["band"] for c in consumers[node["id"]])
            users = [c for c in consumers[node["id"]] if c["band"] == band]
            node["band"] = band
            node["module"] = _common_path([c["module"] for c in users])
            if tree is not None:
                node["group"] = _common_group(tree, {c["group"] for c in users})


def _common_group(tree: GroupTree, group_ids: set[str]) -> str:
    """The innermost group holding all of ``group_ids`` that is not a function ("" for
    none)."""
    chains = [tree.ancestors(g)[::-1] for g in group_ids]  # outermost first
    common = chains[0]
    for chain in chains[1:]:
        n = 0
        while n < min(len(common), len(chain)) and common[n] == chain[n]:
            n += 1
        common = common[:n]
    while common and tree.groups[common[-1]]["kind"] == "function":
        common = common[:-1]
    return common[-1] if common else ""


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
                "label": getattr(node.op, "name", None) or node.name(),
                "group": "",
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
            label = node.get("label") or node["op"] or node.get("grad_fn") or node["kind"]
            if node["kind"] == "group":
                label = f"[{label}] {node['count']} ops"
            shapes = ", ".join(_shape_text(s) for s in (node["shapes"]["out"] or []))
            args = ", ".join(inputs[node_id])
            where = f"  [{node['module']}]" if node["module"] and node["kind"] != "group" else ""
            lines.append(f"{depth:4d} {node_id:>8} {label}({args}) -> {shapes}{where}")
    return lines


def _shape_text(shape: list | None) -> str:
    if shape is None:
        return "?"
    return "x".join(map(str, shape)) or "scalar"
