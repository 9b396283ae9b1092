"""The graph view of a ``tk.jit`` graph: the IR as the graph widget's model.

``build_jit_graph`` turns a :class:`~tensorkit.jit.ir.Graph` (or what holds one: a
``tk.jit.trace`` result, a ``tk.compile`` result after its graph was compiled, a
``tk.jit.explain`` result) into :func:`~tensorkit.notebook.build_graph`'s format, so the same
front end draws it: placeholders are tensor nodes named by the placeholder ("input 0",
"0.weight"), nodes are ops grouped by their nn module path, ``graph.backward`` is band 1.
A fused node (the fusion pass's, ``kind == "fused"``) becomes a group of kind "fused" holding
its member ops, folded at first, with the kernel's ``source``. The model's ``jit`` key lists
what the widget shows beside the graph: the guards a replay checks and the graph breaks.
"""

from __future__ import annotations

from typing import Any

from ..jit import CompiledFunction, ExplainOutput, Graph, TracedFunction
from ..jit.explain import rewrite_lines, value_guard_lines
from ..jit.ir import INPUT, Node, Ref, Value
from ..jit.trace import _is_module, _name_of
from .graph_model import COLLAPSE_ABOVE, _common_path
from .group_tree import GroupTree
from .grouping import default_collapsed
from .layout import layer_bands
from .recording import _clean

__all__ = ["build_jit_graph", "show_compiled"]

FUSED = "fused"  # the kind of a fused node, and of the group showing it
GUARD = "guard"  # the kind of a guard node (a guarded graph break), and of its box
_SHOWN_CHARS = 24  # of a guard's value in its label
_LABEL_OPS = 5  # ops named in a fused group's label before "…"


def build_jit_graph(
    source: Graph | TracedFunction | CompiledFunction | ExplainOutput,
    *,
    module: Any = None,
    collapse_above: int = COLLAPSE_ABOVE,
) -> dict:
    """The graph model of a tk.jit graph (see the module docstring).

    Keys as :func:`~tensorkit.notebook.build_graph`'s (``source`` is "jit"), plus ``jit``:
    ``{"title", "guards": [str], "breaks": [{"kind", "reason", "site", "guarded", "value"}],
    "fused": number of fused groups, "rewrites": [str]}`` (``rewrites``: what the passes
    changed, as ``tk.jit.explain`` lists it; ``value``: a guarded break's recorded value as text,
    else null). A guard node (a guarded break) is a node of kind "guard" labelled by the read
    and its value ("item() = 0.5"), its call site in ``call_site``. A fused group has
    ``source`` (the kernel) and ``ops`` (its members' ops in order); its label reads "fused:
    mul·tanh·add (3 ops)". ``module`` (an nn.Module) names the groups by class ("Linear · 0")
    where ``source`` does not say which module it traced; ``collapsed`` is every fused group,
    and for graphs of more than ``collapse_above`` nodes a depth of module groups.
    """
    graph, found, title, guards, breaks = _unpack(source)
    module = module if module is not None else found
    tree = GroupTree(_module_classes(module))
    nodes, edges, fused_nodes = _nodes_and_edges(graph, tree)
    groups = tree.finish(nodes)
    fused = _describe_fused(groups, fused_nodes)
    layout = layer_bands(nodes, edges)
    bands = layout["bands"]
    for node in nodes:
        node["depth"] = layout["depth"][node["id"]]
    folded = list(dict.fromkeys([*fused, *default_collapsed(nodes, groups, collapse_above)]))
    return _clean(
        {
            "source": "jit",
            "nodes": nodes,
            "edges": edges,
            "links": [],
            "groups": groups,
            "collapsed": folded,
            "layout": {"layers": bands[0] if bands else [], "bands": bands},
            "omitted": 0,
            "jit": {
                "title": title,
                "guards": guards,
                "breaks": [_break(b) for b in breaks],
                "fused": len(fused),
                "rewrites": rewrite_lines(graph),
            },
        }
    )


def show_compiled(source: Any, **kwargs: Any) -> Any:
    """A :class:`~tensorkit.notebook.widgets.GraphWidget` of a tk.jit graph (needs
    anywidget): the model of :func:`build_jit_graph` (``kwargs`` go to it). Click a fused
    box to open it into its ops; the panel shows the kernel's source, the guards and the graph
    breaks."""
    from .widgets import GraphWidget

    return GraphWidget(graph=build_jit_graph(source, **kwargs))


# ---------------------------------------------------------------------- what to show
def _unpack(source: Any) -> tuple[Graph, Any, str, list[str], list]:
    """(graph, the traced module or None, a title, guard lines, graph breaks)."""
    if isinstance(source, Graph):
        return source, None, "tk.jit graph", [], list(source.breaks)
    if isinstance(source, TracedFunction):
        graph = source.graph
        module = source.fn if _is_module(source.fn) else None
        title = f"tk.jit.trace of {_name_of(source.fn)}"
        return graph, module, title, _input_guards(graph), list(graph.breaks)
    if isinstance(source, ExplainOutput):
        title = (
            f"tk.jit.explain: {source.graph_count} graph(s), {source.graph_break_count} break(s)"
        )
        return source.graph, None, title, list(source.guards), list(source.break_reasons)
    if isinstance(source, CompiledFunction):
        return _compiled_entry(source)
    raise TypeError(
        "build_jit_graph expects a tk.jit Graph, TracedFunction, CompiledFunction or "
        f"ExplainOutput, got {type(source).__name__}"
    )


