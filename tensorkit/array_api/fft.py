"""The standard's ``fft`` extension, differentiable.

One op does the work: a complex-to-complex transform over some axes (NumPy's or CuPy's
``fftn``/``ifftn``), whose gradient is the adjoint transform (the inverse direction with the
dual normalization). Everything else is built on it from differentiable ops: padding and
trimming to ``n``/``s``, real inputs cast to complex, ``rfft`` as the first half of a full
transform, ``irfft`` as the real part of the inverse transform of the Hermitian-extended
spectrum, ``hfft``/``ihfft`` through those, and the shifts as rolls. The real transforms cost
a full complex transform, about twice NumPy's, in exchange for exact gradients.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from .._dtype import default_complex_dtype, dtype, get_default_dtype
from ..ops import creation
from ..ops import shape as shape_ops
from ..ops._apply import OpDef, apply
from ..ops.complex import conj, real
from ..tensor import Tensor, normalize_dim

__all__ = [
    "fft",
    "ifft",
    "fftn",
    "ifftn",
    "rfft",
    "irfft",
    "rfftn",
    "irfftn",
    "hfft",
    "ihfft",
    "fftfreq",
    "rfftfreq",
    "fftshift",
    "ifftshift",
]

Norm = Literal["backward", "ortho", "forward"]

# The adjoint of a transform normalized one way is the opposite transform normalized the
# "dual" way: an unscaled transform's adjoint is the unscaled opposite transform.
_DUAL = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


def _transform_forward(xp: Any, x: Any, axes: tuple, norm: str, inverse: bool) -> Any:
    run = xp.fft.ifftn if inverse else xp.fft.fftn
    return run(x, axes=axes, norm=norm).astype(x.dtype, copy=False)


def _transform_rule(ctx: Any, g: Tensor) -> Tensor:
    attrs = ctx.attrs
    return _transform(g, attrs["axes"], _DUAL[attrs["norm"]], not attrs["inverse"])


_TRANSFORM = OpDef("fft_c2c", _transform_forward, _transform_rule, node_name="FftC2CBackward0")


def _transform(x: Tensor, axes: tuple[int, ...], norm: str, inverse: bool) -> Tensor:
    """The complex transform of complex ``x`` over ``axes`` (no padding or trimming)."""
    if norm not in _DUAL:
        raise ValueError(f"norm must be 'backward', 'ortho' or 'forward', got {norm!r}")
    if not axes:
        return x
    return apply(_TRANSFORM, x, axes=axes, norm=norm, inverse=inverse)


def _as_complex(x: Tensor) -> Tensor:
    """``x`` as the complex dtype of its precision (float32 -> complex64)."""
    if x.is_complex():
        return x
    target = x.dtype.to_complex() if x.is_floating_point() else default_complex_dtype()
    return x.to(target)


def _resize(x: Tensor, axis: int, n: int) -> Tensor:
    """``x`` trimmed or zero-padded at the end of ``axis`` to length ``n``."""
    if n < 1:
        raise ValueError(f"the transform length must be at least 1, got {n}")
    size = x.shape[axis]
    if n <= size:
        return x if n == size else shape_ops.narrow(x, axis, 0, n)
    pad_shape = tuple(x.shape[:axis]) + (n - size,) + tuple(x.shape[axis + 1 :])
    padding = creation.zeros(pad_shape, dtype=x.dtype, device=x.device)
    return shape_ops.cat([x, padding], axis)


def _axes_and_sizes(
    x: Tensor, s: Sequence[int] | None, axes: Sequence[int] | None
) -> tuple[tuple[int, ...], list[int]]:
    """Normalized axes (all, or the last ``len(s)``) and the sizes to transform over
    (``-1`` or None meaning the input's size)."""
    if axes is None:
        axes = range(x.ndim) if s is None else range(x.ndim - len(s), x.ndim)
    normalized = tuple(normalize_dim(a, x.ndim) for a in axes)
    if len(set(normalized)) != len(normalized):
        raise ValueError(f"axes must be unique, got {tuple(axes)}")
    if s is None:
        s = [-1] * len(normalized)
    if len(s) != len(normalized):
        raise ValueError(f"s and axes must have the same length, got {len(s)} and {len(axes)}")
    sizes = [x.shape[a] if n == -1 else int(n) for a, n in zip(normalized, s, strict=True)]
    return normalized, sizes


def _complex_nd(
    x: Tensor, s: Sequence[int] | None, axes: Sequence[int] | None, norm: str, inverse: bool
) -> Tensor:
    axes, sizes = _axes_and_sizes(x, s, axes)
    for axis, n in zip(axes, sizes, strict=True):
        x = _resize(x, axis, n)
    return _transform(_as_complex(x), axes, norm, inverse)


def fft(x: Tensor, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> Tensor:
    """The 1-D discrete Fourier transform along ``axis`` (of length ``n``)."""
    return _complex_nd(x, None if n is None else [n], [axis], norm, inverse=False)


def ifft(x: Tensor, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> Tensor:
    """The 1-D inverse discrete Fourier transform along ``axis`` (of length ``n``)."""
    return _complex_nd(x, None if n is None else [n], [axis], norm, inverse=True)


def fftn(
    x: Tensor,
    /,
    *,
    s: Sequence[int] | None = None,
    axes: Sequence[int] | None = None,
    norm: Norm = "backward",
) -> Tensor:
    """The n-D discrete Fourier transform over ``axes`` (with lengths ``s``)."""
    return _complex_nd(x, s, axes, norm, inverse=False)


def ifftn(
    x: Tensor,
    /,
    *,
    s: Sequence[int] | None = None,
    axes: Sequence[int] | None = None,
    norm: Norm = "backward",
) -> Tensor:
    """The n-D inverse discrete Fourier transform over ``axes`` (with lengths ``s``)."""
    return _complex_nd(x, s, axes, norm, inverse=True)


def rfftn(
    x: Tensor,
    /,
    *,
    s: Sequence[int] | None = None,
    axes: Sequence[int] | None = None,
    norm: Norm = "backward",
) -> Tensor:
    """The n-D transform of a real array; the last axis keeps its non-negative frequencies
    (``s[-1] // 2 + 1`` of them)."""
    if x.is_complex():
        raise TypeError("rfftn needs a real-valued array")
    axes, sizes = _axes_and_sizes(x, s, axes)
    full = _complex_nd(x, sizes, axes, norm, inverse=False)
    return shape_ops.narrow(full, axes[-1], 0, sizes[-1] // 2 + 1)


def rfft(x: Tensor, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> Tensor:
    """The 1-D transform of a real array: its ``n // 2 + 1`` non-negative frequencies."""
    return rfftn(x, s=None if n is None else [n], axes=[axis], norm=norm)


def irfftn(
    x: Tensor,
    /,
    *,
    s: Sequence[int] | None = None,
    axes: Sequence[int] | None = None,
    norm: Norm = "backward",
) -> Tensor:
    """The inverse of ``rfftn``: a real array of lengths ``s`` (by default ``2 * (m - 1)``
    along the last axis, where ``m`` is its input length)."""
    axes, sizes = _axes_and_sizes(x, s, axes)
    last = axes[-1]
    if s is None or s[-1] == -1:
        sizes[-1] = 2 * (x.shape[last] - 1)
    for axis, n in zip(axes[:-1], sizes[:-1], strict=True):
        x = _resize(x, axis, n)
    x = _transform(_as_complex(x), axes[:-1], norm, inverse=True)
    return _real_inverse(x, last, sizes[-1], norm)


def irfft(x: Tensor, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> Tensor:
    """The inverse of ``rfft``: a real array of length ``n`` (by default ``2 * (m - 1)``)
    along ``axis``."""
    return irfftn(x, s=None if n is None else [n], axes=[axis], norm=norm)


def _real_inverse(x: Tensor, axis: int, n: int, norm: str) -> Tensor:
    """The real inverse transform along ``axis``: extend the half spectrum to the full
    Hermitian one (``X[n - k] = conj(X[k])``), transform back, keep the real part."""
    half = _resize(x, axis, n // 2 + 1)
    mirrored = shape_ops.flip(conj(shape_ops.narrow(half, axis, 1, n - half.shape[axis])), axis)
    full = shape_ops.cat([half, mirrored], axis)
    return real(_transform(full, (axis,), norm, inverse=True))


def hfft(x: Tensor, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> Tensor:
    """The transform of a Hermitian-symmetric signal given by its first half: a real array of
    length ``n`` (by default ``2 * (m - 1)``)."""
    return _hfftn(x, None if n is None else [n], [axis], norm)


def ihfft(x: Tensor, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> Tensor:
    """The inverse of ``hfft``: the first half of the spectrum of a real signal."""
    if x.is_complex():
        raise TypeError("ihfft needs a real-valued array")
    return _ihfftn(x, None if n is None else [n], [axis], norm)


def _hfftn(x: Tensor, s: Sequence[int] | None, axes: Sequence[int], norm: str) -> Tensor:
    """The transform of a signal Hermitian-symmetric over ``axes``, given by its first half
    along the last of them: the real inverse transform of its conjugate, scaled like a
    forward one."""
    return irfftn(conj(_as_complex(x)), s=s, axes=axes, norm=_swap(norm))


def _ihfftn(x: Tensor, s: Sequence[int] | None, axes: Sequence[int], norm: str) -> Tensor:
    """The inverse of ``_hfftn`` for real ``x``: the conjugate of its real transform, scaled
    like an inverse one."""
    return conj(rfftn(x, s=s, axes=axes, norm=_swap(norm)))


def _swap(norm: str) -> str:
    """The normalization of the opposite direction (``hfft`` is an inverse transform
    scaled like a forward one)."""
    if norm not in _DUAL:
        raise ValueError(f"norm must be 'backward', 'ortho' or 'forward', got {norm!r}")
    return _DUAL[norm]


def fftfreq(n: int, /, *, d: float = 1.0, dtype: dtype | None = None, device: Any = None) -> Tensor:
    """The sample frequencies of an ``n``-point transform with sample spacing ``d``:
    ``[0, 1, ..., ceil(n/2) - 1, -floor(n/2), ..., -1] / (d * n)``."""
    indices = creation.arange(n, dtype=dtype or get_default_dtype(), device=device)
    wrapped = shape_ops.roll(indices - n // 2, -(n // 2)) if n else indices
    return wrapped / (d * n)


def rfftfreq(
    n: int, /, *, d: float = 1.0, dtype: dtype | None = None, device: Any = None
) -> Tensor:
    """The non-negative sample frequencies of an ``n``-point real transform:
    ``[0, 1, ..., n // 2] / (d * n)``."""
    indices = creation.arange(n // 2 + 1, dtype=dtype or get_default_dtype(), device=device)
    return indices / (d * n)


def fftshift(x: Tensor, /, *, axes: int | Sequence[int] | None = None) -> Tensor:
    """``x`` rolled so the zero frequency is in the middle of each of ``axes`` (all by
    default)."""
    axes = _shift_axes(x, axes)
    return shape_ops.roll(x, tuple(x.shape[a] // 2 for a in axes), axes)


def ifftshift(x: Tensor, /, *, axes: int | Sequence[int] | None = None) -> Tensor:
    """The inverse of ``fftshift``."""
    axes = _shift_axes(x, axes)
    return shape_ops.roll(x, tuple(-(x.shape[a] // 2) for a in axes), axes)


def _shift_axes(x: Tensor, axes: int | Sequence[int] | None) -> tuple[int, ...]:
    if axes is None:
        return tuple(range(x.ndim))
    if isinstance(axes, int):
        return (normalize_dim(axes, x.ndim),)
    return tuple(normalize_dim(a, x.ndim) for a in axes)
