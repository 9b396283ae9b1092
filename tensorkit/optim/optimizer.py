"""The Optimizer base class: parameter groups, per-parameter state, step, saving and loading."""

from __future__ import annotations

import functools
import sys
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable
from itertools import chain
from typing import Any, TypeAlias

from .._callsite import is_package_file
from .._dtype import float32, float64, get_default_dtype
from ..autograd.grad_mode import enable_grad, set_grad_enabled
from ..ops.creation import tensor, zeros_like
from ..profiler.profile import record_function
from ..tensor import RemovableHandle, Tensor

ParamsT: TypeAlias = Iterable[Tensor] | Iterable[dict[str, Any]] | Iterable[tuple[str, Tensor]]

_global_optimizer_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
_global_optimizer_post_hooks: OrderedDict[int, Callable] = OrderedDict()


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """Run ``hook(optimizer, args, kwargs)`` before every optimizer's ``step`` (before the
    optimizer's own pre hooks); a non-None result ``(new_args, new_kwargs)`` replaces the
    arguments. ``args`` starts with the optimizer itself, as in PyTorch."""
    return RemovableHandle(_global_optimizer_pre_hooks, hook)


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    """Run ``hook(optimizer, args, kwargs)`` after every optimizer's ``step`` (after the
    optimizer's own post hooks)."""
    return RemovableHandle(_global_optimizer_post_hooks, hook)


def _profiled(step: Callable) -> Callable:
    """``step`` inside ``record_function("Optimizer.step#<class>.step")``, as PyTorch labels it,
    so profilers put its ops in the "optimizer" phase (once, when an override calls super).
    It also marks the optimizer as stepped (``_opt_called``, which schedulers check)."""

    @functools.wraps(step)
    def labelled(self: Optimizer, *args: Any, **kwargs: Any) -> Any:
        self._opt_called = True
        if self._stepping:
            return step(self, *args, **kwargs)
        self._stepping = True
        try:
            with record_function(f"Optimizer.step#{type(self).__name__}.step"):
                return _hooked_step(step, self, (self, *args), kwargs)
        finally:
            self._stepping = False

    return labelled


def _hooked_step(step: Callable, self: Optimizer, args: tuple, kwargs: dict[str, Any]) -> Any:
    """``step(*args, **kwargs)`` between the step hooks, in PyTorch's order: global pre hooks,
    the optimizer's pre hooks, the step, the optimizer's post hooks, global post hooks."""
    for hook in chain(
        _global_optimizer_pre_hooks.values(), self._optimizer_step_pre_hooks.values()
    ):
        result = hook(self, args, kwargs)
        if result is None:
            continue
        if not (isinstance(result, tuple) and len(result) == 2):
            raise RuntimeError(
                f"{step} must return None or a tuple of (new_args, new_kwargs), but got {result}."
            )
        args, kwargs = result
    out = step(*args, **kwargs)
    for hook in chain(
        self._optimizer_step_post_hooks.values(), _global_optimizer_post_hooks.values()
    ):
        hook(self, args, kwargs)
    return out


