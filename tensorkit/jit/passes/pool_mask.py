"""A ReLU's gradient mask applied before a max pool's gradient scatter, at the pooled size.

A ReLU followed by max pooling (every CNN block) has, in backward,
``threshold_backward(max_pool_backward(g, index), x)``: the pooled gradient is scattered to
the full-size input's positions, then masked where the ReLU's output ``x`` is not positive.
Every position the scatter writes is a window's chosen position, where ``x`` holds the
window's pooled value (``max_pool(x, index)`` gathers exactly there), so masking ``g`` by the
pooled values first and scattering after gives the same array, bit for bit (a masked position
gets +0.0 either way; overlapping windows that pick the same position all see the same mask).
The mask then runs over the pooled size, a quarter of the elements for 2x2 windows.
"""

from __future__ import annotations

from ..ir import Graph, Node, Ref, Value

__all__ = ["mask_before_scatter"]


def mask_before_scatter(graph: Graph) -> Graph:
    """Rewrite each ``threshold_backward(max_pool_backward(g, index), x)`` whose scatter
    nothing else reads, where the graph also computes ``max_pool(x, index)``, into
    ``max_pool_backward(threshold_backward(g, pooled), index)`` (in place)."""
    everything = [*graph.nodes, *graph.backward]
    position = {id(node): index for index, node in enumerate(everything)}
    pools = {
        (node.args[0].id, node.args[1].id): node
        for node in everything
        if node.kind == "op" and node.op == "max_pool" and _refs(node.args[:2])
    }
    produced = {v.id: n for n in everything for v in n.outputs}
    reads = graph.uses()
    values = graph.values()
    next_id = max(values, default=-1) + 1
    for attribute in ("nodes", "backward"):
        rewritten: list[Node] = []
        dropped: set[int] = set()
        for node in getattr(graph, attribute):
            scatter = _scatter_read_once(node, produced, reads)
            pool = None if scatter is None else pools.get((node.args[1].id, scatter.args[1].id))
            if pool is None or position[id(pool)] > position[id(node)]:
                rewritten.append(node)
                continue
            pooled = pool.outputs[0]
            gradient = scatter.args[0]
            meta = values[gradient.id]
            masked = Value(next_id, meta.shape, meta.dtype, meta.device, meta.requires_grad)
            next_id += 1
            dropped.add(id(scatter))
            rewritten.append(
                node.like("threshold_backward", (gradient, Ref(pooled.id)), {}, masked)
            )
            rewritten.append(
                node.like(
                    "max_pool_backward",
                    (Ref(masked.id), scatter.args[1]),
                    dict(scatter.attrs),
                    node.outputs[0],
                )
            )
        setattr(graph, attribute, [n for n in rewritten if id(n) not in dropped])
    return graph


def _scatter_read_once(node: Node, produced: dict[int, Node], reads: dict[int, int]) -> Node | None:
    """The ``max_pool_backward`` node whose result ``node``, a ``threshold_backward`` of
    it, is the one reader of."""
    if node.kind != "op" or node.op != "threshold_backward" or not _refs(node.args):
        return None
    scatter = produced.get(node.args[0].id)
    if scatter is None or scatter.kind != "op" or scatter.op != "max_pool_backward":
        return None
    if not _refs(scatter.args[:2]) or reads.get(node.args[0].id, 0) != 1:
        return None
    return scatter


def _refs(args: tuple) -> bool:
    return all(type(a) is Ref for a in args)
