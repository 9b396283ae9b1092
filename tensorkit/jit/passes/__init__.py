"""Passes over the IR, each one function with one job, run in this order by ``optimize``:
channels-last convolutions, decomposition (an op eager runs as one, as the smaller ops the
passes know), dead-code elimination, common-subexpression elimination, view simplification,
a ReLU's gradient mask moved before a max pool's gradient scatter, constant folding,
elementwise fusion and rematerialization (unless ``tk.jit.config.fuse_elementwise`` is off);
memory planning happens while lowering (``memory.last_uses``)."""

from __future__ import annotations

from ..config import config
from ..ir import Graph
from .constant_fold import fold_constants
from .cse import eliminate_common_subexpressions
from .dce import eliminate_dead_code
from .decompose import decompose
from .fuse import fuse_elementwise
from .layout import channels_last_convolutions
from .pool_mask import mask_before_scatter
from .remat import rematerialize
from .views import simplify_views

__all__ = ["optimize"]


def optimize(graph: Graph) -> Graph:
    """The passes in order, each on the result of the one before (the graph is changed in
    place and returned)."""
    graph = eliminate_dead_code(decompose(channels_last_convolutions(graph)))
    graph = eliminate_common_subexpressions(graph)
    graph = mask_before_scatter(simplify_views(graph))
    graph = fold_constants(graph)
    graph = eliminate_dead_code(graph)
    if not config.fuse_elementwise:
        return graph
    return rematerialize(fuse_elementwise(graph))
