"""PyTorch's names of scalar types, as its error messages spell them."""

from __future__ import annotations

from ..._dtype import dtype

_TYPE_NAMES = {
    "float16": "Half",
    "float32": "Float",
    "float64": "Double",
    "int8": "Char",
    "int16": "Short",
    "int32": "Int",
    "int64": "Long",
    "uint8": "Byte",
    "bool": "Bool",
    "complex64": "ComplexFloat",
    "complex128": "ComplexDouble",
}


def type_name(t: dtype) -> str:
    """``Float`` for float32, ``Long`` for int64, ..."""
    return _TYPE_NAMES.get(t.name, t.name)
