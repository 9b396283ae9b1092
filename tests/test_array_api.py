"""tk.array_api: the Python array API standard (2024.12) over tensorkit tensors.

One representative conformance check per function group (values against NumPy, result dtypes
by the standard's promotion rules, signatures), the inspection API, gradients through the
functions built from several ops, and the linalg extension.
"""

from __future__ import annotations

import importlib.util
import inspect
import math

import numpy as np
import pytest

import tensorkit as tk

xp = tk.array_api

# The 2024.12 namespace by topic, less the uint16/uint32/uint64 dtypes tensorkit lacks.
STANDARD_GROUPS = {
    "inspection": "__array_api_version__ __array_namespace_info__ e inf nan newaxis pi",
    "dtypes": "bool int8 int16 int32 int64 uint8 float32 float64 complex64 complex128",
    "dtype functions": "astype can_cast finfo iinfo isdtype result_type",
    "creation": (
        "arange asarray empty empty_like eye from_dlpack full full_like linspace meshgrid ones "
        "ones_like tril triu zeros zeros_like"
    ),
    "element-wise": (
        "abs acos acosh add asin asinh atan atan2 atanh bitwise_and bitwise_invert "
        "bitwise_left_shift bitwise_or bitwise_right_shift bitwise_xor ceil clip conj copysign "
        "cos cosh divide equal exp expm1 floor floor_divide greater greater_equal hypot imag "
        "isfinite isinf isnan less less_equal log log1p log2 log10 logaddexp logical_and "
        "logical_not logical_or logical_xor maximum minimum multiply negative nextafter "
        "not_equal positive pow real reciprocal remainder round sign signbit sin sinh square "
        "sqrt subtract tan tanh trunc"
    ),
    "indexing": "take take_along_axis",
    "linear algebra": "matmul matrix_transpose tensordot vecdot",
    "manipulation": (
        "broadcast_arrays broadcast_to concat expand_dims flip moveaxis permute_dims repeat "
        "reshape roll squeeze stack tile unstack"
    ),
    "searching": "argmax argmin count_nonzero nonzero searchsorted where",
    "sets and sorting": "unique_all unique_counts unique_inverse unique_values argsort sort",
    "statistics and utilities": (
        "cumulative_prod cumulative_sum max mean min prod std sum var all any diff"
    ),
    "linalg": (
        "cholesky cross det diagonal eigh eigvalsh inv matmul matrix_norm matrix_power "
        "matrix_rank matrix_transpose outer pinv qr slogdet solve svd svdvals tensordot trace "
        "vecdot vector_norm"
    ),
    "fft": (
        "fft ifft fftn ifftn rfft irfft rfftn irfftn hfft ihfft fftfreq rfftfreq fftshift ifftshift"
    ),
}
EXTENSIONS = ("linalg", "fft")
STANDARD_NAMES = [n for k, g in STANDARD_GROUPS.items() if k not in EXTENSIONS for n in g.split()]

HAS_LINALG = importlib.util.find_spec("tensorkit.linalg") is not None
needs_linalg = pytest.mark.skipif(
    not HAS_LINALG, reason="tensorkit.linalg is not written yet (the extension delegates to it)"
)


def arr(values, dtype=None, device="cpu"):
    """An array from Python or NumPy data (float64 for float NumPy data)."""
    return xp.asarray(values, dtype=dtype, device=device)


def np_of(x) -> np.ndarray:
    return np.asarray(x.detach().cpu())


def assert_close(got, expected, dtype=None, **kw) -> None:
    assert isinstance(got, tk.Tensor), f"expected a Tensor, got {type(got).__name__}"
    if dtype is not None:
        assert got.dtype == dtype, f"dtype {got.dtype} != {dtype}"
    expected = np.asarray(expected)
    assert got.shape == expected.shape, f"shape {tuple(got.shape)} != {expected.shape}"
    np.testing.assert_allclose(np_of(got), expected, equal_nan=True, **kw)


def leaf(values, dtype=tk.float64):
    return tk.tensor(np.asarray(values), dtype=dtype, requires_grad=True)


# ------------------------------------------------------------------------ the namespace
def test_namespace_has_every_standard_name():
    assert xp.__array_api_version__ == "2024.12"
    missing = [name for name in STANDARD_NAMES if not hasattr(xp, name)]
    assert not missing
    assert set(STANDARD_NAMES) | set(EXTENSIONS) == set(xp.__all__)
    for extension in EXTENSIONS:
        names = STANDARD_GROUPS[extension].split()
        assert [n for n in names if not hasattr(getattr(xp, extension), n)] == []


def test_constants():
    assert xp.newaxis is None
    assert (xp.e, xp.pi) == (math.e, math.pi)
    assert math.isinf(xp.inf) and xp.inf > 0 and math.isnan(xp.nan)


def test_tensors_report_this_namespace():
    x = arr([1.0, 2.0])
    assert x.__array_namespace__() is xp
    assert x.__array_namespace__(api_version="2024.12") is xp


def test_array_api_compat_finds_the_namespace():
    compat = pytest.importorskip("array_api_compat")
    x = arr([1.0, 2.0])
    assert compat.array_namespace(x) is xp
    assert compat.array_namespace(x, arr([1])) is xp
    assert compat.is_array_api_obj(x)
    assert compat.size(arr(np.zeros((2, 3)))) == 6


# ---------------------------------------------------------------------------- signatures
P, K, V = "positional-only", "keyword-only", "positional or keyword"

