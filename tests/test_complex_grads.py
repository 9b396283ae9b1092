"""Gradients of ops on complex tensors, first and second order: checked by finite differences
through the real and imaginary parts (no torch needed) and against PyTorch's conjugate
Wirtinger convention where PyTorch is installed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from harness import check_grads

import tensorkit as tk

RNG = np.random.default_rng(11)
A = RNG.standard_normal((3, 3)) + 1j * RNG.standard_normal((3, 3))
B = RNG.standard_normal((3, 3)) + 1j * RNG.standard_normal((3, 3))


def _setitem(lib: Any, a: Any, b: Any) -> Any:
    """Basic-index assignments into a copy of ``a``."""
    c = a * 1
    c[0] = b[1]
    c[:, 2] = b[0] * 2
    return c


def _index_put(lib: Any, a: Any, b: Any) -> Any:
    """An integer-index assignment into a copy of ``a``."""
    c = a * 1
    c[lib.tensor([0, 2])] = b[:2]
    return c


def _mask_put(lib: Any, a: Any, b: Any) -> Any:
    """A mask assignment into a copy of ``a``."""
    c = a * 1
    c[a.real > 0] = b[a.real > 0]
    return c


IDX = [[0, 2, 1], [1, 1, 0], [2, 0, 2]]  # gather/scatter indices


# name -> f(lib, a, b): a complex result from two complex 3x3 inputs.
CASES: dict[str, Callable[[Any, Any, Any], Any]] = {
    "mul": lambda lib, a, b: a * b,
    "div": lambda lib, a, b: a / b,
    "matmul": lambda lib, a, b: a @ b,
    "mv": lambda lib, a, b: lib.mv(a, b[0]),
    "dot": lambda lib, a, b: lib.dot(a[0], b[0]),
    "vdot": lambda lib, a, b: lib.vdot(a[0], b[0]),
    "outer": lambda lib, a, b: lib.outer(a[0], b[1]),
    "einsum": lambda lib, a, b: lib.einsum("ij,jk->ik", a, b),
    "tensordot": lambda lib, a, b: lib.tensordot(a, b, 1),
    "addmm": lambda lib, a, b: lib.addmm(a, a, b),
    "exp": lambda lib, a, b: a.exp() * b,
    "tanh": lambda lib, a, b: a.tanh() * b,
    "sigmoid": lambda lib, a, b: a.sigmoid() * b,
    "sqrt": lambda lib, a, b: a.sqrt() * b,
    "power": lambda lib, a, b: a**b,
    "abs": lambda lib, a, b: a.abs() + b.abs(),
    "prod": lambda lib, a, b: (a * b).prod(0),
    "angle": lambda lib, a, b: (a * b).angle(),
    "vector_norm": lambda lib, a, b: lib.linalg.vector_norm(a * b, dim=0),
    "matrix_norm": lambda lib, a, b: lib.linalg.matrix_norm(a @ b),
    "log": lambda lib, a, b: a.log() * b,
    "log2": lambda lib, a, b: a.log2() * b,
    "log10": lambda lib, a, b: a.log10() * b,
    "log1p": lambda lib, a, b: a.log1p() * b,
    "expm1": lambda lib, a, b: a.expm1() * b,
    "rsqrt": lambda lib, a, b: a.rsqrt() * b,
    "reciprocal": lambda lib, a, b: a.reciprocal() * b,
    "square": lambda lib, a, b: a.square() * b,
    "sin": lambda lib, a, b: a.sin() * b,
    "cos": lambda lib, a, b: a.cos() * b,
    "tan": lambda lib, a, b: a.tan() * b,
    "asin": lambda lib, a, b: a.asin() * b,
    "acos": lambda lib, a, b: a.acos() * b,
    "atan": lambda lib, a, b: a.atan() * b,
    "sinh": lambda lib, a, b: a.sinh() * b,
    "cosh": lambda lib, a, b: a.cosh() * b,
    "asinh": lambda lib, a, b: a.asinh() * b,
    "acosh": lambda lib, a, b: a.acosh() * b,
    "atanh": lambda lib, a, b: a.atanh() * b,
    # tensorkit's sign of a complex tensor is torch's sgn (torch.sign refuses complex).
    "sign": lambda lib, a, b: (a * b).sgn() if hasattr(a, "sgn") else (a * b).sign(),
    "conj": lambda lib, a, b: a.conj() * b,
    "real": lambda lib, a, b: (a * b).real,
    "imag": lambda lib, a, b: (a * b).imag,
    "real_imag_complex": lambda lib, a, b: lib.complex((a * b).imag, a.real),
    "neg": lambda lib, a, b: -(a * b),
    "pow_real": lambda lib, a, b: (a * b) ** 2.5,
    "pow_int": lambda lib, a, b: (a * b) ** 3,
    "pow_complex_scalar": lambda lib, a, b: (a * b) ** (0.5 + 1.5j),
    "rpow": lambda lib, a, b: 2.0**a * b,
    "add_alpha": lambda lib, a, b: lib.add(a, b, alpha=2.0 - 1.0j),
    "sub_alpha": lambda lib, a, b: lib.sub(a, b, alpha=0.5 + 2.0j),
    "rsub": lambda lib, a, b: 1.0 - 2.0j - a * b,
    "true_divide": lambda lib, a, b: lib.true_divide(a, b),
    "where": lambda lib, a, b: lib.where(a.real > 0, a, b * b),
    "lerp": lambda lib, a, b: lib.lerp(a, b, 0.3),
    "lerp_tensor": lambda lib, a, b: lib.lerp(a, b, b * a),
    "addcmul": lambda lib, a, b: lib.addcmul(a, a, b, value=0.5),
    "addcdiv": lambda lib, a, b: lib.addcdiv(a, a, b, value=0.5),
    "mul_scalar": lambda lib, a, b: a * (1.0 - 2.0j) + b / (0.5 + 1.0j),
    "sum": lambda lib, a, b: (a * b).sum(0),
    "mean": lambda lib, a, b: (a * b).mean(1),
    "prod_all": lambda lib, a, b: (a * b).prod(),
    "cumsum": lambda lib, a, b: (a * b).cumsum(1),
    "cumprod": lambda lib, a, b: (a * b).cumprod(0),
    "logsumexp": lambda lib, a, b: (a * b).logsumexp(1),
    "var": lambda lib, a, b: (a * b).var(0),
    "std": lambda lib, a, b: (a * b).std(1),
    "norm": lambda lib, a, b: (a * b).norm(),
    "norm_p3": lambda lib, a, b: lib.norm(a * b, p=3, dim=1),
    "vector_norm_inf": lambda lib, a, b: lib.linalg.vector_norm(a * b, ord=float("inf")),
    "linalg_norm": lambda lib, a, b: lib.linalg.norm(a @ b),
    "trace": lambda lib, a, b: (a @ b).trace(),
    "diff": lambda lib, a, b: lib.diff(a * b, dim=1),
    "reshape": lambda lib, a, b: (a * b).reshape(9, 1) * a.reshape(1, 9),
    "permute": lambda lib, a, b: (a * b).permute(1, 0) * a,
    "transpose": lambda lib, a, b: a.transpose(0, 1) @ b,
    "mT": lambda lib, a, b: a.mT @ b,
    "mH": lambda lib, a, b: a.mH @ b,
    "flip": lambda lib, a, b: a.flip(0) * b,
    "roll": lambda lib, a, b: a.roll(1, 1) * b,
    "cat": lambda lib, a, b: lib.cat([a, b * b], 0),
    "stack": lambda lib, a, b: lib.stack([a, b * a], 1),
    "gather": lambda lib, a, b: a.gather(1, lib.tensor(IDX)) * b,
    "scatter": lambda lib, a, b: a.scatter(1, lib.tensor([[0], [2], [1]]), b[:, :1]),
    "scatter_add": lambda lib, a, b: a.scatter_add(0, lib.tensor(IDX), b),
    "index_select": lambda lib, a, b: a.index_select(1, lib.tensor([2, 0, 0])) * b,
    "index_add": lambda lib, a, b: a.index_add(0, lib.tensor([2, 0]), b[:2]),
    "masked_fill": lambda lib, a, b: (a * b).masked_fill(a.real > 0, 1.0 + 2.0j),
    "getitem": lambda lib, a, b: a[1:, ::2] * b[:2, 1:],
    "getitem_index": lambda lib, a, b: a[lib.tensor([2, 0, 2])] * b,
    "getitem_mask": lambda lib, a, b: (a * b)[a.real > 0],
    "setitem": _setitem,
    "index_put": _index_put,
    "mask_put": _mask_put,
    "tril_triu": lambda lib, a, b: a.tril() + b.triu(1),
    "diagonal": lambda lib, a, b: (a @ b).diagonal(),
    "diag": lambda lib, a, b: lib.diag(a[0]) @ b,
    "diag_2d": lambda lib, a, b: lib.diag(a @ b),
    "repeat": lambda lib, a, b: a.repeat(2, 1) * b.repeat(2, 1),
    "expand": lambda lib, a, b: a[0].expand(3, 3) * b,
    "narrow": lambda lib, a, b: a.narrow(1, 1, 2) * b[:, :2],
    "unbind": lambda lib, a, b: a.unbind(0)[1] * b,
    "squeeze": lambda lib, a, b: a.unsqueeze(0).squeeze(0) * b,
    "bmm": lambda lib, a, b: lib.bmm(lib.stack([a, b]), lib.stack([b, a])),
    "matmul_batched": lambda lib, a, b: lib.stack([a, b]) @ b[0],
    "mm": lambda lib, a, b: lib.mm(a, b),
    "kron": lambda lib, a, b: lib.kron(a[:2, :2], b),
    "cross": lambda lib, a, b: lib.linalg.cross(a, b),
    "addmv": lambda lib, a, b: lib.addmv(a[0], a, b[1], beta=0.5, alpha=2.0),
    "baddbmm": lambda lib, a, b: lib.baddbmm(a, lib.stack([a, b]), lib.stack([b, b]), alpha=0.5),
    "addbmm": lambda lib, a, b: lib.addbmm(a, lib.stack([a, b]), lib.stack([b, b])),
    "einsum_trace": lambda lib, a, b: lib.einsum("ij,ji->", a, b),
    "einsum_outer": lambda lib, a, b: lib.einsum("i,j->ij", a[0], b[1]),
    "vecdot": lambda lib, a, b: lib.linalg.vecdot(a, b),
    "matrix_power": lambda lib, a, b: lib.linalg.matrix_power(a, 3) * b,
    "multi_dot": lambda lib, a, b: lib.linalg.multi_dot([a, b, a]),
    "fft": lambda lib, a, b: lib.fft.fft(a * b, dim=1),
    "ifft": lambda lib, a, b: lib.fft.ifft(a, norm="ortho") * b,
    "fft2": lambda lib, a, b: lib.fft.fft2(a @ b),
    "ifftn": lambda lib, a, b: lib.fft.ifftn(a * b),
    "irfft": lambda lib, a, b: lib.fft.irfft(a * b, n=4),
    "hfft": lambda lib, a, b: lib.fft.hfft(a * b),
    "fftshift": lambda lib, a, b: lib.fft.fftshift(a) * b,
    "linear": lambda lib, a, b: lib.nn.functional.linear(a, b, a[0]),
    "lerp_complex_weight": lambda lib, a, b: lib.lerp(a, b, 0.3 + 0.4j),
    "exp2": lambda lib, a, b: a.exp2() * b,
    "nansum": lambda lib, a, b: lib.nansum(a * b, 0),
    "nanmean": lambda lib, a, b: lib.nanmean(a * b, 1),
    "var_mean": lambda lib, a, b: lib.var_mean(a * b, 0)[0] * lib.var_mean(a * b, 0)[1],
    "nan_to_num": lambda lib, a, b: lib.nan_to_num(a * b),
    "take": lambda lib, a, b: lib.take(a, lib.tensor([8, 0, 4])) * b,
    "take_along_dim": lambda lib, a, b: lib.take_along_dim(a, lib.tensor(IDX), 1) * b,
    "index_copy": lambda lib, a, b: a.index_copy(0, lib.tensor([2, 0]), b[:2]),
    "index_fill": lambda lib, a, b: (a * b).index_fill(1, lib.tensor([1]), 2.0 - 1.0j),
    "masked_scatter": lambda lib, a, b: a.masked_scatter(a.real > 0, b),
    "masked_select": lambda lib, a, b: lib.masked_select(a * b, b.real > 0),
    "scatter_reduce_sum": lambda lib, a, b: a.scatter_reduce(0, lib.tensor(IDX), b, "sum"),
    "tile": lambda lib, a, b: a.tile((1, 2)) * b.tile((1, 2)),
    "rot90": lambda lib, a, b: lib.rot90(a) * b,
    "movedim": lambda lib, a, b: lib.movedim(a, 0, 1) @ b,
    "flatten": lambda lib, a, b: a.flatten() * b.flatten().flip(0),
    "split": lambda lib, a, b: a.split([1, 2], 0)[1] * b[1:],
    "chunk": lambda lib, a, b: a.chunk(3, 1)[2] * b,
    "broadcast_to": lambda lib, a, b: lib.broadcast_to(a[:, :1], (3, 3)) * b,
    "repeat_interleave": lambda lib, a, b: a.repeat_interleave(2, 0) * b.repeat(2, 1),
    "diag_embed": lambda lib, a, b: lib.diag_embed(a * b),
    "hstack": lambda lib, a, b: lib.hstack([a, b]),
    "ger": lambda lib, a, b: lib.ger(a[0], b[2]),
    "tensordot_dims": lambda lib, a, b: lib.tensordot(a, b, dims=([0, 1], [1, 0])),
    "clone": lambda lib, a, b: a.clone() * b.contiguous(),
    "to_complex": lambda lib, a, b: a.real.to(lib.complex128) * b + a.imag.to(b.dtype),
    "vander": lambda lib, a, b: lib.linalg.vander(a[0] * b[0]),
    "householder_product": lambda lib, a, b: lib.linalg.householder_product(a, b[0, :2]),
    "linalg_diagonal": lambda lib, a, b: lib.linalg.diagonal(a @ b),
    "rfftn_of_real": lambda lib, a, b: lib.fft.rfftn((a * b).real),
    "ihfft_of_real": lambda lib, a, b: lib.fft.ihfft((a * b).imag),
    "conv2d": lambda lib, a, b: lib.nn.functional.conv2d(a[None, None], b[None, None, :2, :2]),
    "pad": lambda lib, a, b: lib.nn.functional.pad(a * b, (1, 2)),
    "pixel_shuffle": lambda lib, a, b: lib.nn.functional.pixel_shuffle(
        lib.stack([a, b, a * b, b * b])[None], 2
    ),
    "unfold": lambda lib, a, b: lib.nn.functional.unfold((a * b)[None, None], 2),
    "normalize": lambda lib, a, b: lib.nn.functional.normalize(a * b),
    "l1_loss": lambda lib, a, b: lib.nn.functional.l1_loss(a, b),
    "pairwise_distance": lambda lib, a, b: lib.nn.functional.pairwise_distance(a, b),
    "softsign": lambda lib, a, b: lib.nn.functional.softsign(a * b),
    "tanhshrink": lambda lib, a, b: lib.nn.functional.tanhshrink(a * b),
    "rms_norm": lambda lib, a, b: lib.nn.functional.rms_norm(a * b, (3,)),
}

# Ops PyTorch refuses on complex inputs (or cannot differentiate there): finite differences only.
TORCH_REFUSES = {"nansum", "nanmean", "nan_to_num", "scatter_reduce_sum"}


def loss(lib: Any, fn: Callable, a: Any, b: Any) -> Any:
    """A real scalar of ``fn``'s result (|y|^2 summed)."""
    y = fn(lib, a, b)
    return (y * y.conj()).real.sum() if y.is_complex() else (y * y).sum()


