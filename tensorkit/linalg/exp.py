"""``matrix_exp``: scaling and squaring with a degree-13 Padé approximant (Higham, 2005),
batched on arrays; its gradient is exact, by the block-matrix identity
``exp([[A^T, G], [0, A^T]]) = [[exp(A^T), D], [0, exp(A^T)]]`` where D is the gradient."""

# ruff: noqa: N803 - argument names (A) are those of torch.linalg

from __future__ import annotations

from typing import Any

from ..ops._apply import SAVE_INPUTS, OpDef, apply
from ..ops.shape import cat, narrow
from ..tensor import Tensor
from ._common import _check_matrix

_PADE_13 = (
    64764752532480000.0,
    32382376266240000.0,
    7771770303897600.0,
    1187353796428800.0,
    129060195264000.0,
    10559470521600.0,
    670442572800.0,
    33522128640.0,
    1323241920.0,
    40840800.0,
    960960.0,
    16380.0,
    182.0,
    1.0,
)
_THETA_13 = 5.371920351148152


def _matrix_exp_forward(xp: Any, a: Any) -> Any:
    n = a.shape[-1]
    if a.size == 0:
        return a.copy()
    flat = a.reshape(-1, n, n)
    norm1 = xp.abs(flat).sum(axis=-2).max(axis=-1)
    ratio = xp.maximum(norm1 / _THETA_13, 1.0)
    steps = xp.ceil(xp.log2(ratio)).astype(xp.int64)
    x = flat / (2.0 ** steps.astype(a.dtype))[:, None, None]
    identity = xp.eye(n, dtype=a.dtype)
    x2 = xp.matmul(x, x)
    x4 = xp.matmul(x2, x2)
    x6 = xp.matmul(x4, x2)
    b = _PADE_13
    odd = xp.matmul(x6, b[13] * x6 + b[11] * x4 + b[9] * x2)
    odd = xp.matmul(x, odd + b[7] * x6 + b[5] * x4 + b[3] * x2 + b[1] * identity)
    even = xp.matmul(x6, b[12] * x6 + b[10] * x4 + b[8] * x2)
    even = even + b[6] * x6 + b[4] * x4 + b[2] * x2 + b[0] * identity
    out = xp.linalg.solve(even - odd, even + odd)
    for i in range(int(steps.max())):
        out = xp.where((steps > i)[:, None, None], xp.matmul(out, out), out)
    return out.reshape(a.shape).astype(a.dtype)


def _matrix_exp_rule(ctx: Any, g: Tensor) -> Tensor:
    (a,) = ctx.saved_tensors
    n = a.shape[-1]
    top = cat([a.mH, g], -1)  # exp([[A^H, G], [0, A^H]]) holds the gradient top right
    bottom = cat([a.mH * 0, a.mH], -1)
    return narrow(narrow(matrix_exp(cat([top, bottom], -2)), -2, 0, n), -1, n, n)


_MATRIX_EXP = OpDef("linalg_matrix_exp", _matrix_exp_forward, _matrix_exp_rule, saves=SAVE_INPUTS)


def matrix_exp(A: Tensor) -> Tensor:
    """The matrix exponential of each square matrix."""
    _check_matrix("linalg.matrix_exp", A)
    return apply(_MATRIX_EXP, A)
