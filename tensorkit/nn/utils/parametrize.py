"""Parametrizations: a module's tensor computed on every access from an ``original`` one.

``register_parametrization(module, "weight", p)`` moves ``module.weight`` to
``module.parametrizations.weight.original`` and makes ``module.weight`` a property that
returns ``p(original)``. As in PyTorch, the module's class is swapped for a subclass
(``Parametrized<Name>``) that holds the property, so Module itself needs no hook.
"""

from __future__ import annotations

import contextlib
import copy
import copyreg
from collections.abc import Iterator, Sequence
from typing import Any

from ...autograd.grad_mode import no_grad
from ...tensor import Tensor
from ..modules.container import ModuleDict, ModuleList
from ..modules.module import Module
from ..parameter import Parameter

__all__ = [
    "ParametrizationList",
    "cached",
    "is_parametrized",
    "register_parametrization",
    "remove_parametrizations",
    "type_before_parametrizations",
]

_cache_enabled = 0
_cache: dict[tuple[int, str], Tensor] = {}


@contextlib.contextmanager
def cached() -> Iterator[None]:
    """Within the block, each parametrized tensor is computed once, on first access, and
    reused (for example across the time steps of an RNN)."""
    global _cache, _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache = {}


def _register_parameter_or_buffer(module: Module, name: str, value: Tensor) -> None:
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _maybe_set(dest: Tensor, src: Tensor) -> None:
    """Make ``dest`` hold ``src``'s values in place (PyTorch's ``set_``): the tensor object,
    and so an optimizer's reference to it, stays the same."""
    dest.data = src


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order to ``original`` (or to
    ``original0``, ``original1``, ... when ``right_inverse`` returns several tensors)."""

    original: Tensor
    unsafe: bool

    def __init__(self, modules: Sequence[Module], original: Tensor, unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = original.shape, original.dtype
        with no_grad():
            new: Any = original
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    with contextlib.suppress(NotImplementedError):
                        new = module.right_inverse(new)
        if not isinstance(new, Tensor | Sequence):
            raise ValueError(
                "'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                f"Got {type(new).__name__}"
            )
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            self._adopt_single(original, new)
        else:
            self._adopt_sequence(original, new)
        if not self.unsafe:
            self._check_output(original_shape, original_dtype)

    def _adopt_single(self, original: Tensor, new: Tensor) -> None:
        if original.dtype != new.dtype:
            raise ValueError(
                "When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                f"original.dtype: {original.dtype}\n"
                f"right_inverse(original).dtype: {new.dtype}"
            )
        if original.device != new.device:
            raise ValueError(
                "When `right_inverse` outputs one tensor, it may not change the device.\n"
                f"original.device: {original.device}\n"
                f"right_inverse(original).device: {new.device}"
            )
        with no_grad():
            _maybe_set(original, new)
        _register_parameter_or_buffer(self, "original", original)

    def _adopt_sequence(self, original: Tensor, new: Sequence) -> None:
        for i, originali in enumerate(new):
            if not isinstance(originali, Tensor):
                raise ValueError(
                    "'right_inverse' must return a Tensor or a Sequence of tensors "
                    "(list, tuple...). "
                    f"Got element {i} of the sequence with type {type(originali).__name__}."
                )
            if isinstance(original, Parameter):
                originali = Parameter(originali, original.requires_grad)
            originali.requires_grad_(original.requires_grad)
            _register_parameter_or_buffer(self, f"original{i}", originali)

    def _check_output(self, original_shape: Any, original_dtype: Any) -> None:
        z = self()
        if not isinstance(z, Tensor):
            raise ValueError(f"A parametrization must return a tensor. Got {type(z).__name__}.")
        if z.dtype != original_dtype:
            raise ValueError(
                "Registering a parametrization may not change the dtype of the tensor, unless "
                "`unsafe` flag is enabled.\n"
                f"unparametrized dtype: {original_dtype}\n"
                f"parametrized dtype: {z.dtype}"
            )
        if z.shape != original_shape:
            raise ValueError(
                "Registering a parametrization may not change the shape of the tensor, unless "
                "`unsafe` flag is enabled.\n"
                f"unparametrized shape: {original_shape}\n"
                f"parametrized shape: {z.shape}"
            )

    def right_inverse(self, value: Tensor) -> None:
        """Set the originals so that the parametrized tensor becomes ``value`` (each
        parametrization's ``right_inverse``, last to first)."""
        with no_grad():
            for module in reversed(list(self)):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(
                        f"parametrization {type(module).__name__} does not implement right_inverse."
                    )
                value = module.right_inverse(value)
            if self.is_tensor:
                self._set_single(value)
            else:
                self._set_sequence(value)

    def _set_single(self, value: Any) -> None:
        if not isinstance(value, Tensor):
            raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
        if value.dtype != self.original.dtype:
            raise ValueError(
                f"The tensor returned by `right_inverse` has dtype {value.dtype} "
                f"while `original` has dtype {self.original.dtype}"
            )
        _maybe_set(self.original, value)

    def _set_sequence(self, value: Any) -> None:
        if not isinstance(value, Sequence):
            raise ValueError(
                f"'right_inverse' must return a sequence of tensors. Got {type(value).__name__}."
            )
        if len(value) != self.ntensors:
            raise ValueError(
                "'right_inverse' must return a sequence of tensors of length "
                f"{self.ntensors}. Got a sequence of length {len(value)}."
            )
        for i, tensor in enumerate(value):
            original_i = getattr(self, f"original{i}")
            if not isinstance(tensor, Tensor):
                raise ValueError(
                    "'right_inverse' must return a sequence of tensors or reference-type "
                    f"opaques. Got element {i} of type {type(tensor).__name__}."
                )
            if original_i.dtype != tensor.dtype:
                raise ValueError(
                    f"Tensor {i} returned by `right_inverse` has dtype {tensor.dtype} "
                    f"while `original{i}` has dtype {original_i.dtype}"
                )
            _maybe_set(original_i, tensor)

    def forward(self) -> Tensor:
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _default_deepcopy(self: Module, memo: dict) -> Module:
    found = memo.get(id(self))
    if found is not None:
        return found
    replica = self.__new__(type(self))
    memo[id(self)] = replica
    replica.__dict__ = copy.deepcopy(self.__dict__, memo)
    for slot in copyreg._slotnames(type(self)):  # type: ignore[attr-defined]
        if hasattr(self, slot):
            setattr(replica, slot, copy.deepcopy(getattr(self, slot), memo))
    return replica


def _getstate(self: Module) -> dict:
    raise RuntimeError(
        "Serialization of parametrized modules is only supported through state_dict(). See:\n"
        "https://pytorch.org/tutorials/beginner/saving_loading_models.html"
        "#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training"
    )


def _inject_new_class(module: Module) -> None:
    """Swap ``module``'s class for a ``Parametrized<Name>`` subclass (to hold properties)."""
    cls = type(module)
    namespace: dict[str, Any] = {"__getstate__": _getstate}
    if not hasattr(cls, "__deepcopy__"):
        namespace["__deepcopy__"] = _default_deepcopy
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), namespace)


