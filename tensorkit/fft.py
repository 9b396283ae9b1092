"""Discrete Fourier transforms: the ``tk.fft`` namespace, PyTorch's ``torch.fft``.

A thin layer over the differentiable Array API extension (``tk.array_api.fft``): this module
takes PyTorch's arguments (``input``, ``n``, ``s``, ``dim``, ``norm=None``), dtype rules
(integers and bools transform as the default float dtype, ``float32`` gives ``complex64``,
``float64`` gives ``complex128``, half precision is refused) and error texts, then calls the
extension, so every transform has gradients of any order. ``out=`` and ``layout=`` are not
supported.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._dtype import SCALAR_TYPE_NAMES, dtype, float16, get_default_dtype
from .array_api import fft as _xfft
from .tensor import Tensor, normalize_dim

__all__ = [
    "fft",
    "ifft",
    "fft2",
    "ifft2",
    "fftn",
    "ifftn",
    "rfft",
    "irfft",
    "rfft2",
    "irfft2",
    "rfftn",
    "irfftn",
    "hfft",
    "ihfft",
    "hfft2",
    "ihfft2",
    "hfftn",
    "ihfftn",
    "fftfreq",
    "rfftfreq",
    "fftshift",
    "ifftshift",
]

Dims = int | Sequence[int] | None
Sizes = int | Sequence[int] | None

_NORMS = ("backward", "ortho", "forward")


def _norm(norm: str | None) -> str:
    """``norm`` checked, with None meaning ``"backward"``."""
    if norm is None:
        return "backward"
    if norm not in _NORMS:
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')
    return norm


def _promote(x: Tensor, require_complex: bool = False) -> Tensor:
    """``x`` in the dtype the transform runs in: integers and bools as the default float
    dtype, and a complex dtype of the same precision when ``require_complex``."""
    if x.dtype == float16:
        raise RuntimeError("Unsupported dtype Half")
    if not (x.is_floating_point() or x.is_complex()):
        x = x.to(get_default_dtype())
    return _xfft._as_complex(x) if require_complex else x


def _require_real(x: Tensor, message: str) -> None:
    if x.is_complex():
        raise RuntimeError(f"{message}{SCALAR_TYPE_NAMES[x.dtype.name]}")


def _check_points(n: int) -> int:
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return n


def _wrap(dim: int, ndim: int) -> int:
    if ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return normalize_dim(dim, ndim)


def _as_list(value: int | Sequence[int]) -> list[int]:
    return [value] if isinstance(value, int) else list(value)


def _dims_and_sizes(
    x: Tensor, s: Sizes, dim: Dims, name: str | None = None
) -> tuple[tuple[int, ...], list[int]]:
    """PyTorch's canonical transform dims (all, or the last ``len(s)``) and signal sizes
    (``-1`` meaning the input's size); ``name`` marks a real transform, which needs a dim."""
    sizes = None if s is None else _as_list(s)
    if dim is not None:
        dims = tuple(_wrap(d, x.ndim) for d in _as_list(dim))
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
        if sizes is not None and len(sizes) != len(dims):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
    elif sizes is not None:
        if len(sizes) > x.ndim:
            raise RuntimeError(
                f"Got shape with {len(sizes)} values but input tensor only has {x.ndim} dimensions."
            )
        dims = tuple(range(x.ndim - len(sizes), x.ndim))
    else:
        dims = tuple(range(x.ndim))
    if name is not None and not dims:
        raise RuntimeError(f"{name} must transform at least one axis")
    if sizes is None:
        return dims, [x.shape[d] for d in dims]
    return dims, [
        x.shape[d] if n == -1 else _check_points(n) for d, n in zip(dims, sizes, strict=True)
    ]


def _one(n: int | None) -> list[int] | None:
    """The sizes of a 1-D transform (where ``-1`` is not a default, as in PyTorch)."""
    return None if n is None else [_check_points(n)]


def _c2c(input: Tensor, s: Sizes, dim: Dims, norm: str | None, forward: bool) -> Tensor:
    norm = _norm(norm)
    x = _promote(input)
    dims, sizes = _dims_and_sizes(x, s, dim)
    run = _xfft.fftn if forward else _xfft.ifftn
    return run(x, s=sizes, axes=dims, norm=norm)


def _r2c(
    input: Tensor, s: Sizes, dim: Dims, norm: str | None, message: str, hermitian: bool
) -> Tensor:
    """A transform of a real signal to its non-negative frequencies along the last dim."""
    norm = _norm(norm)
    _require_real(input, message)
    x = _promote(input)
    dims, sizes = _dims_and_sizes(x, s, dim, "ihfftn" if hermitian else "rfftn")
    if hermitian:
        return _xfft._ihfftn(x, sizes, dims, norm)
    return _xfft.rfftn(x, s=sizes, axes=dims, norm=norm)


def _c2r(input: Tensor, s: Sizes, dim: Dims, norm: str | None, hermitian: bool) -> Tensor:
    """A transform of a half spectrum to a real signal: the last size defaults to
    ``2 * (m - 1)`` for ``m`` input points."""
    norm = _norm(norm)
    x = _promote(input, require_complex=True)
    dims, sizes = _dims_and_sizes(x, s, dim, "hfftn" if hermitian else "irfftn")
    last = None if s is None else _as_list(s)[-1]
    if last is None or last == -1:
        sizes[-1] = _check_points(2 * (x.shape[dims[-1]] - 1))
    if hermitian:
        return _xfft._hfftn(x, sizes, dims, norm)
    return _xfft.irfftn(x, s=sizes, axes=dims, norm=norm)


def fft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The 1-D discrete Fourier transform along ``dim``, of ``input`` trimmed or zero-padded
    to length ``n``."""
    return _c2c(input, _one(n), [dim], norm, forward=True)


def ifft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The 1-D inverse discrete Fourier transform along ``dim``."""
    return _c2c(input, _one(n), [dim], norm, forward=False)


def fft2(input: Tensor, s: Sizes = None, dim: Dims = (-2, -1), norm: str | None = None) -> Tensor:
    """The 2-D discrete Fourier transform (over the last two dims by default)."""
    return _c2c(input, s, dim, norm, forward=True)


def ifft2(input: Tensor, s: Sizes = None, dim: Dims = (-2, -1), norm: str | None = None) -> Tensor:
    """The 2-D inverse discrete Fourier transform."""
    return _c2c(input, s, dim, norm, forward=False)


def fftn(input: Tensor, s: Sizes = None, dim: Dims = None, norm: str | None = None) -> Tensor:
    """The N-D discrete Fourier transform over ``dim`` (all dims, or the last ``len(s)``)."""
    return _c2c(input, s, dim, norm, forward=True)


def ifftn(input: Tensor, s: Sizes = None, dim: Dims = None, norm: str | None = None) -> Tensor:
    """The N-D inverse discrete Fourier transform."""
    return _c2c(input, s, dim, norm, forward=False)


def rfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The 1-D transform of a real signal: its ``n // 2 + 1`` non-negative frequencies."""
    return _r2c(input, _one(n), [dim], norm, "rfft expects a real input tensor, but got ", False)


def irfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse of ``rfft``: a real signal of length ``n`` (by default ``2 * (m - 1)``)."""
    return _c2r(input, _one(n), [dim], norm, hermitian=False)


_RFFTN_REAL = "rfftn expects a real-valued input tensor, but got "


def rfft2(input: Tensor, s: Sizes = None, dim: Dims = (-2, -1), norm: str | None = None) -> Tensor:
    """The 2-D transform of a real signal; the last dim keeps its non-negative frequencies."""
    return _r2c(input, s, dim, norm, _RFFTN_REAL, hermitian=False)


def irfft2(input: Tensor, s: Sizes = None, dim: Dims = (-2, -1), norm: str | None = None) -> Tensor:
    """The inverse of ``rfft2``."""
    return _c2r(input, s, dim, norm, hermitian=False)


def rfftn(input: Tensor, s: Sizes = None, dim: Dims = None, norm: str | None = None) -> Tensor:
    """The N-D transform of a real signal; the last dim keeps its non-negative frequencies."""
    return _r2c(input, s, dim, norm, _RFFTN_REAL, hermitian=False)


def irfftn(input: Tensor, s: Sizes = None, dim: Dims = None, norm: str | None = None) -> Tensor:
    """The inverse of ``rfftn``: a real signal, of length ``2 * (m - 1)`` along the last dim
    unless ``s`` says otherwise."""
    return _c2r(input, s, dim, norm, hermitian=False)


def hfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The 1-D transform of a Hermitian-symmetric signal given by its first half: a real
    spectrum of length ``n`` (by default ``2 * (m - 1)``)."""
    return _c2r(input, _one(n), [dim], norm, hermitian=True)


def ihfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse of ``hfft``: the first half of the inverse transform of a real signal."""
    return _r2c(input, _one(n), [dim], norm, "ihfft expects a real input tensor, but got ", True)


_IHFFTN_REAL = "Only supports floating-point dtypes, but found: "


def hfft2(input: Tensor, s: Sizes = None, dim: Dims = (-2, -1), norm: str | None = None) -> Tensor:
    """The 2-D transform of a Hermitian-symmetric signal given by its half along the last
    dim."""
    return _c2r(input, s, dim, norm, hermitian=True)


def ihfft2(input: Tensor, s: Sizes = None, dim: Dims = (-2, -1), norm: str | None = None) -> Tensor:
    """The inverse of ``hfft2``."""
    return _r2c(input, s, dim, norm, _IHFFTN_REAL, hermitian=True)


def hfftn(input: Tensor, s: Sizes = None, dim: Dims = None, norm: str | None = None) -> Tensor:
    """The N-D transform of a Hermitian-symmetric signal given by its half along the last
    dim."""
    return _c2r(input, s, dim, norm, hermitian=True)


def ihfftn(input: Tensor, s: Sizes = None, dim: Dims = None, norm: str | None = None) -> Tensor:
    """The inverse of ``hfftn``."""
    return _r2c(input, s, dim, norm, _IHFFTN_REAL, hermitian=True)


def _frequencies(
    run: Any, name: str, n: int, d: float, dtype: dtype | None, device: Any, requires_grad: bool
) -> Tensor:
    if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(f"{name} requires a floating point or complex dtype")
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    return run(n, d=d, dtype=dtype, device=device).requires_grad_(requires_grad)


def fftfreq(
    n: int,
    d: float = 1.0,
    *,
    dtype: dtype | None = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """The sample frequencies of an ``n``-point transform with sample spacing ``d``:
    ``[0, 1, ..., ceil(n/2) - 1, -floor(n/2), ..., -1] / (d * n)``."""
    return _frequencies(_xfft.fftfreq, "fftfreq", n, d, dtype, device, requires_grad)


def rfftfreq(
    n: int,
    d: float = 1.0,
    *,
    dtype: dtype | None = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """The non-negative sample frequencies of an ``n``-point real transform:
    ``[0, 1, ..., n // 2] / (d * n)``."""
    return _frequencies(_xfft.rfftfreq, "rfftfreq", n, d, dtype, device, requires_grad)


def _shift_dims(input: Tensor, dim: Dims) -> Dims:
    if input.ndim == 0:
        if dim is None or not _as_list(dim):
            raise RuntimeError("`shifts` required")
        for d in _as_list(dim):
            _wrap(d, 0)
    return dim


def fftshift(input: Tensor, dim: Dims = None) -> Tensor:
    """``input`` rolled so the zero frequency is in the middle of each of ``dim`` (all by
    default)."""
    return _xfft.fftshift(input, axes=_shift_dims(input, dim))


def ifftshift(input: Tensor, dim: Dims = None) -> Tensor:
    """The inverse of ``fftshift``."""
    return _xfft.ifftshift(input, axes=_shift_dims(input, dim))
