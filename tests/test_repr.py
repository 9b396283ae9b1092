"""``str(tensor)`` character for character as PyTorch prints it.

Each row builds a tensor against a module ``m`` (tensorkit, then torch) from a NumPy array;
the two texts must agree once ``torch.`` reads ``tensorkit.``. The literal tests at the end
hold the common cases without PyTorch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import tensorkit as tk

NAN, INF = float("nan"), float("inf")


def _from(values: Any, dtype: str | None = None) -> Callable[[Any], Any]:
    """A builder of ``m.tensor(values, dtype=m.<dtype>)``."""
    array = np.asarray(values)
    return lambda m: m.tensor(array, dtype=getattr(m, dtype) if dtype else None)


def _arange(n: int, dtype: str, *shape: int) -> Callable[[Any], Any]:
    return _from(np.arange(n).reshape(*shape or (n,)), dtype)


CASES: dict[str, Callable[[Any], Any]] = {
    "float-pad": _from([1.5, -2.25], "float32"),
    "float-2d": _from([[1.5, -2.25], [10.125, 3.0]], "float32"),
    "float-precision": _from([1.23456789, -0.5], "float32"),
    "float-whole": _from([1.0, -2.0, 30.0], "float32"),
    "float-wraps": _from(np.arange(50) / 7, "float32"),
    "float-3d": _arange(24, "float32", 2, 3, 4),
    "float-4d": _arange(16, "float32", 2, 2, 2, 2),
    "float-sci-ratio": _arange(2000, "float32"),
    "float-ratio-1000": _arange(1001, "float32"),
    "float-sci-large": _from([1e9, 1.0, -3.5], "float32"),
    "float-1e8": _from([1e8, 2.0], "float64"),
    "float-sci-small": _from([1e-5, 1.0], "float32"),
    "float-summary-2d": _arange(3000, "float32", 30, 100),
    "float-summary-3d": _arange(5000, "float32", 10, 10, 50),
    "float-summary-wide": _from(np.linspace(-1, 1, 4000).reshape(4, 1000), "float64"),
    "zeros": _from([0.0, 0.0], "float32"),
    "negative-zero": _from([-0.0, 0.0], "float32"),
    "negative-zero-mixed": _from([-0.0, 1.5], "float32"),
    "nonfinite": _from([NAN, INF, -INF], "float32"),
    "nonfinite-whole": _from([1.0, NAN, -INF], "float32"),
    "nonfinite-fixed": _from([1.5, NAN, INF], "float32"),
    "nonfinite-sci": _from([[1e10, NAN], [-INF, 2.5]], "float32"),
    "float64": _from([1.5, 2.0], "float64"),
    "float64-suffix-wraps": _from(np.arange(40) / 3, "float64"),
    "float16": _from([0.1, 1000.0, -7.0], "float16"),
    "int": _from([1, -20, 300], "int64"),
    "int-2d": _arange(12, "int64", 3, 4),
    "int-long": _from([123456789012, -1], "int64"),
    "int-summary": _arange(2000, "int64"),
    "int-wraps": _arange(100, "int64"),
    "int32": _from([1, 2], "int32"),
    "int16": _from([-1, 2], "int16"),
    "int8": _from([[-128, 127]], "int8"),
    "uint8": _from([0, 255], "uint8"),
    "bool": _from([True, False], "bool"),
    "bool-2d": _from([[True]], "bool"),
    "bool-summary": _from(np.arange(1500) % 3 == 0, "bool"),
    "complex64": _from([1 + 2j, -3.5 - 0.5j], "complex64"),
    "complex128": _from([[1e-5 + 1j, 2 - 0.0j]], "complex128"),
    "complex-summary": _from(np.arange(2000) * (1 - 1j), "complex64"),
    "scalar-float": _from(3.5, "float32"),
    "scalar-whole": _from(3.0, "float64"),
    "scalar-int": _from(-7, "int64"),
    "scalar-bool": _from(True, "bool"),
    "scalar-complex": _from(1 - 2j, "complex64"),
    "scalar-nan": _from(NAN, "float32"),
    "empty-1d": _from(np.zeros(0), "float32"),
    "empty-2d": _from(np.zeros((0, 3)), "float32"),
    "empty-int": _from(np.zeros(0), "int64"),
    "empty-bool-3d": _from(np.zeros((2, 0, 3)), "bool"),
    "empty-float64": _from(np.zeros((0, 2)), "float64"),
}

GRAPH_CASES: dict[str, Callable[[Any], Any]] = {
    "requires-grad": lambda m: m.tensor([1.5, -2.0], requires_grad=True),
    "requires-grad-float64": lambda m: m.tensor([1.5], dtype=m.float64, requires_grad=True),
    "grad-fn": lambda m: m.tensor([1.0, 2.0], requires_grad=True) * 2,
    "grad-fn-wraps": lambda m: m.arange(24.0, requires_grad=True).reshape(4, 6) * 1.5,
}

OPTIONS: dict[str, dict[str, Any]] = {
    "precision": {"precision": 2},
    "precision-0": {"precision": 0},
    "threshold": {"threshold": 5},
    "edgeitems": {"threshold": 5, "edgeitems": 1},
    "edgeitems-0": {"threshold": 5, "edgeitems": 0},
    "linewidth": {"linewidth": 40},
    "profile-short": {"profile": "short"},
    "profile-full": {"profile": "full"},
    "short-overridden": {"profile": "short", "precision": 6},
    "sci-on": {"sci_mode": True},
    "sci-off": {"sci_mode": False},
}

OPTION_TENSORS = ["float-pad", "float-whole", "float-sci-ratio", "float-summary-2d", "int-wraps"]


@pytest.fixture
def torch() -> Iterator[Any]:
    """PyTorch, an optional oracle, with its print options restored after the test."""
    torch = pytest.importorskip("torch")
    yield torch
    torch.set_printoptions(profile="default")


@pytest.fixture(autouse=True)
def _default_printoptions() -> Iterator[None]:
    yield
    tk.set_printoptions(profile="default")


def _torch_text(tensor: Any) -> str:
    return str(tensor).replace("torch.", "tensorkit.")


@pytest.mark.parametrize("name", CASES)
def test_str_matches_torch(name: str, torch: Any) -> None:
    assert str(CASES[name](tk)) == _torch_text(CASES[name](torch))


@pytest.mark.parametrize("name", GRAPH_CASES)
def test_graph_suffixes_match_torch(name: str, torch: Any) -> None:
    assert repr(GRAPH_CASES[name](tk)) == _torch_text(GRAPH_CASES[name](torch))


@pytest.mark.parametrize("tensor", OPTION_TENSORS)
@pytest.mark.parametrize("option", OPTIONS)
def test_printoptions_match_torch(option: str, tensor: str, torch: Any) -> None:
    tk.set_printoptions(**OPTIONS[option])
    torch.set_printoptions(**OPTIONS[option])
    assert str(CASES[tensor](tk)) == _torch_text(CASES[tensor](torch))


def test_default_dtype_changes_which_dtype_is_shown(torch: Any) -> None:
    make = CASES["float64"]
    tk.set_default_dtype(tk.float64)
    torch.set_default_dtype(torch.float64)
    try:
        assert str(make(tk)) == _torch_text(make(torch)) == "tensor([1.5000, 2.0000])"
        empty = _from(np.zeros(0), "float32")
        assert str(empty(tk)) == _torch_text(empty(torch))
    finally:
        tk.set_default_dtype(tk.float32)
        torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda: tk.tensor([1.5, -2.25]), "tensor([ 1.5000, -2.2500])"),
        (
            lambda: tk.tensor([[1.5, -2.0], [10.0, 3.25]]),
            "tensor([[ 1.5000, -2.0000],\n        [10.0000,  3.2500]])",
        ),
        (lambda: tk.tensor([[True]]), "tensor([[True]])"),
        (lambda: tk.tensor([1, -20]), "tensor([  1, -20])"),
        (lambda: tk.tensor([-0.0, 0.0]), "tensor([-0., 0.])"),
        (lambda: tk.tensor([1.0, float("nan")]), "tensor([1., nan])"),
        (lambda: tk.tensor([1 + 2j]), "tensor([1.+2.j])"),
        (lambda: tk.tensor([], dtype=tk.int64), "tensor([], dtype=tensorkit.int64)"),
        (lambda: tk.zeros(0, 3), "tensor([], size=(0, 3))"),
        (
            lambda: tk.arange(8.0) * 1000,
            "tensor([   0., 1000., 2000., 3000., 4000., 5000., 6000., 7000.])",
        ),
    ],
)
def test_common_cases_print_as_pytorch(make: Callable[[], Any], expected: str) -> None:
    assert str(make()) == expected


def test_large_tensors_are_summarized_with_edge_items() -> None:
    assert str(tk.arange(2000.0)) == (
        "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n"
        "        1.9990e+03])"
    )
    assert str(tk.arange(1500)) == "tensor([   0,    1,    2,  ..., 1497, 1498, 1499])"
    assert str(tk.arange(1500).reshape(500, 3)) == (
        "tensor([[   0,    1,    2],\n"
        "        [   3,    4,    5],\n"
        "        [   6,    7,    8],\n"
        "        ...,\n"
        "        [1491, 1492, 1493],\n"
        "        [1494, 1495, 1496],\n"
        "        [1497, 1498, 1499]])"
    )


def test_long_vectors_wrap_at_the_line_width() -> None:
    assert str(tk.arange(30)) == (
        "tensor([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16, 17,\n"
        "        18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29])"
    )


def test_set_printoptions_sets_and_profile_default_restores() -> None:
    tk.set_printoptions(precision=2, threshold=5, edgeitems=2)
    assert str(tk.tensor([1.12345])) == "tensor([1.12])"
    assert str(tk.arange(10)) == "tensor([0, 1,  ..., 8, 9])"
    tk.set_printoptions(profile="default")
    assert str(tk.tensor([1.12345])) == "tensor([1.1235])"
    assert str(tk.arange(10)) == "tensor([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])"


def test_sci_mode_is_forced_and_reset_by_the_next_call() -> None:
    tk.set_printoptions(sci_mode=True)
    assert str(tk.tensor([1.5])) == "tensor([1.5000e+00])"
    tk.set_printoptions(precision=4)
    assert str(tk.tensor([1.5])) == "tensor([1.5000])"


def test_parameter_uses_the_same_printing() -> None:
    assert repr(tk.nn.Parameter(tk.tensor([1.5, -2.0]))) == (
        "Parameter containing:\ntensor([ 1.5000, -2.0000], requires_grad=True)"
    )


def test_suffixes_wrap_by_tensorkits_own_line_length() -> None:
    """PyTorch's rule on tensorkit's text: ``dtype=tensorkit.float16`` is 4 characters longer
    than ``dtype=torch.float16``, so it moves to a line of its own one step earlier."""
    assert repr(tk.full((1294,), -903.0, dtype=tk.float16)) == (
        "tensor([-903., -903., -903.,  ..., -903., -903., -903.],\n       dtype=tensorkit.float16)"
    )
