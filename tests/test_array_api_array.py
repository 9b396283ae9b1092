"""tk.array_api's array object against the standard (2024.12): the Array type its functions
return, operators that promote by the standard's table whatever the dimensions (tk.Tensor
keeps PyTorch's rules), indexing with negative-step slices and empty boolean masks, and the
smaller items: ``eye`` with a huge ``k``, ``vector_norm`` over no axes, the set functions on
complex input and ``__dlpack__``'s keywords."""

from __future__ import annotations

import copy
import inspect
import operator
import pickle

import numpy as np
import pytest

import tensorkit as tk

xp = tk.array_api
strict = pytest.importorskip("array_api_strict")

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8"]
DTYPES += ["float32", "float64", "complex64", "complex128"]


def strict_name(dtype: object) -> str:
    return str(dtype).split(".")[-1]


# --------------------------------------------------------------------------- the type
def test_functions_return_arrays_that_are_tensors():
    x = xp.asarray([1.0, 2.0])
    assert type(x) is xp.Array and isinstance(x, tk.Tensor)
    assert x.__array_namespace__() is xp
    for made in (xp.zeros(2), xp.arange(3), xp.eye(2), xp.sum(x), x + 1, -x, x[0], x[::-1]):
        assert type(made) is xp.Array
    values, counts = xp.unique_counts(x)
    assert type(values) is xp.Array and type(counts) is xp.Array
    assert type(xp.linalg.inv(xp.eye(2))) is xp.Array
    assert type(xp.fft.fft(x)) is xp.Array
    assert type(xp.eye(2, 3).mT) is xp.Array and type(xp.eye(2, 3).T) is xp.Array


def test_plain_tensors_stay_plain():
    t = tk.tensor([1.0, 2.0])
    assert type(xp.asarray(t)) is tk.Tensor and xp.asarray(t) is t
    assert type(xp.sum(t)) is tk.Tensor
    assert type(tk.fft.fft(t)) is tk.Tensor  # tk.fft is built on the fft extension
    assert type(t + xp.asarray(1.0)) is xp.Array  # an Array operand takes over (a subclass)


def test_an_input_returned_as_is_stays_a_tensor():
    """A function returning its plain-tensor argument next to an Array gives a view."""
    t = tk.tensor([1.0, 2.0])
    stacked = xp.broadcast_arrays(t, xp.asarray([3.0, 4.0]))
    assert type(t) is tk.Tensor
    assert all(type(s) is xp.Array for s in stacked)
    np.testing.assert_array_equal(stacked[0].numpy(), [1.0, 2.0])


def test_gradients_flow_through_arrays_and_operators():
    x = xp.asarray([1.0, 2.0, 3.0])
    x.requires_grad_()
    y = xp.sum(x[::-1] * xp.asarray([1.0, 10.0, 100.0]) + x**2)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [100 + 2, 10 + 4, 1 + 6])


def test_arrays_pickle_and_copy_as_arrays():
    x = xp.asarray([[1.0, 2.0], [3.0, 4.0]])
    for copied in (pickle.loads(pickle.dumps(x)), copy.deepcopy(x)):
        assert type(copied) is xp.Array and copied is not x
        np.testing.assert_array_equal(copied.numpy(), x.numpy())
        assert (copied[::-1] + xp.asarray(1, dtype=xp.int64)).dtype == xp.float32


def test_t_needs_a_matrix():
    with pytest.raises(ValueError, match=r"x.T needs a 2-D array, got 3-D; use x.mT"):
        xp.zeros((2, 2, 2)).T


# ----------------------------------------------------------------------- promotion
BINARY = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
    "**": operator.pow,
    "&": operator.and_,
    "|": operator.or_,
    "^": operator.xor,
    "<<": operator.lshift,
    ">>": operator.rshift,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}


