"""Matrix products: matmul (``@``) with batching and broadcasting, mm, bmm, mv, dot, outer,
tensordot and einsum."""

from __future__ import annotations

import math
from collections import namedtuple
from typing import Any

from ..tensor import Tensor
from ._apply import COMMON, SAVE_INPUTS, OpDef, apply
from .shape import broadcast_shapes


def _matmul_forward(xp: Any, a: Any, b: Any) -> Any:
    return xp.matmul(a, b)


def _matmul_rule(ctx: Any, space: Any, saved: tuple, g: Any) -> tuple:
    """``g @ b^H`` and ``a^H @ g`` (the conjugate transposes: PyTorch's complex gradient).

    A matrix operand laid out by columns (``weight.T`` in ``x @ weight.T``) gets its gradient
    in that layout, as ``(b @ g^H)^H`` or ``(g^H @ a)^H``, as PyTorch's mm backward does: then
    the transpose's own gradient is the weight's C-ordered array, stored as ``.grad`` without
    a copy."""
    a, b = saved
    grad_a = grad_b = None
    if ctx.edges[0] is not None:
        if space.column_major(a) and g.ndim == 2:
            grad_a = space.mH(space.matmul(b, space.mH(g)))
        else:
            grad_a = space.matmul(g, space.mH(b))
    if ctx.edges[1] is not None:
        if space.column_major(b) and g.ndim == 2:
            grad_b = space.mH(space.matmul(space.mH(g), a))
        else:
            grad_b = space.matmul(space.mH(a), g)
    return grad_a, grad_b


_MATMUL = OpDef(
    "matmul",
    _matmul_forward,
    None,
    rule=_matmul_rule,
    promote=COMMON,
    saves=SAVE_INPUTS,
    node_name="MmBackward0",
)


def _dtype_error(a: Tensor, b: Tensor, kind: str) -> RuntimeError:
    """PyTorch's error for operands of two dtypes, in the words of the kernel ``kind`` (the
    matrix product "mm", batched "bmm", "dot", matrix-vector "mv" or "tensordot") reached."""
    from .._dtype import SCALAR_TYPE_NAMES
    from .binary import _c_name

    first, second = SCALAR_TYPE_NAMES[a._data.dtype.name], SCALAR_TYPE_NAMES[b._data.dtype.name]
    if kind == "mm":
        return RuntimeError(
            f"expected m1 and m2 to have the same dtype, but got: {_c_name(a)} != {_c_name(b)}"
        )
    if kind == "bmm":
        return RuntimeError(f"expected scalar type {first} but found {second}")
    if kind == "dot":
        return RuntimeError(
            f"dot : expected both vectors to have same dtype, but found {first} and {second}"
        )
    if kind == "mv":
        return RuntimeError(
            f"addmv input tensors must have the same dtype, but got {second}, {first}, and {second}"
        )
    return RuntimeError("both inputs should have same dtype")


def _shape_error(a: Tensor, b: Tensor) -> RuntimeError:
    return RuntimeError(
        f"mat1 and mat2 shapes cannot be multiplied ({'x'.join(map(str, a.shape))} and "
        f"{'x'.join(map(str, b.shape))})"
    )


def matmul(input: Tensor, other: Tensor) -> Tensor:
    """Matrix product with NumPy's rules: 1-D operands are vectors, leading dims broadcast."""
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise TypeError(
            f"matmul(): arguments must be Tensors, got {type(input).__name__} and "
            f"{type(other).__name__}"
        )
    a_ndim, b_ndim = input._data.ndim, other._data.ndim
    if a_ndim == 0 or b_ndim == 0:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {a_ndim}D and {b_ndim}D"
        )
    if a_ndim == 1 and b_ndim == 1:
        return dot(input, other)
    if input._data.dtype != other._data.dtype:
        if b_ndim == 1:
            raise _dtype_error(input, other, "mv")
        raise _dtype_error(input, other, "mm" if b_ndim == 2 else "bmm")
    a_squeeze = a_ndim == 1
    b_squeeze = b_ndim == 1
    a = input.unsqueeze(0) if a_squeeze else input
    b = other.unsqueeze(-1) if b_squeeze else other
    if a._data.shape[-1] != b._data.shape[-2]:
        if other.ndim <= 2:  # PyTorch folds the batch dims of a into rows here
            rows = 1
            for n in a.shape[:-1]:
                rows *= n
            raise RuntimeError(
                f"mat1 and mat2 shapes cannot be multiplied ({rows}x{a.shape[-1]} and "
                f"{'x'.join(map(str, b.shape))})"
            )
        batch = broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2]))
        expected = ", ".join(map(str, (*batch, a.shape[-1])))
        got = ", ".join(map(str, (*batch, b.shape[-2])))
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{expected}] but "
            f"got: [{got}]. (matmul of shapes {list(input.shape)} and {list(other.shape)})"
        )
    if a._data.ndim > 2 or b._data.ndim > 2:
        _check_batch_broadcast(a, b)
    out = apply(_MATMUL, a, b)
    if a_squeeze:
        out = out.squeeze(-2)
    if b_squeeze:
        out = out.squeeze(-1)
    return out


