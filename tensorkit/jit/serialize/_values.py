"""The Python values of a saved graph (node arguments, attributes, constant outputs) as JSON.

A value is ``null``, ``true``/``false``, a string or an integer of magnitude below 2**53
(standing for itself), a JSON array (a list), or an object with one key:
``{"int": "-0x1f"}`` (any other int, in hex), ``{"float": repr}`` (also inf, nan, -0.0),
``{"complex": [repr, repr]}``, ``{"tuple": [...]}``, ``{"size": [int, ...]}`` (a ``tk.Size``),
``{"dict": [[key, value], ...]}``, ``{"slice": [start, stop, step]}``, ``{"ellipsis": null}``,
``{"np_dtype": "<f4"}`` (a NumPy dtype), ``{"dtype": "float32"}`` (a ``tk.dtype``),
``{"device": "cuda:0"}``, ``{"array": name}`` (a NumPy or CuPy array, stored as the file's
tensor ``array.<name>``), ``{"scalar": name}`` (a NumPy scalar, stored as a 0-d tensor) and
``{"ref": id}`` (a value of the graph: a whole argument or output, or inside an attribute's
tuples and lists). Any other Python object cannot be saved.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from ..._backend import cpu, device, device_of_array
from ..._dtype import ALL_DTYPES, dtype
from ...serialization import CheckpointError
from ...serialization._tree import parse_float
from ...tensor import Size, Tensor, wrap
from ..ir import Ref

__all__ = ["NESTED_REFS", "NO_REFS", "TOP_REFS", "ArrayTable", "decode", "encode"]

MAX_DEPTH = 64
# Where a value may hold {"ref": id}: nowhere, as the value itself (a node's argument, an
# output), or also inside its tuples and lists (an attribute: an index tuple; ``ir.attr_refs``).
NO_REFS, TOP_REFS, NESTED_REFS = "none", "top", "nested"
_EXACT_INT = 2**53
_HEX_INT = re.compile(r"-?0x[0-9a-f]+")  # int(hex) takes linear time
_DEVICE_TEXT = re.compile(r"cpu|cuda:\d{1,4}")
_DTYPES = {d.name: d for d in ALL_DTYPES}
_ARRAY_DTYPES = {d.np for d in ALL_DTYPES}  # what a tensor of the file can hold
_SAVABLE = (
    "a saved graph holds None, bool, int, float, complex, str, lists, tuples, dicts, slices, "
    "Ellipsis, tk.Size, tk.dtype, tk.device, NumPy dtypes, and NumPy arrays and scalars of "
    "tensorkit's dtypes"
)


class ArrayTable:
    """The arrays a graph's values hold, as the tensors ``save`` writes (one per array
    object, by name)."""

    def __init__(self) -> None:
        self.tensors: dict[str, Tensor] = {}
        self._names: dict[int, str] = {}
        self._kept: list[Any] = []  # the arrays named, so their ids stay theirs

    def add(self, array: Any) -> str:
        name = self._names.get(id(array))
        if name is None:
            name = str(len(self.tensors))
            self._names[id(array)] = name
            self._kept.append(array)
            stored = np.asarray(array) if isinstance(array, np.generic) else array
            self.tensors[name] = wrap(stored, device_of_array(array))
        return name


def encode(value: Any, arrays: ArrayTable, what: str, refs: str = NO_REFS, depth: int = 0) -> Any:
    """The JSON of ``value`` (``what`` names it in errors: the node, op and attribute);
    ``refs`` says where graph values may be (see ``NO_REFS``)."""
    kind = type(value)
    if value is None or kind in (bool, str):
        return value
    if kind is int:
        return value if -_EXACT_INT < value < _EXACT_INT else {"int": hex(value)}
    if kind is float:
        return {"float": repr(value)}
    if kind is complex:
        return {"complex": [repr(value.real), repr(value.imag)]}
    if kind is Ref and refs != NO_REFS:
        return {"ref": value.id}
    if value is Ellipsis:
        return {"ellipsis": None}
    if kind is dtype:
        return {"dtype": value.name}
    if kind is device:
        return {"device": str(value)}
    if isinstance(value, np.dtype) and _plain_dtype(value):
        return {"np_dtype": value.str}
    if _is_array(value) or isinstance(value, np.generic):
        if value.dtype not in _ARRAY_DTYPES:
            raise TypeError(
                f"tk.jit.save: {what} is an array of dtype {value.dtype}, which a saved graph "
                f"cannot hold (it holds {', '.join(sorted(_DTYPES))})"
            )
        return {"scalar" if isinstance(value, np.generic) else "array": arrays.add(value)}
    if depth >= MAX_DEPTH:
        raise ValueError(f"tk.jit.save: {what} is nested deeper than {MAX_DEPTH} levels")

    def inner(item: Any, within: str = NO_REFS) -> Any:
        return encode(item, arrays, what, within, depth + 1)

    within = refs if refs == NESTED_REFS else NO_REFS
    if kind is list:
        return [inner(item, within) for item in value]
    if kind is tuple:
        return {"tuple": [inner(item, within) for item in value]}
    if kind is Size:
        return {"size": [inner(item) for item in value]}
    if kind is slice:
        return {"slice": [inner(value.start), inner(value.stop), inner(value.step)]}
    if kind is dict:
        return {"dict": [[inner(k), inner(v)] for k, v in value.items()]}
    raise TypeError(
        f"tk.jit.save: {what} is a {_type_name(value)} ({_snippet(value)}); " + _SAVABLE
    )


def decode(
    node: Any,
    arrays: dict[str, Tensor],
    used: set[str],
    fail: Callable[[str], CheckpointError],
    refs: str = NO_REFS,
    depth: int = 0,
) -> Any:
    """The value a JSON ``node`` from the file stands for; ``arrays`` are the file's
    ``array.*`` tensors (the names read are added to ``used``); ``refs`` says where
    ``{"ref": id}`` may be (see ``NO_REFS``). Anything else raises ``fail(problem)``."""
    kind = type(node)
    if node is None or kind in (bool, str, int):
        return node
    if depth >= MAX_DEPTH:
        raise fail(f"nested deeper than {MAX_DEPTH} levels")

    within = refs if refs == NESTED_REFS else NO_REFS

    def inner(item: Any, inside: str = NO_REFS) -> Any:
        return decode(item, arrays, used, fail, inside, depth + 1)

    if kind is list:
        return [inner(item, within) for item in node]
    if not (kind is dict and len(node) == 1):
        raise fail(f"expected a value or a one-key object, got {_snippet(node)}")
    ((tag, body),) = node.items()
    if tag == "int" and type(body) is str and _HEX_INT.fullmatch(body):
        return int(body, 16)
    if tag == "float":
        return parse_float(body, fail)
    if tag == "complex" and type(body) is list and len(body) == 2:
        return complex(parse_float(body[0], fail), parse_float(body[1], fail))
    if tag == "ref" and refs != NO_REFS and type(body) is int:
        return Ref(body)
    if tag == "ellipsis" and body is None:
        return Ellipsis
    if tag == "dtype" and type(body) is str and body in _DTYPES:
        return _DTYPES[body]
    if tag == "device" and type(body) is str and _DEVICE_TEXT.fullmatch(body):
        return _device(body, fail)
    if tag == "np_dtype" and type(body) is str:
        return _np_dtype(body, fail)
    if tag in ("array", "scalar") and type(body) is str:
        return _array(tag, body, arrays, used, fail)
    if tag == "tuple" and type(body) is list:
        return tuple(inner(item, within) for item in body)
    if tag in ("size", "slice", "dict") and type(body) is list:
        items = [inner(item) for item in body]
        if tag == "size" and all(type(n) is int for n in items):
            return Size(items)
        if tag == "slice" and len(items) == 3:
            return slice(*items)
        if tag == "dict" and all(type(pair) is list and len(pair) == 2 for pair in items):
            return _dict(items, fail)
    raise fail(f"bad value {_snippet(node)}")


def _device(text: str, fail: Callable[[str], CheckpointError]) -> device:
    try:
        return device(text)
    except RuntimeError as error:
        raise fail(f"device {text} is not available here ({error})") from None


def _np_dtype(text: str, fail: Callable[[str], CheckpointError]) -> np.dtype:
    try:
        parsed = np.dtype(text) if len(text) <= 8 else None
    except TypeError:
        parsed = None
    if parsed is None or not _plain_dtype(parsed) or parsed.str != text:
        raise fail(f"bad NumPy dtype {_snippet(text)}")
    return parsed


def _array(
    tag: str,
    name: str,
    arrays: dict[str, Tensor],
    used: set[str],
    fail: Callable[[str], CheckpointError],
) -> Any:
    tensor = arrays.get(name)
    if tensor is None:
        raise fail(f"tensor 'array.{name}' is not in the file")
    used.add(name)
    if tag == "array":
        return tensor._data
    if tensor._data.shape != () or tensor.device is not cpu:
        raise fail(f"a NumPy scalar must be a 0-d cpu tensor, 'array.{name}' is not")
    return tensor._data[()]


def _dict(pairs: list, fail: Callable[[str], CheckpointError]) -> dict:
    result: dict = {}
    for key, value in pairs:
        try:
            if key in result:
                raise fail(f"duplicated dict key {_snippet(key)}")
            result[key] = value
        except TypeError:  # an unhashable key
            raise fail(f"bad dict key {_snippet(key)}") from None
    return result


def _plain_dtype(value: np.dtype) -> bool:
    """A numeric or bool dtype (no object, string, datetime or structured dtypes)."""
    return value.kind in "biufc" and value.fields is None and value.subdtype is None


def _is_array(value: Any) -> bool:
    if type(value) is np.ndarray:
        return True
    cupy = sys.modules.get("cupy")
    return cupy is not None and type(value) is cupy.ndarray


def _type_name(value: Any) -> str:
    kind = type(value)
    if kind.__module__ == "builtins":
        return kind.__qualname__
    return f"{kind.__module__}.{kind.__qualname__}"


def _snippet(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