def _strict_result(op, first: str, second: str, shapes: tuple) -> str | None:
    """array-api-strict's result dtype of ``op`` on these dtypes and shapes (None where it
    refuses the pair)."""
    a = strict.ones(shapes[0], dtype=getattr(strict, first))
    b = strict.ones(shapes[1], dtype=getattr(strict, second))
    try:
        with np.errstate(all="ignore"):
            return strict_name(op(a, b).dtype)
    except (TypeError, ValueError):
        return None


@pytest.mark.parametrize("symbol", BINARY)
@pytest.mark.parametrize("shapes", [((2,), ()), ((), (2,)), ((), ()), ((2,), (2,))])
def test_operators_promote_as_the_standard_whatever_the_dimensions(symbol, shapes):
    op = BINARY[symbol]
    checked = 0
    for first in DTYPES:
        for second in DTYPES:
            expected = _strict_result(op, first, second, shapes)
            if expected is None:
                continue
            a = xp.ones(shapes[0], dtype=getattr(xp, first))
            b = xp.ones(shapes[1], dtype=getattr(xp, second))
            assert op(a, b).dtype.name == expected, (symbol, first, second, shapes)
            checked += 1
    assert checked >= 10


def test_the_issue_examples():
    a, b = xp.asarray(3, dtype=xp.int64), xp.asarray([1, 2], dtype=xp.int8)
    assert (a + b).dtype == xp.int64 and (b + a).dtype == xp.int64
    for op in (operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift):
        assert op(b, a).dtype == xp.int64
    for op in (operator.mul, operator.sub, operator.floordiv, operator.pow):
        assert op(b, a).dtype == xp.int64
    half = xp.asarray([1.0], dtype=xp.float32) / xp.asarray(2.0, dtype=xp.float64)
    assert half.dtype == xp.float64
    c64 = xp.asarray([1 + 1j], dtype=xp.complex64)
    c128 = xp.asarray(2j, dtype=xp.complex128)
    assert (c64 * c128).dtype == xp.complex128 and (c128 - c64).dtype == xp.complex128


def test_tk_tensor_keeps_torch_promotion():
    torch = pytest.importorskip("torch")
    ours = tk.tensor([1, 2], dtype=tk.int8) + tk.tensor(3)
    theirs = torch.tensor([1, 2], dtype=torch.int8) + torch.tensor(3)
    assert ours.dtype == tk.int8 and str(theirs.dtype) == "torch.int8"
    assert (tk.tensor([1.0]) * tk.tensor(2.0, dtype=tk.float64)).dtype == tk.float32


def test_operators_with_python_scalars():
    x = xp.asarray([1, 2], dtype=xp.int8)
    assert (x + 1).dtype == xp.int8 and (1 + x).dtype == xp.int8
    assert (2**x).tolist() == [2, 4] and (10 - x).tolist() == [9, 8]
    assert (xp.asarray([1.0], dtype=xp.float32) * 2.5).dtype == xp.float32
    assert operator.lt(3, x).tolist() == [False, False] and (x == 2).tolist() == [False, True]
    assert (x == "text") is False  # not an operand: Python's own comparison


def test_unary_operators_keep_the_array_type():
    x = xp.asarray([1, -2], dtype=xp.int16)
    assert type(-x) is xp.Array and (-x).tolist() == [-1, 2]
    assert (+x).tolist() == [1, -2] and abs(x).tolist() == [1, 2] and (~x).tolist() == [-2, 1]


def test_in_place_operators_keep_dtype_and_shape():
    x = xp.asarray([1, 2], dtype=xp.int64)
    before = x
    x += xp.asarray(3, dtype=xp.int8)
    x *= 2
    assert x is before and x.tolist() == [8, 10] and x.dtype == xp.int64
    y = xp.asarray([1.0, -2.0])
    y //= xp.asarray(float("inf"))
    assert y.tolist() == [0.0, -0.0] and np.signbit(y.numpy()[1])
    with pytest.raises(
        TypeError,
        match=r"x1 \+= x2 would change x1's dtype from "
        r"tensorkit.int8 to tensorkit.int64",
    ):
        small = xp.asarray([1], dtype=xp.int8)
        small += xp.asarray(1, dtype=xp.int64)
    with pytest.raises(
        ValueError,
        match=r"x1 \*= x2 would change x1's shape from \(2,\) to "
        r"\(3, 2\)",
    ):
        z = xp.asarray([1.0, 2.0])
        z *= xp.ones((3, 2))


