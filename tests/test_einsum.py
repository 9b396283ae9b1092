"""tk.einsum: values against NumPy, float64 gradchecks (first and second order), parity with
PyTorch (values and gradients), the one-matmul-per-pair contraction, and misuse errors."""

from __future__ import annotations

import numpy as np
import pytest
from harness import check_grads, check_torch, noncontiguous

import tensorkit as tk

# (equation, operand shapes): implicit and explicit outputs, ellipses, diagonals, scalars,
# broadcasting of size-1 dims, and chains of three or more operands.
CASES = [
    ("ij,jk", [(2, 3), (3, 4)]),
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk->ki", [(2, 3), (3, 4)]),
    ("ij->ji", [(2, 3)]),
    ("ij->", [(2, 3)]),
    ("ij", [(2, 3)]),
    ("ji", [(2, 3)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("iij->j", [(3, 3, 2)]),
    ("iji->j", [(3, 2, 3)]),
    ("i,i", [(3,), (3,)]),
    ("i,j", [(3,), (4,)]),
    ("i,i->i", [(3,), (3,)]),
    (",->", [(), ()]),
    (",i->i", [(), (3,)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bij,bjk", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,...jk", [(2, 3, 4), (4, 5)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("i...->...", [(2, 3, 4)]),
    ("...ii->...i", [(2, 3, 3)]),
    ("...,...", [(2, 3), (3,)]),
    ("ij,kj->ik", [(3, 1), (4, 3)]),
    ("ij,ij->", [(3, 1), (3, 4)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]),
    ("Ab,bA", [(2, 3), (3, 2)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("abc,cd,dbe", [(2, 3, 4), (4, 5), (5, 3, 2)]),
    ("i,i,i", [(3,), (3,), (3,)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    (" i j , j k -> i k ", [(2, 3), (3, 4)]),
]
IDS = [equation.replace(" ", "_") or "empty" for equation, _ in CASES]


def _arrays(shapes: list, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape) for shape in shapes]


@pytest.mark.parametrize(("equation", "shapes"), CASES, ids=IDS)
def test_matches_numpy(equation: str, shapes: list) -> None:
    arrays = _arrays(shapes)
    got = tk.einsum(equation, *[tk.from_numpy(a) for a in arrays])
    expected = np.einsum(equation.replace(" ", ""), *arrays)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("equation", "shapes"), CASES, ids=IDS)
def test_gradients(equation: str, shapes: list) -> None:
    check_grads(lambda *xs: tk.einsum(equation, *xs), *_arrays(shapes, seed=1))


@pytest.mark.parametrize(("equation", "shapes"), CASES, ids=IDS)
def test_matches_torch(equation: str, shapes: list) -> None:
    torch = pytest.importorskip("torch")
    check_torch(
        lambda *xs: tk.einsum(equation, *xs),
        lambda *xs: torch.einsum(equation, *xs),
        *_arrays(shapes, seed=2),
    )


def test_noncontiguous_operands() -> None:
    torch = pytest.importorskip("torch")
    a, b = _arrays([(3, 4), (4, 5)])
    check_torch(
        lambda x, y: tk.einsum("ij,jk->ik", x.mT, y),
        lambda x, y: torch.einsum("ij,jk->ik", x.mT, y),
        a.T.copy(),
        noncontiguous(b),
    )
    check_grads(lambda x: tk.einsum("ii->i", x), noncontiguous(_arrays([(3, 3)])[0]))


def test_list_of_operands_and_float32() -> None:
    a, b = (x.astype(np.float32) for x in _arrays([(2, 3), (3, 4)]))
    out = tk.einsum("ij,jk", [tk.from_numpy(a), tk.from_numpy(b)])
    assert out.dtype == tk.float32
    np.testing.assert_allclose(out.numpy(), a @ b, rtol=1e-5)


def test_integer_operands() -> None:
    a = np.arange(6).reshape(2, 3)
    b = np.arange(12).reshape(3, 4)
    out = tk.einsum("ij,jk->ik", tk.from_numpy(a), tk.from_numpy(b))
    assert out.dtype == tk.int64
    np.testing.assert_array_equal(out.numpy(), a @ b)
    assert tk.einsum("ii", tk.from_numpy(np.arange(9).reshape(3, 3))).item() == 12


@pytest.mark.parametrize(
    ("equation", "shapes", "result"),
    [
        ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)], [2, 3, 5]),
        ("ij,jk->ik", [(6, 7), (7, 8)], [6, 8]),
        ("abc,cbd->ad", [(2, 3, 4), (4, 3, 5)], [2, 5]),
        ("bij,bkj->bik", [(2, 3, 4), (2, 5, 4)], [2, 3, 5]),
    ],
)
def test_each_pair_is_one_batched_matmul(equation: str, shapes: list, result: list) -> None:
    """The contraction runs as a single matmul of the merged dims: no product of every
    operand element with every other is ever materialized."""
    operands = [tk.from_numpy(a) for a in _arrays(shapes)]
    with tk.autograd.Tape() as tape:
        out = tk.einsum(equation, *operands)
    names = [entry.name for entry in tape]
    assert names.count("matmul") == 1
    assert "mul" not in names
    largest = max(int(np.prod(info.shape)) for entry in tape for info in entry.outputs)
    assert largest == max(int(np.prod(shape)) for shape in [*shapes, result])
    assert list(out.shape) == result


def test_chain_contracts_left_to_right() -> None:
    operands = [tk.from_numpy(a) for a in _arrays([(2, 3), (3, 4), (4, 5), (5, 6)])]
    with tk.autograd.Tape() as tape:
        tk.einsum("ij,jk,kl,lm->im", *operands)
    matmuls = [entry for entry in tape if entry.name == "matmul"]
    assert [entry.outputs[0].shape for entry in matmuls] == [[2, 4], [2, 5], [2, 6]]


def test_gradient_of_repeated_subscript_is_a_diagonal() -> None:
    x = tk.from_numpy(np.arange(9.0).reshape(3, 3)).requires_grad_()
    tk.einsum("ii", x).backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.eye(3))


ERRORS = [
    ("ij,jk", [(2, 3)], RuntimeError, "fewer operands were provided than specified"),
    ("ij", [(2, 3), (3, 4)], RuntimeError, "more operands were provided than specified"),
    ("i1", [(2, 3)], RuntimeError, r"invalid subscript given at index 1 .*\[a-zA-Z\]"),
    ("ij->i>", [(2, 3)], RuntimeError, "invalid subscript given at index 5"),
    ("ij->j->i", [(2, 3)], RuntimeError, "invalid subscript given at index 5"),
    ("ij->i,j", [(2, 3)], RuntimeError, "invalid subscript given at index 5"),
    ("i.j", [(2, 3)], RuntimeError, "found '.' for operand 0 that is not part of any ellipsis"),
    ("i...j...", [(2, 3)], RuntimeError, "operand 0 for which an ellipsis was already found"),
    ("ij->.", [(2, 3)], RuntimeError, "found '.' for output that is not part of any ellipsis"),
    (
        "ijk",
        [(2, 3)],
        RuntimeError,
        r"subscripts in the equation \(3\) does not match the number of dimensions \(2\) for "
        "operand 0 and no ellipsis",
    ),
    (
        "ij,ijk...",
        [(2, 3), (2, 3)],
        RuntimeError,
        r"subscripts in the equation \(3\) is more than the number of dimensions \(2\) for "
        "operand 1",
    ),
    ("ij->ii", [(2, 3)], RuntimeError, "output subscript i appears more than once in the output"),
    ("ij->k", [(2, 3)], RuntimeError, "output subscript k does not appear in the equation"),
    (
        "ii",
        [(3, 4)],
        RuntimeError,
        "subscript i is repeated for operand 0 but the sizes don't match, 3 != 4",
    ),
    (
        "ij,jk",
        [(3, 3), (4, 3)],
        RuntimeError,
        "subscript j has size 4 for operand 1 which does not broadcast with previously seen size 3",
    ),
    (
        "...i,...i",
        [(2, 3), (4, 3)],
        RuntimeError,
        "ellipsis dimension 0 has size 4 for operand 1 which does not broadcast with "
        "previously seen size 2",
    ),
    ("", [], ValueError, "must specify the equation string and at least one operand"),
]


@pytest.mark.parametrize(("equation", "shapes", "error", "message"), ERRORS)
def test_errors(equation: str, shapes: list, error: type, message: str) -> None:
    operands = [tk.from_numpy(a) for a in _arrays(shapes)]
    with pytest.raises(error, match=message):
        tk.einsum(equation, *operands)


def test_operand_must_be_a_tensor() -> None:
    with pytest.raises(TypeError, match="operand 1 must be a Tensor, got list"):
        tk.einsum("i,i", tk.ones(2), [1.0, 2.0])
