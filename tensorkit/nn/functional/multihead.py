"""``multi_head_attention_forward``: PyTorch's multi-head attention, in plain ops.

Masks follow ``nn.MultiheadAttention``: a boolean mask marks the positions that may NOT be
attended to (the opposite of ``scaled_dot_product_attention``); a float mask is added to the
scores. Inputs are sequence-first: (L, N, E), or unbatched (L, E).
"""

from __future__ import annotations

import math
import warnings

from ..._dtype import bool_, dtype
from ..._ranges import composite
from ...ops.creation import zeros
from ...ops.shape import cat
from ...tensor import Tensor
from .activation import softmax
from .attention import scaled_dot_product_attention
from .dropout import dropout
from .linear import linear

__all__ = ["multi_head_attention_forward"]


def _none_or_dtype(input: Tensor | None) -> dtype | None:
    return None if input is None else input.dtype


def _canonical_mask(
    mask: Tensor | None,
    mask_name: str,
    other_type: dtype | None,
    other_name: str,
    target_type: dtype,
    check_other: bool = True,
) -> Tensor | None:
    """A float mask as is; a boolean one as 0 / -inf (-inf where True). Warns when the mask
    and the other mask have different dtypes, as PyTorch does."""
    if mask is None:
        return None
    if mask.dtype != bool_ and not mask.is_floating_point():
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype != other_type:
        warnings.warn(
            f"Support for mismatched {mask_name} and {other_name} is deprecated. Use same type "
            "for both instead.",
            stacklevel=3,
        )
    if mask.is_floating_point():
        return mask
    return zeros(mask.shape, dtype=target_type, device=mask.device).masked_fill(mask, float("-inf"))


def _check_shapes(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    key_padding_mask: Tensor | None,
    attn_mask: Tensor | None,
    num_heads: int,
) -> bool:
    """True for batched (3-D) inputs; PyTorch's AssertionErrors for inconsistent ranks."""
    if query.ndim not in (2, 3):
        raise AssertionError(
            "query should be unbatched 2D or batched 3D tensor but received "
            f"{query.ndim}-D query tensor"
        )
    batched = query.ndim == 3
    kind = "batched (3-D)" if batched else "unbatched (2-D)"
    if key.ndim != query.ndim or value.ndim != query.ndim:
        raise AssertionError(
            f"For {kind} `query`, expected `key` and `value` to be {query.ndim}-D but found "
            f"{key.ndim}-D and {value.ndim}-D tensors respectively"
        )
    if key_padding_mask is not None and key_padding_mask.ndim != query.ndim - 1:
        raise AssertionError(
            f"For {kind} `query`, expected `key_padding_mask` to be `None` or "
            f"{query.ndim - 1}-D but found {key_padding_mask.ndim}-D tensor instead"
        )
    if attn_mask is not None:
        if attn_mask.ndim not in (2, 3):
            raise AssertionError(
                f"For {kind} `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found "
                f"{attn_mask.ndim}-D tensor instead"
            )
        expected = (num_heads, query.shape[0], key.shape[0])
        if not batched and attn_mask.ndim == 3 and tuple(attn_mask.shape) != expected:
            raise AssertionError(
                f"Expected `attn_mask` shape to be {expected} but got {attn_mask.shape}"
            )
    return batched


def _in_projection(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    weights: tuple[Tensor, Tensor, Tensor] | Tensor,
    bias: Tensor | None,
) -> tuple[Tensor, Tensor, Tensor]:
    """q, k, v projections: one matmul for self-attention, two when key is value."""
    embed_dim = query.shape[-1]
    biases = (None, None, None) if bias is None else bias.chunk(3)
    if isinstance(weights, Tensor):
        if key is value and query is key:
            q, k, v = linear(query, weights, bias).chunk(3, -1)
            return q, k, v
        if key is value:
            w_q, w_kv = weights.split([embed_dim, 2 * embed_dim])
            b_q, b_kv = (None, None) if bias is None else bias.split([embed_dim, 2 * embed_dim])
            k, v = linear(key, w_kv, b_kv).chunk(2, -1)
            return linear(query, w_q, b_q), k, v
        weights = weights.chunk(3)
    inputs = (query, key, value)
    q, k, v = (linear(x, w, b) for x, w, b in zip(inputs, weights, biases, strict=True))
    return q, k, v


def _check_attn_mask(attn_mask: Tensor, expected_2d: tuple, expected_3d: tuple) -> Tensor:
    """A 3-D (N * heads, L, S) mask, from a 2-D (L, S) or 3-D one of the right shape."""
    if attn_mask.ndim == 2:
        if tuple(attn_mask.shape) != expected_2d:
            raise RuntimeError(
                f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be {expected_2d}."
            )
        return attn_mask.unsqueeze(0)
    if attn_mask.ndim == 3:
        if tuple(attn_mask.shape) != expected_3d:
            raise RuntimeError(
                f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be {expected_3d}."
            )
        return attn_mask
    raise RuntimeError(f"attn_mask's dimension {attn_mask.ndim} is not supported")