def test_in_place_operator_on_a_tensor_with_history_keeps_gradients():
    x = xp.asarray([1.0, 2.0])
    x.requires_grad_()
    y = x * 1
    y *= x  # y = x * x
    xp.sum(y).backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])


# ------------------------------------------------------------------------- indexing
@pytest.mark.parametrize(
    "key",
    [
        slice(None, None, -1),
        slice(5, 1, -2),
        slice(-1, -11, -3),
        slice(None, 3, -1),
        slice(2, None, -1),
        slice(100, -100, -7),
        slice(1, 5, -1),  # empty
        slice(None, None, -20),
    ],
    ids=str,
)
def test_getitem_with_a_negative_step(key):
    values = np.arange(10)
    np.testing.assert_array_equal(xp.asarray(values)[key].numpy(), values[key])


def test_negative_steps_with_other_indices():
    values = np.arange(60).reshape(3, 4, 5)
    x = xp.asarray(values)
    for key in [
        (slice(None, None, -1), 1),
        (Ellipsis, slice(None, None, -2)),
        (0, slice(3, 0, -1), slice(None, None, -2)),
        (None, slice(None, None, -1), Ellipsis, 2),
        (slice(None, None, -1), np.array([2, 0])),
        (np.array([True, False, True]), slice(None, None, -1)),
    ]:
        tk_key = tuple(xp.asarray(k) if isinstance(k, np.ndarray) else k for k in key)
        np.testing.assert_array_equal(x[tk_key].numpy(), values[key], err_msg=str(key))


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (slice(None, None, -1), np.arange(10) * 10),
        (slice(5, 1, -2), np.array([50, 30])),
        (slice(8, 2, -3), 7),
        (slice(None, None, -4), np.array([1])),  # broadcast
    ],
    ids=str,
)
def test_setitem_with_a_negative_step(key, value):
    expected = np.zeros(10, dtype=np.int64)
    expected[key] = value
    x = xp.zeros(10, dtype=xp.int64)
    x[key] = xp.asarray(value) if isinstance(value, np.ndarray) else value
    np.testing.assert_array_equal(x.numpy(), expected)


def test_setitem_with_negative_steps_in_two_dimensions():
    expected = np.zeros((3, 4))
    value = np.arange(6.0).reshape(3, 2)
    expected[::-1, 3:0:-2] = value
    x = xp.zeros((3, 4))
    x[::-1, 3:0:-2] = xp.asarray(value)
    np.testing.assert_array_equal(x.numpy(), expected)


def test_setitem_negative_step_with_an_array_index_is_refused():
    x = xp.zeros((3, 3))
    with pytest.raises(IndexError, match="a slice with a negative step cannot be combined"):
        x[::-1, xp.asarray([0, 1])] = 1.0


def test_tk_tensor_keeps_refusing_negative_steps_as_torch():
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError) as theirs:
        torch.arange(3)[::-1]
    with pytest.raises(ValueError, match=f"^{theirs.value}$"):
        tk.arange(3)[::-1]
    with pytest.raises(ValueError, match=f"^{theirs.value}$"):
        t = tk.arange(3)
        t[::-1] = 0


@pytest.mark.parametrize(
    ("shape", "mask_shape"),
    [((0,), (0,)), ((0, 3), (0,)), ((2, 0), (2, 0)), ((3, 0), (3,)), ((0, 0), (0,))],
)
def test_boolean_masks_on_empty_dimensions(shape, mask_shape):
    values = np.zeros(shape)
    mask = np.zeros(mask_shape, dtype=bool)
    x = xp.asarray(values)
    got = x[xp.asarray(mask)]
    assert tuple(got.shape) == values[mask].shape and type(got) is xp.Array
    x[xp.asarray(mask)] = 1.0
    assert tuple(x.shape) == shape
    got = x[..., xp.zeros(shape[-1:], dtype=xp.bool)]
    assert tuple(got.shape) == values[..., np.zeros(shape[-1:], dtype=bool)].shape