@pytest.mark.parametrize("name", CASES)
def test_complex_gradients_by_finite_differences(name):
    def real_loss(re_a, im_a, re_b, im_b):
        return loss(tk, CASES[name], tk.complex(re_a, im_a), tk.complex(re_b, im_b))

    check_grads(real_loss, A.real.copy(), A.imag.copy(), B.real.copy(), B.imag.copy())


def gradients(lib: Any, name: str) -> list[np.ndarray]:
    """The first-order gradients and the gradient of their squared size, in ``lib``."""
    a = lib.tensor(A, requires_grad=True)
    b = lib.tensor(B, requires_grad=True)
    grads = lib.autograd.grad(loss(lib, CASES[name], a, b), (a, b), create_graph=True)
    size = sum((g.abs() ** 2).sum() for g in grads)
    (second,) = lib.autograd.grad(size, a)
    return [np.asarray(g.detach().tolist()) for g in (*grads, second)]


@pytest.mark.parametrize("name", sorted(set(CASES) - TORCH_REFUSES))
def test_complex_gradients_match_torch(name):
    torch = pytest.importorskip("torch")
    for ours, theirs in zip(gradients(tk, name), gradients(torch, name), strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-8, atol=1e-10)


def test_complex_keeps_infinite_nan_and_signed_zero_parts():
    """tk.complex places its parts as they are (as torch.complex), not as re + 1j * im."""
    torch = pytest.importorskip("torch")
    inf, nan = float("inf"), float("nan")
    real, imag = [inf, 0.0, nan, -inf, 1.5], [nan, -0.0, 0.0, inf, -2.0]
    for dtype in ("float32", "float64"):
        ours = tk.complex(
            tk.tensor(real, dtype=getattr(tk, dtype)), tk.tensor(imag, dtype=getattr(tk, dtype))
        )
        theirs = torch.complex(
            torch.tensor(real, dtype=getattr(torch, dtype)),
            torch.tensor(imag, dtype=getattr(torch, dtype)),
        )
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        mine, reference = ours.numpy(), theirs.numpy()
        np.testing.assert_array_equal(mine, reference)
        np.testing.assert_array_equal(np.signbit(mine.imag), np.signbit(reference.imag))
    broadcast = tk.complex(tk.tensor([[1.0], [2.0]]), tk.tensor([3.0, 4.0, 5.0]))
    assert tuple(broadcast.shape) == (2, 3) and broadcast[1, 2].item() == 2 + 5j
