"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict."""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from itertools import islice
from typing import Any

from ...tensor import Tensor
from ..parameter import Parameter
from .module import Module, _add_indent

__all__ = ["ModuleDict", "ModuleList", "ParameterDict", "ParameterList", "Sequential"]


def _absolute_index(index: Any, size: int) -> int:
    index = operator.index(index)
    if not -size <= index < size:
        raise IndexError(f"index {index} is out of range")
    return index % size if size else index


class _IndexedModules(Module):
    """Shared machinery of Sequential and ModuleList: children named '0', '1', ..."""

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __dir__(self) -> list[str]:
        return [key for key in super().__dir__() if not key.isdigit()]

    def _renumber(self, modules: Iterable[Module]) -> None:
        """Make the children exactly ``modules``, named 0..n-1."""
        self._modules.clear()
        for index, module in enumerate(list(modules)):
            self._set_child(str(index), module)

    def __delitem__(self, index: int | slice) -> None:
        items = list(self._modules.values())
        if isinstance(index, slice):
            del items[index]
        else:
            del items[_absolute_index(index, len(items))]
        self._renumber(items)

    def __setitem__(self, index: int, module: Module) -> None:
        setattr(self, str(_absolute_index(index, len(self))), module)

    def append(self, module: Module) -> _IndexedModules:
        """Add ``module`` at the end."""
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index: int, module: Module) -> _IndexedModules:
        """Insert ``module`` before position ``index``."""
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        size = len(self)
        if not -size <= index <= size:
            raise IndexError(f"Index out of range: {index}")
        items = list(self._modules.values())
        items.insert(index + size if index < 0 else index, module)
        self._renumber(items)
        return self

    def extend(self, modules: Iterable[Module]) -> _IndexedModules:
        """Append every module of ``modules``."""
        if not isinstance(modules, Iterable):
            raise TypeError(
                f"{type(self).__name__}.extend should be called with an iterable, but got "
                + type(modules).__name__
            )
        for module in list(modules):
            self.append(module)
        return self

    def pop(self, index: int | slice = -1) -> Any:
        """Remove and return the module (or container of modules) at ``index``."""
        value = self[index]
        del self[index]
        return value


class Sequential(_IndexedModules):
    """Runs its modules in order, each on the previous one's output.

    ``Sequential(m1, m2)`` names them '0', '1'; ``Sequential(OrderedDict(name=module))`` uses
    the given names.
    """

    def __init__(self, *args: Module) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for index, module in enumerate(args):
                self.add_module(str(index), module)

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return type(self)(OrderedDict(list(self._modules.items())[index]))
        position = _absolute_index(index, len(self))
        return next(islice(iter(self._modules.values()), position, None))

    def __setitem__(self, index: int, module: Module) -> None:
        key = list(self._modules)[_absolute_index(index, len(self))]
        setattr(self, key, module)

    def _checked_factor(self, other: Any) -> int:
        if not isinstance(other, int):
            raise TypeError(f"unsupported operand type(s) for *: {type(self)} and {type(other)}")
        if other <= 0:
            raise ValueError(f"Non-positive multiplication factor {other} for {type(self)}")
        return other

    def _checked_sequential(self, other: Any) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError(
                f"add operator supports only objects of Sequential class, but {type(other)} is "
                "given."
            )
        return other

    def __add__(self, other: Sequential) -> Sequential:
        """A new Sequential of this one's modules, then ``other``'s (renumbered)."""
        return Sequential(*self, *self._checked_sequential(other))

    def __iadd__(self, other: Sequential) -> Sequential:
        for module in list(self._checked_sequential(other)):
            self.append(module)
        return self

    def __mul__(self, other: int) -> Sequential:
        """A new Sequential repeating these (same, shared) modules ``other`` times."""
        return Sequential(*(list(self) * self._checked_factor(other)))

    def __rmul__(self, other: int) -> Sequential:
        return self.__mul__(other)

    def __imul__(self, other: int) -> Sequential:
        modules = list(self)
        for _ in range(self._checked_factor(other) - 1):
            for module in modules:
                self.append(module)
        return self

    def forward(self, input: Any) -> Any:
        out = input
        for module in self:
            out = module(out)
        return out