class Optimizer:
    """Base class of all optimizers.

    ``params`` is an iterable of tensors, of ``(name, tensor)`` pairs, or of dicts (parameter
    groups: ``{"params": [...], "lr": ...}``) whose missing options are filled from
    ``defaults``. Subclasses implement ``_update`` (the update of one parameter with a
    gradient, run in place under ``no_grad``) or override ``step``. ``foreach``, ``fused``
    and ``capturable`` are kept as group options, as PyTorch does; they pick PyTorch kernels
    (CUDA graphs for ``capturable``) and change nothing here.
    """

    _supports_complex = False
    _stepping = False  # inside a labelled step (see _profiled)
    _opt_called = False  # step() has run at least once

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__:
            cls.step = _profiled(cls.__dict__["step"])  # type: ignore[method-assign]

    def __init__(self, params: ParamsT, defaults: dict[str, Any]) -> None:
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or "
                "dicts, but got tensorkit.Tensor"
            )
        self.defaults = defaults
        self._optimizer_step_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_step_post_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_state_dict_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_state_dict_post_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_load_state_dict_post_hooks: OrderedDict[int, Callable] = OrderedDict()
        self.state: defaultdict[Any, dict[str, Any]] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for index, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {index}")
            lines += [f"    {key}: {group[key]}" for key in sorted(group) if key != "params"]
        return "\n".join(lines) + "\n)"

    # ------------------------------------------------------------------ parameter groups
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own options (the rest come from the defaults)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        if "params" not in param_group:
            raise KeyError("param_group must have a 'params' entry")
        group = dict(param_group)
        group["params"], names = _split_names(group["params"])
        if names is not None:
            group["param_names"] = names
        for param in group["params"]:
            self._check_param(param)
        for name, default in self.defaults.items():
            group.setdefault(name, default)

        ids = [id(p) for p in group["params"]]
        if len(ids) != len(set(ids)):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; each copy "
                "will be updated",
                UserWarning,
                stacklevel=_user_stacklevel(),
            )
        for existing in self.param_groups:
            if ("param_names" in existing) != ("param_names" in group):
                kind = "with names" if "param_names" in group else "without names"
                raise ValueError(
                    "all optimizer param groups should be with/without names. cannot add param "
                    f"group {kind} to the optimizer"
                )
            if not {id(p) for p in existing["params"]}.isdisjoint(ids):
                raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def _check_param(self, param: Any) -> None:
        if not isinstance(param, Tensor):
            raise TypeError(
                f"optimizer can only optimize Tensors, but one of the params is {_typename(param)}"
            )
        if not self.defaults.get("differentiable", False) and not (
            param.is_leaf or param.retains_grad
        ):
            raise ValueError("can't optimize a non-leaf Tensor")
        if param.is_complex() and not self._supports_complex:
            raise RuntimeError(
                f"{type(self).__name__} does not support complex parameters in tensorkit (got "
                f"one of dtype {param.dtype}); optimize its real and imaginary parts instead"
            )

    # ------------------------------------------------------------------------- stepping
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters: to None (default), or to zeros in place."""
        for group in self.param_groups:
            for param in group["params"]:
                grad = param.grad
                if grad is None:
                    continue
                if set_to_none:
                    param.grad = None
                    continue
                if grad.grad_fn is not None:
                    grad.detach_()
                else:
                    grad.requires_grad_(False)
                if getattr(grad._data.flags, "writeable", True):
                    grad.zero_()
                else:  # a broadcast (read-only) gradient from the engine: replace it
                    param.grad = zeros_like(grad)

    @_profiled
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter that has a gradient; returns ``closure()``'s loss if given.

        The closure runs with grad enabled; the updates run under ``no_grad`` (with grad
        enabled when the optimizer was made with ``differentiable=True``).
        """
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with set_grad_enabled(bool(self.defaults.get("differentiable", False))):
            for group in self.param_groups:
                for param in group["params"]:
                    if param.grad is not None:
                        self._update(param, param.grad, group)
        return loss

    def _update(self, param: Tensor, grad: Tensor, group: dict[str, Any]) -> None:
        raise NotImplementedError(f"{type(self).__name__} does not implement _update")

    # -------------------------------------------------------------------------- hooks
    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Run ``hook(optimizer, args, kwargs)`` before ``step`` (``args`` starts with the
        optimizer); a non-None result ``(new_args, new_kwargs)`` replaces the arguments."""
        return RemovableHandle(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """Run ``hook(optimizer, args, kwargs)`` after ``step``."""
        return RemovableHandle(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(
        self, hook: Callable[[Optimizer], None], prepend: bool = False
    ) -> RemovableHandle:
        """Run ``hook(optimizer)`` before ``state_dict`` builds the dict (first of all with
        ``prepend``)."""
        return _add_hook(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(
        self,
        hook: Callable[[Optimizer, dict[str, Any]], dict[str, Any] | None],
        prepend: bool = False,
    ) -> RemovableHandle:
        """Run ``hook(optimizer, state_dict)`` on the built dict; a non-None result replaces
        it."""
        return _add_hook(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(
        self,
        hook: Callable[[Optimizer, dict[str, Any]], dict[str, Any] | None],
        prepend: bool = False,
    ) -> RemovableHandle:
        """Run ``hook(optimizer, state_dict)`` on (a shallow copy of) the dict being loaded; a
        non-None result is loaded instead."""
        return _add_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(
        self, hook: Callable[[Optimizer], None], prepend: bool = False
    ) -> RemovableHandle:
        """Run ``hook(optimizer)`` after ``load_state_dict`` has loaded the state."""
        return _add_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # ---------------------------------------------------------------- saving and loading
    def state_dict(self) -> dict[str, Any]:
        """A copy of the state: ``{"state": {index: {...}}, "param_groups": [{..., "params":
        [indices]}]}``, parameters numbered in group order as PyTorch does. State dict pre
        and post hooks run around it."""
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)
        index: dict[int, int] = {}
        groups = []
        start = 0
        for group in self.param_groups:
            for position, param in enumerate(group["params"], start):
                index.setdefault(id(param), position)
            packed = {key: _copy(value) for key, value in group.items() if key != "params"}
            packed["params"] = [index[id(p)] for p in group["params"]]
            start += len(group["params"])
            groups.append(packed)
        state = {
            (index[id(key)] if isinstance(key, Tensor) else key): _copy(value)
            for key, value in self.state.items()
        }
        state_dict = {"state": state, "param_groups": groups}
        for post_hook in self._optimizer_state_dict_post_hooks.values():
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a ``state_dict()``: state tensors are copied, cast to each parameter's dtype
        (all but ``step``) and moved to its device. Load state dict pre and post hooks run
        around it."""
        state_dict = state_dict.copy()
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = pre_hook(self, state_dict)
            if result is not None:
                state_dict = result
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(
                f"loaded state dict has a different number of parameter groups "
                f"({len(saved_groups)}) than the optimizer ({len(self.param_groups)})"
            )
        for number, (group, saved) in enumerate(zip(self.param_groups, saved_groups, strict=True)):
            if len(group["params"]) != len(saved["params"]):
                raise ValueError(
                    f"loaded state dict contains a parameter group that doesn't match the size "
                    f"of optimizer's group: group {number} has {len(saved['params'])} "
                    f"parameters in the state dict and {len(group['params'])} in the optimizer"
                )
        params_by_index = dict(
            zip(
                chain.from_iterable(g["params"] for g in saved_groups),
                chain.from_iterable(g["params"] for g in self.param_groups),
                strict=True,
            )
        )
        state: defaultdict[Any, dict[str, Any]] = defaultdict(dict)
        for key, value in state_dict["state"].items():
            if key in params_by_index:
                param = params_by_index[key]
                state[param] = {name: _cast_state(param, name, v) for name, v in value.items()}
            else:
                state[key] = _copy(value)
        groups = []
        for group, saved in zip(self.param_groups, saved_groups, strict=True):
            new_group = {key: _copy(value) for key, value in saved.items()}
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                new_group["param_names"] = group["param_names"]
            groups.append(new_group)
        self.state = state
        self.param_groups = groups
        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)