def _check_batch_broadcast(a: Tensor, b: Tensor) -> None:
    batch_a, batch_b = tuple(a.shape[:-2]), tuple(b.shape[:-2])
    for x, y in zip(reversed(batch_a), reversed(batch_b), strict=False):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(
                f"The size of tensor a ({x}) must match the size of tensor b ({y}) at "
                f"non-singleton dimension (batch dims {list(batch_a)} and {list(batch_b)})"
            )


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """Product of two matrices (2-D only)."""
    if input.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(
            f"mm(): expected 2-D tensors, got {input.ndim}-D and {mat2.ndim}-D (shapes "
            f"{list(input.shape)} and {list(mat2.shape)})"
        )
    if input.shape[1] != mat2.shape[0]:
        raise _shape_error(input, mat2)
    if input._data.dtype != mat2._data.dtype:
        raise _dtype_error(input, mat2, "mm")
    return apply(_MATMUL, input, mat2)


def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """Batched product of (b, n, m) and (b, m, p) tensors."""
    if input.ndim != 3 or mat2.ndim != 3:
        raise RuntimeError(
            f"batch1 must be a 3D tensor and batch2 must be a 3D tensor (got shapes "
            f"{list(input.shape)} and {list(mat2.shape)})"
        )
    if input.shape[0] != mat2.shape[0] or input.shape[2] != mat2.shape[1]:
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: "
            f"[{input.shape[0]}, {input.shape[2]}] but got: [{mat2.shape[0]}, {mat2.shape[1]}]."
        )
    if input._data.dtype != mat2._data.dtype:
        raise _dtype_error(input, mat2, "bmm")
    return apply(_MATMUL, input, mat2)


def mv(input: Tensor, vec: Tensor) -> Tensor:
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(
            f"vector + matrix @ vector expected, got {input.ndim}, {vec.ndim} dimensional "
            f"inputs (shapes {list(input.shape)} and {list(vec.shape)})"
        )
    if input.shape[1] != vec.shape[0]:
        raise RuntimeError(
            f"size mismatch, got input ({input.shape[0]}), mat ({input.shape[0]}x"
            f"{input.shape[1]}), vec ({vec.shape[0]})"
        )
    return matmul(input, vec)


def dot(input: Tensor, other: Tensor) -> Tensor:
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    if input.shape[0] != other.shape[0]:
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{input.shape[0]}] and src "
            f"[{other.shape[0]}] to have the same number of elements, but got "
            f"{input.shape[0]} and {other.shape[0]} elements respectively"
        )
    if input._data.dtype != other._data.dtype:
        raise _dtype_error(input, other, "dot")
    return apply(_MATMUL, input.unsqueeze(0), other.unsqueeze(1)).reshape(())


inner_product = dot


def vdot(input: Tensor, other: Tensor) -> Tensor:
    return dot(input.conj() if input.is_complex() else input, other)


def outer(input: Tensor, vec2: Tensor) -> Tensor:
    if input.ndim != 1 or vec2.ndim != 1:
        raise RuntimeError(f"outer: expected 1-D tensors, got {input.ndim}-D and {vec2.ndim}-D")
    return input.unsqueeze(1) * vec2.unsqueeze(0)


ger = outer


def tensordot(a: Tensor, b: Tensor, dims: Any = 2) -> Tensor:
    """Sum products over the last ``dims`` dims of ``a`` and the first of ``b`` (or given lists)."""
    if a._data.dtype != b._data.dtype:
        raise _dtype_error(a, b, "tensordot")
    if isinstance(dims, Tensor):  # a 0-d tensor is a count; otherwise the lists of dims
        dims = dims.item() if dims.ndim == 0 else dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        dims_a = list(range(a.ndim - dims, a.ndim))
        dims_b = list(range(dims))
    else:
        dims_a, dims_b = ([d] if isinstance(d, int) else list(d) for d in dims)
    dims_a = [d % a.ndim for d in dims_a]
    dims_b = [d % b.ndim for d in dims_b]
    for da, db in zip(dims_a, dims_b, strict=True):
        if a.shape[da] != b.shape[db]:
            raise RuntimeError(
                f"contracted dimensions need to match, but first has size {a.shape[da]} in dim "
                f"{da} and second has size {b.shape[db]} in dim {db}"
            )
    free_a = [d for d in range(a.ndim) if d not in dims_a]
    free_b = [d for d in range(b.ndim) if d not in dims_b]
    k = 1
    for d in dims_a:
        k *= a.shape[d]
    rows = math.prod(a.shape[d] for d in free_a)
    cols = math.prod(b.shape[d] for d in free_b)
    left = a.permute(free_a + dims_a).reshape(rows, k)
    right = b.permute(dims_b + free_b).reshape(k, cols)
    shape = [a.shape[d] for d in free_a] + [b.shape[d] for d in free_b]
    return matmul(left, right).reshape(shape)


