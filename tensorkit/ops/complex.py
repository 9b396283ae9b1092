"""Complex numbers: real and imaginary parts (views), conjugate, angle, and building from parts."""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from ._apply import FLOAT, KEEP, SAVE_INPUTS, OpDef, apply

_REAL = OpDef("real", lambda xp, x: x.real, lambda ctx, g: g, view=True)
_IMAG = OpDef("imag", lambda xp, x: x.imag, lambda ctx, g: g * 1j, view=True)
_CONJ = OpDef("conj", lambda xp, x: xp.conj(x), lambda ctx, g: conj(g), promote=KEEP)
_ANGLE = OpDef(
    "angle",
    lambda xp, x: _angle(xp, x),
    lambda ctx, g: _angle_rule(ctx, g),
    promote=FLOAT,
    saves=SAVE_INPUTS,
)


def _complex_forward(xp: Any, real: Any, imag: Any) -> Any:
    """The parts placed as they are (``real + 1j * imag`` would turn inf + NaN j and -0
    imaginary parts into other values)."""
    shape = xp.broadcast_shapes(real.shape, imag.shape)
    out = xp.empty(shape, dtype=xp.result_type(real.dtype, imag.dtype, xp.complex64))
    out.real = real
    out.imag = imag
    return out


_COMPLEX = OpDef(
    "complex",
    _complex_forward,
    lambda ctx, g: (real(g), imag(g)),
    promote=KEEP,
)


def _angle(xp: Any, x: Any) -> Any:
    if x.dtype.kind == "c":
        return xp.angle(x).astype(x.real.dtype)
    return xp.where(x < 0, xp.pi, xp.where(x == x, 0.0, x)).astype(x.dtype)  # NaN stays NaN


def _angle_rule(ctx: Any, g: Tensor) -> Any:
    (x,) = ctx.saved_tensors
    if not x.is_complex():
        return g * 0
    # angle = atan2(im, re); PyTorch's complex gradient is d/d(re) + i d/d(im).
    squared = real(x) ** 2 + imag(x) ** 2
    return g * (-imag(x) + 1j * real(x)) / squared


def real(input: Tensor) -> Tensor:
    if not input.is_complex():
        return input
    return apply(_REAL, input)


def imag(input: Tensor) -> Tensor:
    if not input.is_complex():
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return apply(_IMAG, input)


def conj(input: Tensor) -> Tensor:
    return apply(_CONJ, input) if input.is_complex() else input


def angle(input: Tensor) -> Tensor:
    return apply(_ANGLE, input)


def complex(real: Tensor, imag: Tensor) -> Tensor:  # noqa: A001
    if real.dtype != imag.dtype or not real.is_floating_point():
        raise RuntimeError(
            f"Expected both inputs to be Half, Float or Double tensors but got {real.dtype} and "
            f"{imag.dtype}"
        )
    return apply(_COMPLEX, real, imag)
