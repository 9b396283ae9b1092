"""``Module``: the base class of every layer, with PyTorch's registration, traversal,
state-dict, device/dtype and hook behaviour.

Calling a module runs its forward (and hooks) inside the module scope of its segment (as
``tk.autograd.module_scope(segment)`` opens one), so a Tape records each op's module path,
e.g. ``Net.features.0``. The segment is the module's dotted name inside the module whose
forward calls it (so the members of a ModuleList that a parent iterates get ``layers.0``);
called from no module, it is the name under which its parent registered it, or its class
name for a root module.
"""

from __future__ import annotations

import itertools
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

from ... import _state
from ..._backend import as_device, device
from ..._dtype import dtype, float16, float32, float64
from ...autograd.grad_mode import no_grad
from ...autograd.tape import enter_module, exit_module
from ...ops.creation import empty_like
from ...tensor import RemovableHandle, Tensor
from ..parameter import Buffer, Parameter
from ._backward_hooks import BackwardHookRun

__all__ = [
    "Module",
    "register_module_buffer_registration_hook",
    "register_module_forward_hook",
    "register_module_forward_pre_hook",
    "register_module_full_backward_hook",
    "register_module_full_backward_pre_hook",
    "register_module_module_registration_hook",
    "register_module_parameter_registration_hook",
]

# The modules whose forward is running, innermost last (process-wide, like _state).
_calling: list[Module] = []

_EXTRA_STATE_KEY_SUFFIX = "_extra_state"

# Hooks common to all modules (debugging/profiling), run before each module's own. The ids
# of the forward and backward ones are also in _global_call_hooks, the one set that
# Module.__call__ checks.
_global_forward_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
_global_forward_hooks: OrderedDict[int, Callable] = OrderedDict()
_global_forward_hooks_with_kwargs: set[int] = set()
_global_forward_hooks_always_called: set[int] = set()
_global_backward_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
_global_backward_hooks: OrderedDict[int, Callable] = OrderedDict()
_global_call_hooks: set[int] = set()
_global_buffer_registration_hooks: OrderedDict[int, Callable] = OrderedDict()
_global_module_registration_hooks: OrderedDict[int, Callable] = OrderedDict()
_global_parameter_registration_hooks: OrderedDict[int, Callable] = OrderedDict()


class _IncompatibleKeys(NamedTuple):
    """What ``load_state_dict`` returns: the keys it missed and the ones it did not know."""

    missing_keys: list[str]
    unexpected_keys: list[str]

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return (
            f"_IncompatibleKeys(missing_keys={self.missing_keys}, "
            f"unexpected_keys={self.unexpected_keys})"
        )

    __str__ = __repr__


class _HookHandle(RemovableHandle):
    """A hook handle that also forgets the hook's flags (with_kwargs, always_call)."""

    def __init__(self, hooks: OrderedDict, hook: Callable, flags: tuple[set, ...] = ()) -> None:
        super().__init__(hooks, hook)
        self._flags = flags

    def remove(self) -> None:
        super().remove()
        for flag_set in self._flags:
            flag_set.discard(self.id)


class _WrappedHook:
    """A load-state-dict pre-hook, given its module (held weakly) as first argument when
    registered with one."""

    def __init__(self, hook: Callable, module: Module | None = None) -> None:
        self.hook = hook
        self.with_module = module is not None
        if module is not None:
            self.module = weakref.ref(module)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.with_module:
            module = self.module()
            if module is None:
                raise RuntimeError("You are trying to call the hook of a dead Module!")
            return self.hook(module, *args, **kwargs)
        return self.hook(*args, **kwargs)

    def __getstate__(self) -> dict:
        state = {"hook": self.hook, "with_module": self.with_module}
        if self.with_module:
            state["module"] = self.module()
        return state

    def __setstate__(self, state: dict) -> None:
        self.hook = state["hook"]
        self.with_module = state["with_module"]
        if self.with_module:
            if state["module"] is None:
                raise RuntimeError("You are trying to revive the hook of a dead Module!")
            self.module = weakref.ref(state["module"])