def _pad_one(mask: Tensor | None) -> Tensor | None:
    """Append one zero column (one more attendable key) to a float mask."""
    if mask is None:
        return None
    column = zeros((*mask.shape[:-1], 1), dtype=mask.dtype, device=mask.device)
    return cat([mask, column], -1)


def _resolve_causal(
    attn_mask: Tensor | None,
    key_padding_mask: Tensor | None,
    is_causal: bool,
    need_weights: bool,
    target_type: dtype,
) -> tuple[Tensor | None, bool]:
    """PyTorch's use of the ``is_causal`` hint: the given mask is dropped (and the causal
    mask built) only when nothing else needs it; a padding mask turns the hint off."""
    if is_causal and attn_mask is None:
        raise RuntimeError(
            "Need attn_mask if specifying the is_causal hint. You may use the Transformer "
            "module method `generate_square_subsequent_mask` to create this mask."
        )
    if is_causal and key_padding_mask is None and not need_weights:
        return None, True
    attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", target_type, False)
    return attn_mask, is_causal and key_padding_mask is None


def _check_embed_dims(
    query: Tensor, key: Tensor, value: Tensor, embed_dim: int, num_heads: int, separate: bool
) -> int:
    """The head dimension, after PyTorch's checks of the embedding sizes."""
    if query.shape[-1] != embed_dim:
        raise AssertionError(
            f"was expecting embedding dimension of {embed_dim}, but got {query.shape[-1]}"
        )
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if separate and key.shape[:2] != value.shape[:2]:
        raise AssertionError(
            f"key's sequence and batch dims {key.shape[:2]} do not match value's {value.shape[:2]}"
        )
    if not separate and key.shape != value.shape:
        raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
    return head_dim


def _projection_weights(
    separate: bool,
    in_proj_weight: Tensor | None,
    q_proj_weight: Tensor | None,
    k_proj_weight: Tensor | None,
    v_proj_weight: Tensor | None,
) -> Tensor | tuple[Tensor, Tensor, Tensor]:
    """The packed in-projection weight, or the three separate ones."""
    if not separate:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        return in_proj_weight
    named = {"q": q_proj_weight, "k": k_proj_weight, "v": v_proj_weight}
    for name, weight in named.items():
        if weight is None:
            raise AssertionError(f"use_separate_proj_weight is True but {name}_proj_weight is None")
    return q_proj_weight, k_proj_weight, v_proj_weight  # type: ignore[return-value]


def _append_bias_kv(
    k: Tensor,
    v: Tensor,
    bias_k: Tensor | None,
    bias_v: Tensor | None,
    static_k: Tensor | None,
    static_v: Tensor | None,
) -> tuple[Tensor, Tensor]:
    """One more key and value position, (S, N, E) -> (S + 1, N, E)."""
    if bias_k is None:
        raise AssertionError("bias_v is set but bias_k is None")
    if bias_v is None:
        raise AssertionError("bias_k is set but bias_v is None")
    if static_k is not None:
        raise AssertionError("bias cannot be added to static key.")
    if static_v is not None:
        raise AssertionError("bias cannot be added to static value.")
    batch = k.shape[1]
    return cat([k, bias_k.repeat(1, batch, 1)]), cat([v, bias_v.repeat(1, batch, 1)])


def _split_heads(x: Tensor, rows: int) -> Tensor:
    """(S, N, E) -> (N * heads, S, head_dim)."""
    return x.reshape(x.shape[0], rows, -1).transpose(0, 1)


def _static(given: Tensor, name: str, rows: int, head_dim: int) -> Tensor:
    """A precomputed (N * heads, S, head_dim) key or value, after its size checks."""
    if given.shape[0] != rows:
        raise AssertionError(f"expecting {name}.size(0) of {rows}, but got {given.shape[0]}")
    if given.shape[2] != head_dim:
        raise AssertionError(f"expecting {name}.size(2) of {head_dim}, but got {given.shape[2]}")
    return given


def _append_zero_key(x: Tensor) -> Tensor:
    """(N * heads, S, head_dim) -> (N * heads, S + 1, head_dim) with zeros at the end."""
    return cat([x, zeros((x.shape[0], 1, x.shape[2]), dtype=x.dtype, device=x.device)], 1)


def _merge_padding(
    attn_mask: Tensor | None, key_padding_mask: Tensor, source: int, num_heads: int, batch: int
) -> Tensor:
    """Add the (N, S) padding mask, repeated for each head, to the (N * heads, L, S) mask."""
    for dim, expected in enumerate((batch, source)):
        if key_padding_mask.shape[dim] != expected:
            raise AssertionError(
                f"Expected key_padded_mask.shape[{dim}] to be {expected}, but got "
                f"{key_padding_mask.shape[dim]}"
            )
    padding = key_padding_mask.reshape(batch, 1, 1, source).expand(-1, num_heads, -1, -1)
    padding = padding.reshape(batch * num_heads, 1, source)
    return padding if attn_mask is None else attn_mask + padding