def differentiable_copy(tensor: Tensor, group: dict[str, Any]) -> Tensor:
    """``tensor``, or a copy of it in a differentiable step: state that an op saves for backward
    must not be changed in place by the next step."""
    return tensor.clone() if group["differentiable"] else tensor


def subtract_lr_times(param: Tensor, update: Tensor, lr: float | Tensor) -> None:
    """``param -= lr * update`` in place; ``lr`` may be a tensor, as PyTorch allows."""
    if isinstance(lr, Tensor):
        param.addcmul_(update, lr, value=-1)
    else:
        param.add_(update, alpha=-lr)


def step_counter() -> Tensor:
    """A fresh step count: a 0-d CPU tensor of the default float dtype (PyTorch's layout)."""
    dtype = float64 if get_default_dtype() is float64 else float32
    return tensor(0.0, dtype=dtype)


def _add_hook(hooks: OrderedDict[int, Callable], hook: Callable, prepend: bool) -> RemovableHandle:
    """Register ``hook`` last (or first, with ``prepend``) in ``hooks``."""
    handle = RemovableHandle(hooks, hook)
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


def _user_stacklevel() -> int:
    """The ``stacklevel`` that points a warning at the innermost caller outside tensorkit."""
    level, frame = 1, sys._getframe(1)
    while frame is not None and is_package_file(frame.f_code.co_filename):
        level += 1
        frame = frame.f_back
    return level


def _split_names(params: Any) -> tuple[list[Tensor], list[str] | None]:
    if isinstance(params, Tensor):
        return [params], None
    if isinstance(params, set | frozenset):
        raise TypeError(
            "optimizer parameters need to be organized in ordered collections, but the ordering "
            "of tensors in sets will change between runs. Please use a list instead."
        )
    params = list(params)
    named = [p for p in params if isinstance(p, tuple)]
    if not named:
        return params, None
    if len(named) != len(params):
        raise ValueError(
            "all optimizer params should be with/without names. Some param names are missing"
        )
    return [p for _, p in named], [name for name, _ in named]


def _typename(obj: Any) -> str:
    kind = type(obj)
    return (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else f"{kind.__module__}.{kind.__qualname__}"
    )


def _copy(value: Any) -> Any:
    """A copy of a state value: tensors cloned, containers copied, other values shared."""
    if isinstance(value, Tensor):
        return value.detach().clone()
    if isinstance(value, dict):
        return {key: _copy(v) for key, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_copy(v) for v in value)
    return value


# Scalar bookkeeping kept in the step count's dtype, where it was saved. PyTorch exempts only "step"
# from the cast to the parameter's dtype; keeping NAdam's "mu_product" and ASGD's "eta" and "mu"
# too makes a resumed run continue exactly as an uninterrupted one.
_SCALAR_STATE = ("step", "mu_product", "eta", "mu")


def _cast_state(param: Tensor, key: str, value: Any) -> Any:
    """A copy of ``value`` on ``param``'s device; floating state takes ``param``'s dtype (but
    not the scalar bookkeeping, which stays as it was saved)."""
    if isinstance(value, Tensor):
        scalar = key in _SCALAR_STATE
        dtype = param.dtype if param.is_floating_point() and not scalar else value.dtype
        device = value.device if scalar else param.device
        return value.detach().to(device=device, dtype=dtype, copy=True)
    if isinstance(value, dict):
        return {k: _cast_state(param, k, v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_cast_state(param, key, v) for v in value)
    return value
