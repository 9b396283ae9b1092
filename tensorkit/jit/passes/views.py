"""View simplification: fewer transposes and copies around matrix products.

Eager code transposes a weight for every ``nn.Linear`` and, in backward, takes the weight's
gradient as a transposed view of a product that the engine then copies into ``.grad``
(a gradient must own its memory). In a graph these patterns are visible and cheaper forms
compute the same values:

- ``permute(permute(x, p), q)`` is ``x`` when the two cancel (one permute otherwise);
- ``clone(permute(matmul(a, b), (1, 0)))`` is ``matmul(b.T, a.T)``: the product in the
  transposed layout, already owning its memory (BLAS may sum in another order: values agree
  to float rounding);
- ``clone(x)`` is ``x`` when ``x``'s memory belongs to no one else: made by an op of the graph,
  through views that keep it writable (``view``, ``permute``), read by nothing but the clone.
"""

from __future__ import annotations

from ...ops._apply import OPS
from ..ir import Graph, Node, Ref, Value
from .dce import eliminate_dead_code

__all__ = ["simplify_views"]

_OWNING_VIEWS = frozenset({"view", "permute"})  # views of a private array stay writable


def simplify_views(graph: Graph) -> Graph:
    """Apply the three rewrites above to the forward and the backward nodes. Permutes that
    cancel leave their inner permute unread: it is dropped before clones are counted, so
    ``clone(permute(permute(matmul)))`` (a column-major weight's gradient) loses its copy."""
    for attribute in ("nodes", "backward"):
        _fold_transposed_products(graph, attribute)
        _cancel_permutes(graph, attribute)
    graph = eliminate_dead_code(graph)
    for attribute in ("nodes", "backward"):
        _drop_private_clones(graph, attribute)
    return graph


def _producers(graph: Graph) -> dict[int, Node]:
    return {v.id: node for node in [*graph.nodes, *graph.backward] for v in node.outputs}


def _cancel_permutes(graph: Graph, attribute: str) -> None:
    produced = _producers(graph)
    renamed: dict[int, int] = {}
    for node in getattr(graph, attribute):
        if node.op != "permute" or node.kind != "op" or type(node.args[0]) is not Ref:
            continue
        inner = produced.get(node.args[0].id)
        if inner is None or inner.op != "permute" or inner.kind != "op":
            continue
        first, second = inner.attrs["axes"], node.attrs["axes"]
        composed = tuple(first[axis] for axis in second)
        if composed == tuple(range(len(composed))):
            renamed[node.outputs[0].id] = inner.args[0].id
        else:
            node.args = (inner.args[0],)
            node.attrs = {"axes": composed}
    graph.rename(renamed)


def _fold_transposed_products(graph: Graph, attribute: str) -> None:
    produced = _producers(graph)
    uses = graph.uses()
    nodes: list[Node] = getattr(graph, attribute)
    rewritten: list[Node] = []
    values = graph.values()
    next_id = max(values) + 1
    for node in nodes:
        product = _transposed_product(node, produced, uses)
        if product is None:
            rewritten.append(node)
            continue
        a, b = product.args
        swapped = []
        for operand in (b, a):
            meta = values[operand.id]
            transposed = Value(next_id, meta.shape[::-1], meta.dtype, meta.device)
            values[next_id] = transposed
            next_id += 1
            rewritten.append(product.like("permute", (operand,), {"axes": (1, 0)}, transposed))
            swapped.append(Ref(transposed.id))
        rewritten.append(
            product.like("matmul", tuple(swapped), dict(product.attrs), node.outputs[0])
        )
    setattr(graph, attribute, rewritten)


def _transposed_product(node: Node, produced: dict, uses: dict) -> Node | None:
    """The matmul ``node`` clones the transpose of, when the rewrite applies."""
    if node.op != "clone" or node.kind != "op" or type(node.args[0]) is not Ref:
        return None
    permute = produced.get(node.args[0].id)
    if permute is None or permute.op != "permute" or permute.attrs.get("axes") != (1, 0):
        return None
    product = produced.get(permute.args[0].id)
    if product is None or product.op != "matmul" or product.kind != "op" or product.cast:
        return None
    if uses.get(permute.outputs[0].id) != 1 or uses.get(product.outputs[0].id) != 1:
        return None
    if len(product.outputs[0].shape) != 2 or not all(type(a) is Ref for a in product.args):
        return None
    return product


def _drop_private_clones(graph: Graph, attribute: str) -> None:
    produced = _producers(graph)
    uses = graph.uses()
    renamed: dict[int, int] = {}
    kept = []
    for node in getattr(graph, attribute):
        if (
            node.op == "clone"
            and node.kind == "op"
            and type(node.args[0]) is Ref
            and _private(node.args[0].id, produced, uses)
        ):
            renamed[node.outputs[0].id] = node.args[0].id
            continue
        kept.append(node)
    setattr(graph, attribute, kept)
    graph.rename(renamed)


def _private(value_id: int, produced: dict, uses: dict) -> bool:
    """Whether the array of ``value_id`` is read once and shares memory only with values
    that are read once, back to an op's own new array."""
    while True:
        node = produced.get(value_id)
        if node is None or node.kind != "op" or uses.get(value_id) != 1:
            return False
        if node.op not in _OWNING_VIEWS:
            return not OPS[node.op].view
        value_id = node.args[0].id