def _attend(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    attn_mask: Tensor | None,
    dropout_p: float,
    is_causal: bool,
    need_weights: bool,
    batch: int,
) -> tuple[Tensor, Tensor | None]:
    """Attention of (N * heads, L, head_dim) queries; returns the attended values and, with
    ``need_weights``, the (N * heads, L, S) weights."""
    rows, target, head_dim = q.shape
    if need_weights:
        scores = (q * math.sqrt(1.0 / head_dim)) @ k.transpose(-2, -1)
        if attn_mask is not None:
            scores = attn_mask + scores
        weights = softmax(scores, -1)
        if dropout_p > 0.0:
            weights = dropout(weights, dropout_p)
        return weights @ v, weights
    if attn_mask is not None:
        if attn_mask.shape[0] == 1:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.reshape(batch, rows // batch, -1, k.shape[1])
    heads = (batch, rows // batch)
    attended = scaled_dot_product_attention(
        q.reshape(*heads, target, head_dim),
        k.reshape(*heads, k.shape[1], head_dim),
        v.reshape(*heads, v.shape[1], head_dim),
        attn_mask,
        dropout_p,
        is_causal,
    )
    return attended.reshape(rows, target, head_dim), None


@composite
def multi_head_attention_forward(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    embed_dim_to_check: int,
    num_heads: int,
    in_proj_weight: Tensor | None,
    in_proj_bias: Tensor | None,
    bias_k: Tensor | None,
    bias_v: Tensor | None,
    add_zero_attn: bool,
    dropout_p: float,
    out_proj_weight: Tensor,
    out_proj_bias: Tensor | None,
    training: bool = True,
    key_padding_mask: Tensor | None = None,
    need_weights: bool = True,
    attn_mask: Tensor | None = None,
    use_separate_proj_weight: bool = False,
    q_proj_weight: Tensor | None = None,
    k_proj_weight: Tensor | None = None,
    v_proj_weight: Tensor | None = None,
    static_k: Tensor | None = None,
    static_v: Tensor | None = None,
    average_attn_weights: bool = True,
    is_causal: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """Multi-head attention of ``query`` (L, N, E) over ``key`` / ``value`` (S, N, E_k/E_v).

    Returns ``(output, weights)``: output (L, N, E); weights (N, L, S) averaged over heads,
    (N, heads, L, S) with ``average_attn_weights=False``, or None unless ``need_weights``.
    ``is_causal`` is a hint that ``attn_mask`` (still required) is the causal mask.
    """
    batched = _check_shapes(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not batched:
        query, key, value = (x.unsqueeze(1) for x in (query, key, value))
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    target, batch, embed_dim = query.shape
    key_padding_mask = _canonical_mask(
        key_padding_mask, "key_padding_mask", _none_or_dtype(attn_mask), "attn_mask", query.dtype
    )
    attn_mask, is_causal = _resolve_causal(
        attn_mask, key_padding_mask, is_causal, need_weights, query.dtype
    )
    head_dim = _check_embed_dims(
        query, key, value, embed_dim_to_check, num_heads, use_separate_proj_weight
    )
    weights = _projection_weights(
        use_separate_proj_weight, in_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight
    )
    q, k, v = _in_projection(query, key, value, weights, in_proj_bias)
    rows = batch * num_heads
    if attn_mask is not None:
        sizes = (target, key.shape[0])
        attn_mask = _check_attn_mask(attn_mask, sizes, (rows, *sizes))
    if bias_k is not None or bias_v is not None:
        k, v = _append_bias_kv(k, v, bias_k, bias_v, static_k, static_v)
        attn_mask, key_padding_mask = _pad_one(attn_mask), _pad_one(key_padding_mask)
    q = _split_heads(q, rows)
    k = _split_heads(k, rows) if static_k is None else _static(static_k, "static_k", rows, head_dim)
    v = _split_heads(v, rows) if static_v is None else _static(static_v, "static_v", rows, head_dim)
    if add_zero_attn:
        k, v = _append_zero_key(k), _append_zero_key(v)
        attn_mask, key_padding_mask = _pad_one(attn_mask), _pad_one(key_padding_mask)
    if key_padding_mask is not None:
        attn_mask = _merge_padding(attn_mask, key_padding_mask, k.shape[1], num_heads, batch)
    attended, attn_weights = _attend(
        q, k, v, attn_mask, dropout_p if training else 0.0, is_causal, need_weights, batch
    )
    attended = attended.transpose(0, 1).reshape(target, batch, embed_dim)
    output = linear(attended, out_proj_weight, out_proj_bias)
    if attn_weights is not None:
        attn_weights = attn_weights.reshape(batch, num_heads, target, -1)
        if average_attn_weights:
            attn_weights = attn_weights.mean(1)
    if not batched:
        output = output.squeeze(1)
        attn_weights = None if attn_weights is None else attn_weights.squeeze(0)
    return output, attn_weights
