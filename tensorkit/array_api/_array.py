"""The namespace's array type: a tk.Tensor whose Python operators and indexing follow the
standard.

``tk.Tensor`` keeps PyTorch's rules (a 0-d tensor does not widen a dimensioned one, slices
must step forwards); the arrays this namespace returns are :class:`Array`, a subclass whose
operators call the namespace's functions, so ``a + b`` promotes by the standard's table
whatever the dimensions, ``x // 0.0`` has the standard's special values, and ``x[::-1]``
works. An Array is a tensor in every other way: tensorkit's functions and methods take it
(and return plain tensors), and gradients flow through it.

The namespace's functions return Arrays when an argument is an Array or when they create
arrays from Python or NumPy data; given plain tensors, they return plain tensors (so code
handed tk.Tensors, SciPy's included, and ``tk.fft``, built on the fft extension, keep
returning tensors with PyTorch's rules).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

from ..tensor import Tensor
from ._promotion import is_scalar, result_dtype


class Array(Tensor):
    """A tensor made by ``tk.array_api``: its operators and indexing follow the standard."""

    __slots__ = ()
    __hash__ = Tensor.__hash__

    @property
    def mT(self) -> Array:
        return as_array(Tensor.mT.fget(self))

    @property
    def T(self) -> Array:
        if self.ndim != 2:
            raise ValueError(f"x.T needs a 2-D array, got {self.ndim}-D; use x.mT for stacks")
        return as_array(Tensor.T.fget(self))

    def to_device(self, device: Any, /, *, stream: Any = None) -> Array:
        return as_array(self.to(device), (self,))

    def __reduce_ex__(self, protocol: Any) -> tuple:
        rebuild, arguments = Tensor.__reduce_ex__(self, protocol)
        return (_rebuild_array, (rebuild, arguments))

    def __deepcopy__(self, memo: dict) -> Array:
        return as_array(Tensor.__deepcopy__(self, memo))

    def __getitem__(self, key: Any) -> Array:
        from ._indexing import getitem

        return as_array(getitem(self, key), (self,))

    def __setitem__(self, key: Any, value: Any) -> None:
        from ._indexing import setitem

        setitem(self, key, value)


def _rebuild_array(rebuild: Callable, arguments: tuple) -> Array:
    """Unpickle an Array: the tensor, as an Array."""
    return as_array(rebuild(*arguments))


def as_array(t: Tensor, inputs: Iterable[Tensor] = ()) -> Array:
    """``t`` as an Array. A new tensor changes class; one that is among ``inputs`` (a
    function that returned its argument) becomes a view, so the caller's tensor stays as it
    was."""
    if type(t) is Array:
        return t
    if any(t is x for x in inputs):
        t = t.view(tuple(t.shape))
    t.__class__ = Array
    return t


def _tensors_in(args: tuple, kwargs: dict) -> list[Tensor]:
    """The tensors among the arguments, and inside lists and tuples of them."""
    found = []
    for value in (*args, *kwargs.values()):
        if isinstance(value, Tensor):
            found.append(value)
        elif isinstance(value, list | tuple):
            found.extend(v for v in value if isinstance(v, Tensor))
    return found


def _converted(value: Any, inputs: list[Tensor]) -> Any:
    if isinstance(value, Tensor):
        return as_array(value, inputs)
    if isinstance(value, tuple):
        items = [_converted(v, inputs) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if isinstance(value, list):
        return [_converted(v, inputs) for v in value]
    return value


def returns_arrays(function: Callable, *, creates: bool = False) -> Callable:
    """``function`` returning Arrays when it is given an Array, or ``creates`` arrays from
    something that is not a tensor (``asarray`` of a plain tensor stays a plain tensor)."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        out = function(*args, **kwargs)
        inputs = _tensors_in(args, kwargs)
        if any(type(x) is Array for x in inputs) or (creates and not inputs):
            return _converted(out, inputs)
        return out

    return wrapper


