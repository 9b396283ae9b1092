"""``pixel_shuffle`` and ``pixel_unshuffle``: channels to space and back, as a reshape, a
permute and a reshape (views and a copy, so gradients come from those ops)."""

from __future__ import annotations

from ...tensor import Tensor

__all__ = ["pixel_shuffle", "pixel_unshuffle"]


def _check(input: Tensor, name: str, factor_name: str, factor: int) -> None:
    if input.ndim < 3:
        raise RuntimeError(
            f"{name} expects input to have at least 3 dimensions, but got input with "
            f"{input.ndim} dimension(s)"
        )
    if factor <= 0:
        raise RuntimeError(f"{name} expects a positive {factor_name}, but got {factor}")


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """``(*, C·r², H, W)`` to ``(*, C, H·r, W·r)`` with ``r = upscale_factor``."""
    r = upscale_factor
    _check(input, "pixel_shuffle", "upscale_factor", r)
    *batch, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(
            "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
            f"of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}"
        )
    n = len(batch)
    out = input.reshape(*batch, c // (r * r), r, r, h, w)
    out = out.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return out.reshape(*batch, c // (r * r), h * r, w * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """``(*, C, H·r, W·r)`` to ``(*, C·r², H, W)`` with ``r = downscale_factor``."""
    r = downscale_factor
    _check(input, "pixel_unshuffle", "downscale_factor", r)
    *batch, c, h, w = input.shape
    for side, size, axis in (("height", h, -2), ("width", w, -1)):
        if size % r:
            raise RuntimeError(
                f"pixel_unshuffle expects {side} to be divisible by downscale_factor, but "
                f"input.size({axis})={size} is not divisible by {r}"
            )
    n = len(batch)
    out = input.reshape(*batch, c, h // r, r, w // r, r)
    out = out.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return out.reshape(*batch, c * r * r, h // r, w // r)
