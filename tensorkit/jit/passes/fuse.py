"""Elementwise fusion: maximal groups of elementwise ops become one fused node.

Nodes are visited in order. An op with a scalar form (``elementwise.fusible``) joins the open
group of one of the values it reads when that group computes the same shape, dtype and device,
else it opens a group of its own (an op reading several such open groups joins them into
one); anything else that reads a group's value closes that group,
so a group's kernel can run where its last member stood: every value it reads is ready there,
and nothing before that point needs its results. Inputs may broadcast to the group's shape
(a bias, a scalar, an ``expand``, which the kernel's own broadcasting performs).

A group of two or more members becomes a node of kind "fused": its arguments are the values
its members read from outside, its outputs the members' values read outside it (by later
nodes, the backward, or as the graph's results); the rest live only inside the kernel.
A ``sum`` or ``mean`` can end a group (a trailing reduction) when it reads the group's last
value and nothing outside the group reads any of its values: the kernel then returns the
reduction alone. Forward and backward nodes are fused separately, so a fused group's backward
is fused too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..elementwise import fusible, reduced_axes
from ..fusion import kernel_source, strategy
from ..ir import Graph, Node, Ref

__all__ = ["fuse_elementwise"]


@dataclass
class _Group:
    members: list[Node] = field(default_factory=list)
    values: set[int] = field(default_factory=set)
    open: bool = True


def fuse_elementwise(graph: Graph) -> Graph:
    """Replace each group of two or more fusible ops by one fused node (in place)."""
    readers = _readers(graph)
    keep = set(graph.output_ids())
    dtypes = {value_id: value.dtype for value_id, value in graph.values().items()}
    graph.nodes = _fuse(graph.nodes, readers, keep, dtypes)
    graph.backward = _fuse(graph.backward, readers, keep, dtypes)
    return graph


def _fuse(
    nodes: list[Node], readers: dict[int, list[int]], keep: set[int], dtypes: dict[int, str]
) -> list[Node]:
    group_of: dict[int, _Group] = {}  # value id -> the group that computes it
    groups: list[_Group] = []
    order = {id(node): index for index, node in enumerate(nodes)}
    for node in nodes:
        reads = list(
            {id(g): g for g in (group_of[r] for r in node.refs() if r in group_of)}.values()
        )
        joined = None
        if len(reads) == 1 and _ends(reads[0], node, readers, keep):
            joined = reads[0]
            joined.members.append(node)
            joined.values.add(node.outputs[0].id)
            joined.open = False  # a reduction is a kernel's last step
        elif fusible(node, dtypes):
            joinable = [g for g in reads if g.open and _same_kind(g.members[0], node)]
            joined = joinable[0] if joinable else _Group()
            if not joinable:
                groups.append(joined)
            for other in joinable[1:]:  # open groups this node joins up: one kernel, here
                joined.members = sorted(joined.members + other.members, key=lambda m: order[id(m)])
                joined.values |= other.values
                for value_id in other.values:
                    group_of[value_id] = joined
                groups.remove(other)
            joined.members.append(node)
            joined.values.add(node.outputs[0].id)
            group_of[node.outputs[0].id] = joined
        for group in reads:
            if group is not joined:
                group.open = False
    fused = {id(g.members[-1]): g for g in groups if len(g.members) > 1}
    absorbed = {id(m) for g in fused.values() for m in g.members}
    result = []
    for node in nodes:
        group = fused.get(id(node))
        if group is not None:
            result.append(_fused_node(group, readers, keep))
        elif id(node) not in absorbed:
            result.append(node)
    return result


def _ends(group: _Group, node: Node, readers: dict[int, list[int]], keep: set[int]) -> bool:
    """Whether ``node`` is a sum or mean the group can end with: it reads the group's last
    value, which nothing else reads, and no other value of the group is read outside it (the
    kernel then returns the reduction only), and the group runs as one numba or CUDA kernel."""
    last = group.members[-1].outputs[0]
    if not group.open or reduced_axes(node, len(last.shape)) is None:
        return False
    if node.args[0].id != last.id or node.outputs[0].dtype != last.dtype or last.id in keep:
        return False
    inside = {id(m) for m in group.members} | {id(node)}
    for value_id in group.values:
        if value_id in keep or any(r not in inside for r in readers.get(value_id, ())):
            return False
    return strategy(Node("fused", (), {}, (last,), kind="fused", members=group.members)) != "blocks"


def _same_kind(first: Node, node: Node) -> bool:
    """Whether ``node`` computes over the same elements as the group ``first`` started."""
    a, b = first.outputs[0], node.outputs[0]
    return a.shape == b.shape and a.dtype == b.dtype and a.device == b.device


def _fused_node(group: _Group, readers: dict[int, list[int]], keep: set[int]) -> Node:
    members = group.members
    inside = {id(m) for m in members}
    inputs: dict[int, None] = {}
    for member in members:
        for value_id in member.refs():
            if value_id not in group.values:
                inputs[value_id] = None
    outputs = [
        member.outputs[0]
        for member in members
        if member.outputs[0].id in keep
        or any(reader not in inside for reader in readers.get(member.outputs[0].id, ()))
    ]
    last = members[-1]
    node = Node(
        op="fused",
        args=tuple(Ref(value_id) for value_id in inputs),
        attrs={},
        outputs=tuple(outputs),
        site=last.site,
        module=_common_module([m.module for m in members]),
        phase=last.phase,
        kind="fused",
        members=members,
        multi_output=len(outputs) > 1,
    )
    node.source = kernel_source(node)
    return node


def _common_module(paths: list[str]) -> str:
    """The innermost module holding every member ("Sequential" for "Sequential.0" and
    "Sequential.1")."""
    parts = [path.split(".") if path else [] for path in paths]
    common = []
    for names in zip(*parts, strict=False):
        if len(set(names)) != 1:
            break
        common.append(names[0])
    return ".".join(common)


def _readers(graph: Graph) -> dict[int, list[int]]:
    """Value id -> the ids (``id(node)``) of the nodes that read it, forward and backward."""
    found: dict[int, list[int]] = {}
    for node in [*graph.nodes, *graph.backward]:
        for value_id in node.refs():
            found.setdefault(value_id, []).append(id(node))
    return found