_WRAPPERS: dict[Callable, Callable] = {}  # one wrapper for a function two modules export


def wrap_functions(namespace: dict, names: Iterable[str], creating: set[str]) -> None:
    """Replace the functions ``names`` of ``namespace`` (a module's globals) by wrappers
    that return Arrays."""
    for name in names:
        value = namespace[name]
        if value in _WRAPPERS.values() or not hasattr(value, "__code__"):
            continue
        if value not in _WRAPPERS:
            _WRAPPERS[value] = returns_arrays(value, creates=name in creating)
        namespace[name] = _WRAPPERS[value]


# ------------------------------------------------------------------------------ operators
# Python's operator -> the namespace function computing it.
BINARY = {
    "add": "add",
    "sub": "subtract",
    "mul": "multiply",
    "truediv": "divide",
    "floordiv": "floor_divide",
    "mod": "remainder",
    "pow": "pow",
    "matmul": "matmul",
    "and": "bitwise_and",
    "or": "bitwise_or",
    "xor": "bitwise_xor",
    "lshift": "bitwise_left_shift",
    "rshift": "bitwise_right_shift",
}
COMPARISONS = {
    "lt": "less",
    "le": "less_equal",
    "gt": "greater",
    "ge": "greater_equal",
    "eq": "equal",
    "ne": "not_equal",
}
UNARY = {"neg": "negative", "pos": "positive", "abs": "abs", "invert": "bitwise_invert"}


def _operand(value: Any) -> bool:
    return isinstance(value, Tensor) or is_scalar(value)


def _forward(function: Callable) -> Callable:
    def method(self: Array, other: Any) -> Any:
        return function(self, other) if _operand(other) else NotImplemented

    return method


def _reflected(function: Callable) -> Callable:
    def method(self: Array, other: Any) -> Any:
        return function(other, self) if _operand(other) else NotImplemented

    return method


def _in_place(symbol: str, function: Callable) -> Callable:
    """``x1 op= x2``: the result is written into ``x1``, whose dtype and shape it must keep
    (the standard does not let an in-place operator change either)."""

    def method(self: Array, other: Any) -> Array:
        if not _operand(other):
            return NotImplemented
        target = result_dtype((self, other))
        if target is not self.dtype:
            raise TypeError(
                f"x1 {symbol}= x2 would change x1's dtype from {self.dtype} to {target}; "
                "in-place operators keep the dtype of x1"
            )
        # A clone keeps the old value of self for the gradient of the op reading it.
        source = self.clone() if self.requires_grad else self
        result = function(source, other)
        if tuple(result.shape) != tuple(self.shape):
            raise ValueError(
                f"x1 {symbol}= x2 would change x1's shape from {tuple(self.shape)} to "
                f"{tuple(result.shape)}; in-place operators keep the shape of x1"
            )
        Tensor.copy_(self, result)
        return self

    return method


def _unary(function: Callable) -> Callable:
    def method(self: Array) -> Any:
        return function(self)

    return method


SYMBOLS = {
    "add": "+",
    "sub": "-",
    "mul": "*",
    "truediv": "/",
    "floordiv": "//",
    "mod": "%",
    "pow": "**",
    "matmul": "@",
    "and": "&",
    "or": "|",
    "xor": "^",
    "lshift": "<<",
    "rshift": ">>",
}


def install_operators(namespace: dict) -> None:
    """Give Array the operators, computed by the functions in ``namespace``."""
    for op, name in BINARY.items():
        function = namespace[name]
        setattr(Array, f"__{op}__", _forward(function))
        setattr(Array, f"__r{op}__", _reflected(function))
        setattr(Array, f"__i{op}__", _in_place(SYMBOLS[op], function))
    for op, name in COMPARISONS.items():
        setattr(Array, f"__{op}__", _forward(namespace[name]))
    for op, name in UNARY.items():
        setattr(Array, f"__{op}__", _unary(namespace[name]))
