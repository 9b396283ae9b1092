"""The ``inplace=True`` flavour shared by activations and dropout."""

from __future__ import annotations

from collections.abc import Callable

from ...ops.inplace import inplace_update, snapshot
from ...tensor import Tensor


def maybe_inplace(
    input: Tensor, inplace: bool, name: str, compute: Callable[[Tensor], Tensor]
) -> Tensor:
    """``compute(input)``; with ``inplace``, written back into ``input`` (which is returned)
    the way tensorkit's own in-place ops do, so autograd stays correct."""
    if not inplace:
        return compute(input)
    return inplace_update(input, compute(snapshot(input, ())), name)
