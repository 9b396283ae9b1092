"""Ready-made parametrizations (``tk.nn.utils.parametrizations``): ``orthogonal``,
``weight_norm`` and ``spectral_norm``, registered through
``parametrize.register_parametrization``."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._dtype import bool_
from ...autograd.grad_mode import no_grad
from ...linalg import householder_product, matrix_exp, qr, solve, vector_norm
from ...ops.binary import where
from ...ops.creation import eye, zeros_like
from ...ops.shape import cat
from ...random import randn
from ...tensor import Tensor
from .. import functional as F  # noqa: N812
from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..modules.module import Module
from . import parametrize

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


_ORTHOGONAL_MAPS = ("matrix_exp", "cayley", "householder")


def _geqrf(a: Tensor) -> tuple[Tensor, Tensor]:
    """LAPACK's Householder QR (``torch.geqrf``): R on and above the diagonal, the
    reflectors' vectors below it, and their ``tau``."""
    a = a.clone()
    n, k = a.shape[-2], a.shape[-1]
    taus = []
    for i in range(min(n, k)):
        alpha, below = a[..., i, i], a[..., i + 1 :, i]
        rest = vector_norm(below, 2, -1)
        beta = -where(alpha >= 0, 1.0, -1.0) * (alpha * alpha + rest * rest).sqrt()
        trivial = rest == 0
        tau = where(trivial, 0.0, (beta - alpha) / where(trivial, 1.0, beta))
        v = below / where(trivial, 1.0, alpha - beta).unsqueeze(-1)
        v_full = cat([a.new_ones(*a.shape[:-2], 1), v], -1).unsqueeze(-1)
        block = a[..., i:, i + 1 :]
        a[..., i:, i + 1 :] = block - tau[..., None, None] * (v_full @ (v_full.mH @ block))
        a[..., i, i] = where(trivial, alpha, beta)
        a[..., i + 1 :, i] = v
        taus.append(tau)
    return a, (cat([t.unsqueeze(-1) for t in taus], -1) if taus else a.new_zeros(0))


def _is_orthogonal(q: Tensor) -> bool:
    n, k = q.shape[-2], q.shape[-1]
    identity = eye(k, dtype=q.dtype, device=q.device)
    eps = 10.0 * n * float(np.finfo(np.dtype(q.dtype.name)).eps)
    return bool((q.mH @ q).allclose(identity, atol=eps))


def _make_orthogonal(a: Tensor) -> Tensor:
    """The Q of ``a``'s QR decomposition whose R has a positive diagonal."""
    q, r = qr(a)
    return q * r.diagonal(dim1=-2, dim2=-1).sign().unsqueeze(-2)


class _Orthogonal(Module):
    base: Tensor

    def __init__(
        self, weight: Tensor, orthogonal_map: str, *, use_trivialization: bool = True
    ) -> None:
        super().__init__()
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, x: Tensor) -> Tensor:
        n, k = x.shape[-2], x.shape[-1]
        transposed = n < k
        if transposed:
            x = x.mT
            n, k = k, n
        if self.orthogonal_map in ("matrix_exp", "cayley"):
            x = x.tril()
            if n != k:
                x = cat([x, x.new_zeros(n, n - k).expand(*x.shape[:-2], -1, -1)], -1)
            a = x - x.mH
            if self.orthogonal_map == "matrix_exp":
                q = matrix_exp(a)
            else:
                identity = eye(n, dtype=a.dtype, device=a.device)
                q = solve(identity - 0.5 * a, identity + 0.5 * a)
            if n != k:
                q = q[..., :k]
        else:
            a = x.tril(-1)
            tau = 2.0 / (1.0 + (a * a).sum(-2))
            q = householder_product(a, tau)
            q = q * x.diagonal(dim1=-2, dim2=-1).trunc().unsqueeze(-2)
        if "base" in self._buffers:
            q = self.base @ q
        return q.mT if transposed else q

    def right_inverse(self, q: Tensor) -> Tensor:
        with no_grad():
            return self._right_inverse(q)

    def _right_inverse(self, q: Tensor) -> Tensor:
        if q.shape != self.shape:
            raise ValueError(
                f"Expected a matrix or batch of matrices of shape {self.shape}. "
                f"Got a tensor of shape {q.shape}."
            )
        q_init = q
        n, k = q.shape[-2], q.shape[-1]
        transpose = n < k
        if transpose:
            q = q.mT
            n, k = k, n
        if "base" not in self._buffers:
            if self.orthogonal_map in ("matrix_exp", "cayley"):
                raise NotImplementedError(
                    "It is not possible to assign to the matrix exponential "
                    "or the Cayley parametrizations when use_trivialization=False."
                )
            a, tau = _geqrf(q)
            signs = a.diagonal(dim1=-2, dim2=-1).sign()
            signs = where(tau == 0.0, -signs, signs).unsqueeze(-2)
            a = where(eye(n, k, dtype=bool_, device=a.device), signs, a)
            return a.mT if transpose else a
        if n == k:
            q = q.clone() if _is_orthogonal(q) else _make_orthogonal(q)
        else:
            noise = randn(*q.shape[:-2], n, n - k, dtype=q.dtype, device=q.device)
            q = _make_orthogonal(cat([q, noise], -1))
        self.base = q
        identity = eye(*q_init.shape[-2:], dtype=q_init.dtype, device=q_init.device)
        return zeros_like(q_init) - identity