class ModuleList(_IndexedModules):
    """Holds submodules in a list, registered under '0', '1', ... (no forward of its own)."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return type(self)(list(self._modules.values())[index])
        return self._modules[str(_absolute_index(index, len(self)))]

    def insert(self, index: int, module: Module) -> None:  # type: ignore[override]
        """Insert ``module`` before position ``index``."""
        super().insert(index, module)

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)  # type: ignore[return-value]

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        return ModuleList([*self, *other])

    def __repr__(self) -> str:
        """Runs of identical children print once, as ``(0-2): 3 x Linear(...)``."""
        reprs = [repr(module) for module in self]
        if not reprs:
            return self._get_name() + "()"
        runs: list[list] = []
        for index, text in enumerate(reprs):
            if runs and runs[-1][2] == text:
                runs[-1][1] = index
            else:
                runs.append([index, index, text])
        lines = []
        for start, end, text in runs:
            if start == end:
                lines.append(_add_indent(f"({start}): {text}", 2))
            else:
                lines.append(_add_indent(f"({start}-{end}): {end - start + 1} x {text}", 2))
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """Holds submodules in an ordered dict, registered under their keys."""

    def __init__(self, modules: Mapping[str, Module] | Iterable | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def clear(self) -> None:
        self._modules.clear()

    def pop(self, key: str) -> Module:
        module = self[key]
        del self[key]
        return module

    def keys(self) -> Iterable[str]:
        return self._modules.keys()

    def items(self) -> Iterable[tuple[str, Module]]:
        return self._modules.items()

    def values(self) -> Iterable[Module]:
        return self._modules.values()

    def update(self, modules: Mapping[str, Module] | Iterable) -> None:
        """Add (or replace) modules from a mapping or an iterable of (key, module) pairs."""
        for key, module in _pairs(type(self).__name__, modules):
            self[key] = module


def _pairs(owner: str, items: Any, caller: str | None = None) -> Iterator[tuple[Any, Any]]:
    """(key, value) pairs of a mapping, or of an iterable of 2-item iterables, checked."""
    if not isinstance(items, Iterable):
        raise TypeError(
            f"{caller or owner}.update should be called with an iterable of key/value pairs, "
            "but got " + type(items).__name__
        )
    if isinstance(items, Mapping | ModuleDict | ParameterDict):
        yield from items.items()
        return
    for index, pair in enumerate(items):
        if not isinstance(pair, Iterable):
            raise TypeError(
                f"{owner} update sequence element #{index} should be Iterable; is"
                + type(pair).__name__
            )
        pair = list(pair)
        if len(pair) != 2:
            raise ValueError(
                f"{owner} update sequence element #{index} has length {len(pair)}; 2 is required"
            )
        yield pair[0], pair[1]


_LEGACY_TYPE_NAMES = {
    "float32": "Float",
    "float64": "Double",
    "float16": "Half",
    "bfloat16": "BFloat16",
    "int64": "Long",
    "int32": "Int",
    "int16": "Short",
    "int8": "Char",
    "uint8": "Byte",
    "bool": "Bool",
    "complex64": "ComplexFloat",
    "complex128": "ComplexDouble",
}


def _legacy_typename(value: Tensor) -> str:
    """``torch.typename`` of a tensor: ``tensorkit.FloatTensor``, ``tensorkit.cuda.LongTensor``."""
    name = str(value.dtype).rpartition(".")[2]
    where = "cuda." if value.device.type == "cuda" else ""
    return f"tensorkit.{where}{_LEGACY_TYPE_NAMES.get(name, name)}Tensor"


def _describe(value: Any, legacy_type: bool = False) -> str:
    """One entry of a ParameterList (dtype) or ParameterDict (legacy type name) repr."""
    if not isinstance(value, Tensor):
        return "Object of type: " + type(value).__name__
    size = "x".join(str(n) for n in value.shape)
    where = f" ({value.device})" if value.device.type == "cuda" else ""
    kind = "Parameter" if isinstance(value, Parameter) else "Tensor"
    type_name = _legacy_typename(value) if legacy_type else value.dtype
    return f"{kind} containing: [{type_name} of size {size}{where}]"


def _as_parameter(value: Any) -> Any:
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


class ParameterList(Module):
    """Holds parameters in a list (tensors are wrapped as Parameters), named '0', '1', ..."""

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return type(self)([self[i] for i in range(*index.indices(len(self)))])
        return getattr(self, str(_absolute_index(index, len(self))))

    def __setitem__(self, index: int, value: Any) -> None:
        setattr(self, str(_absolute_index(index, len(self))), _as_parameter(value))

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return (self[i] for i in range(len(self)))

    def __iadd__(self, values: Iterable[Any]) -> ParameterList:
        return self.extend(values)

    def __dir__(self) -> list[str]:
        return [key for key in super().__dir__() if not key.isdigit()]

    def append(self, value: Any) -> ParameterList:
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values: Iterable[Any]) -> ParameterList:
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise TypeError(
                "ParameterList.extend should be called with an iterable, but got "
                + type(values).__name__
            )
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return "\n".join(f"  ({index}): {_describe(value)}" for index, value in enumerate(self))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("ParameterList should not be called.")


def _key_to_attr(key: Any) -> str:
    if not isinstance(key, str):
        raise TypeError(
            "Index given to ParameterDict cannot be used as a key as it is not a string (type "
            f"is '{type(key).__name__}'). Open an issue on github if you need non-string keys."
        )
    return key


class ParameterDict(Module):
    """Holds parameters in an ordered dict (tensors are wrapped as Parameters)."""

    def __init__(self, parameters: Any = None) -> None:
        super().__init__()
        self._keys: dict[str, None] = {}
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str) -> Any:
        return getattr(self, _key_to_attr(key))

    def __setitem__(self, key: str, value: Any) -> None:
        self._keys[key] = None
        setattr(self, _key_to_attr(key), _as_parameter(value))

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, _key_to_attr(key))

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __reversed__(self) -> Iterator[str]:
        return reversed(self._keys)

    def __contains__(self, key: str) -> bool:
        return key in self._keys

    def __call__(self, input: Any) -> Any:
        raise RuntimeError("ParameterDict should not be called.")

    def __or__(self, other: ParameterDict) -> ParameterDict:
        merged = self.copy()
        merged.update(other)
        return merged

    def __ror__(self, other: ParameterDict) -> ParameterDict:
        merged = other.copy()
        merged.update(self)
        return merged

    def __ior__(self, other: ParameterDict) -> ParameterDict:
        self.update(other)
        return self

    def copy(self) -> ParameterDict:
        """A new ParameterDict holding the same entries."""
        return ParameterDict(OrderedDict((key, self[key]) for key in self._keys))

    def fromkeys(self, keys: Iterable[str], default: Any = None) -> ParameterDict:
        """A new ParameterDict mapping each of ``keys`` to ``default``."""
        return ParameterDict((key, default) for key in keys)

    def setdefault(self, key: str, default: Any = None) -> Any:
        """``self[key]``, first set to ``default`` when missing."""
        if key not in self:
            self[key] = default
        return self[key]

    def keys(self) -> Iterable[str]:
        return self._keys.keys()

    def items(self) -> Iterator[tuple[str, Any]]:
        return ((key, self[key]) for key in self._keys)

    def values(self) -> Iterator[Any]:
        return (self[key] for key in self._keys)

    def get(self, key: str, default: Any = None) -> Any:
        if key in self._keys:
            return self[key]
        return default

    def pop(self, key: str) -> Any:
        value = self[key]
        del self[key]
        return value

    def popitem(self) -> tuple[str, Any]:
        """Remove and return the last inserted ``(key, value)`` pair."""
        key, _ = self._keys.popitem()
        self._keys[key] = None
        return key, self.pop(key)

    def clear(self) -> None:
        for key in list(self._keys):
            del self[key]

    def update(self, parameters: Any) -> None:
        """Add (or replace) entries from a mapping (a plain one in sorted key order) or an
        iterable of (key, value) pairs."""
        if isinstance(parameters, Mapping) and not isinstance(parameters, OrderedDict):
            parameters = sorted(parameters.items())
        for key, value in _pairs(type(self).__name__, parameters, "ParametersDict"):
            self[key] = value

    def extra_repr(self) -> str:
        return "\n".join(
            f"  ({key}): {_describe(value, legacy_type=True)}" for key, value in self.items()
        )
