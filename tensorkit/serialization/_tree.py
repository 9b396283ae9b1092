"""The object tree around the tensors, as JSON.

``flatten`` turns what ``save`` is given into a JSON-able structure and a dict of named tensors;
``unflatten`` rebuilds the object from such a structure read from an untrusted file. A node is
``null``, ``true``/``false``, an integer or a string (standing for itself), or an object with
one key: ``{"float": repr}``, ``{"list": [node, ...]}``, ``{"tuple": [node, ...]}``,
``{"dict": [[key, node], ...]}``, ``{"odict": [[key, node], ...]}`` (an OrderedDict),
``{"set": [key, ...]}``, ``{"complex": [real repr, imag repr]}``, ``{"bytes": hex}``,
``{"size": [int, ...]}`` (a ``tk.Size``), ``{"dtype": name}``, ``{"device": text}`` or
``{"tensor": name}``. A key (of a dict, or an item of a set) is a node of a str, int, float,
complex, bytes, bool, None or a tuple of keys.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable, Container
from typing import Any

from .._backend import device
from .._dtype import ALL_DTYPES, dtype
from ..tensor import Size, Tensor
from ._format import CheckpointError

__all__ = ["MAX_DEPTH", "flatten", "unflatten"]

MAX_DEPTH = 200
_SELF = (type(None), bool, int, str)  # types a JSON value stands for exactly
_CONTAINERS = {list: "list", tuple: "tuple", dict: "dict", OrderedDict: "odict", set: "set"}
_DTYPES = {d.name: d for d in ALL_DTYPES}
_DEVICE_TEXT = re.compile(r"cpu|cuda:\d{1,4}")
_SAVABLE = (
    "a checkpoint holds tensors, dicts, lists, tuples, sets, str, bytes, int, float, complex, "
    "bool, None, tk.Size, tk.dtype and tk.device"
)
_KEYS = "keys must be str, bytes, int, float, complex, bool, None or tuples of those"


def format_path(path: tuple) -> str:
    """``("model", "layers", 2)`` -> ``obj['model']['layers'][2]`` (the middle of a long path
    elided)."""
    parts = [f"[{key!r}]" for key in path]
    if len(parts) > 16:
        parts[8:-8] = ["..."]
    return "obj" + "".join(parts)


def flatten(obj: Any) -> tuple[Any, dict[str, Tensor]]:
    """The structure of ``obj`` and its tensors by name.

    A tensor is named by its path with dots (``model.fc.weight``); a name already taken (or
    ``__metadata__``) gets a ``#2``, ``#3``... suffix. A tensor reached twice is stored once.
    """
    tensors: dict[str, Tensor] = {}
    names: dict[int, str] = {}
    open_containers: set[int] = set()

    def name_for(tensor: Tensor, path: tuple) -> str:
        name = names.get(id(tensor))
        if name is None:
            base = ".".join(str(key) for key in path) or "tensor"
            name, count = base, 1
            while name in tensors or name == "__metadata__":
                count += 1
                name = f"{base}#{count}"
            names[id(tensor)] = name
            tensors[name] = tensor
        return name

    def visit(value: Any, path: tuple) -> Any:
        kind = type(value)
        node = _scalar_node(value)
        if node is not None or value is None:
            return node
        if isinstance(value, Tensor):
            return {"tensor": name_for(value, path)}
        if kind is Size:
            return {"size": list(value)}
        if kind is dtype:
            return {"dtype": value.name}
        if kind is device:
            return {"device": str(value)}
        tag = _CONTAINERS.get(kind)
        if tag is None:
            raise TypeError(
                f"{format_path(path)}: cannot save an object of type {_type_name(value)}; "
                + _SAVABLE
            )
        if len(path) >= MAX_DEPTH:
            raise ValueError(f"{format_path(path)}: nested deeper than {MAX_DEPTH} levels")
        if id(value) in open_containers:
            raise ValueError(f"{format_path(path)}: the object contains itself")
        open_containers.add(id(value))
        if tag in ("list", "tuple"):
            body = [visit(item, (*path, index)) for index, item in enumerate(value)]
        elif tag == "set":
            body = [key_node(item, path) for item in value]
        else:
            body = [[key_node(key, path), visit(item, (*path, key))] for key, item in value.items()]
        open_containers.discard(id(value))
        return {tag: body}

    return visit(obj, ()), tensors


def _scalar_node(value: Any) -> Any:
    """The node of a str, int, bool, None, float, complex or bytes; None for anything else."""
    kind = type(value)
    if kind in _SELF:
        return value
    if kind is float:
        return {"float": repr(value)}
    if kind is complex:
        return {"complex": [repr(value.real), repr(value.imag)]}
    if kind is bytes:
        return {"bytes": value.hex()}
    return None


def key_node(key: Any, path: tuple, depth: int = 0) -> Any:
    """The node of a dict key or set item: a scalar, or a tuple of keys."""
    node = _scalar_node(key)
    if node is not None or key is None:
        return node
    if type(key) is tuple and len(path) + depth < MAX_DEPTH:
        return {"tuple": [key_node(item, path, depth + 1) for item in key]}
    raise TypeError(
        f"{format_path(path)}: cannot save a dict key or set item of type {_type_name(key)} "
        f"({_snippet(key)}); {_KEYS}"
    )


def unflatten(
    structure: Any, names: Container[str], resolve: Callable[[str], Any], where: str
) -> Any:
    """Rebuild an object from its structure, with ``resolve(name)`` in place of each tensor;
    ``names`` are the tensors in the file. Errors name the path in the structure."""

    def fail(path: tuple, problem: str) -> CheckpointError:
        return CheckpointError(f"{where} at {format_path(path)}: {problem}")

    def scalar(node: Any, path: tuple) -> Any:
        """The scalar a node stands for, or ``_NOT_SCALAR``."""
        if type(node) in _SELF:
            return node
        if not (isinstance(node, dict) and len(node) == 1):
            raise fail(path, f"expected a value or a one-key object, got {_snippet(node)}")
        ((tag, body),) = node.items()
        if tag == "float":
            return parse_float(body, lambda problem: fail(path, problem))
        if tag == "complex" and isinstance(body, list) and len(body) == 2:
            real, imag = (parse_float(part, lambda problem: fail(path, problem)) for part in body)
            return complex(real, imag)
        if tag == "bytes" and isinstance(body, str) and len(body) % 2 == 0:
            try:
                return bytes.fromhex(body)
            except ValueError:
                raise fail(path, f"bad bytes {_snippet(body)}") from None
        return _NOT_SCALAR

    def build(node: Any, path: tuple) -> Any:
        value = scalar(node, path)
        if value is not _NOT_SCALAR:
            return value
        ((tag, body),) = node.items()
        if tag == "size" and isinstance(body, list) and all(type(n) is int for n in body):
            return Size(body)
        if tag == "dtype" and body in _DTYPES:
            return _DTYPES[body]
        if tag == "device" and isinstance(body, str) and _DEVICE_TEXT.fullmatch(body):
            return device(body)
        if tag == "tensor" and isinstance(body, str):
            if body not in names:
                raise fail(path, f"tensor {body!r} is not in the file")
            return resolve(body)
        if tag not in _CONTAINERS.values() or not isinstance(body, list):
            raise fail(path, f"expected a value or a one-key object, got {_snippet(node)}")
        if len(path) >= MAX_DEPTH:
            raise fail(path, f"nested deeper than {MAX_DEPTH} levels")
        if tag in ("list", "tuple"):
            items = [build(item, (*path, index)) for index, item in enumerate(body)]
            return items if tag == "list" else tuple(items)
        if tag == "set":
            return {build_key(item, path) for item in body}
        result: dict = {} if tag == "dict" else OrderedDict()
        for pair in body:
            if not (isinstance(pair, list) and len(pair) == 2):
                raise fail(path, f"dict items must be [key, value] pairs, got {_snippet(pair)}")
            key = build_key(pair[0], path)
            if key in result:
                raise fail(path, f"duplicated dict key {key!r}")
            result[key] = build(pair[1], (*path, key))
        return result

    def build_key(node: Any, path: tuple, depth: int = 0) -> Any:
        if type(node) in _SELF or (isinstance(node, dict) and len(node) == 1):
            value = scalar(node, path)
            if value is not _NOT_SCALAR:
                return value
            body = node.get("tuple")
            if isinstance(body, list) and len(path) + depth < MAX_DEPTH:
                return tuple(build_key(item, path, depth + 1) for item in body)
        raise fail(path, f"bad dict key or set item {_snippet(node)}: {_KEYS}")

    return build(structure, ())


_NOT_SCALAR = object()


def parse_float(text: Any, fail: Callable[[str], CheckpointError]) -> float:
    if isinstance(text, str) and len(text) <= 40:
        try:
            return float(text)
        except ValueError:
            pass
    raise fail(f"bad float {_snippet(text)}")


def _type_name(value: Any) -> str:
    kind = type(value)
    return (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else f"{kind.__module__}.{kind.__qualname__}"
    )


def _snippet(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