SIGNATURES = {
    "asarray": [("obj", P), ("dtype", K), ("device", K), ("copy", K)],
    "arange": [("start", P), ("stop", V), ("step", V), ("dtype", K), ("device", K)],
    "eye": [("n_rows", P), ("n_cols", P), ("k", K), ("dtype", K), ("device", K)],
    "linspace": [
        ("start", P),
        ("stop", P),
        ("num", V),
        ("dtype", K),
        ("device", K),
        ("endpoint", K),
    ],
    "astype": [("x", P), ("dtype", P), ("copy", K), ("device", K)],
    "add": [("x1", P), ("x2", P)],
    "clip": [("x", P), ("min", V), ("max", V)],
    "sum": [("x", P), ("axis", K), ("dtype", K), ("keepdims", K)],
    "std": [("x", P), ("axis", K), ("correction", K), ("keepdims", K)],
    "concat": [("arrays", P), ("axis", K)],
    "reshape": [("x", P), ("shape", V), ("copy", K)],
    "argsort": [("x", P), ("axis", K), ("descending", K), ("stable", K)],
    "searchsorted": [("x1", P), ("x2", P), ("side", K), ("sorter", K)],
    "cumulative_sum": [("x", P), ("axis", K), ("dtype", K), ("include_initial", K)],
    "diff": [("x", P), ("axis", K), ("n", K), ("prepend", K), ("append", K)],
    "take": [("x", P), ("indices", P), ("axis", K)],
    "tensordot": [("x1", P), ("x2", P), ("axes", K)],
    "moveaxis": [("x", P), ("source", P), ("destination", P)],
    "where": [("condition", P), ("x1", P), ("x2", P)],
}


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_signature(name):
    parameters = inspect.signature(getattr(xp, name)).parameters.values()
    kinds = [(p.name, p.kind.description) for p in parameters]
    assert kinds == SIGNATURES[name]


def _strict_functions():
    try:
        import array_api_strict
    except ImportError:
        return []
    modules = [(array_api_strict, xp, name) for name in STANDARD_NAMES]
    for extension in EXTENSIONS:
        theirs, mine = getattr(array_api_strict, extension), getattr(xp, extension)
        modules += [(theirs, mine, name) for name in STANDARD_GROUPS[extension].split()]
    return [
        pytest.param(theirs, mine, name, id=f"{mine.__name__.split('.')[-1]}.{name}")
        for theirs, mine, name in modules
        if inspect.isfunction(getattr(theirs, name, None))
    ]


@pytest.mark.parametrize(("theirs", "mine", "name"), _strict_functions())
def test_signature_matches_array_api_strict(theirs, mine, name):
    """Parameter names and kinds as in array-api-strict (the reference implementation)."""
    expected = inspect.signature(getattr(theirs, name)).parameters.values()
    got = inspect.signature(getattr(mine, name)).parameters.values()
    expected_kinds = [(p.name, p.kind) for p in expected]
    if name == "expand_dims":  # 2025.12 made axis required; 2024.12 still defaults it to 0
        expected_kinds = [("x", inspect.Parameter.POSITIONAL_ONLY), ("axis", 1)]
    assert [(p.name, p.kind) for p in got] == expected_kinds


# -------------------------------------------------------------------- element-wise: values
UNARY = {
    "abs": np.abs,
    "acos": np.arccos,
    "acosh": np.arccosh,
    "asin": np.arcsin,
    "asinh": np.arcsinh,
    "atan": np.arctan,
    "atanh": np.arctanh,
    "ceil": np.ceil,
    "cos": np.cos,
    "cosh": np.cosh,
    "exp": np.exp,
    "expm1": np.expm1,
    "floor": np.floor,
    "log": np.log,
    "log1p": np.log1p,
    "log2": np.log2,
    "log10": np.log10,
    "negative": np.negative,
    "positive": np.positive,
    "reciprocal": np.reciprocal,
    "round": np.round,
    "sign": np.sign,
    "signbit": np.signbit,
    "sin": np.sin,
    "sinh": np.sinh,
    "square": np.square,
    "sqrt": np.sqrt,
    "tan": np.tan,
    "tanh": np.tanh,
    "trunc": np.trunc,
    "isfinite": np.isfinite,
    "isinf": np.isinf,
    "isnan": np.isnan,
    "real": np.real,
    "conj": np.conj,
}
UNARY_DOMAIN = {"acosh": (1.0, 4.0), "acos": (-1.0, 1.0), "asin": (-1.0, 1.0), "atanh": (-0.9, 0.9)}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_values(name, device):
    low, high = UNARY_DOMAIN.get(name, (0.1, 3.0) if name.startswith("log") else (-3.0, 3.0))
    values = np.linspace(low, high, 7)
    if name in ("round", "sign", "signbit", "isfinite", "isinf", "isnan"):
        values = np.array([-2.5, -0.5, -0.0, 0.0, 0.5, 1.5, 2.5, np.inf, -np.inf, np.nan])
    got = getattr(xp, name)(arr(values, device=device))
    with np.errstate(all="ignore"):
        expected = UNARY[name](values)
    assert_close(got, expected, dtype=tk.bool if expected.dtype == bool else tk.float64)


BINARY = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": np.divide,
    "pow": np.power,
    "atan2": np.arctan2,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "hypot": np.hypot,
    "logaddexp": np.logaddexp,
    "copysign": np.copysign,
    "nextafter": np.nextafter,
    "floor_divide": np.floor_divide,
    "remainder": np.remainder,
    "equal": np.equal,
    "not_equal": np.not_equal,
    "less": np.less,
    "less_equal": np.less_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_values_and_scalars(name, device):
    rng = np.random.default_rng(1)
    a = rng.uniform(0.5, 3.0, (3, 4))
    b = rng.uniform(-2.0, 2.0, (4,))
    f, ref = getattr(xp, name), BINARY[name]
    expected = ref(a, b)
    dtype = tk.bool if expected.dtype == bool else tk.float64
    assert_close(f(arr(a, device=device), arr(b, device=device)), expected, dtype=dtype)
    assert_close(f(arr(a, device=device), 1.5), ref(a, 1.5), dtype=dtype)
    assert_close(f(1.5, arr(b, device=device)), ref(1.5, b), dtype=dtype)


@pytest.mark.parametrize(
    ("name", "ref"),
    [
        ("bitwise_and", np.bitwise_and),
        ("bitwise_or", np.bitwise_or),
        ("bitwise_xor", np.bitwise_xor),
        ("bitwise_left_shift", np.left_shift),
        ("bitwise_right_shift", np.right_shift),
    ],
)
def test_bitwise(name, ref):
    a, b = np.array([1, 6, 12, 255], np.int32), np.array([3, 2, 1, 4], np.int32)
    assert_close(getattr(xp, name)(arr(a), arr(b)), ref(a, b), dtype=tk.int32)
    assert_close(getattr(xp, name)(arr(a), 2), ref(a, 2), dtype=tk.int32)
    assert_close(xp.bitwise_invert(arr(a)), np.invert(a), dtype=tk.int32)