def einsum(equation: str, *operands: Any) -> Tensor:
    """Einstein summation, built from permute, multiply-and-sum, and matmul, so it is
    differentiable to any order."""
    from .einsum import einsum as run

    if len(operands) == 1 and isinstance(operands[0], list | tuple):
        operands = tuple(operands[0])
    return run(equation, operands)


def _add_scaled(input: Tensor, product: Tensor, beta: Any, alpha: Any) -> Tensor:
    """``beta * input + alpha * product``; with ``beta`` 0 the input (NaN included) is ignored,
    as in PyTorch, though its shape must still broadcast to the product's."""
    broadcast_shapes(tuple(input.shape), tuple(product.shape))
    scaled = product if alpha == 1 else product * alpha
    if beta == 0:
        return scaled.expand(broadcast_shapes(tuple(input.shape), tuple(product.shape)))
    return scaled + (input if beta == 1 else input * beta)


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)``."""
    return _add_scaled(input, mm(mat1, mat2), beta, alpha)


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * (mat @ vec)``."""
    return _add_scaled(input, mv(mat, vec), beta, alpha)


def addbmm(
    input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1
) -> Tensor:
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``."""
    return _add_scaled(input, bmm(batch1, batch2).sum(0), beta, alpha)


def baddbmm(
    input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1
) -> Tensor:
    """``beta * input + alpha * (batch1 @ batch2)``, batch by batch."""
    return _add_scaled(input, bmm(batch1, batch2), beta, alpha)


def kron(input: Tensor, other: Tensor) -> Tensor:
    """The Kronecker product: every element of ``input`` times a block ``other``."""
    ndim = max(input.ndim, other.ndim)
    a_shape = (1,) * (ndim - input.ndim) + tuple(input.shape)
    b_shape = (1,) * (ndim - other.ndim) + tuple(other.shape)
    a = input.reshape([n for size in a_shape for n in (size, 1)])
    b = other.reshape([n for size in b_shape for n in (1, size)])
    return (a * b).reshape([x * y for x, y in zip(a_shape, b_shape, strict=True)])


def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    """The cross product of 3-vectors along ``dim`` (by default the first dim of size 3)."""
    from ..tensor import normalize_dim
    from .shape import cat, narrow

    if input.ndim != other.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    if dim is None:
        if 3 not in input.shape:
            raise RuntimeError("no dimension of size 3 in input")
        dim = list(input.shape).index(3)
    d = normalize_dim(dim, max(input.ndim, 1))
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise RuntimeError(
            f"linalg.cross: inputs dimension {dim} must have length 3. Got {input.shape[d]} "
            f"and {other.shape[d]}"
        )
    shape = broadcast_shapes(tuple(input.shape), tuple(other.shape))
    a = [narrow(input.expand(shape), d, i, 1) for i in range(3)]
    b = [narrow(other.expand(shape), d, i, 1) for i in range(3)]
    parts = [a[(i + 1) % 3] * b[(i + 2) % 3] - a[(i + 2) % 3] * b[(i + 1) % 3] for i in range(3)]
    return cat(parts, d)


def det(input: Tensor) -> Tensor:
    """``tk.linalg.det``."""
    from ..linalg import det as linalg_det

    return linalg_det(input)


def inverse(input: Tensor) -> Tensor:
    """``tk.linalg.inv``."""
    from ..linalg import inv

    return inv(input)


def inner(input: Tensor, other: Tensor) -> Tensor:
    """Sum of products over the last dims of ``input`` and ``other`` (a product if one is 0-d)."""
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(
            "inner() the last dimension must match on both input tensors but got shapes "
            f"{list(input.shape)} and {list(other.shape)}"
        )
    return tensordot(input, other, dims=([-1], [-1]))


def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * outer(vec1, vec2)``."""
    for name, vec in (("vec1", vec1), ("vec2", vec2)):
        if vec.ndim != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {vec.ndim}-D")
    product = outer(vec1, vec2)
    return _add_scaled(input.expand(product.shape), product, beta, alpha)