def _compiled_entry(compiled: CompiledFunction) -> tuple[Graph, Any, str, list[str], list]:
    """The latest compiled guard set of a ``tk.compile`` result, with every eager guard
    set's breaks."""
    entries = list(compiled.entries.values())
    ready = [n for n, e in enumerate(entries) if e.compiled is not None]
    breaks = [b for e in entries for b in e.breaks]
    name = _name_of(compiled.fn)
    if not ready:
        eager = [b for b in breaks if not b.guarded]
        if eager:
            listed = "; ".join(str(b) for b in eager)
            reason = f"its calls run eagerly at graph breaks ({listed})"
        elif entries:
            reason = "it has recorded its calls but not compiled them yet (call it again)"
        else:
            reason = "it has not been called yet"
        raise ValueError(
            f"tk.compile of {name} has no compiled graph to show: {reason}; "
            f"tk.jit.explain({name}, *args) shows the graph of one call and its breaks"
        )
    entry = compiled.latest()
    number = entries.index(entry)
    title = f"tk.compile of {name}: guard set {number + 1} of {len(entries)}"
    graph = entry.compiled.graph
    guards = _entry_guards(entry.guards, compiled.module) + value_guard_lines(graph)
    return graph, compiled.module, title, guards, breaks


def _input_guards(graph: Graph) -> list[str]:
    """What a traced function checks of each call: its inputs' shapes, dtypes, devices, and
    each value its graph guards on."""
    inputs = [f"{p.name}: {_value_text(p.value)}" for p in graph.placeholders if p.kind == INPUT]
    return inputs + value_guard_lines(graph)


def _entry_guards(guards: tuple, module: Any) -> list[str]:
    """A tk.compile guard set in words (its layout: grad mode, the arguments' structure, one
    part per argument leaf, then a module's training flags)."""
    leaves = guards[2:-1] if module is not None else guards[2:]
    lines = [f"grad mode {'on' if guards[0] else 'off'}"]
    for position, part in enumerate(leaves):
        if len(part) == 4 and isinstance(part[0], tuple):  # a tensor
            shape, dtype, device, requires_grad = part
            lines.append(
                f"argument {position}: {dtype}{list(shape)} on {device}, "
                f"requires_grad={requires_grad}"
            )
        elif part[0] == "unhashable":
            lines.append(f"argument {position}: this {part[1]} object")
        else:
            lines.append(f"argument {position} == {part[1]!r}")
    if module is not None:
        flags = guards[-1]
        training = "training" if all(flags) else "eval" if not any(flags) else "mixed"
        lines.append(
            f"{type(module).__name__}'s modules in {training} mode, its parameters the same tensors"
        )
    return lines


# ---------------------------------------------------------------------- nodes and edges
def _nodes_and_edges(
    graph: Graph, tree: GroupTree
) -> tuple[list[dict], list[dict], dict[str, Node]]:
    """The op and tensor nodes, the edges in argument order, and the fused nodes by the id
    of the group showing each."""
    fused: dict[str, Node] = {}
    values = {p.value.id: p.value for p in graph.placeholders}
    producer: dict[int, str] = {}
    ops: list[tuple[str, Node, int, str]] = []  # (id, node, band, group)
    for band, prefix, listed in ((0, "n", graph.nodes), (1, "b", graph.backward)):
        for index, node in enumerate(listed):
            node_id = f"{prefix}{index}"
            if node.kind != FUSED:
                ops.append((node_id, node, band, tree.forward_group(node.module, (), ())))
                continue
            group = _fused_group(tree, node, (band, index))
            fused[group] = node
            for number, member in enumerate(node.members):
                ops.append((f"{node_id}.{number}", member, band, group))
            # Outputs no member made (a renumbering pass) come from its last member.
            last = f"{node_id}.{len(node.members) - 1}"
            for value in node.outputs:
                producer.setdefault(value.id, last)
                values.setdefault(value.id, value)
    for node_id, node, _, _ in ops:
        for value in node.outputs:
            producer[value.id] = node_id
            values[value.id] = value
    tree.resolve_parents()
    for index, placeholder in enumerate(graph.placeholders):
        producer[placeholder.value.id] = f"p{index}"
    nodes = [_op_node(node_id, node, band, group, values) for node_id, node, band, group in ops]
    edges = []
    for node_id, node, _, _ in ops:
        tensor_args = [a for a in node.args if type(a) is Ref]
        for position, ref in enumerate(tensor_args):
            source = producer.get(ref.id)
            if source is not None:
                shape = list(values[ref.id].shape)
                edges.append(
                    {"source": source, "target": node_id, "position": position, "shape": shape}
                )
    nodes += _placeholder_nodes(graph, nodes, edges, tree)
    return nodes, edges, fused