def test_logical():
    a, b = np.array([True, True, False, False]), np.array([True, False, True, False])
    for name in ("logical_and", "logical_or", "logical_xor"):
        assert_close(getattr(xp, name)(arr(a), arr(b)), getattr(np, name)(a, b), dtype=tk.bool)
    assert_close(xp.logical_not(arr(a)), ~a, dtype=tk.bool)
    assert_close(xp.logical_and(arr(a), True), a, dtype=tk.bool)


def test_complex_functions():
    z = np.array([3 + 4j, -1.5 + 0.5j, 0j, 2.5 - 0.5j])
    x = arr(z, xp.complex64)
    assert_close(xp.real(x), z.real, dtype=tk.float32)
    assert_close(xp.imag(x), z.imag, dtype=tk.float32)
    assert_close(xp.conj(x), z.conj(), dtype=tk.complex64)
    assert_close(xp.abs(x), np.abs(z), dtype=tk.float32)
    assert_close(xp.sign(x), np.sign(z), dtype=tk.complex64, atol=1e-7)
    assert_close(xp.round(x), np.round(z), dtype=tk.complex64)
    assert_close(xp.real(arr([1.5], xp.float64)), [1.5], dtype=tk.float64)
    assert_close(xp.conj(arr([1.5], xp.float64)), [1.5], dtype=tk.float64)


# ----------------------------------------------------------------- element-wise: promotion
@pytest.mark.parametrize(
    ("x1", "x2", "expected"),
    [
        # 0-d arrays promote like any other array (PyTorch would keep int8 / float32 here)
        (arr([1, 2], tk.int8), arr(3, tk.int64), tk.int64),
        (arr([1.0], tk.float32), arr(2.0, tk.float64), tk.float64),
        (arr([1], tk.uint8), arr([1], tk.int8), tk.int16),
        (arr([1], tk.uint8), arr([1], tk.int64), tk.int64),
        (arr([1.0], tk.float32), arr([1j], tk.complex128), tk.complex128),
        (arr([1.0], tk.float64), arr([1j], tk.complex64), tk.complex128),
        # a Python scalar takes the array's dtype
        (arr([1], tk.int8), 3, tk.int8),
        (arr([1.0], tk.float32), 2.5, tk.float32),
        (arr([True]), False, tk.bool),
        (7, arr([1], tk.int16), tk.int16),
        (arr([1.0], tk.float32), 1j, tk.complex64),
        (arr([1.0], tk.float64), 1j, tk.complex128),
    ],
)
def test_promotion(x1, x2, expected):
    assert xp.add(x1, x2).dtype == expected
    assert xp.result_type(x1, x2) == expected
    assert xp.equal(x1, x2).dtype == tk.bool


DTYPE_NAMES = STANDARD_GROUPS["dtypes"].split()


@pytest.mark.parametrize("first", DTYPE_NAMES)
def test_promotion_table_matches_array_api_strict(first):
    """Every pair the standard's table defines promotes as in array-api-strict, for dtypes,
    arrays and 0-d arrays alike; pairs it leaves unspecified (mixed kinds) are skipped."""
    strict = pytest.importorskip("array_api_strict")
    for second in DTYPE_NAMES:
        try:
            expected = strict.result_type(getattr(strict, first), getattr(strict, second))
        except TypeError:
            continue
        a, b = getattr(xp, first), getattr(xp, second)
        assert xp.result_type(a, b).name == str(expected).split(".")[-1]
        assert (
            xp.result_type(xp.zeros(2, dtype=a), xp.zeros((), dtype=b)).name
            == (str(expected).split(".")[-1])
        )
        assert xp.can_cast(a, b) == strict.can_cast(getattr(strict, first), getattr(strict, second))


def test_result_type_of_dtypes_and_scalars():
    assert xp.result_type(xp.int8, xp.uint8, xp.int16) == xp.int16
    assert xp.result_type(xp.float32, 1.0, 2) == xp.float32
    assert xp.result_type(arr([1], xp.int32), xp.int8) == xp.int32
    with pytest.raises(TypeError):
        xp.result_type(1.0, 2)


# ---------------------------------------------------- element-wise: built from several ops
def test_hypot_does_not_overflow_and_handles_special_values():
    a = arr([3e200, 0.0, np.inf, np.nan, -5.0, 1e-200], tk.float64)
    b = arr([4e200, 0.0, np.nan, -np.inf, 12.0, 1e-200], tk.float64)
    assert_close(xp.hypot(a, b), np.hypot(np_of(a), np_of(b)), rtol=1e-14)


def test_logaddexp_special_values():
    a = np.array([np.inf, -np.inf, 1.0, np.nan, -np.inf, 800.0])
    b = np.array([np.inf, -np.inf, 1.0, 0.0, 2.0, 800.0])
    with np.errstate(invalid="ignore"):
        expected = np.logaddexp(a, b)
    assert_close(xp.logaddexp(arr(a), arr(b)), expected, rtol=1e-14)


def test_copysign_takes_the_sign_bit():
    a = np.array([1.0, -2.0, 0.0, -0.0, np.nan, np.inf])
    b = np.array([-0.0, 0.0, -1.0, 3.0, -1.0, -np.nan])
    got = np_of(xp.copysign(arr(a), arr(b)))
    np.testing.assert_array_equal(np.signbit(got), np.signbit(np.copysign(a, b)))
    np.testing.assert_array_equal(got, np.copysign(a, b))


def test_nextafter_steps_one_ulp_and_is_not_differentiable():
    x = arr([1.0, 0.0, -1.0], tk.float32)
    assert_close(xp.nextafter(x, 2.0), np.nextafter(np_of(x), np.float32(2)), dtype=tk.float32)
    assert not xp.nextafter(leaf([1.0]), 2.0).requires_grad


