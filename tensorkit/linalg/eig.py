"""``eig`` and ``eigvals`` of real or complex square matrices: complex eigenvalues and unit-norm
eigenvectors (as LAPACK's geev), with PyTorch's gradient (``linalg_eig_backward``) written
with tensorkit ops. Complex systems in the rule are solved through their real block form."""

# ruff: noqa: N803 - argument names (A) are those of torch.linalg

from __future__ import annotations

from collections import namedtuple
from typing import Any

from ..ops._apply import SAVE_OUTPUT, OpDef, apply
from ..ops.complex import complex as make_complex
from ..ops.complex import conj, imag, real
from ..ops.matmul import matmul
from ..ops.shape import cat, diag_embed, narrow
from ..ops.shape import diagonal as _diagonal
from ..tensor import Tensor
from ._common import _check_matrix, _off_diagonal_reciprocal
from .solve import solve

EigResult = namedtuple("linalg_eig", ["eigenvalues", "eigenvectors"])

_GAUGE_ERROR = (
    "linalg_eig_backward: The eigenvectors in the complex case are specified up to "
    "multiplication by e^{i phi}. The specified loss function depends on this quantity, so it "
    "is ill-defined."
)


def _eig_forward(xp: Any, a: Any, complex_input: bool) -> tuple:
    values, vectors = xp.linalg.eig(a)
    kind = xp.complex128 if a.dtype in (xp.float64, xp.complex128) else xp.complex64
    return values.astype(kind), vectors.astype(kind)


def _matmul_complex(a: Tensor, b: Tensor) -> Tensor:
    """A B from real products (whose gradient rules hold for any order of derivative)."""
    ar, ai, br, bi = real(a), imag(a), real(b), imag(b)
    return make_complex(matmul(ar, br) - matmul(ai, bi), matmul(ar, bi) + matmul(ai, br))


def _solve_complex(a: Tensor, b: Tensor) -> Tensor:
    """X with A X = B for complex A and B, as [[Ar, -Ai], [Ai, Ar]] [Xr; Xi] = [Br; Bi]."""
    ar, ai = real(a), imag(a)
    block = cat([cat([ar, -ai], -1), cat([ai, ar], -1)], -2)
    x = solve(block, cat([real(b), imag(b)], -2))
    n = a.shape[-1]
    return make_complex(narrow(x, -2, 0, n), narrow(x, -2, n, n))


def _eig_rule(ctx: Any, g_w: Tensor, g_v: Tensor) -> Tensor:
    """grad_A = V^-H (diag(gw) + (V^H gV - V^H V Re(diag(V^H gV))) / conj(E)) V^H with
    E_ij = w_j - w_i off the diagonal; its real part for real A."""
    w, v = ctx.saved_tensors
    vh = conj(v).mT
    projected = _matmul_complex(vh, g_v)
    on_diagonal = _diagonal(projected, 0, -2, -1)
    if not bool((abs(imag(on_diagonal)._data) <= 1e-2).all()):
        raise RuntimeError(_GAUGE_ERROR)
    projected = projected - _matmul_complex(vh, v * real(on_diagonal).unsqueeze(-2))
    w_conj = conj(w)
    inner = projected * _off_diagonal_reciprocal(w_conj.unsqueeze(-2) - w_conj.unsqueeze(-1))
    grad = _solve_complex(vh, _matmul_complex(inner + diag_embed(g_w), vh))
    return grad if ctx.attrs["complex_input"] else real(grad)


_EIG = OpDef("linalg_eig", _eig_forward, _eig_rule, saves=SAVE_OUTPUT, outputs=-1)


def eig(A: Tensor) -> EigResult:
    """Complex eigenvalues and unit-norm eigenvectors (columns) of square matrices.

    Eigenvectors are defined up to a complex phase: a loss that depends on it has no gradient
    and backward raises, as in PyTorch. The gradient is undefined where eigenvalues repeat.
    """
    _check_matrix("linalg.eig", A)
    return EigResult(*apply(_EIG, A, complex_input=A.is_complex()))


def eigvals(A: Tensor) -> Tensor:
    """The complex eigenvalues of square matrices."""
    _check_matrix("linalg.eigvals", A)
    return apply(_EIG, A, complex_input=A.is_complex())[0]
