"""Translations of elementwise ops, comparisons, casts and reductions."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._builder import Builder, onnx_dtype
from ._table import TABLE, translates

__all__: list[str] = []

_UNARY = {
    "abs": "Abs",
    "neg": "Neg",
    "exp": "Exp",
    "log": "Log",
    "sqrt": "Sqrt",
    "sigmoid": "Sigmoid",
    "tanh": "Tanh",
    "relu": "Relu",
    "erf": "Erf",
    "sin": "Sin",
    "cos": "Cos",
    "tan": "Tan",
    "asin": "Asin",
    "acos": "Acos",
    "atan": "Atan",
    "sinh": "Sinh",
    "cosh": "Cosh",
    "asinh": "Asinh",
    "acosh": "Acosh",
    "atanh": "Atanh",
    "floor": "Floor",
    "ceil": "Ceil",
    "round": "Round",  # half to even, as NumPy and PyTorch round
    "sign": "Sign",
    "reciprocal": "Reciprocal",
    "isnan": "IsNaN",
    "isinf": "IsInf",
    "logical_not": "Not",
}
_IDENTITY = ("positive", "contiguous", "clone", "to_device")
_BINARY = {
    "add": "Add",
    "sub": "Sub",
    "mul": "Mul",
    "div": "Div",
    "pow": "Pow",
    "maximum": "Max",
    "minimum": "Min",
    "eq": "Equal",
    "lt": "Less",
    "le": "LessOrEqual",
    "gt": "Greater",
    "ge": "GreaterOrEqual",
    "logical_and": "And",
    "logical_or": "Or",
    "logical_xor": "Xor",
}
_BOOLEAN = {"bitwise_and": "And", "bitwise_or": "Or", "bitwise_xor": "Xor", "bitwise_not": "Not"}


def _unary(op_type: str) -> Any:
    return lambda b: b.add(op_type, [b.arg(0)])


def _binary(op_type: str) -> Any:
    return lambda b: b.add(op_type, [b.arg(0), b.arg(1)])


for _key, _op_type in _UNARY.items():
    TABLE[_key] = _unary(_op_type)
for _key, _op_type in _BINARY.items():
    TABLE[_key] = _binary(_op_type)
for _key in _IDENTITY:
    TABLE[_key] = _unary("Identity")


@translates(*_BOOLEAN)
def _bitwise(b: Builder) -> str:
    if b.op_dtype(b.node) != "bool":
        raise b.unsupported("bitwise ops on integers are not translated (only on bool)")
    return b.add(_BOOLEAN[b.node.op], [b.arg(i) for i in range(len(b.node.args))])


@translates("ne")
def _ne(b: Builder) -> str:
    return b.add("Not", [b.add("Equal", [b.arg(0), b.arg(1)])])


@translates("rsqrt")
def _rsqrt(b: Builder) -> str:
    return b.add("Reciprocal", [b.add("Sqrt", [b.arg(0)])])


@translates("square")
def _square(b: Builder) -> str:
    x = b.arg(0)
    return b.add("Mul", [x, x])


@translates("expm1")
def _expm1(b: Builder) -> str:
    return b.add("Sub", [b.add("Exp", [b.arg(0)]), b.const(1, b.op_dtype(b.node))])


@translates("log1p")
def _log1p(b: Builder) -> str:
    return b.add("Log", [b.add("Add", [b.arg(0), b.const(1, b.op_dtype(b.node))])])


@translates("log2", "log10")
def _log_base(b: Builder) -> str:
    base = 2.0 if b.node.op == "log2" else 10.0
    return b.add("Div", [b.add("Log", [b.arg(0)]), b.const(math.log(base), b.op_dtype(b.node))])


@translates("erfc")
def _erfc(b: Builder) -> str:
    return b.add("Sub", [b.const(1, b.op_dtype(b.node)), b.add("Erf", [b.arg(0)])])


@translates("isfinite")
def _isfinite(b: Builder) -> str:
    x = b.arg(0)
    return b.add("Not", [b.add("Or", [b.add("IsNaN", [x]), b.add("IsInf", [x])])])


@translates("where")
def _where(b: Builder) -> str:
    condition = b.tensor(b.node.attrs["condition"], "bool")
    return b.add("Where", [condition, b.arg(0), b.arg(1)])


@translates("clamp")
def _clamp(b: Builder) -> str:
    out = b.arg(0)
    for i, op_type in ((1, "Max"), (2, "Min")):
        if b.node.args[i] is not None:
            out = b.add(op_type, [out, b.arg(i)])
    return out


@translates("to_dtype")
def _to_dtype(b: Builder) -> str:
    return b.add("Cast", [b.arg(0)], to=onnx_dtype(np.dtype(b.node.attrs["np_dtype"]).name))


# ---------------------------------------------------------------------- reductions
_REDUCE = {
    "sum": "ReduceSum",
    "mean": "ReduceMean",
    "amax": "ReduceMax",
    "amin": "ReduceMin",
    "prod": "ReduceProd",
    "logsumexp": "ReduceLogSumExp",
}


@translates(*_REDUCE)
def _reduce(b: Builder) -> str:
    attrs = b.node.attrs
    x = b.arg(0)
    if attrs.get("dtype") is not None:
        x = b.add("Cast", [x], to=onnx_dtype(np.dtype(attrs["dtype"]).name))
    return b.reduce(_REDUCE[b.node.op], x, attrs["axis"], attrs["keepdims"])


@translates("all", "any")
def _all_any(b: Builder) -> str:
    attrs = b.node.attrs
    as_int = b.add("Cast", [b.arg(0)], to=onnx_dtype("int32"))
    op_type = "ReduceMin" if b.node.op == "all" else "ReduceMax"
    reduced = b.reduce(op_type, as_int, attrs["axis"], attrs["keepdims"])
    return b.add("Cast", [reduced], to=onnx_dtype("bool"))


@translates("argmax", "argmin")
def _argmax(b: Builder) -> str:
    attrs = b.node.attrs
    op_type = "ArgMax" if b.node.op == "argmax" else "ArgMin"
    x = b.arg(0)
    if attrs["axis"] is None:
        flat = b.add("Reshape", [x, b.ints([-1])])
        found = b.add(op_type, [flat], axis=0, keepdims=0)
        return b.add("Reshape", [found, b.ints(b.node.outputs[0].shape)])
    return b.add(op_type, [x], axis=attrs["axis"], keepdims=int(bool(attrs["keepdims"])))


@translates("var")
def _var(b: Builder) -> str:
    attrs = b.node.attrs
    x_ref = b.node.args[0]
    rank = len(b.shape(x_ref))
    axes = tuple(range(rank)) if attrs["axis"] is None else attrs["axis"]
    axes = (axes,) if isinstance(axes, int) else axes
    b.check_static(x_ref, axes, "var")
    count = math.prod(b.shape(x_ref)[a] for a in axes) - attrs["correction"]
    x = b.arg(0)
    centered = b.add("Sub", [x, b.reduce("ReduceMean", x, axes, True)])
    squares = b.reduce("ReduceSum", b.add("Mul", [centered, centered]), axes, attrs["keepdims"])
    return b.add("Div", [squares, b.const(max(count, 0), b.op_dtype(b.node))])


@translates("cumsum")
def _cumsum(b: Builder) -> str:
    attrs = b.node.attrs
    x = b.arg(0)
    if attrs.get("dtype") is not None:
        x = b.add("Cast", [x], to=onnx_dtype(np.dtype(attrs["dtype"]).name))
    return b.add("CumSum", [x, b.initializer(np.asarray(attrs["axis"], np.int64))])
