"""Data types and PyTorch's type-promotion rules.

A :class:`dtype` wraps a NumPy dtype (CuPy uses the same dtype objects). Promotion follows
PyTorch, not NumPy: ``int64 + float32 -> float32``, and Python scalars and 0-dim tensors only
raise the result's *category* (bool < integer < floating < complex), never its width.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "dtype",
    "bool_",
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
    "promote_types",
    "get_default_dtype",
    "set_default_dtype",
]


class dtype:  # noqa: N801 - the name PyTorch users know
    """A tensor element type, e.g. ``tk.float32``."""

    __slots__ = ("is_complex", "is_floating_point", "is_signed", "itemsize", "name", "np")

    def __init__(self, name: str, np_dtype: np.dtype) -> None:
        self.name = name
        self.np = np.dtype(np_dtype)
        self.itemsize = self.np.itemsize
        self.is_floating_point = self.np.kind == "f"
        self.is_complex = self.np.kind == "c"
        self.is_signed = self.np.kind in "ifc"

    def __repr__(self) -> str:
        return f"tensorkit.{self.name}"

    def __reduce__(self) -> str:
        return self.name

    def to_real(self) -> dtype:
        """The real dtype of a complex one (complex64 -> float32); other dtypes unchanged."""
        return _COMPLEX_TO_REAL.get(self, self)

    def to_complex(self) -> dtype:
        """The complex dtype of a floating one (float32 -> complex64)."""
        return _REAL_TO_COMPLEX.get(self, self)


bool_ = dtype("bool", np.bool_)
uint8 = dtype("uint8", np.uint8)
int8 = dtype("int8", np.int8)
int16 = dtype("int16", np.int16)
int32 = dtype("int32", np.int32)
int64 = dtype("int64", np.int64)
float16 = dtype("float16", np.float16)
float32 = dtype("float32", np.float32)
float64 = dtype("float64", np.float64)
complex64 = dtype("complex64", np.complex64)
complex128 = dtype("complex128", np.complex128)

ALL_DTYPES = (
    bool_,
    uint8,
    int8,
    int16,
    int32,
    int64,
    float16,
    float32,
    float64,
    complex64,
    complex128,
)
FLOATING_DTYPES = (float16, float32, float64)

_FROM_NP: dict[np.dtype, dtype] = {d.np: d for d in ALL_DTYPES}
_COMPLEX_TO_REAL = {complex64: float32, complex128: float64}
_REAL_TO_COMPLEX = {float16: complex64, float32: complex64, float64: complex128}

# Categories, ordered: a result takes the highest category among its operands.
BOOL, INTEGRAL, FLOATING, COMPLEX = 0, 1, 2, 3


def category(d: dtype) -> int:
    if d is bool_:
        return BOOL
    if d.is_complex:
        return COMPLEX
    if d.is_floating_point:
        return FLOATING
    return INTEGRAL


def scalar_category(value: object) -> int:
    """The category of a Python scalar (bool is checked before int: bool subclasses int)."""
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, complex):
        return COMPLEX
    if isinstance(value, float):
        return FLOATING
    return INTEGRAL


def from_numpy_dtype(np_dtype: np.dtype) -> dtype:
    try:
        return _FROM_NP[np_dtype]
    except KeyError:
        raise TypeError(
            f"tensorkit has no dtype for NumPy dtype {np_dtype}; supported: "
            + ", ".join(d.name for d in ALL_DTYPES)
        ) from None


_default_dtype = float32


def get_default_dtype() -> dtype:
    """The floating dtype that new tensors get when none is given (float32 at start)."""
    return _default_dtype


def set_default_dtype(d: dtype) -> None:
    """Set the default floating dtype (float16, float32 or float64), as torch.set_default_dtype."""
    global _default_dtype
    if not isinstance(d, dtype) or not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d!r}")
    _default_dtype = d


def default_complex_dtype() -> dtype:
    return complex128 if _default_dtype is float64 else complex64


def promote_types(a: dtype, b: dtype) -> dtype:
    """The smallest dtype both ``a`` and ``b`` can be cast to, by PyTorch's table."""
    if a is b:
        return a
    return _PROMOTION[(a, b)]


def _promote_pair(a: dtype, b: dtype) -> dtype:
    ca, cb = category(a), category(b)
    if ca != cb:
        high, low = (a, b) if ca > cb else (b, a)
        if category(high) == COMPLEX and low is float64:
            return complex128
        return high
    if ca in (COMPLEX, FLOATING):
        return a if a.itemsize >= b.itemsize else b
    if ca == INTEGRAL:
        # NumPy agrees with PyTorch for integers (uint8 + int8 -> int16, uint8 + int64 -> int64).
        return _FROM_NP[np.promote_types(a.np, b.np)]
    return bool_


_PROMOTION = {(a, b): _promote_pair(a, b) for a in ALL_DTYPES for b in ALL_DTYPES}


def default_dtype_for_category(cat: int) -> dtype:
    return (bool_, int64, _default_dtype, default_complex_dtype())[cat]


def result_type_of(dims_dtypes: list[dtype], zero_dim_dtypes: list[dtype], scalars: list) -> dtype:
    """PyTorch's three-tier promotion: tensors with dims, then 0-dim tensors, then scalars.

    A lower tier changes the result only when its category is higher than every higher tier's.
    """
    result: dtype | None = None
    for d in dims_dtypes:
        result = d if result is None else promote_types(result, d)
    zero_dim: dtype | None = None
    for d in zero_dim_dtypes:
        zero_dim = d if zero_dim is None else promote_types(zero_dim, d)
    if zero_dim is not None:
        if result is None:
            result = zero_dim
        elif category(zero_dim) > category(result):
            result = _widen_category(result, zero_dim)
    if scalars:
        cat = max(scalar_category(s) for s in scalars)
        if result is None:
            result = default_dtype_for_category(cat)
        elif cat > category(result):
            result = _widen_category(result, default_dtype_for_category(cat))
    return result if result is not None else _default_dtype


def _widen_category(result: dtype, lower_tier: dtype) -> dtype:
    """Raise ``result`` to the category of ``lower_tier`` (a 0-dim tensor or scalar's dtype)."""
    if category(lower_tier) == COMPLEX and category(result) == FLOATING:
        return result.to_complex()
    return lower_tier


# PyTorch's ScalarType names (by NumPy dtype name), which its dtype errors quote.
SCALAR_TYPE_NAMES = {
    "bool": "Bool",
    "uint8": "Byte",
    "int8": "Char",
    "int16": "Short",
    "int32": "Int",
    "int64": "Long",
    "float16": "Half",
    "float32": "Float",
    "float64": "Double",
    "complex64": "ComplexFloat",
    "complex128": "ComplexDouble",
}


def no_kernel(kernel: str, np_dtype: np.dtype) -> NotImplementedError:
    """PyTorch's error for a kernel with no version for ``np_dtype`` (to raise), e.g.
    ``"elu_cpu" not implemented for 'ComplexFloat'``."""
    name = SCALAR_TYPE_NAMES.get(np.dtype(np_dtype).name, str(np_dtype))
    return NotImplementedError(f"\"{kernel}\" not implemented for '{name}'")


def reject_complex(np_dtype: np.dtype, kernel: str) -> None:
    """Raise PyTorch's error for ``kernel`` if ``np_dtype`` is complex (it has no complex
    version in PyTorch, and NumPy's answer would be silently meaningless)."""
    if np_dtype.kind == "c":
        raise no_kernel(kernel, np_dtype)


CLAMP_COMPLEX = "clamp is not supported for complex types"