def slogdet(input: Tensor) -> Any:
    """``tk.linalg.slogdet``: (sign, logabsdet)."""
    from ..linalg import slogdet as linalg_slogdet

    return linalg_slogdet(input)


def logdet(input: Tensor) -> Tensor:
    """The log of the determinant: NaN where it is negative, -inf where it is 0 (complex:
    log|det| + i arg det, differentiable through both)."""
    sign, logabsdet = slogdet(input)
    return (sign if sign.is_complex() else sign.detach()).log() + logabsdet


def cholesky(input: Tensor, upper: bool = False) -> Tensor:
    """``tk.linalg.cholesky``."""
    from ..linalg import cholesky as linalg_cholesky

    return linalg_cholesky(input, upper=upper)


def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """``tk.linalg.pinv`` with ``rtol=rcond``."""
    from ..linalg import pinv

    return pinv(input, rtol=rcond)


def matrix_power(input: Tensor, n: int) -> Tensor:
    """``tk.linalg.matrix_power``."""
    from ..linalg import matrix_power as linalg_matrix_power

    return linalg_matrix_power(input, n)


def matrix_exp(input: Tensor) -> Tensor:
    """``tk.linalg.matrix_exp``."""
    from ..linalg import matrix_exp as linalg_matrix_exp

    return linalg_matrix_exp(input)


svd_result = namedtuple("svd", ["U", "S", "V"])
qr_result = namedtuple("qr", ["Q", "R"])


def svd(input: Tensor, some: bool = True, compute_uv: bool = True) -> Any:
    """``torch.svd``: (U, S, V) with ``input = U diag(S) V^H`` (V, not V^H); without
    ``compute_uv``, U and V are zero-filled (m, m) and (n, n) matrices."""
    from ..linalg import svd as linalg_svd
    from ..linalg import svdvals

    if not compute_uv:
        m, n = input.shape[-2:]
        batch = tuple(input.shape[:-2])
        s = svdvals(input)
        return svd_result(input.new_zeros(batch + (m, m)), s, input.new_zeros(batch + (n, n)))
    u, s, vh = linalg_svd(input, full_matrices=not some)
    return svd_result(u, s, vh.mH)


def qr(input: Tensor, some: bool = True) -> Any:
    """``tk.linalg.qr`` in mode ``'reduced'`` (``some``) or ``'complete'``."""
    from ..linalg import qr as linalg_qr

    return qr_result(*linalg_qr(input, "reduced" if some else "complete"))


def _check_cholesky_factor(prefix: str, L: Tensor) -> None:  # noqa: N803
    if L.ndim < 2:
        raise RuntimeError(f"{prefix}The input tensor A must have at least 2 dimensions.")
    if L.shape[-1] != L.shape[-2]:
        raise RuntimeError(
            f"{prefix}A must be batches of square matrices, but they are "
            f"{L.shape[-2]} by {L.shape[-1]} matrices"
        )


def cholesky_solve(input: Tensor, input2: Tensor, upper: bool = False) -> Tensor:
    """The solution X of ``A X = input`` where ``A = L L^H`` (``U^H U`` if ``upper``) and
    ``input2`` is that triangle L (or U); the other triangle is ignored."""
    from ..linalg import solve_triangular

    if input.ndim < 2:
        raise RuntimeError(
            f"b should have at least 2 dimensions, but has {input.ndim} dimensions instead"
        )
    _check_cholesky_factor("", input2)
    if input.shape[-2] != input2.shape[-1]:
        n, m = input2.shape[-1], input.shape[-2]
        raise RuntimeError(
            f"Incompatible matrix sizes for cholesky_solve: each A matrix is {n} by {n} but "
            f"each b matrix is {m} by {input.shape[-1]}"
        )
    first, second = (input2.mH, input2) if upper else (input2, input2.mH)
    y = solve_triangular(first, input, upper=False)
    return solve_triangular(second, y, upper=True)


def cholesky_inverse(input: Tensor, upper: bool = False) -> Tensor:
    """``(L L^H)^{-1}`` (``(U^H U)^{-1}`` if ``upper``) from the Cholesky factor ``input``."""
    from .creation import eye

    _check_cholesky_factor("cholesky_inverse: ", input)
    identity = eye(input.shape[-1], dtype=input.dtype, device=input.device)
    return cholesky_solve(identity, input, upper)


def lu_solve(b: Tensor, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:  # noqa: N803
    """``tk.linalg.lu_solve(LU_data, LU_pivots, b)``: X with ``A X = b`` from A's LU factors."""
    from ..linalg import lu_solve as linalg_lu_solve

    return linalg_lu_solve(LU_data, LU_pivots, b)
