"""The C prototypes of an extension's functions, read from its source.

A function is found by its definition (``name(...) {``) in the sources. Each parameter is a
scalar (an integer or floating C type: a Python number) or a pointer / array (a tensor whose
dtype is the C type's). An array parameter may give its shape with C99's variably modified
parameter syntax, ``const float x[n][m]``, naming integer parameters (or literals): the
binding checks the tensor's shape against it. A ``const`` pointer is read; any other pointer
is written (its tensor's version is bumped after the call).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass

import numpy as np

# C type (qualifiers and spaces normalized) -> NumPy dtype name.
C_TYPES = {
    "float": "float32",
    "double": "float64",
    "int8_t": "int8",
    "signed char": "int8",
    "char": "int8",
    "uint8_t": "uint8",
    "unsigned char": "uint8",
    "int16_t": "int16",
    "short": "int16",
    "uint16_t": "uint16",
    "unsigned short": "uint16",
    "int32_t": "int32",
    "int": "int32",
    "uint32_t": "uint32",
    "unsigned int": "uint32",
    "unsigned": "uint32",
    "int64_t": "int64",
    "long": "int64",
    "long long": "int64",
    "ptrdiff_t": "int64",
    "uint64_t": "uint64",
    "unsigned long": "uint64",
    "unsigned long long": "uint64",
    "size_t": "uint64",
    "bool": "bool",
    "_Bool": "bool",
}
_QUALIFIERS = {"const", "volatile", "restrict", "__restrict", "__restrict__", "register"}
_DECL_PREFIXES = re.compile(r'(extern\s+"C"\s*|__global__\s+|static\s+|inline\s+|__device__\s+)')
_PARAM = re.compile(r"^(?P<type>.*?)(?P<name>[A-Za-z_]\w*)\s*(?P<dims>(?:\[[^\]]*\]\s*)*)$")


@dataclass(frozen=True)
class Param:
    """One C parameter: ``pointer`` (a tensor) or not (a number); ``dims`` the declared
    shape of an array parameter (names of integer parameters or literals), or None."""

    name: str
    ctype: str
    dtype: str
    pointer: bool
    const: bool
    dims: tuple[str, ...] | None

    def c_text(self) -> str:
        """The parameter as cffi declares it (an array parameter as a pointer)."""
        const = "const " if self.const else ""
        return f"{const}{self.ctype} {'*' if self.pointer else ''}{self.name}"


@dataclass(frozen=True)
class Prototype:
    """A function: its name, result C type ("void" or a scalar), parameters, and whether
    it was declared ``extern "C"`` (CUDA kernels must be, to keep their names)."""

    name: str
    result: str
    params: tuple[Param, ...]
    extern_c: bool

    def c_text(self) -> str:
        return f"{self.result} {self.name}({', '.join(p.c_text() for p in self.params) or 'void'});"


class PrototypeError(ValueError):
    """A function the extension lists cannot be found or bound from its source."""


def _strip_comments(source: str) -> str:
    """``source`` without comments and preprocessor lines (newlines kept, for line numbers)."""
    source = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group()), source, flags=re.S)
    source = re.sub(r"//[^\n]*", "", source)
    return re.sub(r"(?m)^\s*#[^\n]*", "", source)


def _ctype(words: list[str], where: str) -> str:
    text = " ".join(w for w in words if w not in _QUALIFIERS)
    text = re.sub(r"\bsigned\s+(int|long|short)", r"\1", text).replace("long int", "long")
    if text not in C_TYPES:
        raise PrototypeError(
            f"{where}: unsupported C type {text!r} (the supported types are "
            f"{', '.join(sorted(C_TYPES))}, and pointers to them)"
        )
    return text


def find(source: str, name: str, label: str) -> Prototype | None:
    """The prototype of the function ``name`` defined in ``source`` (None if it is not);
    ``label`` names the source in errors."""
    text = _strip_comments(source)
    match = re.search(rf"(?<![\w.]){re.escape(name)}\s*\(([^)]*)\)\s*\{{", text)
    if match is None:
        return None
    start = max(text.rfind(c, 0, match.start()) for c in ";}{") + 1
    head = text[start : match.start()]
    line = text.count("\n", 0, match.start()) + 1
    where = f"{label}:{line}: function {name}"
    extern_c = 'extern "C"' in head or re.search(r'extern\s+"C"\s*\{', text[:start]) is not None
    words = _DECL_PREFIXES.sub(" ", head).split()
    if "*" in "".join(words):
        raise PrototypeError(f"{where}: a function returning a pointer cannot be bound")
    result = "void" if words == ["void"] else _ctype(words, where)
    params = []
    raw = match.group(1).strip()
    for part in [] if raw in ("", "void") else raw.split(","):
        params.append(_param(part.strip(), where))
    _check_dims(params, where)
    return Prototype(name, result, tuple(params), extern_c)


def _param(text: str, where: str) -> Param:
    match = _PARAM.match(text)
    if match is None:
        raise PrototypeError(f"{where}: cannot read the parameter {text!r}")
    type_text = match.group("type")
    stars = type_text.count("*")
    words = type_text.replace("*", " ").split()
    dims_text = re.findall(r"\[([^\]]*)\]", match.group("dims"))
    if stars + bool(dims_text) > 1 or (stars and dims_text):
        raise PrototypeError(
            f"{where}: parameter {match.group('name')!r} ({text!r}) is a pointer to pointers; "
            "pass one flat buffer per tensor"
        )
    ctype = _ctype(words, f"{where}, parameter {match.group('name')!r}")
    dims = None
    if dims_text and any(d.strip() for d in dims_text):
        dims = tuple(d.replace("static", "").strip() or "*" for d in dims_text)
    return Param(
        match.group("name"),
        ctype,
        C_TYPES[ctype],
        bool(stars or dims_text),
        "const" in words,
        dims,
    )


def _check_dims(params: list[Param], where: str) -> None:
    integers = {p.name for p in params if not p.pointer and np.dtype(C_TYPES[p.ctype]).kind in "iu"}
    for p in params:
        for dim in p.dims or ():
            if not (dim == "*" or dim.isdigit() or dim in integers):
                raise PrototypeError(
                    f"{where}: the size {dim!r} of parameter {p.name!r} must be an integer "
                    "parameter's name or a literal"
                )


def to_json(prototypes: list[Prototype]) -> str:
    return json.dumps([asdict(p) for p in prototypes])


def from_json(text: str) -> list[Prototype]:
    result = []
    for item in json.loads(text):
        params = tuple(
            Param(**{**p, "dims": None if p["dims"] is None else tuple(p["dims"])})
            for p in item["params"]
        )
        result.append(Prototype(item["name"], item["result"], params, item["extern_c"]))
    return result