def orthogonal(
    module: Module,
    name: str = "weight",
    orthogonal_map: str | None = None,
    *,
    use_trivialization: bool = True,
) -> Module:
    """Parametrize ``module.<name>`` (a matrix or batch of them) to stay orthogonal
    (orthonormal columns or rows): ``"matrix_exp"`` (default for square), ``"cayley"`` or
    ``"householder"`` (default otherwise) maps an unconstrained tensor onto the orthogonal
    matrices; with ``use_trivialization`` the map is applied relative to a ``base`` buffer
    that starts at the orthogonalized original value."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(
            f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions."
        )
    if orthogonal_map is None:
        square = weight.shape[-2] == weight.shape[-1]
        orthogonal_map = "matrix_exp" if square else "householder"
    if orthogonal_map not in _ORTHOGONAL_MAPS:
        raise ValueError(
            'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
            f"Got: {orthogonal_map}"
        )
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


def _norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """The 2-norm of ``v`` over every dim but ``dim``, kept as size-1 dims (PyTorch's
    ``norm_except_dim``); ``dim=-1`` means the norm of the whole tensor."""
    if dim == -1:
        return vector_norm(v)
    keep = dim % v.ndim
    return vector_norm(v, 2, tuple(d for d in range(v.ndim) if d != keep), keepdim=True)


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return weight_v * (weight_g / _norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Parametrize ``module.<name>`` as ``g * v / ||v||`` (norm over every dim but ``dim``;
    over the whole tensor for ``dim=None``): ``original0`` is ``g``, ``original1`` is ``v``.
    State dicts with the old ``<name>_g``/``<name>_v`` keys still load."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _weight_norm_compat_hook(state_dict: dict, prefix: str, *args: Any) -> None:
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module._register_load_state_dict_pre_hook(_weight_norm_compat_hook)
    return module


class _SpectralNorm(Module):
    def __init__(
        self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12
    ) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(
                "Dimension out of range (expected to be in range of "
                f"[-{ndim}, {ndim - 1}] but got {dim})"
            )
        if n_power_iterations <= 0:
            raise ValueError(
                "Expected n_power_iterations to be positive, but "
                f"got n_power_iterations={n_power_iterations}"
            )
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight.detach())
            h, w = weight_mat.shape
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        """Refine ``_u`` and ``_v`` (in place) towards the top singular vectors."""
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(weight_mat.mv(self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(weight_mat.mH.mv(self._u), dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = u.vdot(weight_mat.mv(v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(
    module: Module,
    name: str = "weight",
    n_power_iterations: int = 1,
    eps: float = 1e-12,
    dim: int | None = None,
) -> Module:
    """Parametrize ``module.<name>`` as itself divided by its largest singular value (of the
    weight seen as a matrix with ``dim`` first; 1 for transposed convolutions, else 0), which
    ``n_power_iterations`` of power iteration refine on each access in training mode."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        transposed = (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)
        dim = 1 if isinstance(module, transposed) else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps)
    )
    return module
