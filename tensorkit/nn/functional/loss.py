"""Loss functions with PyTorch's arguments, checks and reduction semantics."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

from ..._dtype import int64, reject_complex, uint8
from ..._ranges import composite
from ...ops._apply import COMMON, SAVE_INPUTS, OpDef, apply, apply_untaped
from ...ops.binary import where
from ...ops.shape import broadcast_tensors
from ...tensor import Tensor, note_value_read, wrap
from ._names import type_name
from ._reduction import check_reduction, reduce_loss, resolve
from .activation import log_softmax, logsigmoid
from .distance import pairwise_distance

__all__ = [
    "l1_loss",
    "mse_loss",
    "smooth_l1_loss",
    "huber_loss",
    "nll_loss",
    "cross_entropy",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "kl_div",
    "cosine_embedding_loss",
    "margin_ranking_loss",
    "soft_margin_loss",
    "hinge_embedding_loss",
    "triplet_margin_loss",
    "poisson_nll_loss",
    "gaussian_nll_loss",
    "multilabel_soft_margin_loss",
    "multi_margin_loss",
    "multilabel_margin_loss",
]


def _warn_size(input: Tensor, target: Tensor, stacklevel: int) -> None:
    if input.shape != target.shape:
        warnings.warn(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}). This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.",
            stacklevel=stacklevel,
        )


def _pointwise(
    input: Tensor,
    target: Tensor,
    reduction: str,
    weight: Tensor | None,
    elementwise: Callable[[Tensor], Tensor],
    weighted_mean_by_weight: bool = True,
) -> Tensor:
    """A loss of ``input - target`` per element, optionally weighted, then reduced; a
    weighted mean divides by the summed weights (huber's by the element count, as PyTorch)."""
    _warn_size(input, target, stacklevel=4)
    expanded_input, expanded_target = broadcast_tensors(input, target)
    loss = elementwise(expanded_input - expanded_target)
    if weight is None:
        return reduce_loss(loss, reduction)
    if weight.shape != input.shape:
        raise ValueError("Weights and input must have the same size.")
    loss = loss * weight
    if reduction == "mean" and weighted_mean_by_weight:
        return loss.sum() / weight.sum()
    return reduce_loss(loss, reduction)


@composite
def l1_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    weight: Tensor | None = None,
) -> Tensor:
    """Mean (or sum) absolute error; with ``weight``, the mean is ``sum(w * l) / sum(w)``."""
    reduction = resolve(size_average, reduce, reduction)
    return _pointwise(input, target, reduction, weight, lambda d: d.abs())


@composite
def mse_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    weight: Tensor | None = None,
) -> Tensor:
    """Mean (or sum) squared error; with ``weight``, the mean is ``sum(w * l) / sum(w)``."""
    reject_complex(input._data.dtype, "mse_cpu")
    reduction = resolve(size_average, reduce, reduction)
    return _pointwise(input, target, reduction, weight, lambda d: d * d)