def _global_call_hook(hooks: OrderedDict, hook: Callable, *flags: set) -> RemovableHandle:
    handle = _HookHandle(hooks, hook, (_global_call_hooks, *flags))
    _global_call_hooks.add(handle.id)
    return handle


def register_module_forward_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Run ``hook(module, args)`` before the forward of every module (before the module's
    own pre-hooks); a non-None result replaces the positional arguments."""
    return _global_call_hook(_global_forward_pre_hooks, hook)


def register_module_forward_hook(
    hook: Callable[..., Any], *, with_kwargs: bool = False, always_call: bool = False
) -> RemovableHandle:
    """Run ``hook(module, args, output)`` (or with kwargs) after the forward of every module
    (before the module's own hooks); a non-None result replaces the output."""
    handle = _global_call_hook(
        _global_forward_hooks,
        hook,
        _global_forward_hooks_with_kwargs,
        _global_forward_hooks_always_called,
    )
    if with_kwargs:
        _global_forward_hooks_with_kwargs.add(handle.id)
    if always_call:
        _global_forward_hooks_always_called.add(handle.id)
    return handle


def register_module_full_backward_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """A full backward pre-hook of every module, run before the module's own."""
    return _global_call_hook(_global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """A full backward hook of every module, run before the module's own."""
    return _global_call_hook(_global_backward_hooks, hook)


def register_module_buffer_registration_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Run ``hook(module, name, buffer)`` whenever a buffer is registered; a non-None result
    is registered instead."""
    return RemovableHandle(_global_buffer_registration_hooks, hook)


def register_module_module_registration_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Run ``hook(module, name, submodule)`` whenever a submodule is registered; a non-None
    result is registered instead."""
    return RemovableHandle(_global_module_registration_hooks, hook)


def register_module_parameter_registration_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Run ``hook(module, name, param)`` whenever a parameter is registered; a non-None
    result is registered instead."""
    return RemovableHandle(_global_parameter_registration_hooks, hook)


def _registered(hooks: OrderedDict, module: Module, name: str, value: Any) -> Any:
    """``value`` as the global registration ``hooks`` replace it."""
    for hook in list(hooks.values()):
        output = hook(module, name, value)
        if output is not None:
            value = output
    return value


def _typename(value: Any) -> str:
    if isinstance(value, Tensor):
        return "tensorkit." + type(value).__name__
    module = type(value).__module__
    name = type(value).__qualname__
    return name if module == "builtins" else f"{module}.{name}"


def _add_indent(text: str, spaces: int) -> str:
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    pad = " " * spaces
    return lines[0] + "\n" + "\n".join(pad + line for line in lines[1:])


def _join(prefix: str, name: str) -> str:
    return prefix + ("." if prefix else "") + name


def _parse_to(args: tuple, kwargs: dict) -> tuple[device | None, dtype | None]:
    """``Module.to``'s arguments: ``(device, dtype)``, ``(dtype)`` or ``(tensor)``."""
    target_device = kwargs.pop("device", None)
    target_dtype = kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    for arg in args:
        if isinstance(arg, Tensor):
            target_device, target_dtype = arg.device, arg.dtype
        elif isinstance(arg, dtype):
            target_dtype = arg
        elif isinstance(arg, bool):
            continue  # non_blocking given positionally
        elif isinstance(arg, str | device | int):
            target_device = arg
        else:
            raise TypeError(f"to() received an invalid argument {arg!r}")
    if target_dtype is not None and not (target_dtype.is_floating_point or target_dtype.is_complex):
        raise TypeError(
            "nn.Module.to only accepts floating point or complex dtypes, but got desired "
            f"dtype={target_dtype}"
        )
    return (None if target_device is None else as_device(target_device)), target_dtype


class Module:
    """Base class for all neural network modules; subclasses define ``forward``.

    Parameters, buffers and submodules assigned as attributes are registered in order, and
    ``parameters()``, ``state_dict()``, ``to()``, ``train()``... walk them.
    """

    training: bool
    _version: int = 1

    def __init__(self) -> None:
        setattr_ = object.__setattr__
        setattr_(self, "training", True)
        setattr_(self, "_parameters", {})
        setattr_(self, "_buffers", {})
        setattr_(self, "_non_persistent_buffers_set", set())
        setattr_(self, "_modules", {})
        setattr_(self, "_forward_pre_hooks", OrderedDict())
        setattr_(self, "_forward_pre_hooks_with_kwargs", set())
        setattr_(self, "_forward_hooks", OrderedDict())
        setattr_(self, "_forward_hooks_with_kwargs", set())
        setattr_(self, "_forward_hooks_always_called", set())
        setattr_(self, "_backward_pre_hooks", OrderedDict())
        setattr_(self, "_backward_hooks", OrderedDict())
        setattr_(self, "_state_dict_hooks", OrderedDict())
        setattr_(self, "_state_dict_pre_hooks", OrderedDict())
        setattr_(self, "_load_state_dict_pre_hooks", OrderedDict())
        setattr_(self, "_load_state_dict_post_hooks", OrderedDict())
        setattr_(self, "_scope_name", type(self).__name__)

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        for name in (
            "_state_dict_hooks",
            "_state_dict_pre_hooks",
            "_load_state_dict_pre_hooks",
            "_load_state_dict_post_hooks",
        ):
            self.__dict__.setdefault(name, OrderedDict())

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function'
        )

    # ------------------------------------------------------------------------- calling
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        enter_module(self._path_segment(), self)
        _calling.append(self)
        try:
            if not (
                self._forward_pre_hooks
                or self._forward_hooks
                or self._backward_hooks
                or self._backward_pre_hooks
                or _global_call_hooks
            ):
                return self.forward(*args, **kwargs)
            return self._call_with_hooks(args, kwargs)
        finally:
            _calling.pop()
            exit_module()

    def _path_segment(self) -> str:
        if _calling:
            path = _calling[-1]._path_to(self)
            if path is not None:
                return path
        return self.__dict__.get("_scope_name", type(self).__name__)

    def _path_to(self, module: Module) -> str | None:
        """The dotted name of ``module`` among this module's descendants, or None. Direct
        children are looked up first; deeper paths are cached and re-checked on use."""
        for name, child in self._modules.items():
            if child is module:
                return name
        cache = self.__dict__.setdefault("_descendant_paths", {})
        path = cache.get(id(module))
        if path is not None and self._resolve(path) is module:
            return path
        for name, found in self.named_modules():
            if found is module and name:
                cache[id(module)] = name
                return name
        return None

    def _resolve(self, path: str) -> Module | None:
        current: Module | None = self
        for part in path.split("."):
            if current is None:
                return None
            current = current._modules.get(part)
        return current

    def _call_with_hooks(self, args: tuple, kwargs: dict) -> Any:
        pre_hooks = [*_global_forward_pre_hooks.items(), *self._forward_pre_hooks.items()]
        for hook_id, hook in pre_hooks:
            if hook_id in self._forward_pre_hooks_with_kwargs:
                replaced = hook(self, args, kwargs)
                if replaced is not None:
                    if not (isinstance(replaced, tuple) and len(replaced) == 2):
                        raise RuntimeError(
                            "forward pre-hook must return None or a tuple of (new_args, "
                            f"new_kwargs), but got {replaced}."
                        )
                    args, kwargs = replaced
            else:
                replaced = hook(self, args)
                if replaced is not None:
                    args = replaced if isinstance(replaced, tuple) else (replaced,)
        backward_run = None
        backward_pre_hooks = [
            *_global_backward_pre_hooks.values(),
            *self._backward_pre_hooks.values(),
        ]
        backward_hooks = [*_global_backward_hooks.values(), *self._backward_hooks.values()]
        if (backward_hooks or backward_pre_hooks) and _state.grad_enabled:
            backward_run = BackwardHookRun(self, backward_pre_hooks, backward_hooks)
            args = backward_run.wrap_inputs(args)
        called: set[int] = set()
        result = None
        try:
            result = self.forward(*args, **kwargs)
            for hook_id, hook in [*_global_forward_hooks.items(), *self._forward_hooks.items()]:
                called.add(hook_id)
                if (
                    hook_id in self._forward_hooks_with_kwargs
                    or hook_id in _global_forward_hooks_with_kwargs
                ):
                    replaced = hook(self, args, kwargs, result)
                else:
                    replaced = hook(self, args, result)
                if replaced is not None:
                    result = replaced
        except Exception:
            self._run_always_called_hooks(args, kwargs, result, called)
            raise
        return result if backward_run is None else backward_run.wrap_outputs(result)

    def _run_always_called_hooks(self, args: tuple, kwargs: dict, result: Any, called: set) -> None:
        for hook_id, hook in list(_global_forward_hooks.items()):
            if hook_id not in _global_forward_hooks_always_called or hook_id in called:
                continue
            try:
                replaced = hook(self, args, result)
                if replaced is not None:
                    result = replaced
            except Exception as error:
                warnings.warn(
                    "global module forward hook with ``always_call=True`` raised an exception "
                    f"that was silenced as another error was raised in forward: {error}",
                    stacklevel=3,
                )
        for hook_id, hook in list(self._forward_hooks.items()):
            if hook_id not in self._forward_hooks_always_called or hook_id in called:
                continue
            try:
                if hook_id in self._forward_hooks_with_kwargs:
                    hook(self, args, kwargs, result)
                else:
                    hook(self, args, result)
            except Exception as error:
                warnings.warn(
                    "module forward hook with ``always_call=True`` raised an exception that "
                    f"was silenced as another error was raised in forward: {error}",
                    stacklevel=3,
                )

    def register_forward_pre_hook(
        self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False
    ) -> RemovableHandle:
        """Run ``hook(module, args)`` (or ``hook(module, args, kwargs)``) before forward; a
        non-None result replaces the arguments."""
        handle = _HookHandle(self._forward_pre_hooks, hook, (self._forward_pre_hooks_with_kwargs,))
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs.add(handle.id)
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(
        self,
        hook: Callable,
        *,
        prepend: bool = False,
        with_kwargs: bool = False,
        always_call: bool = False,
    ) -> RemovableHandle:
        """Run ``hook(module, args, output)`` (or with kwargs) after forward; a non-None
        result replaces the output. ``always_call`` runs it even when forward raises."""
        handle = _HookHandle(
            self._forward_hooks,
            hook,
            (self._forward_hooks_with_kwargs, self._forward_hooks_always_called),
        )
        if with_kwargs:
            self._forward_hooks_with_kwargs.add(handle.id)
        if always_call:
            self._forward_hooks_always_called.add(handle.id)
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_pre_hook(
        self, hook: Callable, prepend: bool = False
    ) -> RemovableHandle:
        """Run ``hook(module, grad_output)`` when the gradients of the outputs are known; a
        non-None result replaces them."""
        handle = _HookHandle(self._backward_pre_hooks, hook)
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Run ``hook(module, grad_input, grad_output)`` when the gradients of the positional
        inputs are known (None for non-tensor or non-differentiable ones); a non-None result
        replaces ``grad_input``."""
        handle = _HookHandle(self._backward_hooks, hook)
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    # -------------------------------------------------------------------- registration
    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or None, a placeholder) under ``name``."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_name("parameter", name, self._parameters)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                "(tensorkit.nn.Parameter or None required)"
            )
        if param is not None and param.grad_fn is not None:
            raise ValueError(
                f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must "
                f"be created explicitly. To express '{name}' as a function of another Tensor, "
                "compute the value in the forward() method."
            )
        if param is not None and _global_parameter_registration_hooks:
            param = _registered(_global_parameter_registration_hooks, self, name, param)
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a buffer (state that is not trained); ``persistent=False`` keeps it out of the
        state dict."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name("buffer", name, self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                "(tensorkit Tensor or None required)"
            )
        if _global_buffer_registration_hooks:
            tensor = _registered(_global_buffer_registration_hooks, self, name, tensor)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module under ``name`` (its segment in module paths)."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._register_child(name, module)

    register_module = add_module

    def _register_child(self, name: str, module: Module | None) -> None:
        """``_set_child`` after the global module registration hooks."""
        if _global_module_registration_hooks:
            module = _registered(_global_module_registration_hooks, self, name, module)
        self._set_child(name, module)

    def _set_child(self, name: str, module: Module | None) -> None:
        """Store a child and give it ``name`` as its module-path segment."""
        self._modules[name] = module
        if module is not None:
            object.__setattr__(module, "_scope_name", name)

    def _check_name(self, kind: str, name: Any, registry: dict) -> None:
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if hasattr(self, name) and name not in registry:
            raise KeyError(f"attribute '{name}' already exists")

    def __setattr__(self, name: str, value: Any) -> None:
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name, self.__dict__, self._buffers, self._modules)
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{_typename(value)}' as parameter '{name}' "
                    "(tensorkit.nn.Parameter or None expected)"
                )
            self.register_parameter(name, value)
            return
        modules = self.__dict__.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name, self.__dict__, self._parameters, self._buffers)
            self._register_child(name, value)
            return
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{_typename(value)}' as child module '{name}' "
                    "(tensorkit.nn.Module or None expected)"
                )
            self._register_child(name, value)
            return
        buffers = self.__dict__.get("_buffers")
        if isinstance(value, Buffer) or (buffers is not None and name in buffers):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    f"cannot assign '{_typename(value)}' as buffer '{name}' "
                    "(tensorkit.nn.Buffer, tensorkit.Tensor or None expected)"
                )
            if isinstance(value, Buffer):
                persistent = value.persistent
            else:
                persistent = name not in self._non_persistent_buffers_set
            self.register_buffer(name, value, persistent)
            return
        object.__setattr__(self, name, value)

    def _forget(self, name: str, *registries: dict) -> None:
        for registry in registries:
            registry.pop(name, None)
        self._non_persistent_buffers_set.discard(name)

    def __getattr__(self, name: str) -> Any:
        state = self.__dict__
        for registry in ("_parameters", "_buffers", "_modules"):
            found = state.get(registry)
            if found is not None and name in found:
                return found[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        names = list(super().__dir__())
        names += [*self._parameters, *self._buffers, *self._modules]
        return sorted(name for name in set(names) if not name[0].isdigit())

    # ----------------------------------------------------------------------- traversal
    def named_modules(
        self, memo: set | None = None, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Module]]:
        """This module and every descendant, with dotted names, depth first."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                yield from module.named_modules(memo, _join(prefix, name), remove_duplicate)

    def modules(self) -> Iterator[Module]:
        for _, module in self.named_modules():
            yield module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self) -> Iterator[Module]:
        for _, module in self.named_children():
            yield module

    def _named_members(
        self, registry: str, prefix: str, recurse: bool, remove_duplicate: bool
    ) -> Iterator[tuple[str, Tensor]]:
        seen: set[int] = set()
        if recurse:
            owners = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
        else:
            owners = iter([(prefix, self)])
        for owner_prefix, owner in owners:
            for name, value in owner.__dict__[registry].items():
                if value is None or id(value) in seen:
                    continue
                if remove_duplicate:
                    seen.add(id(value))
                yield _join(owner_prefix, name), value

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Parameter]]:
        """Parameters with dotted names, in registration order (each once by default)."""
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)  # type: ignore[return-value]

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor]]:
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, buffer in self.named_buffers(recurse=recurse):
            yield buffer

    def get_submodule(self, target: str) -> Module:
        """The descendant at dotted path ``target`` ('' is this module)."""
        if target == "":
            return self
        module = self
        for item in target.split("."):
            if not hasattr(module, item):
                raise AttributeError(f"{module._get_name()} has no attribute `{item}`")
            module = getattr(module, item)
            if not isinstance(module, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return module

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at dotted path ``target`` (``'fc.weight'``)."""
        _, name, param = self._get_attribute(target)
        if not isinstance(param, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at dotted path ``target`` (``'bn.running_mean'``)."""
        module, name, buffer = self._get_attribute(target)
        if name not in module._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return buffer

    def _get_attribute(self, target: str) -> tuple[Module, str, Any]:
        """The module that dotted path ``target`` ends in, the attribute's name and value."""
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if not hasattr(module, name):
            raise AttributeError(f"{module._get_name()} has no attribute `{name}`")
        return module, name, getattr(module, name)

    # ------------------------------------------------------------------- mode and state
    def train(self, mode: bool = True) -> Module:
        """Set training mode (dropout active, batch statistics) here and in all children."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def share_memory(self) -> Module:
        """Move every parameter and buffer into shared memory (for ``tk.multiprocessing``
        training such as Hogwild); tensors keep their identity."""
        for tensor in (*self.parameters(), *self.buffers()):
            tensor.share_memory_()
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters (to None, or to zeros in place)."""
        for param in self.parameters():
            if param.grad is None:
                continue
            if set_to_none:
                param.grad = None
            else:
                if param.grad.grad_fn is not None:
                    param.grad.detach_()
                else:
                    param.grad.requires_grad_(False)
                param.grad.zero_()

    def apply(self, fn: Callable[[Module], None]) -> Module:
        """Call ``fn`` on every submodule (children first) and then on this module."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> Module:
        """Convert every parameter, gradient and buffer with ``fn``; parameters keep their
        identity (their data is replaced), so optimizers holding them stay valid."""
        if recurse:
            for module in self.children():
                module._apply(fn)
        with no_grad():
            for param in self._parameters.values():
                if param is None:
                    continue
                param.data = fn(param)
                if param.grad is not None:
                    param.grad.data = fn(param.grad)
            for name, buffer in self._buffers.items():
                if buffer is not None:
                    self._buffers[name] = fn(buffer)
        return self

    def to(self, *args: Any, **kwargs: Any) -> Module:
        """Move and/or cast parameters and buffers: ``to(device)``, ``to(dtype)``,
        ``to(device, dtype)`` or ``to(tensor)``. Only floating/complex tensors change dtype."""
        target_device, target_dtype = _parse_to(args, dict(kwargs))

        def convert(t: Tensor) -> Tensor:
            if target_dtype is not None and (t.is_floating_point() or t.is_complex()):
                return t.to(device=target_device, dtype=target_dtype)
            return t if target_device is None else t.to(target_device)

        return self._apply(convert)

    def to_empty(self, *, device: str | device | int | None, recurse: bool = True) -> Module:
        """Move parameters and buffers to ``device`` without copying their values (the new
        storage is uninitialized)."""
        return self._apply(lambda t: empty_like(t, device=device), recurse=recurse)

    def cpu(self) -> Module:
        return self._apply(lambda t: t.cpu())

    def cuda(self, device: int | str | device | None = None) -> Module:
        return self._apply(lambda t: t.cuda(device))

    def _cast_floating(self, target: dtype) -> Module:
        return self._apply(lambda t: t.to(target) if t.is_floating_point() else t)

    def float(self) -> Module:
        return self._cast_floating(float32)

    def double(self) -> Module:
        return self._cast_floating(float64)

    def half(self) -> Module:
        return self._cast_floating(float16)

    # ---------------------------------------------------------------------- state dict
    def state_dict(
        self, *, destination: dict | None = None, prefix: str = "", keep_vars: bool = False
    ) -> dict[str, Tensor]:
        """Parameters, persistent buffers and extra state by dotted name (detached unless
        ``keep_vars``), with each module's ``version`` in ``destination._metadata``."""
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()  # type: ignore[attr-defined]
        local_metadata = {"version": self._version}
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(
                    destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars
                )
        for hook in self._state_dict_hooks.values():
            result = hook(self, destination, prefix, local_metadata)
            if not getattr(hook, "_from_public_api", False):
                if result is not None:
                    destination = result
            elif result is not None:
                raise RuntimeError("state_dict post-hook must return None")
        return destination

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buffer in self._buffers.items():
            if buffer is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buffer if keep_vars else buffer.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def get_extra_state(self) -> Any:
        """Extra (picklable) state for ``state_dict``, saved under ``'_extra_state'``;
        override together with ``set_extra_state``."""
        raise RuntimeError(
            "Reached a code path in Module.get_extra_state() that should never be called."
        )

    def set_extra_state(self, state: Any) -> None:
        """Restore what ``get_extra_state`` returned, from a loaded state dict."""
        raise RuntimeError(
            "Reached a code path in Module.set_extra_state() that should never be called."
        )

    def register_state_dict_pre_hook(self, hook: Callable[..., None]) -> RemovableHandle:
        """Run ``hook(module, prefix, keep_vars)`` before ``state_dict`` saves this module."""
        return RemovableHandle(self._state_dict_pre_hooks, hook)

    def register_state_dict_post_hook(self, hook: Callable[..., None]) -> RemovableHandle:
        """Run ``hook(module, state_dict, prefix, local_metadata)`` after ``state_dict`` saved
        this module and its children; it may edit ``state_dict`` in place (and must return
        None)."""
        hook._from_public_api = True  # type: ignore[attr-defined]
        return RemovableHandle(self._state_dict_hooks, hook)

    def _register_state_dict_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """The older post-hook: a non-None result replaces the state dict (respected at the
        root module only)."""
        if getattr(hook, "_from_public_api", False):
            raise RuntimeError(
                "Cannot register the same function as the state dict post hook that was "
                "previously registered via register_state_dict_post_hook"
            )
        return RemovableHandle(self._state_dict_hooks, hook)

    def _register_load_state_dict_pre_hook(
        self, hook: Callable[..., None], with_module: bool = False
    ) -> RemovableHandle:
        """As ``register_load_state_dict_pre_hook``; without ``with_module`` the hook is not
        given the module."""
        return RemovableHandle(
            self._load_state_dict_pre_hooks, _WrappedHook(hook, self if with_module else None)
        )

    def register_load_state_dict_pre_hook(self, hook: Callable[..., None]) -> RemovableHandle:
        """Run ``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` before this module loads its entries."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def register_load_state_dict_post_hook(self, hook: Callable[..., None]) -> RemovableHandle:
        """Run ``hook(module, incompatible_keys)`` after this module and its children loaded;
        it may edit ``missing_keys``/``unexpected_keys`` in place (which ``strict`` sees)."""
        return RemovableHandle(self._load_state_dict_post_hooks, hook)

    def load_state_dict(
        self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False
    ) -> _IncompatibleKeys:
        """Copy values from ``state_dict`` into parameters and buffers (or, with ``assign``,
        adopt the given tensors). Size mismatches always raise; with ``strict``, missing and
        unexpected keys do too. All problems are reported in one error."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing: list[str] = []
        unexpected: list[str] = []
        errors: list[str] = []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)

        def load(module: Module, local: dict, prefix: str) -> None:
            local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            for hook in module._load_state_dict_pre_hooks.values():
                hook(local, prefix, local_metadata, True, missing, unexpected, errors)
            module._load_from_state_dict(local, prefix, assign, missing, unexpected, errors)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    child_local = {k: v for k, v in local.items() if k.startswith(child_prefix)}
                    load(child, child_local, child_prefix)
            incompatible = _IncompatibleKeys(missing, unexpected)
            for hook in module._load_state_dict_post_hooks.values():
                if hook(module, incompatible) is not None:
                    raise AssertionError(
                        "Hooks registered with ``register_load_state_dict_post_hook`` are not "
                        "expected to return new values, if incompatible_keys need to be "
                        "modified, it should be done inplace."
                    )

        load(self, state_dict, "")
        if strict:
            if unexpected:
                keys = ", ".join(f'"{key}"' for key in unexpected)
                errors.insert(0, f"Unexpected key(s) in state_dict: {keys}. ")
            if missing:
                keys = ", ".join(f'"{key}"' for key in missing)
                errors.insert(0, f"Missing key(s) in state_dict: {keys}. ")
        if errors:
            raise RuntimeError(
                f"Error(s) in loading state_dict for {self._get_name()}:\n\t" + "\n\t".join(errors)
            )
        return _IncompatibleKeys(missing, unexpected)

    def _load_from_state_dict(
        self,
        state_dict: Mapping[str, Any],
        prefix: str,
        assign: bool,
        missing: list[str],
        unexpected: list[str],
        errors: list[str],
    ) -> None:
        """Load this module's own entries (children load theirs)."""
        persistent = {
            name: value
            for name, value in self._buffers.items()
            if name not in self._non_persistent_buffers_set
        }
        local = {
            name: value
            for name, value in itertools.chain(self._parameters.items(), persistent.items())
            if value is not None
        }
        for name, current in local.items():
            key = prefix + name
            if key not in state_dict:
                missing.append(key)
                continue
            given = state_dict[key]
            if not isinstance(given, Tensor):
                errors.append(
                    f'While copying the parameter named "{key}", expected tensorkit.Tensor or '
                    f"Tensor-like object from checkpoint but received {type(given)}"
                )
                continue
            if given.shape != current.shape:
                errors.append(
                    f"size mismatch for {key}: copying a param with shape {given.shape} from "
                    f"checkpoint, the shape in current model is {current.shape}."
                )
                continue
            try:
                self._load_one(name, current, given, assign)
            except Exception as error:
                errors.append(
                    f'While copying the parameter named "{key}", whose dimensions in the model '
                    f"are {current.shape} and whose dimensions in the checkpoint are "
                    f"{given.shape}, an exception occurred : {error.args}."
                )
        extra_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if type(self).set_extra_state is not Module.set_extra_state:
            if extra_key in state_dict:
                self.set_extra_state(state_dict[extra_key])
            else:
                missing.append(extra_key)
        elif extra_key in state_dict:
            unexpected.append(extra_key)
        for key in state_dict:
            if not key.startswith(prefix) or key == extra_key:
                continue
            head = key[len(prefix) :].split(".", 1)
            if len(head) > 1:
                if head[0] not in self._modules:
                    unexpected.append(key)
            elif head[0] not in local:
                unexpected.append(key)

    def _load_one(self, name: str, current: Tensor, given: Tensor, assign: bool) -> None:
        if not assign:
            with no_grad():
                current.copy_(given)
            return
        if isinstance(current, Parameter):
            if isinstance(given, Parameter):
                given.requires_grad_(current.requires_grad)
            else:
                given = Parameter(given, requires_grad=current.requires_grad)
        setattr(self, name, given)

    # ------------------------------------------------------------------------ printing
    def _get_name(self) -> str:
        return type(self).__name__

    def extra_repr(self) -> str:
        """The module's settings for its repr (one line, or several); '' for none."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [
            f"({name}): " + _add_indent(repr(module), 2) for name, module in self._modules.items()
        ]
        lines = extra_lines + child_lines
        text = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                text += extra_lines[0]
            else:
                text += "\n  " + "\n  ".join(lines) + "\n"
        return text + ")"