# ---------------------------------------------------------------------- the smaller items
@pytest.mark.parametrize("k", [2**63, 2**70, -(2**70), 10**30, 3, -2])
def test_eye_with_a_huge_k_is_all_zeros(k):
    np.testing.assert_array_equal(xp.eye(2, 3, k=k).numpy(), np.eye(2, 3, k=k))
    assert xp.eye(2, 3, k=k).dtype == xp.float32


@pytest.mark.parametrize("ord", [2, 1, 0, 3.5, float("inf"), -float("inf"), -1])
def test_vector_norm_over_no_axes_matches_array_api_strict(ord):
    values = np.array([[3.0, -4.0], [0.0, 2.0]])
    with np.errstate(divide="ignore"):  # NumPy's 0 ** -1 on the way to the same |x|
        theirs = strict.linalg.vector_norm(strict.asarray(values), axis=(), ord=ord)
    ours = xp.linalg.vector_norm(xp.asarray(values), axis=(), ord=ord)
    np.testing.assert_allclose(ours.numpy(), np.asarray(theirs), rtol=1e-15)
    complex_norm = xp.linalg.vector_norm(xp.asarray([3 + 4j], dtype=xp.complex128), axis=())
    assert complex_norm.dtype == xp.float64 and complex_norm.tolist() == [5.0]


COMPLEX = [1 + 2j, 1 + 1j, 1 + 2j, complex(np.nan, 0), 2 - 1j, 1 + 1j, -1 + 5j]


@pytest.mark.parametrize("name", ["unique_all", "unique_counts", "unique_inverse", "unique_values"])
def test_set_functions_on_complex_input_match_array_api_strict(name):
    for dtype in ("complex64", "complex128"):
        ours = getattr(xp, name)(xp.asarray(COMPLEX, dtype=getattr(xp, dtype)))
        theirs = getattr(strict, name)(strict.asarray(COMPLEX, dtype=getattr(strict, dtype)))
        ours = ours if isinstance(ours, tuple) else (ours,)
        theirs = theirs if isinstance(theirs, tuple) else (theirs,)
        for mine, reference in zip(ours, theirs, strict=True):
            np.testing.assert_array_equal(mine.numpy(), np.asarray(reference))
            assert mine.dtype.name == strict_name(reference.dtype)


def test_dlpack_has_the_standard_keywords():
    parameters = inspect.signature(tk.Tensor.__dlpack__).parameters
    assert list(parameters) == ["self", "stream", "max_version", "dl_device", "copy"]
    assert all(parameters[n].kind is inspect.Parameter.KEYWORD_ONLY for n in list(parameters)[1:])
    x = xp.asarray([1.0, 2.0])
    for keywords in [
        {},
        {"stream": None},
        {"max_version": (1, 0)},
        {"max_version": (0, 8)},
        {"dl_device": x.__dlpack_device__()},
        {"copy": True},
        {"copy": False},
    ]:
        assert type(x.__dlpack__(**keywords)).__name__ == "PyCapsule"
    copied = np.from_dlpack(x, copy=True)
    copied[0] = 5.0
    assert x.tolist() == [1.0, 2.0]
    np.from_dlpack(x, copy=False)[0] = 7.0  # shares memory
    assert x.tolist() == [7.0, 2.0]


def test_dlpack_errors():
    x = xp.asarray([1.0, 2.0])
    with pytest.raises(TypeError, match="positional argument"):
        x.__dlpack__(None)
    with pytest.raises(BufferError):
        x.__dlpack__(dl_device=(2, 0))  # a CUDA device for a CPU array
    with pytest.raises(RuntimeError, match="stream=None"):
        x.__dlpack__(stream=1)
    x.requires_grad_()
    with pytest.raises(RuntimeError, match="Can't export a Tensor that requires grad"):
        x.__dlpack__()