def test_integer_division_by_zero_gives_zero():
    assert_close(xp.floor_divide(arr([5, -5, 3]), arr([2, 2, 0])), [2, -3, 0], dtype=tk.int64)
    assert_close(xp.floor_divide(7, arr([0, 2], tk.int32)), [0, 3], dtype=tk.int32)
    assert_close(xp.floor_divide(arr([1.0, -1.0]), 0.0), [np.inf, -np.inf])


def test_round_is_half_to_even():
    assert_close(xp.round(arr([0.5, 1.5, 2.5, -0.5, -1.5])), [0.0, 2.0, 2.0, -0.0, -2.0])
    assert_close(xp.round(arr([3, -4], tk.int16)), [3, -4], dtype=tk.int16)


def test_clip_keeps_the_dtype_of_x():
    x = arr([1, 5, 9], tk.int32)
    assert_close(xp.clip(x, 2, 7), [2, 5, 7], dtype=tk.int32)
    assert_close(xp.clip(x, max=arr([4, 4, 4], tk.int64)), [1, 4, 4], dtype=tk.int32)
    assert_close(xp.clip(x), [1, 5, 9], dtype=tk.int32)
    assert_close(xp.clip(arr([1.0, np.nan, 3.0]), 2.0, 2.5), [2.0, np.nan, 2.5])


@pytest.mark.parametrize(
    "fn",
    [
        xp.hypot,
        xp.logaddexp,
        xp.copysign,
        xp.atan2,
        xp.maximum,
        lambda a, b: xp.clip(a, b, None),
        lambda a, b: xp.where(xp.greater(a, b), a, b),
    ],
    ids=["hypot", "logaddexp", "copysign", "atan2", "maximum", "clip", "where"],
)
def test_binary_gradients(fn):
    rng = np.random.default_rng(2)
    a, b = leaf(rng.normal(size=5)), leaf(rng.normal(size=5))
    assert tk.autograd.gradcheck(fn, [a, b])


def test_hypot_and_logaddexp_gradients_at_ties_and_zero():
    a, b = leaf([1.0, 0.0, -2.0]), leaf([1.0, 0.0, 2.0])
    xp.sum(xp.logaddexp(a, b)).backward()
    assert_close(a.grad, [0.5, 0.5, 0.5 * (1 - np.tanh(2.0))], atol=1e-12)
    a.grad = None
    xp.sum(xp.hypot(a, b)).backward()
    assert_close(a.grad, [1 / np.sqrt(2), 0.0, -1 / np.sqrt(2)], atol=1e-12)


# ------------------------------------------------------------------------------ creation
def test_asarray_copy_semantics():
    n = np.arange(3.0)
    shared = xp.asarray(n)
    copied = xp.asarray(n, copy=True)
    n[0] = 10.0
    assert np_of(shared)[0] == 10.0 and np_of(copied)[0] == 0.0
    x = arr([1.0, 2.0])
    assert xp.asarray(x) is x
    assert xp.asarray(x, copy=False) is x
    assert xp.asarray(x, copy=True) is not x
    with pytest.raises(ValueError):
        xp.asarray([1, 2], copy=False)
    with pytest.raises(ValueError):
        xp.asarray(x, dtype=xp.float64, copy=False)


def test_asarray_default_dtypes():
    assert xp.asarray(True).dtype == xp.bool
    assert xp.asarray([1, 2]).dtype == xp.int64
    assert xp.asarray([1.0, 2]).dtype == xp.float32
    assert xp.asarray(1j).dtype == xp.complex64
    assert xp.asarray(np.zeros(2, np.int16)).dtype == xp.int16
    assert xp.asarray(memoryview(b"ab")).dtype == xp.uint8
    assert np_of(xp.asarray([0.1], dtype=xp.float64))[0] == 0.1  # no float32 round trip


def test_asarray_of_nested_arrays_keeps_gradients():
    x = leaf([1.0, 2.0])
    y = xp.asarray([x[1], 3.0, x[0]])
    assert y.dtype == tk.float64
    xp.sum(y * arr([1.0, 10.0, 100.0], tk.float64)).backward()
    assert_close(x.grad, [100.0, 1.0])


def test_asarray_and_from_dlpack_share_memory_with_other_libraries():
    torch = pytest.importorskip("torch")
    source = torch.arange(4, dtype=torch.float64)
    for shared in (xp.asarray(source), xp.from_dlpack(source)):
        assert shared.dtype == xp.float64
        source[0] = 7.0
        assert np_of(shared)[0] == 7.0
    assert np_of(xp.from_dlpack(source, copy=True)).tolist() == [7.0, 1.0, 2.0, 3.0]


def test_arange():
    assert_close(xp.arange(5), np.arange(5), dtype=xp.int64)
    assert_close(xp.arange(1, 2, 0.25), np.arange(1, 2, 0.25), dtype=xp.float32)
    assert_close(xp.arange(5, 1), np.arange(5, 1), dtype=xp.int64)
    assert_close(xp.arange(0, 10, 3, dtype=xp.int8), np.arange(0, 10, 3), dtype=xp.int8)


def test_eye_linspace_full():
    assert_close(xp.eye(3, 4, k=1), np.eye(3, 4, k=1), dtype=xp.float32)
    assert_close(xp.eye(3, k=-2, dtype=xp.int32), np.eye(3, k=-2), dtype=xp.int32)
    assert_close(xp.linspace(0, 1, 4, endpoint=False), np.linspace(0, 1, 4, endpoint=False))
    assert_close(xp.linspace(2, 3, 5, dtype=xp.float64), np.linspace(2, 3, 5), dtype=xp.float64)
    assert_close(xp.linspace(0, 1 + 2j, 3), np.linspace(0, 1 + 2j, 3), dtype=xp.complex64)
    assert_close(xp.full((2,), True), [True, True], dtype=xp.bool)
    assert_close(xp.full(2, 3), [3, 3], dtype=xp.int64)
    assert_close(xp.full_like(arr([1.0, 2.0]), 4), [4.0, 4.0], dtype=xp.float32)


@pytest.mark.parametrize("indexing", ["xy", "ij"])
def test_meshgrid(indexing):
    a, b, c = np.arange(3.0), np.arange(2.0), np.arange(4.0)
    grids = xp.meshgrid(arr(a), arr(b), arr(c), indexing=indexing)
    assert isinstance(grids, list)
    for got, expected in zip(grids, np.meshgrid(a, b, c, indexing=indexing), strict=True):
        assert_close(got, expected)


def test_creation_with_dtype_and_device(device):
    for made in (
        xp.zeros((2, 3), dtype=xp.int32, device=device),
        xp.ones(2, dtype=xp.int32, device=device),
        xp.empty((1,), dtype=xp.int32, device=device),
        xp.full((2,), 1, dtype=xp.int32, device=device),
        xp.arange(3, dtype=xp.int32, device=device),
        xp.eye(2, dtype=xp.int32, device=device),
        xp.asarray([1, 2], dtype=xp.int32, device=device),
        xp.zeros_like(arr([1.0]), dtype=xp.int32, device=device),
    ):
        assert made.dtype == xp.int32
        assert made.device == tk.device(device)


def test_tril_triu():
    a = np.arange(12.0).reshape(3, 4)
    assert_close(xp.tril(arr(a), k=1), np.tril(a, 1))
    assert_close(xp.triu(arr(a), k=-1), np.triu(a, -1))


# ------------------------------------------------------------------------- data types
def test_astype():
    x = leaf([1.5, -2.5])
    y = xp.astype(x, xp.float32)
    assert y.dtype == xp.float32 and y.requires_grad
    assert xp.astype(x, xp.float64) is not x
    assert xp.astype(x, xp.float64, copy=False) is x
    assert_close(xp.astype(x, xp.int32), [1, -2], dtype=xp.int32)


@pytest.mark.parametrize(
    ("from_", "to", "expected"),
    [
        (xp.int8, xp.int16, True),
        (xp.uint8, xp.int16, True),
        (xp.int8, xp.uint8, False),
        (xp.int64, xp.int32, False),
        (xp.float32, xp.float64, True),
        (xp.float32, xp.complex64, True),
        (xp.float64, xp.complex64, False),
        (xp.complex64, xp.float64, False),
        (xp.bool, xp.bool, True),
        (xp.bool, xp.int8, False),  # mixed kinds are outside the standard's table
        (xp.int8, xp.float32, False),
    ],
)
def test_can_cast(from_, to, expected):
    assert xp.can_cast(from_, to) is expected
    assert xp.can_cast(xp.zeros(1, dtype=from_), to) is expected


def test_finfo_iinfo():
    f = xp.finfo(xp.float32)
    assert (f.bits, f.eps, f.max, f.min, f.smallest_normal) == (
        32,
        float(np.finfo(np.float32).eps),
        float(np.finfo(np.float32).max),
        float(np.finfo(np.float32).min),
        float(np.finfo(np.float32).smallest_normal),
    )
    assert f.dtype == xp.float32
    assert xp.finfo(xp.complex128).dtype == xp.float64
    assert xp.finfo(arr([1.0], xp.float64)).bits == 64
    i = xp.iinfo(xp.int16)
    assert (i.bits, i.min, i.max, i.dtype) == (16, -32768, 32767, xp.int16)
    assert xp.iinfo(arr([1], xp.uint8)).max == 255
    with pytest.raises(TypeError):
        xp.iinfo(xp.float32)


@pytest.mark.parametrize(
    ("dtype", "kind", "expected"),
    [
        (xp.bool, "bool", True),
        (xp.int8, "signed integer", True),
        (xp.uint8, "signed integer", False),
        (xp.uint8, "integral", True),
        (xp.float32, "real floating", True),
        (xp.complex64, "real floating", False),
        (xp.complex64, "complex floating", True),
        (xp.bool, "numeric", False),
        (xp.int64, "numeric", True),
        (xp.float64, xp.float64, True),
        (xp.float64, ("integral", xp.float32), False),
        (xp.float32, ("integral", xp.float32), True),
    ],
)
def test_isdtype(dtype, kind, expected):
    assert xp.isdtype(dtype, kind) is expected


def test_isdtype_rejects_unknown_kinds():
    with pytest.raises(ValueError):
        xp.isdtype(xp.int8, "integer")


# ---------------------------------------------------------------------------- statistics
def test_sum_and_prod_dtypes():
    i32 = arr([1, 2, 3], xp.int32)
    assert xp.sum(i32).dtype == xp.int64  # the default integer dtype
    assert xp.sum(arr([True, True])).dtype == xp.int64
    assert xp.sum(arr([1.0], xp.float32)).dtype == xp.float32
    assert xp.sum(i32, dtype=xp.float64).dtype == xp.float64
    assert xp.prod(i32).dtype == xp.int64
    assert xp.prod(arr([1.0], xp.float32)).dtype == xp.float32


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1), -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions(axis, keepdims, device):
    a = np.random.default_rng(3).normal(size=(3, 4))
    x = arr(a, device=device)
    kw = {"axis": axis, "keepdims": keepdims}
    assert_close(xp.sum(x, **kw), np.sum(a, **kw))
    assert_close(xp.prod(x, **kw), np.prod(a, **kw))
    assert_close(xp.mean(x, **kw), np.mean(a, **kw))
    assert_close(xp.max(x, **kw), np.max(a, **kw))
    assert_close(xp.min(x, **kw), np.min(a, **kw))
    assert_close(xp.var(x, **kw), np.var(a, **kw))  # correction=0 by default
    assert_close(xp.std(x, correction=1, **kw), np.std(a, ddof=1, **kw))
    assert_close(xp.all(x > 0, **kw), np.all(a > 0, **kw))
    assert_close(xp.any(x > 0, **kw), np.any(a > 0, **kw))
    assert_close(xp.count_nonzero(x > 0, **kw), np.count_nonzero(a > 0, **kw))


def test_reductions_over_no_axes():
    """``axis=()`` reduces nothing (as NumPy), where tensorkit and PyTorch reduce everything."""
    a = np.array([[0.0, 1.5, -2.0], [3.0, 0.0, 4.5]])
    x = arr(a)
    for name in ("sum", "prod", "mean", "max", "min", "var", "std", "all", "any"):
        got = getattr(xp, name)(x, axis=())
        assert_close(got, getattr(np, name)(a, axis=()))
    assert_close(xp.count_nonzero(x, axis=(), keepdims=True), (a != 0).astype(np.int64))
    assert xp.sum(arr([1, 2], xp.int32), axis=()).dtype == xp.int64
    assert xp.sum(arr(2.0), axis=()).shape == ()


def test_mean_needs_floats():
    with pytest.raises(TypeError):
        xp.mean(arr([1, 2, 3]))
    assert_close(xp.mean(arr([1 + 1j, 3 - 1j])), 2 + 0j, dtype=xp.complex64)


def test_cumulative_sum_and_prod():
    a = np.arange(1.0, 7.0).reshape(2, 3)
    assert_close(xp.cumulative_sum(arr(a), axis=1), np.cumsum(a, axis=1))
    assert_close(
        xp.cumulative_sum(arr(a), axis=0, include_initial=True),
        np.concatenate([np.zeros((1, 3)), np.cumsum(a, axis=0)]),
    )
    assert_close(
        xp.cumulative_prod(arr(a), axis=1, include_initial=True),
        np.concatenate([np.ones((2, 1)), np.cumprod(a, axis=1)], axis=1),
    )
    assert xp.cumulative_sum(arr([1, 2], xp.int32)).dtype == xp.int64
    with pytest.raises(ValueError):
        xp.cumulative_sum(arr(a))


def test_statistics_gradients():
    x = leaf(np.random.default_rng(4).normal(size=(2, 3)))
    assert tk.autograd.gradcheck(lambda t: xp.var(t, axis=1), [x])
    assert tk.autograd.gradcheck(lambda t: xp.cumulative_sum(t, axis=1, include_initial=True), [x])
    assert tk.autograd.gradcheck(lambda t: xp.cumulative_prod(t, axis=0), [x])
    assert tk.autograd.gradcheck(lambda t: xp.max(t, axis=0), [x])


# ------------------------------------------------------------------------------ utility
def test_diff():
    a = np.array([[1.0, 4.0, 9.0, 16.0], [2.0, 3.0, 5.0, 7.0]])
    assert_close(xp.diff(arr(a)), np.diff(a))
    assert_close(xp.diff(arr(a), axis=0), np.diff(a, axis=0))
    assert_close(xp.diff(arr(a), n=2), np.diff(a, n=2))
    assert_close(xp.diff(arr(a), n=5), np.diff(a, n=5))
    pre, post = np.zeros((2, 1)), np.ones((2, 2))
    assert_close(
        xp.diff(arr(a), prepend=arr(pre), append=arr(post)), np.diff(a, prepend=pre, append=post)
    )
    flags = np.array([True, False, False, True])
    assert_close(xp.diff(arr(flags)), np.diff(flags), dtype=xp.bool)
    assert tk.autograd.gradcheck(lambda t: xp.diff(t, n=2), [leaf(a)])


# ------------------------------------------------------------------------- manipulation
def test_concat_and_stack_promote():
    a, b = arr([1, 2], xp.int8), arr([3.0], xp.float64)
    assert_close(xp.concat([a, b]), [1.0, 2.0, 3.0], dtype=xp.float64)
    m = np.arange(4).reshape(2, 2)
    assert_close(xp.concat((arr(m), arr(m)), axis=None), np.concatenate([m, m], axis=None))
    assert_close(xp.concat([arr(m), arr(m)], axis=1), np.concatenate([m, m], axis=1))
    assert_close(xp.concat([arr(np.zeros(0)), arr([1], xp.int8)]), [1.0], dtype=xp.float64)
    assert_close(xp.stack([arr([1, 2], xp.int8), arr([3, 4], xp.int16)], axis=1), [[1, 3], [2, 4]])


def test_reshape_copy_semantics():
    x = arr(np.arange(6.0))
    assert_close(xp.reshape(x, (2, 3)), np.arange(6.0).reshape(2, 3))
    y = xp.reshape(x, (3, 2), copy=True)
    y[0, 0] = 100.0
    assert np_of(x)[0] == 0.0
    with pytest.raises(ValueError):
        xp.reshape(xp.permute_dims(xp.reshape(x, (2, 3)), (1, 0)), (6,), copy=False)


def test_shape_functions():
    a = np.arange(24.0).reshape(2, 3, 4)
    x = arr(a)
    assert_close(xp.permute_dims(x, (2, 0, 1)), a.transpose(2, 0, 1))
    assert_close(xp.moveaxis(x, 0, -1), np.moveaxis(a, 0, -1))
    assert_close(xp.expand_dims(x, axis=-1), a[..., None])
    assert_close(xp.expand_dims(x, 1), a[:, None])
    assert_close(xp.flip(x), np.flip(a))
    assert_close(xp.flip(x, axis=(0, 2)), np.flip(a, (0, 2)))
    assert_close(xp.roll(x, 2), np.roll(a, 2))
    assert_close(xp.roll(x, (1, -1), axis=(0, 2)), np.roll(a, (1, -1), (0, 2)))
    assert_close(xp.tile(x, (2, 1, 1, 2)), np.tile(a, (2, 1, 1, 2)))
    assert_close(xp.repeat(x, 2, axis=1), np.repeat(a, 2, axis=1))
    assert_close(xp.repeat(x, arr([1, 0, 2]), axis=1), np.repeat(a, [1, 0, 2], axis=1))
    assert_close(xp.repeat(x, 2), np.repeat(a, 2))
    assert_close(xp.squeeze(xp.expand_dims(x, 0), axis=0), a)
    with pytest.raises(ValueError):
        xp.squeeze(x, axis=0)
    pieces = xp.unstack(x, axis=1)
    assert isinstance(pieces, tuple) and len(pieces) == 3
    assert_close(pieces[2], a[:, 2])
    b1, b2 = xp.broadcast_arrays(arr(np.ones((3, 1))), arr(np.ones(4)))
    assert b1.shape == b2.shape == (3, 4)
    assert xp.broadcast_to(arr([1.0]), (2, 3)).shape == (2, 3)
    assert_close(xp.matrix_transpose(x), np.swapaxes(a, -1, -2))


# ---------------------------------------------------------------- searching and sorting
def test_argmax_argmin():
    a = np.array([[1.0, 5.0, 5.0], [7.0, 0.0, 7.0]])
    assert_close(xp.argmax(arr(a)), np.argmax(a), dtype=xp.int64)
    assert_close(xp.argmax(arr(a), axis=1), np.argmax(a, axis=1))
    assert_close(xp.argmin(arr(a), axis=0, keepdims=True), np.argmin(a, axis=0, keepdims=True))
    assert_close(xp.argmax(arr(a), keepdims=True), np.argmax(a, keepdims=True))


def test_nonzero_and_where():
    a = np.array([[0, 1, 0], [2, 0, 3]])
    got = xp.nonzero(arr(a))
    assert isinstance(got, tuple)
    for mine, theirs in zip(got, np.nonzero(a), strict=True):
        assert_close(mine, theirs, dtype=xp.int64)
    with pytest.raises(ValueError):
        xp.nonzero(arr(1))
    cond = arr(a > 0)
    assert_close(xp.where(cond, arr(a, xp.int8), -1), np.where(a > 0, a, -1), dtype=xp.int8)
    assert xp.where(cond, arr(1.0, xp.float64), arr([0.0], xp.float32)).dtype == xp.float64


def test_searchsorted():
    s = np.array([1.0, 2.0, 2.0, 3.0])
    v = np.array([[2.0, 0.5], [3.5, 2.0]])
    for side in ("left", "right"):
        got = xp.searchsorted(arr(s), arr(v), side=side)
        assert_close(got, np.searchsorted(s, v, side=side), dtype=xp.int64)
    unsorted = np.array([3.0, 1.0, 2.0])
    sorter = np.argsort(unsorted)
    assert_close(
        xp.searchsorted(arr(unsorted), arr([2.5]), sorter=arr(sorter)),
        np.searchsorted(unsorted, [2.5], sorter=sorter),
    )


def test_sorting_is_stable():
    a = np.array([[1, 3, 1, 3, 2], [0, 0, 1, 1, 0]])
    assert_close(xp.argsort(arr(a)), np.argsort(a, stable=True))
    assert_close(xp.argsort(arr(a), axis=0), np.argsort(a, axis=0, stable=True))
    # stable descending keeps equal values in their original order
    assert_close(xp.argsort(arr(a), descending=True), [[1, 3, 4, 0, 2], [2, 3, 0, 1, 4]])
    assert_close(xp.sort(arr(a), descending=True), -np.sort(-a))
    x = leaf([3.0, 1.0, 2.0])
    xp.sum(xp.sort(x) * arr([1.0, 10.0, 100.0], xp.float64)).backward()
    assert_close(x.grad, [100.0, 1.0, 10.0])


# ---------------------------------------------------------------------------------- sets
def test_unique_all_counts_each_nan_separately(device):
    a = np.array([[3.0, 1.0, np.nan], [3.0, np.nan, 1.0]])
    got = xp.unique_all(arr(a, device=device))
    values, indices, inverse, counts = np.unique(
        a, return_index=True, return_inverse=True, return_counts=True, equal_nan=False
    )
    assert_close(got.values, values)
    assert_close(got.indices, indices, dtype=xp.int64)
    assert_close(got.inverse_indices, inverse.reshape(a.shape), dtype=xp.int64)
    assert_close(got.counts, counts, dtype=xp.int64)
    assert got.values.device == tk.device(device)


def test_unique_variants():
    a = np.array([2, 1, 2, 5, 1, 2])
    values, counts = xp.unique_counts(arr(a))
    assert_close(values, [1, 2, 5]) and assert_close(counts, [2, 3, 1])
    values, inverse = xp.unique_inverse(arr(a))
    assert_close(xp.take(values, inverse), a)
    assert_close(xp.unique_values(arr(a)), [1, 2, 5])
    assert xp.unique_values(arr(np.zeros(0))).shape == (0,)


# ------------------------------------------------------------------------------ indexing
def test_take_and_take_along_axis():
    a = np.arange(12.0).reshape(3, 4)
    assert_close(xp.take(arr(a), arr([-1, 0, 0]), axis=1), np.take(a, [-1, 0, 0], axis=1))
    assert_close(xp.take(arr(a[0]), arr([2, 1])), a[0, [2, 1]])
    with pytest.raises(ValueError):
        xp.take(arr(a), arr([0]))
    idx = np.array([[0, 3], [1, 1], [2, -1]])
    assert_close(xp.take_along_axis(arr(a), arr(idx), axis=1), np.take_along_axis(a, idx, 1))
    x = leaf(a)
    xp.sum(xp.take(x, arr([1, 1]), axis=0)).backward()
    assert_close(x.grad, np.array([0.0, 2.0, 0.0])[:, None] * np.ones((3, 4)))


# ------------------------------------------------------------------------ linear algebra
def test_matmul_tensordot_vecdot():
    rng = np.random.default_rng(5)
    a, b = rng.normal(size=(2, 3, 4)), rng.normal(size=(4, 5))
    assert_close(xp.matmul(arr(a), arr(b)), a @ b)
    assert_close(xp.tensordot(arr(a), arr(b), axes=1), np.tensordot(a, b, axes=1))
    assert_close(
        xp.tensordot(arr(a), arr(a), axes=([1, 2], [1, 2])),
        np.tensordot(a, a, axes=([1, 2], [1, 2])),
    )
    z1, z2 = rng.normal(size=(3, 2)) + 1j, rng.normal(size=(2,)) - 2j
    assert_close(
        xp.vecdot(arr(z1, xp.complex128), arr(z2, xp.complex128)), (z1.conj() * z2).sum(-1)
    )
    assert xp.vecdot(arr([1, 2], xp.int32), arr([3, 4], xp.int32)).dtype == xp.int32
    assert_close(xp.vecdot(arr(a), arr(a), axis=1), (a * a).sum(1))
    with pytest.raises(ValueError):
        xp.vecdot(arr(a), arr(b))


def test_linalg_functions_built_from_core_ops():
    a = np.arange(24.0).reshape(2, 3, 4)
    assert_close(xp.linalg.diagonal(arr(a), offset=1), np.diagonal(a, 1, -2, -1))
    assert_close(xp.linalg.trace(arr(a)), np.trace(a, axis1=-2, axis2=-1))
    assert xp.linalg.trace(arr([[1, 2], [3, 4]], xp.int32)).dtype == xp.int64
    assert_close(
        xp.linalg.outer(arr([1.0, 2.0]), arr([3.0, 4.0, 5.0])), np.outer([1, 2], [3, 4, 5])
    )
    assert xp.linalg.matmul is xp.matmul and xp.linalg.vecdot is xp.vecdot


@needs_linalg
def test_linalg_decompositions():
    rng = np.random.default_rng(6)
    m = rng.normal(size=(2, 3, 3))
    spd = m @ np.swapaxes(m, -1, -2) + 3 * np.eye(3)
    x = arr(spd)
    assert_close(xp.linalg.det(x), np.linalg.det(spd), rtol=1e-10)
    assert_close(xp.linalg.inv(x), np.linalg.inv(spd), rtol=1e-10)
    _, logabsdet = xp.linalg.slogdet(x)
    assert_close(logabsdet, np.linalg.slogdet(spd)[1], rtol=1e-10)
    lower = xp.linalg.cholesky(x)
    assert_close(lower, np.linalg.cholesky(spd), rtol=1e-10)
    assert_close(xp.linalg.cholesky(x, upper=True), np.swapaxes(np.linalg.cholesky(spd), -1, -2))
    values, _ = xp.linalg.eigh(x)
    assert_close(values, np.linalg.eigvalsh(spd), rtol=1e-10)
    assert_close(xp.linalg.eigvalsh(x), np.linalg.eigvalsh(spd), rtol=1e-10)
    q, r = xp.linalg.qr(arr(m))
    assert_close(xp.matmul(q, r), m, atol=1e-12)
    s = xp.linalg.svd(arr(m), full_matrices=False).S
    assert_close(s, np.linalg.svd(m, compute_uv=False), rtol=1e-10)
    assert_close(xp.linalg.svdvals(arr(m)), np.linalg.svd(m, compute_uv=False), rtol=1e-10)
    assert_close(xp.linalg.pinv(arr(m)), np.linalg.pinv(m), rtol=1e-8, atol=1e-10)
    assert_close(xp.linalg.matrix_power(x, -2), np.linalg.matrix_power(spd, -2), rtol=1e-8)
    rank_deficient = np.array([[1.0, 2.0], [2.0, 4.0]])
    assert_close(xp.linalg.matrix_rank(arr(rank_deficient)), 1)


@needs_linalg
def test_linalg_solve_treats_only_1d_x2_as_vectors():
    rng = np.random.default_rng(7)
    a = rng.normal(size=(2, 3, 3)) + 3 * np.eye(3)
    b = rng.normal(size=(3,))
    assert_close(xp.linalg.solve(arr(a), arr(b)), np.linalg.solve(a, b[:, None])[..., 0])
    c = rng.normal(size=(3, 3))  # a matrix, broadcast against the stack
    assert_close(xp.linalg.solve(arr(a), arr(c)), np.linalg.solve(a, c), rtol=1e-10)


@needs_linalg
def test_linalg_norms_and_cross():
    rng = np.random.default_rng(8)
    a = rng.normal(size=(2, 3, 4))
    for order in (2, 1, np.inf, 0.5):
        assert_close(
            xp.linalg.vector_norm(arr(a), axis=-1, ord=order),
            np.linalg.norm(a, ord=order, axis=-1),
            rtol=1e-10,
        )
    assert_close(xp.linalg.vector_norm(arr(a)), np.linalg.norm(a.ravel()), rtol=1e-10)
    for order in ("fro", "nuc", 1, np.inf):
        assert_close(
            xp.linalg.matrix_norm(arr(a), ord=order, keepdims=True),
            np.linalg.norm(a, ord=order, axis=(-2, -1), keepdims=True),
            rtol=1e-10,
        )
    u, v = rng.normal(size=(4, 3)), rng.normal(size=(3,))
    assert_close(xp.linalg.cross(arr(u), arr(v)), np.cross(u, v), rtol=1e-10)


# ------------------------------------------------------------------------------ inspection
def test_namespace_info():
    info = xp.__array_namespace_info__()
    capabilities = info.capabilities()
    assert capabilities["boolean indexing"] and capabilities["data-dependent shapes"]
    assert capabilities["max dimensions"] == 64
    assert info.default_device() == tk.device("cpu")
    assert tk.device("cpu") in info.devices() and isinstance(info.devices(), list)
    defaults = info.default_dtypes()
    assert defaults == {
        "real floating": xp.float32,
        "complex floating": xp.complex64,
        "integral": xp.int64,
        "indexing": xp.int64,
    }
    assert list(info.dtypes(kind="integral")) == ["int8", "int16", "int32", "int64", "uint8"]
    assert info.dtypes(kind=("bool", "complex floating")) == {
        "bool": xp.bool,
        "complex64": xp.complex64,
        "complex128": xp.complex128,
    }
    assert len(info.dtypes()) == 10


def test_default_dtypes_follow_tensorkit_default():
    tk.set_default_dtype(tk.float64)
    info = xp.__array_namespace_info__()
    assert info.default_dtypes()["real floating"] == xp.float64
    assert info.default_dtypes()["complex floating"] == xp.complex128
    assert xp.asarray(1.0).dtype == xp.float64


# -------------------------------------------------------------- gradients end to end
def test_gradient_through_standard_code_matches_torch():
    """A softmax cross-entropy written only with standard functions, against PyTorch."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(9)
    logits, target = rng.normal(size=(4, 5)), np.array([0, 2, 4, 1])

    def loss(x):
        shifted = xp.subtract(x, xp.max(x, axis=1, keepdims=True))
        log_norm = xp.log(xp.sum(xp.exp(shifted), axis=1, keepdims=True))
        picked = xp.take_along_axis(shifted - log_norm, xp.expand_dims(arr(target), axis=1))
        return -xp.mean(picked)

    x = leaf(logits)
    loss(x).backward()
    t = torch.tensor(logits, requires_grad=True)
    torch.nn.functional.cross_entropy(t, torch.tensor(target)).backward()
    assert_close(x.grad, t.grad.numpy(), rtol=1e-10)
