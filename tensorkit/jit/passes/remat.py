"""Rematerialization: a fused backward kernel recomputes the forward values it reads.

A training graph's backward reads values the forward computed; a fused forward kernel then
writes each of them to memory only for the backward to read it back (a chain of 100 ops saves
about 50). When those values come from a fused forward node over the same shape and dtype, and
the forward members that compute them read fewer values than they make, the backward kernel
takes copies of those members (with fresh value ids) and reads their inputs instead; the
forward kernel stops writing what nobody reads any more. Elementwise work is cheap next to the
memory it saves, so this is always a gain where it applies.
"""

from __future__ import annotations

from dataclasses import replace

from ..fusion import kernel_source
from ..ir import Graph, Node, Ref, Value, map_refs

__all__ = ["rematerialize"]


def rematerialize(graph: Graph) -> Graph:
    """Move the recomputation of saved fused-forward values into the fused backward nodes
    that read them (in place; see the module's text)."""
    made = {
        m.outputs[0].id: node for node in graph.nodes if node.kind == "fused" for m in node.members
    }
    if not graph.backward or not made:
        return graph
    next_id = max(graph.values()) + 1
    changed = False
    for node in graph.backward:
        if node.kind != "fused":
            continue
        for forward in {id(made[a.id]): made[a.id] for a in node.args if a.id in made}.values():
            next_id, moved = _recompute(node, forward, next_id)
            changed |= moved
    if changed:
        _prune_outputs(graph)
    return graph


def _recompute(node: Node, forward: Node, next_id: int) -> tuple[int, bool]:
    """Copy into ``node`` the members of ``forward`` that compute the values it reads, when
    they read fewer values than they give; the next free value id and whether it did."""
    shape, dtype = node.outputs[0].shape, node.outputs[0].dtype
    kernel = forward.members[-1].outputs[0]
    if (kernel.shape, kernel.dtype) != (shape, dtype) or forward.members[-1].op in ("sum", "mean"):
        return next_id, False
    member_of = {m.outputs[0].id: m for m in forward.members}
    wanted = [a.id for a in node.args if a.id in member_of]
    needed: dict[int, Node] = {}
    stack = list(wanted)
    while stack:
        value_id = stack.pop()
        member = member_of.get(value_id)
        if member is None or value_id in needed:
            continue
        needed[value_id] = member
        stack.extend(member.refs())
    closure = [m for m in forward.members if m.outputs[0].id in needed]
    inputs = {r for m in closure for r in m.refs() if r not in member_of}
    if any(_shape_of(m) != shape for m in closure) or len(inputs) >= len(wanted):
        return next_id, False
    renamed: dict[int, int] = {}
    copies = []
    for member in closure:
        old = member.outputs[0]
        renamed[old.id] = next_id
        value = Value(next_id, old.shape, old.dtype, old.device, old.requires_grad)
        copies.append(_with_refs(member, renamed, outputs=(value,), phase=node.phase))
        next_id += 1
    node.members = copies + [_with_refs(m, renamed) for m in node.members]
    kept = [a.id for a in node.args if a.id not in renamed]
    node.args = tuple(Ref(v) for v in dict.fromkeys([*kept, *sorted(inputs)]))
    node.source = kernel_source(node)
    return next_id, True


def _with_refs(member: Node, renamed: dict[int, int], **changes: object) -> Node:
    def new(ref: Ref) -> Ref:
        return Ref(renamed.get(ref.id, ref.id))

    args = tuple(new(a) if type(a) is Ref else a for a in member.args)
    attrs = {k: map_refs(v, new) for k, v in member.attrs.items()}
    return replace(member, args=args, attrs=attrs, **changes)


def _shape_of(member: Node) -> tuple[int, ...]:
    return member.outputs[0].shape


def _prune_outputs(graph: Graph) -> None:
    """Drop the outputs of fused forward nodes that nothing reads any more."""
    read = {r for node in [*graph.nodes, *graph.backward] for r in node.refs()}
    read |= set(graph.output_ids())
    for node in graph.nodes:
        if node.kind != "fused":
            continue
        outputs = tuple(v for v in node.outputs if v.id in read)
        if outputs != node.outputs and outputs:
            node.outputs = outputs
            node.multi_output = len(outputs) > 1
            node.source = kernel_source(node)
