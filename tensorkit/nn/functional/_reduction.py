"""How losses reduce: the ``reduction`` argument and the legacy ``size_average``/``reduce``."""

from __future__ import annotations

import warnings

from ...tensor import Tensor

REDUCTIONS = ("none", "mean", "sum")


def check_reduction(reduction: str, allowed: tuple[str, ...] = REDUCTIONS) -> None:
    if reduction not in allowed:
        raise ValueError(f"{reduction} is not a valid value for reduction")


def legacy_reduction(size_average: bool | None, reduce: bool | None, stacklevel: int) -> str:
    """The ``reduction`` string the deprecated ``size_average``/``reduce`` pair means (with
    PyTorch's deprecation warning, attributed ``stacklevel`` frames up)."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if size_average and reduce:
        reduction = "mean"
    elif reduce:
        reduction = "sum"
    else:
        reduction = "none"
    warnings.warn(
        f"size_average and reduce args will be deprecated, please use reduction='{reduction}' "
        "instead.",
        stacklevel=stacklevel,
    )
    return reduction


def resolve(size_average: bool | None, reduce: bool | None, reduction: str) -> str:
    """The effective reduction, after the legacy arguments, validated."""
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce, stacklevel=4)
    check_reduction(reduction)
    return reduction


def reduce_loss(loss: Tensor, reduction: str) -> Tensor:
    """Apply a validated reduction to elementwise losses."""
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss
