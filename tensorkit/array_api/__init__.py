"""The Python array API standard (revision 2024.12) over tensorkit tensors.

``x.__array_namespace__()`` returns this module, so code written for the standard (SciPy's and
scikit-learn's array API modes, through ``array_api_compat``) runs on tensorkit tensors, and
gradients flow through it::

    import tensorkit as tk
    xp = tk.array_api
    x = xp.asarray([1.0, 2.0, 3.0])
    x.requires_grad_()
    xp.sum(xp.exp(x)).backward()

Functions follow the standard where it differs from PyTorch: type promotion treats 0-d arrays
like any other array, ``var``/``std`` default to ``correction=0``, sorting is stable, integer
division by zero gives 0, ``mean`` of integers is an error, floor division and complex
``expm1``/``tanh`` have the standard's special values. The arrays the functions return are
:class:`Array`, tensors whose operators and indexing follow the standard too (``x[::-1]``,
``int8 array + 0-d int64 array`` is int64); plain ``tk.Tensor`` keeps PyTorch's rules. Both
extensions are here: ``linalg`` (on ``tensorkit.linalg``) and ``fft``. Not covered: the
uint16, uint32 and uint64 dtypes, which tensorkit does not have.
"""

import math as _math

from . import _array, fft, linalg
from ._creation import (
    arange,
    asarray,
    empty,
    empty_like,
    eye,
    from_dlpack,
    full,
    full_like,
    linspace,
    meshgrid,
    ones,
    ones_like,
    tril,
    triu,
    zeros,
    zeros_like,
)
from ._data_types import (
    astype,
    bool,  # noqa: A004
    can_cast,
    complex64,
    complex128,
    finfo,
    float32,
    float64,
    iinfo,
    int8,
    int16,
    int32,
    int64,
    isdtype,
    result_type,
    uint8,
)
from ._elementwise import (
    abs,  # noqa: A004
    acos,
    acosh,
    add,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    bitwise_and,
    bitwise_invert,
    bitwise_left_shift,
    bitwise_or,
    bitwise_right_shift,
    bitwise_xor,
    ceil,
    conj,
    cos,
    cosh,
    divide,
    equal,
    exp,
    floor,
    greater,
    greater_equal,
    imag,
    isfinite,
    isinf,
    isnan,
    less,
    less_equal,
    log,
    log1p,
    log2,
    log10,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    maximum,
    minimum,
    multiply,
    negative,
    not_equal,
    positive,
    pow,  # noqa: A004
    real,
    reciprocal,
    signbit,
    sin,
    sinh,
    sqrt,
    square,
    subtract,
    tan,
    trunc,
)
from ._elementwise_composite import (
    clip,
    copysign,
    expm1,
    floor_divide,
    hypot,
    logaddexp,
    nextafter,
    remainder,
    round,  # noqa: A004
    sign,
    tanh,
)
from ._indexing import take, take_along_axis
from ._info import __array_namespace_info__
from ._linear_algebra import matmul, matrix_transpose, tensordot, vecdot
from ._manipulation import (
    broadcast_arrays,
    broadcast_to,
    concat,
    expand_dims,
    flip,
    moveaxis,
    permute_dims,
    repeat,
    reshape,
    roll,
    squeeze,
    stack,
    tile,
    unstack,
)
from ._searching import argmax, argmin, count_nonzero, nonzero, searchsorted, where
from ._set import unique_all, unique_counts, unique_inverse, unique_values
from ._sorting import argsort, sort
from ._statistical import (
    cumulative_prod,
    cumulative_sum,
    max,  # noqa: A004
    mean,
    min,  # noqa: A004
    prod,
    std,
    sum,  # noqa: A004
    var,
)
from ._utility import all, any, diff  # noqa: A004

__array_api_version__ = "2024.12"

Array = _array.Array  # the type of the arrays the functions return (not a standard name)

e = _math.e
inf = _math.inf
nan = _math.nan
pi = _math.pi
newaxis = None

__all__ = [
    "__array_api_version__",
    "__array_namespace_info__",
    "fft",
    "linalg",
    # constants
    "e",
    "inf",
    "nan",
    "newaxis",
    "pi",
    # data types
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "float32",
    "float64",
    "complex64",
    "complex128",
    # data type functions
    "astype",
    "can_cast",
    "finfo",
    "iinfo",
    "isdtype",
    "result_type",
    # creation
    "arange",
    "asarray",
    "empty",
    "empty_like",
    "eye",
    "from_dlpack",
    "full",
    "full_like",
    "linspace",
    "meshgrid",
    "ones",
    "ones_like",
    "tril",
    "triu",
    "zeros",
    "zeros_like",
    # element-wise
    "abs",
    "acos",
    "acosh",
    "add",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "bitwise_and",
    "bitwise_invert",
    "bitwise_left_shift",
    "bitwise_or",
    "bitwise_right_shift",
    "bitwise_xor",
    "ceil",
    "clip",
    "conj",
    "copysign",
    "cos",
    "cosh",
    "divide",
    "equal",
    "exp",
    "expm1",
    "floor",
    "floor_divide",
    "greater",
    "greater_equal",
    "hypot",
    "imag",
    "isfinite",
    "isinf",
    "isnan",
    "less",
    "less_equal",
    "log",
    "log1p",
    "log2",
    "log10",
    "logaddexp",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "maximum",
    "minimum",
    "multiply",
    "negative",
    "nextafter",
    "not_equal",
    "positive",
    "pow",
    "real",
    "reciprocal",
    "remainder",
    "round",
    "sign",
    "signbit",
    "sin",
    "sinh",
    "square",
    "sqrt",
    "subtract",
    "tan",
    "tanh",
    "trunc",
    # indexing
    "take",
    "take_along_axis",
    # linear algebra
    "matmul",
    "matrix_transpose",
    "tensordot",
    "vecdot",
    # manipulation
    "broadcast_arrays",
    "broadcast_to",
    "concat",
    "expand_dims",
    "flip",
    "moveaxis",
    "permute_dims",
    "repeat",
    "reshape",
    "roll",
    "squeeze",
    "stack",
    "tile",
    "unstack",
    # searching
    "argmax",
    "argmin",
    "count_nonzero",
    "nonzero",
    "searchsorted",
    "where",
    # sets
    "unique_all",
    "unique_counts",
    "unique_inverse",
    "unique_values",
    # sorting
    "argsort",
    "sort",
    # statistics
    "cumulative_prod",
    "cumulative_sum",
    "max",
    "mean",
    "min",
    "prod",
    "std",
    "sum",
    "var",
    # utilities
    "all",
    "any",
    "diff",
]

# Arrays in, Arrays out (and Arrays from every creation function); plain tensors stay plain.
_CREATING = {
    "arange",
    "asarray",
    "empty",
    "eye",
    "from_dlpack",
    "full",
    "linspace",
    "ones",
    "zeros",
}
_array.wrap_functions(globals(), __all__, _CREATING)
_array.wrap_functions(vars(linalg), linalg.__all__, set())
_array.wrap_functions(vars(fft), fft.__all__, set())
_array.install_operators(globals())