@composite
def smooth_l1_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    beta: float = 1.0,
) -> Tensor:
    """``0.5 d^2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 beta``."""
    reject_complex(input._data.dtype, "smooth_l1_cpu")
    reduction = resolve(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0:
        return _pointwise(input, target, reduction, None, lambda d: d.abs())

    def smooth(d: Tensor) -> Tensor:
        size = d.abs()
        return where(size < beta, 0.5 * d * d / beta, size - 0.5 * beta)

    return _pointwise(input, target, reduction, None, smooth)


@composite
def huber_loss(
    input: Tensor,
    target: Tensor,
    reduction: str = "mean",
    delta: float = 1.0,
    weight: Tensor | None = None,
) -> Tensor:
    """``0.5 d^2`` where ``|d| < delta``, else ``delta (|d| - 0.5 delta)``."""
    reject_complex(input._data.dtype, "huber_cpu")
    check_reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")

    def huber(d: Tensor) -> Tensor:
        size = d.abs()
        return where(size < delta, 0.5 * d * d, delta * (size - 0.5 * delta))

    return _pointwise(input, target, reduction, weight, huber, weighted_mean_by_weight=False)


# ------------------------------------------------------------------ classification
def _class_dim(input: Tensor) -> int:
    return 0 if input.ndim == 1 else 1


def _check_class_target(input: Tensor, target: Tensor) -> None:
    if target.dtype not in (int64, uint8):
        raise RuntimeError(
            f"expected target dtype to be Long or Byte, but got {type_name(target.dtype)}"
        )
    if input.ndim == 0:
        raise ValueError("Expected 1 or more dimensions (got 0)")
    if input.ndim == 1:
        if target.ndim != 0:
            raise ValueError(
                f"Expected input batch_size (1) to match target batch_size ({target.shape[0]})."
            )
        return
    if target.ndim == 0 or input.shape[0] != target.shape[0]:
        batch = target.shape[0] if target.ndim else 1
        raise ValueError(
            f"Expected input batch_size ({input.shape[0]}) to match target batch_size ({batch})."
        )
    expected = [input.shape[0], *input.shape[2:]]
    if list(target.shape) != expected:
        raise RuntimeError(f"Expected target size {expected}, got {list(target.shape)}")


def _class_targets_forward(
    xp: Any, target: Any, classes: int, ignore_index: int, dtype: Any
) -> tuple[Any, Any, Any]:
    """Targets with ignored entries replaced by 0 (so they can index), as int64; the keep
    mask in ``dtype`` (1 where counted); whether any target counts (0-d bool). Raises for
    targets outside [0, classes)."""
    if _every_target_counts(target, classes, ignore_index):
        counted = xp.ones(target.shape, dtype)
        return target.astype(xp.int64), counted, xp.asarray(True)  # a copy: they are saved
    safe, keep = _counted_targets(xp, target, classes, ignore_index)
    return safe, keep.astype(dtype), xp.asarray(keep.any())


def _every_target_counts(target: Any, classes: int, ignore_index: int) -> bool:
    """Whether the target array holds classes only, none of them ignored: where no class can
    be the ignored index (the default -100), the targets' range alone shows it."""
    return bool(
        target.size
        and not 0 <= ignore_index < classes
        and int(target.min()) >= 0
        and int(target.max()) < classes
    )


def _counted_targets(xp: Any, target: Any, classes: int, ignore_index: int) -> tuple[Any, Any]:
    """The targets with ignored entries replaced by 0, as int64, and the keep mask (bool);
    raises for a target outside [0, classes)."""
    keep = target != ignore_index
    safe = xp.where(keep, target, 0).astype(xp.int64, copy=False)  # Byte targets index
    bad = (safe < 0) | (safe >= classes)
    if bool(bad.any()):
        raise IndexError(f"Target {int(safe[bad][0])} is out of bounds.")
    return safe, keep


def _target_weights(
    xp: Any, target: Any, weight: Any, classes: int, ignore_index: int, dtype: Any
) -> tuple[Any, Any]:
    """The targets as indices and each one's weight (its class's ``weight``, 0 where
    ignored); the weights are None where every target counts with weight 1."""
    if weight is None and _every_target_counts(target, classes, ignore_index):
        return target, None
    safe, keep = _counted_targets(xp, target, classes, ignore_index)
    weights = keep.astype(dtype)
    return safe, weights if weight is None else weight[safe] * weights


# Targets are constants: this bookkeeping runs off the user's Tape (see apply_untaped).
_CLASS_TARGETS = OpDef("class_targets", _class_targets_forward, None, outputs=-1)


def _safe_targets(target: Tensor, classes: int, ignore_index: int, dtype: Any) -> tuple:
    """``_class_targets_forward``'s safe targets, keep weights and "any counted", as tensors."""
    return apply_untaped(
        _CLASS_TARGETS, target, classes=classes, ignore_index=ignore_index, dtype=dtype
    )


@composite
def nll_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    ignore_index: int = -100,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Negative log likelihood of class indices ``target`` under log-probabilities ``input``
    (classes on dim 1). The mean divides by the summed weights of the counted targets."""
    reduction = resolve(size_average, reduce, reduction)
    _check_class_target(input, target)
    dim = _class_dim(input)
    classes = input.shape[dim]
    _check_class_weight(weight, classes)
    if input.is_floating_point() and (weight is None or not weight.requires_grad):
        weight = None if weight is None else weight.to(input.dtype)
        return apply(
            _NLL_LOSS,
            input,
            target,
            weight,
            dim=dim,
            reduction=reduction,
            ignore_index=ignore_index,
        )
    safe, weights, counted = _safe_targets(target, classes, ignore_index, input._data.dtype)
    if weight is not None:
        weights = weight.to(input.dtype)[safe] * weights
    picked = input.gather(dim, safe.unsqueeze(dim)).squeeze(dim)  # a weight that needs grad
    loss = -picked * weights
    if reduction == "mean":
        return apply(_COUNTED_MEAN, loss.sum(), weights.sum(), counted)
    return reduce_loss(loss, reduction)


def _nll_forward(
    xp: Any, x: Any, target: Any, weight: Any, dim: int, reduction: str, ignore_index: int
) -> Any:
    """``-x[..., target, ...] * weight[target]`` per element (0 where ignored), summed, or
    divided by the counted targets' weights (NaN when none counts, as PyTorch). The
    bookkeeping of the targets runs here, in the op, so a replay of tk.jit's plan redoes it
    with the targets of that call. A (batch, classes) input is read with one fancy index
    (PyTorch's nll_loss kernel; its nll_loss2d takes the spatial forms)."""
    safe, weights = _target_weights(xp, target, weight, x.shape[dim], ignore_index, x.dtype)
    if x.ndim == 2:
        picked = x[xp.arange(x.shape[0]), safe]
    else:
        picked = xp.take_along_axis(x, xp.expand_dims(safe, dim), axis=dim).squeeze(dim)
    loss = -picked if weights is None else -picked * weights
    if reduction == "none":
        return loss
    total = loss.sum()
    if reduction == "sum":
        return total
    if weights is None:  # every target counts, each with weight 1
        return total / loss.size
    return _over_counted(xp, total, weights.sum(), xp.nan)


def _nll_rule(ctx: Any, space: Any, saved: tuple, g: Any) -> tuple:
    _, target, weight = saved
    grad = space.op(
        _NLL_LOSS_BACKWARD,
        g,
        target,
        weight,
        shape=ctx.input_meta[0][0],
        **ctx.attrs,
    )
    return grad, None, None


def _nll_backward_forward(
    xp: Any,
    g: Any,
    target: Any,
    weight: Any,
    shape: tuple,
    dim: int,
    reduction: str,
    ignore_index: int,
) -> Any:
    """The gradient of ``nll_loss`` with respect to its input: ``-weight * g`` (over the
    counted targets' weights for the mean; zero when none counts) at each target, zero
    elsewhere."""
    safe, weights = _target_weights(xp, target, weight, shape[dim], ignore_index, g.dtype)
    if weights is None:
        scale = -g / safe.size if reduction == "mean" else -g
    else:
        if reduction == "mean":
            g = _over_counted(xp, g, weights.sum(), 0)
        scale = -weights * g
    if len(shape) == 2:  # one target per row: written at its column into zeros
        out = xp.zeros(shape, scale.dtype)
        out[xp.arange(shape[0]), safe] = scale
        return out
    if scale.ndim:  # one scale per target (a 0-d one, without weights, is every target's)
        scale = xp.expand_dims(scale, dim)
    classes = xp.arange(shape[dim]).reshape((-1,) + (1,) * (len(shape) - dim - 1))
    hit = xp.expand_dims(safe, dim) == classes
    return xp.where(hit, scale, xp.zeros((), scale.dtype)).astype(scale.dtype, copy=False)


def _nll_backward_rule(ctx: Any, gg: Tensor) -> tuple:
    """``nll_loss_backward`` is linear in ``g``: its gradient picks ``gg`` at the targets."""
    _, target, weight = ctx.saved_tensors
    attrs = ctx.attrs
    dim, reduction = attrs["dim"], attrs["reduction"]
    safe, weights, _ = _safe_targets(
        target, attrs["shape"][dim], attrs["ignore_index"], gg._data.dtype
    )
    if weight is not None:
        weights = weight[safe] * weights
    picked = -gg.gather(dim, safe.unsqueeze(dim)).squeeze(dim) * weights
    if reduction == "none":
        return picked, None, None
    total = picked.sum()
    if reduction == "mean":
        weight_total = weights.sum()
        counted = weight_total != 0
        total = where(counted, total / where(counted, weight_total, 1.0), 0.0)
    return total, None, None


def _over_counted(xp: Any, value: Any, weight_total: Any, empty: float) -> Any:
    """``value / weight_total``, or ``empty`` where the total is 0 (nothing counted), without
    a division by zero or a device-to-host read."""
    counted = weight_total != 0
    return xp.where(counted, value / xp.where(counted, weight_total, 1), empty).astype(
        value.dtype, copy=False
    )


_NLL_LOSS = OpDef(
    "nll_loss_forward",
    _nll_forward,
    None,
    rule=_nll_rule,
    saves=SAVE_INPUTS,
    node_name="NllLossBackward0",
    index_saves=True,
)
_NLL_LOSS_BACKWARD = OpDef(
    "nll_loss_backward", _nll_backward_forward, _nll_backward_rule, saves=SAVE_INPUTS
)


def _check_class_weight(weight: Tensor | None, classes: int) -> None:
    if weight is not None and weight.numel() != classes:
        raise RuntimeError(
            f"weight tensor should be defined either for all {classes} classes or no classes "
            f"but got weight tensor of shape: {list(weight.shape)}"
        )


def _counted_mean_forward(xp: Any, total: Any, weight_total: Any, counted: Any) -> Any:
    return xp.where(counted, total / weight_total, xp.nan).astype(total.dtype, copy=False)


def _counted_mean_rule(ctx: Any, g: Tensor) -> tuple:
    total, weight_total, counted = ctx.saved_tensors
    grad_total = where(counted, g / weight_total, 0.0)
    grad_weight = None
    if ctx.needs_input_grad[1]:
        grad_weight = where(counted, -g * total / (weight_total * weight_total), 0.0)
    return grad_total, grad_weight, None


# ``total / weight_total`` where some target counts. With every target ignored PyTorch's mean
# is NaN (0 / 0) but its gradient is zero (its backward visits only the counted targets).
_COUNTED_MEAN = OpDef("counted_mean", _counted_mean_forward, _counted_mean_rule, saves=SAVE_INPUTS)


@composite
def cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    ignore_index: int = -100,
    reduce: bool | None = None,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """Cross entropy of logits ``input`` (classes on dim 1) against class indices or, when
    ``target`` has ``input``'s shape, class probabilities."""
    reduction = resolve(size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    dim = _class_dim(input)
    log_probs = log_softmax(input, dim)
    classes = input.shape[dim]
    weight_view = None
    if weight is not None:
        _check_class_weight(weight, classes)
        weight_view = weight.to(input.dtype).reshape((classes,) + (1,) * (input.ndim - dim - 1))
    if input.shape == target.shape:
        return _soft_cross_entropy(
            log_probs, target, weight_view, ignore_index, reduction, label_smoothing, dim
        )
    loss = nll_loss(log_probs, target, weight, None, ignore_index, None, reduction)
    if label_smoothing == 0:
        return loss
    safe, keep, counted = _safe_targets(target, classes, ignore_index, bool)
    per_class = log_probs if weight_view is None else log_probs * weight_view
    smooth = where(keep, -per_class.sum(dim), 0.0)
    if reduction == "mean":
        weights = keep if weight is None else weight.to(input.dtype)[safe] * keep
        smooth = apply(_COUNTED_MEAN, smooth.sum(), weights.sum(), counted)
    else:
        smooth = reduce_loss(smooth, reduction)
    return (1 - label_smoothing) * loss + smooth * (label_smoothing / classes)


def _soft_cross_entropy(
    log_probs: Tensor,
    target: Tensor,
    weight_view: Tensor | None,
    ignore_index: int,
    reduction: str,
    label_smoothing: float,
    dim: int,
) -> Tensor:
    if not target.is_floating_point():
        raise RuntimeError(
            "Expected floating point type for target with class probabilities, got "
            f"{type_name(target.dtype)}"
        )
    if ignore_index >= 0:
        raise RuntimeError("ignore_index is not supported for floating point target")
    classes = log_probs.shape[dim]
    if label_smoothing > 0:
        target = target * (1 - label_smoothing) + label_smoothing / classes
    terms = log_probs * target
    if weight_view is not None:
        terms = terms * weight_view
    if reduction == "mean":
        return -terms.sum() / (log_probs.numel() // classes if log_probs.numel() else 1)
    if reduction == "sum":
        return -terms.sum()
    return -terms.sum(dim)


def _bce_forward(xp: Any, x: Any, t: Any) -> Any:
    log_x = xp.maximum(xp.log(x), -100)
    log_not_x = xp.maximum(xp.log1p(-x), -100)
    return (t - 1) * log_not_x - t * log_x


def _bce_rule(ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
    """PyTorch's gradients: ``(x - t) / max(x (1 - x), 1e-12)`` for the input (finite where
    ``x`` is 0 or 1) and the unclamped ``log(1 - x) - log(x)`` for the target."""
    x, t = ctx.saved_tensors
    needs_x, needs_t = ctx.needs_input_grad
    grad_x = g * (x - t) / (x * (1 - x)).clamp(min=1e-12) if needs_x else None
    grad_t = g * ((-x).log1p() - x.log()) if needs_t else None
    return grad_x, grad_t


_BINARY_CROSS_ENTROPY = OpDef(
    "binary_cross_entropy_elementwise",
    _bce_forward,
    _bce_rule,
    promote=COMMON,
    saves=SAVE_INPUTS,
    node_name="BinaryCrossEntropyBackward0",
)


@composite
def binary_cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """``-(t log x + (1 - t) log(1 - x))`` for probabilities ``x``; logs are clamped at -100."""
    reduction = resolve(size_average, reduce, reduction)
    if target.shape != input.shape:
        raise ValueError(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}) is deprecated. Please ensure they have the same size."
        )
    for name, values in (("input", input), ("target", target)):
        if bool(((values < 0) | (values > 1)).any()):
            raise RuntimeError(f"all elements of {name} should be between 0 and 1")
    loss = apply(_BINARY_CROSS_ENTROPY, input, target)
    if weight is not None:
        loss = loss * weight
    return reduce_loss(loss, reduction)


@composite
def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    pos_weight: Tensor | None = None,
) -> Tensor:
    """Binary cross entropy of ``sigmoid(input)``, computed stably as
    ``(1 - t) x - (pos_weight t + 1 - t) log(sigmoid(x))``."""
    reduction = resolve(size_average, reduce, reduction)
    if target.shape != input.shape:
        raise ValueError(
            f"Target size ({target.shape}) must be the same as input size ({input.shape})"
        )
    log_sig = logsigmoid(input)
    if pos_weight is None:
        loss = (1 - target) * input - log_sig
    else:
        loss = (1 - target) * input - ((pos_weight - 1) * target + 1) * log_sig
    if weight is not None:
        loss = loss * weight
    return reduce_loss(loss, reduction)


# ---------------------------------------------------------------- distributions
@composite
def kl_div(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    log_target: bool = False,
) -> Tensor:
    """KL divergence ``target * (log(target) - input)`` for log-probabilities ``input``;
    ``reduction='batchmean'`` divides the sum by the batch size (the true KL mean)."""
    if size_average is not None or reduce is not None:
        reduction = resolve(size_average, reduce, reduction)
    check_reduction(reduction, ("none", "mean", "sum", "batchmean"))
    if reduction == "mean":
        warnings.warn(
            "reduction: 'mean' divides the total loss by both the batch size and the support "
            "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
            "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
            "major release.",
            stacklevel=2,
        )
    if log_target:
        loss = target.exp() * (target - input)
    else:
        positive = target > 0
        log_t = where(positive, target, 1.0).log()
        loss = where(positive, target * log_t, 0.0) - target * input
    if reduction == "batchmean":
        total = loss.sum()
        return total / input.shape[0] if input.ndim else total
    return reduce_loss(loss, reduction)


# -------------------------------------------------------------------- margins
@composite
def cosine_embedding_loss(
    input1: Tensor,
    input2: Tensor,
    target: Tensor,
    margin: float = 0,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """``1 - cos(x1, x2)`` where target is 1, ``max(0, cos - margin)`` where it is -1."""
    reduction = resolve(size_average, reduce, reduction)
    if input1.ndim != input2.ndim:
        raise RuntimeError(
            "cosine_embedding_loss(): input1 and input2 should have the same number of "
            f"dimensions, but got {input1.ndim} and {input2.ndim}"
        )
    if input1.ndim not in (1, 2) or target.ndim != input1.ndim - 1:
        raise RuntimeError(
            f"cosine_embedding_loss(): expected {input1.ndim - 1}D target tensor for "
            f"{input1.ndim}D inputs, got {target.ndim}D target"
        )
    dim = input1.ndim - 1
    eps = 1e-12
    dot = (input1 * input2).sum(dim)
    squares1 = (input1 * input1).sum(dim) + eps
    squares2 = (input2 * input2).sum(dim) + eps
    cos = dot / (squares1 * squares2).sqrt()
    loss = where(target == 1, 1 - cos, 0.0) + where(target == -1, (cos - margin).clamp(min=0), 0.0)
    return reduce_loss(loss, reduction)


@composite
def margin_ranking_loss(
    input1: Tensor,
    input2: Tensor,
    target: Tensor,
    margin: float = 0,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """``max(0, -target * (input1 - input2) + margin)``."""
    reduction = resolve(size_average, reduce, reduction)
    if not input1.ndim == input2.ndim == target.ndim:
        raise RuntimeError(
            "margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            f"input1: {input1.shape}, input2: {input2.shape}, target: {target.shape} "
        )
    loss = (-target * (input1 - input2) + margin).clamp(min=0)
    return reduce_loss(loss, reduction)


@composite
def soft_margin_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """``log(1 + exp(-target * input))`` (targets are 1 or -1)."""
    reduction = resolve(size_average, reduce, reduction)
    _warn_size(input, target, stacklevel=3)
    return reduce_loss(-logsigmoid(target * input), reduction)


@composite
def hinge_embedding_loss(
    input: Tensor,
    target: Tensor,
    margin: float = 1.0,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """``input`` where target is 1, ``max(0, margin - input)`` where it is -1."""
    reduction = resolve(size_average, reduce, reduction)
    loss = where(target != -1, input, 0.0) + where(target != 1, (margin - input).clamp(min=0), 0.0)
    return reduce_loss(loss, reduction)


@composite
def triplet_margin_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: float = 1.0,
    p: float = 2,
    eps: float = 1e-6,
    swap: bool = False,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """``max(0, margin + d(a, p) - d(a, n))`` with ``d`` the pairwise ``p``-distance; ``swap``
    takes the smaller of ``d(a, n)`` and ``d(p, n)``."""
    reduction = resolve(size_average, reduce, reduction)
    a_dim, p_dim, n_dim = anchor.ndim, positive.ndim, negative.ndim
    if not a_dim == p_dim == n_dim:
        raise RuntimeError(
            "The anchor, positive, and negative tensors are expected to have the same number "
            f"of dimensions, but got: anchor {a_dim}D, positive {p_dim}D, and negative "
            f"{n_dim}D inputs"
        )
    dist_pos = pairwise_distance(anchor, positive, p, eps)
    dist_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        dist_swap = pairwise_distance(positive, negative, p, eps)
        dist_neg = where(dist_swap < dist_neg, dist_swap, dist_neg)
    return reduce_loss((margin + dist_pos - dist_neg).clamp(min=0), reduction)


# ------------------------------------------------------------- likelihoods
@composite
def poisson_nll_loss(
    input: Tensor,
    target: Tensor,
    log_input: bool = True,
    full: bool = False,
    size_average: bool | None = None,
    eps: float = 1e-8,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """``exp(input) - target * input`` (``log_input``) or ``input - target * log(input + eps)``;
    ``full`` adds Stirling's term where ``target > 1``."""
    reduction = resolve(size_average, reduce, reduction)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        big = target > 1
        safe = where(big, target, 1.0)
        stirling = safe * safe.log() - safe + 0.5 * (2 * math.pi * safe).log()
        loss = loss + where(big, stirling, 0.0)
    return reduce_loss(loss, reduction)


def _gaussian_var(input: Tensor, var: Tensor | float) -> Tensor:
    """``var`` checked and shaped to broadcast against ``input`` (PyTorch's rules)."""
    if isinstance(var, int | float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        return input.detach() * 0 + float(var)
    if bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    if var.shape == input.shape:
        return var
    if tuple(input.shape[:-1]) == tuple(var.shape):
        return var.unsqueeze(-1)
    mismatched = [v for i, v in zip(input.shape, var.shape, strict=False) if i != v]
    if input.ndim == var.ndim and sum(mismatched) == 1:
        return var
    raise ValueError("var is of incorrect size")


@composite
def gaussian_nll_loss(
    input: Tensor,
    target: Tensor,
    var: Tensor | float,
    full: bool = False,
    eps: float = 1e-6,
    reduction: str = "mean",
) -> Tensor:
    """``0.5 (log(var) + (input - target)^2 / var)``; ``var`` is clamped at ``eps`` outside the
    graph (its gradient passes as if unclamped, as in PyTorch)."""
    var = _gaussian_var(input, var)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    var = var + (var.clamp(min=eps) - var).detach()
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return reduce_loss(loss, reduction)


# ------------------------------------------------------------ multi-class margins
@composite
def multilabel_soft_margin_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Binary logistic loss per class, averaged over the classes (the last dim)."""
    if size_average is not None or reduce is not None:
        reduction = resolve(size_average, reduce, reduction)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.ndim - 1
    loss = loss.sum(class_dim) / input.shape[class_dim]
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    return reduce_loss(loss, reduction)


def _margin_frames(input: Tensor) -> tuple[int, int]:
    if input.ndim > 2 or (input.ndim >= 1 and input.shape[-1] == 0):
        raise RuntimeError(
            "Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
            f"{list(input.shape)}"
        )
    if input.ndim <= 1:
        return 1, 1 if input.ndim == 0 else input.shape[0]
    return input.shape[0], input.shape[1]


@composite
def multi_margin_loss(
    input: Tensor,
    target: Tensor,
    p: int = 1,
    margin: float = 1.0,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """``sum_{j != y} w[y] max(0, margin - x[y] + x[j])^p / C`` per sample."""
    reduction = resolve(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    frames, classes = _margin_frames(input)
    if target.ndim > 1 or target.numel() != frames:
        raise RuntimeError(
            "multi_margin_loss: target tensor should be 1-D with size equal to the number of "
            f"input samples (batch size). Expected target size [{frames}], but got "
            f"{list(target.shape)}. Input has shape {list(input.shape)}."
        )
    if weight is not None and weight.numel() != classes:
        raise RuntimeError(
            f"inconsistent weight size, expected {classes} but got {list(weight.shape)}"
        )
    xp = target.device.xp
    note_value_read(target, "values, in multi_margin_loss,")
    labels = target._data.reshape(frames).astype(xp.int64)
    if bool(((labels < 0) | (labels >= classes)).any()):
        raise RuntimeError("target out of range")
    x = input.reshape(frames, classes)
    index = wrap(labels, target.device)
    picked = x.gather(1, index.unsqueeze(1))
    terms = (margin - picked + x).clamp(min=0)
    if p == 2:
        terms = terms * terms
    if weight is not None:
        terms = terms * weight.to(input.dtype)[index].unsqueeze(1)
    other = wrap(xp.arange(classes)[None, :] != labels[:, None], target.device)
    loss = where(other, terms, 0.0).sum(1) / classes
    if reduction == "none" and target.ndim == 0:
        loss = loss.reshape(())
    return reduce_loss(loss, reduction)


@composite
def multilabel_margin_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """``sum_{j, k} max(0, 1 - (x[y_j] - x[k])) / C`` over the labels ``y_j`` (the target row up
    to its first -1) and the classes ``k`` that are not labels."""
    reduction = resolve(size_average, reduce, reduction)
    frames, classes = _margin_frames(input)
    if input.ndim <= 1:
        good = target.ndim <= 1 and target.numel() == classes
    else:
        good = target.shape == input.shape
    if not good:
        raise RuntimeError(
            f"inconsistent target size: {list(target.shape)} for input of size: {list(input.shape)}"
        )
    xp = target.device.xp
    note_value_read(target, "values, in multilabel_margin_loss,")
    labels = target._data.reshape(frames, classes).astype(xp.int64)
    counted = xp.cumprod(labels >= 0, axis=1).astype(bool)  # labels before the first -1
    if bool(((labels < -1) | (labels >= classes)).any()):
        raise RuntimeError("argument #2 'target' is out of range")
    safe = xp.where(counted, labels, 0)
    hits = (safe[:, :, None] == xp.arange(classes)) & counted[:, :, None]
    is_label = hits.any(axis=1)
    x = input.reshape(frames, classes)
    picked = x.gather(1, wrap(safe, target.device))  # (frames, classes): x[y_j]
    terms = (1 - picked.unsqueeze(2) + x.unsqueeze(1)).clamp(min=0)
    mask = counted[:, :, None] & ~is_label[:, None, :]
    loss = where(wrap(mask, target.device), terms, 0.0).sum((1, 2)) / classes
    if input.ndim <= 1:
        loss = loss.reshape(())
    return reduce_loss(loss, reduction)