def _inject_property(module: Module, tensor_name: str) -> None:
    """``module.<tensor_name>`` reads the parametrization and writes its ``right_inverse``."""
    if hasattr(module, tensor_name):
        raise AssertionError(f"Module already has an attribute named '{tensor_name}'")

    def get_parametrized(self: Module) -> Tensor:
        parametrization = self.parametrizations[tensor_name]
        if not _cache_enabled:
            return parametrization()
        key = (id(self), tensor_name)
        tensor = _cache.get(key)
        if tensor is None:
            tensor = _cache[key] = parametrization()
        return tensor

    def set_original(self: Module, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(type(module), tensor_name, property(get_parametrized, set_original))


def _check_appended(parametrization: Module, y: Tensor, tensor_name: str) -> None:
    """A parametrization stacked on another keeps the tensor's dtype and shape."""
    x = parametrization(y)
    if not isinstance(x, Tensor):
        raise ValueError(f"A parametrization must return a tensor. Got {type(x).__name__}.")
    if x.dtype != y.dtype:
        raise ValueError(
            "Registering a parametrization may not change the dtype of the tensor, unless the "
            "`unsafe` flag is enabled.\n"
            f"module.{tensor_name}.dtype: {y.dtype}\n"
            f"parametrization(module.{tensor_name}).dtype: {x.dtype}"
        )
    if x.shape != y.shape:
        raise ValueError(
            "Registering a parametrization may not change the shape of the tensor, unless the "
            "`unsafe` flag is enabled.\n"
            f"module.{tensor_name}.shape: {y.shape}\n"
            f"parametrization(module.{tensor_name}).shape: {x.shape}"
        )
    if not hasattr(parametrization, "right_inverse"):
        return
    try:
        z = parametrization.right_inverse(x)
    except NotImplementedError:
        return
    if not isinstance(z, Tensor):
        raise ValueError(
            f"parametrization.right_inverse must return a tensor. Got: {type(z).__name__}"
        )
    if z.dtype != y.dtype:
        raise ValueError(
            "The tensor returned by parametrization.right_inverse must have the same dtype "
            f"as module.{tensor_name}, unless the `unsafe` flag is enabled.\n"
            f"module.{tensor_name}.dtype: {y.dtype}\n"
            f"returned dtype: {z.dtype}"
        )
    if z.shape != y.shape:
        raise ValueError(
            "The tensor returned by parametrization.right_inverse must have the same shape "
            f"as module.{tensor_name}, unless the `unsafe` flag is enabled.\n"
            f"module.{tensor_name}.shape: {y.shape}\n"
            f"returned shape: {z.shape}"
        )


def register_parametrization(
    module: Module, tensor_name: str, parametrization: Module, *, unsafe: bool = False
) -> Module:
    """Make ``module.<tensor_name>`` equal ``parametrization(original)`` on every access.

    The tensor moves to ``module.parametrizations.<tensor_name>.original`` (set through
    ``parametrization.right_inverse`` when it has one); registering on an already
    parametrized tensor stacks the new parametrization last. Unless ``unsafe``, a
    parametrization may not change the tensor's dtype or shape."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            _check_appended(parametrization, getattr(module, tensor_name), tensor_name)
        parametrizations = module.parametrizations[tensor_name]
        parametrizations.append(parametrization)
        parametrizations.unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = parametrizations
    else:
        raise ValueError(
            f"Module '{module}' does not have a parameter, a buffer, or a "
            f"parametrized element with name '{tensor_name}'"
        )
    return module


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has any parametrization (or one on ``tensor_name``)."""
    parametrizations = getattr(module, "parametrizations", None)
    if not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def remove_parametrizations(
    module: Module, tensor_name: str, leave_parametrized: bool = True
) -> Module:
    """Undo ``register_parametrization`` on ``tensor_name``: the tensor becomes a plain
    parameter (or buffer) again, holding the parametrized value (``leave_parametrized``,
    in place, so the object stays the same) or the original one."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with no_grad():
                _maybe_set(original, getattr(module, tensor_name))
    elif leave_parametrized:
        t = getattr(module, tensor_name)
        original = Parameter(t.detach()) if t.requires_grad else t
    else:
        raise ValueError(
            "Cannot leave unparametrized (`leave_parametrized=False`) a tensor "
            "that is parametrized in terms of a sequence of tensors."
        )
    delattr(type(module), tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = type(module).__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    """The module's class before ``register_parametrization`` swapped it."""
    if is_parametrized(module):
        return type(module).__bases__[0]
    return type(module)