def _fused_group(tree: GroupTree, node: Node, call: tuple) -> str:
    """The group of a fused node's members: inside its module (else the module all its
    members ran in), one group per fused node."""
    module = node.module or _common_path([m.module for m in node.members])
    return tree.forward_group(module, (FUSED,), ((call, module, FUSED),))


def _op_node(node_id: str, node: Node, band: int, group: str, values: dict[int, Value]) -> dict:
    tensor_args = [values.get(a.id) for a in node.args if type(a) is Ref]
    outputs = node.outputs
    guard = node.kind == GUARD
    return {
        "id": node_id,
        "kind": GUARD if guard else "op",
        "op": node.op,
        "label": f"{node.op} = {_short(node.attrs['value'])}" if guard else node.op,
        "group": group,
        "phase": node.phase,
        "shapes": {
            "in": [None if v is None else list(v.shape) for v in tensor_args],
            "out": [list(v.shape) for v in outputs],
        },
        "dtypes": [v.dtype for v in outputs],
        "device": outputs[0].device if outputs else None,
        "module": node.module,
        "call_site": _call_site(node.site),
        "summary": None,
        "records": {},
        "grad_fn": None,
        "attrs": {**node.attrs, **({"cast": node.cast} if node.cast else {})},
        "band": band,
        "backward_of": None,
        "grad_of": None,
        "metrics": {},
    }


def _placeholder_nodes(
    graph: Graph, ops: list[dict], edges: list[dict], tree: GroupTree
) -> list[dict]:
    """A tensor node per placeholder some op reads, in the band of its first readers and the
    innermost module group holding them all (never a fused group: a folded fused box shows
    it as an input)."""
    by_id = {n["id"]: n for n in ops}
    readers: dict[str, list[dict]] = {}
    for edge in edges:
        readers.setdefault(edge["source"], []).append(by_id[edge["target"]])
    nodes = []
    for index, placeholder in enumerate(graph.placeholders):
        users = readers.get(f"p{index}")
        if not users:
            continue
        band = min(u["band"] for u in users)
        users = [u for u in users if u["band"] == band]
        value = placeholder.value
        nodes.append(
            {
                "id": f"p{index}",
                "kind": "tensor",
                "op": None,
                "label": placeholder.name,
                "group": _common_group(tree, {u["group"] for u in users}),
                "placeholder": placeholder.kind,
                "shapes": {"in": [], "out": [list(value.shape)]},
                "dtypes": [value.dtype],
                "device": value.device,
                "module": _common_path([u["module"] for u in users]),
                "call_site": None,
                "summary": None,
                "records": {},
                "grad_fn": None,
                "requires_grad": value.requires_grad,
                "band": band,
                "metrics": {},
            }
        )
    return nodes


def _common_group(tree: GroupTree, group_ids: set[str]) -> str:
    """The innermost group holding all of ``group_ids`` that is not a fused group."""
    chains = [tree.ancestors(g)[::-1] for g in group_ids]  # outermost first
    common = chains[0]
    for chain in chains[1:]:
        n = 0
        while n < min(len(common), len(chain)) and common[n] == chain[n]:
            n += 1
        common = common[:n]
    while common and tree.groups[common[-1]]["kind"] == FUSED:
        common = common[:-1]
    return common[-1] if common else ""


def _describe_fused(groups: dict[str, dict], fused: dict[str, Node]) -> list[str]:
    """Give each fused group its kernel ``source``, ``ops`` and label; returns their ids."""
    ids = [g for g in fused if g in groups]  # a fused node with no members shows nothing
    for group_id in ids:
        node = fused[group_id]
        names = [m.op for m in node.members]
        shown = names if len(names) <= _LABEL_OPS else [*names[: _LABEL_OPS - 1], "…", names[-1]]
        group = groups[group_id]
        group["label"] = f"fused: {'·'.join(shown)} ({len(names)} ops)"
        group["ops"] = names
        group["source"] = node.source
    return ids


# ---------------------------------------------------------------------- helpers
def _module_classes(module: Any) -> dict[str, str]:
    """Module path -> class name, with paths as tk.jit records them (the root's class name,
    then ``named_modules`` names: "Sequential.0")."""
    if module is None:
        return {}
    root = type(module).__name__
    return {
        (f"{root}.{name}" if name else root): type(sub).__name__
        for name, sub in module.named_modules()
    }


def _call_site(site: str) -> dict | None:
    """A node's call site (already as it is shown: "cell [3], line 2", "train.py:14")."""
    return {"site": site, "display": site} if site else None


def _break(graph_break: Any) -> dict:
    value = _short(graph_break.value) if graph_break.guarded else None
    return {
        "kind": graph_break.kind,
        "reason": graph_break.reason,
        "site": graph_break.site,
        "guarded": graph_break.guarded,
        "value": value,
    }


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 1] + "…"


def _value_text(value: Value) -> str:
    return f"{value.dtype}{list(value.shape)} on {value.device}"
