"""``scaled_dot_product_attention``: ``softmax(q k^T * scale + mask) v``, in plain ops."""

from __future__ import annotations

import math

from ... import _state
from ..._dtype import bool_
from ..._ranges import composite
from ...ops.binary import where
from ...ops.creation import ones
from ...tensor import Tensor
from .activation import softmax
from .dropout import dropout

__all__ = ["scaled_dot_product_attention"]


@composite
def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> Tensor:
    """Attention of ``query`` (..., L, E) over ``key`` (..., S, E) and ``value`` (..., S, Ev).

    A boolean ``attn_mask`` marks the positions that may be attended to; a float one is added
    to the scores. ``is_causal`` masks out the upper triangle. ``scale`` defaults to
    ``1 / sqrt(E)``. ``enable_gqa`` shares each key/value head among a group of query heads.
    """
    if is_causal and attn_mask is not None:
        raise RuntimeError(
            "_scaled_dot_product_attention: Explicit attn_mask should not be set when "
            "is_causal=True"
        )
    length, source = query.shape[-2], key.shape[-2]
    factor = 1 / math.sqrt(query.shape[-1]) if scale is None else scale
    if enable_gqa and query.ndim >= 3 and key.shape[-3] != query.shape[-3]:
        group = query.shape[-3] // key.shape[-3]
        key = key.repeat_interleave(group, -3)
        value = value.repeat_interleave(group, -3)
    scores = (query @ key.transpose(-2, -1)) * factor
    if is_causal:
        attn_mask = ones(length, source, dtype=bool_, device=query.device).tril()
    if attn_mask is not None:
        if attn_mask.dtype == bool_:
            scores = scores.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            scores = scores + attn_mask
    # A row with every position masked attends to nothing (zeros, as PyTorch); finite scores
    # there keep NaN out of the softmax and its gradient.
    weights = None
    frozen = _state.tracer is not None and not _state.tracer.guards_reads()
    if frozen or _some_score_is_minus_inf(scores):
        blocked = (scores == float("-inf")).all(-1, keepdim=True)
        if frozen or bool(blocked.any()):
            weights = where(blocked, 0.0, softmax(where(blocked, 0.0, scores), -1))
    if weights is None:
        weights = softmax(scores, -1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, training=True)
    return weights @ value


def _some_score_is_minus_inf(scores: Tensor) -> bool:
    """Whether some score is -inf (most calls have none), by one reduction: on the array
    when eager (not an op on the tape), through the tensor under tk.compile (a guard, so
    the compiled path without the masking holds while no score is -inf). The caller skips
    it where no read can be guarded (a strict trace, a read after a random draw) and keeps
    the masking, which gives the same values without blocked rows."""
    if not scores.numel():
        return False
    if _state.tracer is None:
        return float(scores._data.min()) == float("-inf")
    with _state.tracer.reading_for(
        "scaled_dot_product_attention reads whether some attention score is -inf (a row "
        "with every position masked gets zero weights)"
    ):
        return bool(scores.min() == float("-inf"))
