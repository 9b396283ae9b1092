"""``Parameter`` (a tensor a Module trains) and ``Buffer`` (a tensor it keeps as state)."""

from __future__ import annotations

from typing import Any

from .._repr import tensor_repr
from ..ops.creation import empty
from ..tensor import Tensor, init_tensor

__all__ = ["Buffer", "Parameter"]


class Parameter(Tensor):
    """A tensor that is a module parameter: assigning one to a Module attribute registers it.

    It shares storage (and version counter) with ``data`` and requires grad by default.
    """

    _is_parameter = True

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True) -> Parameter:
        if data is None:
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter data must be a Tensor, got {type(data).__name__}")
        param = object.__new__(cls)
        init_tensor(param, data._data, data._device)
        param._version_counter = data.version_counter()
        param._requires_grad = requires_grad
        return param

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        """Everything happens in ``__new__``; this only keeps Tensor's constructor away."""

    def __repr__(self) -> str:
        return "Parameter containing:\n" + tensor_repr(self)

    def __deepcopy__(self, memo: dict) -> Parameter:
        if id(self) in memo:
            return memo[id(self)]
        copied = Parameter(self.detach().clone(), self._requires_grad)
        if self.grad is not None:
            copied.grad = self.grad.__deepcopy__(memo)
        memo[id(self)] = copied
        return copied

    def __reduce_ex__(self, protocol: Any) -> tuple:
        return (_rebuild_parameter, (self.detach(), self._requires_grad))


def _rebuild_parameter(data: Tensor, requires_grad: bool) -> Parameter:
    return Parameter(data, requires_grad)


class _BufferMeta(type):
    """``isinstance(t, Buffer)`` is true for the tensors ``Buffer(...)`` marks."""

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, Tensor) and getattr(instance, "_is_buffer", False)


class Buffer(Tensor, metaclass=_BufferMeta):
    """Marks a tensor as a buffer: assigning it to a Module attribute registers it as one.

    ``Buffer(data, persistent=False)`` keeps it out of the module's ``state_dict``.
    """

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True) -> Tensor:  # type: ignore[misc]
        if data is None:
            data = empty(0)
        marked = data.detach().requires_grad_(data.requires_grad)
        marked.persistent = persistent
        marked._is_buffer = True
        return marked
