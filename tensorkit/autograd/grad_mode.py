"""Grad modes: ``no_grad``, ``enable_grad``, ``set_grad_enabled`` and ``inference_mode``.

Each works as a context manager and as a decorator, like PyTorch's.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from .. import _state

__all__ = [
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "inference_mode",
    "is_grad_enabled",
    "is_inference_mode_enabled",
]

F = TypeVar("F", bound=Callable[..., Any])


def is_grad_enabled() -> bool:
    return _state.grad_enabled


def is_inference_mode_enabled() -> bool:
    return _state.inference_mode


class _GradModeContext:
    """Base: a context manager that sets grad mode on enter and restores it on exit."""

    def _enter_mode(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> None:
        self._saved = (_state.grad_enabled, _state.inference_mode)
        self._enter_mode()

    def __exit__(self, *exc: object) -> None:
        _state.grad_enabled, _state.inference_mode = self._saved

    def __call__(self, func: F) -> F:
        if inspect.isgeneratorfunction(func):
            return self._wrap_generator(func)

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.clone():
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    def _wrap_generator(self, func: F) -> F:
        """A generator runs its body in the mode and gives the caller its own mode back at
        every ``yield`` (as PyTorch's decorators do)."""

        @functools.wraps(func)
        def generator(*args: Any, **kwargs: Any) -> Any:
            with self.clone():
                gen = func(*args, **kwargs)
            step, value = gen.send, None
            while True:
                try:
                    with self.clone():
                        response = step(value)
                except StopIteration as stop:
                    return stop.value
                try:
                    step, value = gen.send, (yield response)
                except GeneratorExit:
                    with self.clone():
                        gen.close()
                    raise
                except BaseException as error:  # thrown in by the caller: pass it on
                    step, value = gen.throw, error

        return generator  # type: ignore[return-value]

    def clone(self) -> _GradModeContext:
        return self.__class__()


class _NoParamDecorator(_GradModeContext):
    """A mode that is also a decorator without parentheses: ``@no_grad`` as ``@no_grad()``."""

    def __new__(cls, orig_func: Callable | None = None) -> Any:
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamDecorator):  # noqa: N801
    """Ops run inside record no graph (their results do not require grad)."""

    def _enter_mode(self) -> None:
        _state.grad_enabled = False


class enable_grad(_NoParamDecorator):  # noqa: N801
    """Turn recording back on inside a ``no_grad`` block."""

    def _enter_mode(self) -> None:
        _state.grad_enabled = True


class set_grad_enabled(_GradModeContext):  # noqa: N801
    """Turn recording on or off. As a call it takes effect at once; as a context manager or
    decorator it applies to the block (or function) and then restores the old mode."""

    def __init__(self, mode: bool) -> None:
        self.mode = bool(mode)
        self._previous = _state.grad_enabled
        _state.grad_enabled = self.mode

    def __enter__(self) -> None:
        previous = getattr(self, "_previous", _state.grad_enabled)  # clones have no _previous
        self._saved = (previous, _state.inference_mode)
        _state.grad_enabled = self.mode

    def __call__(self, func: F) -> F:
        _state.grad_enabled = self._previous  # used as a decorator: undo the call's effect
        return super().__call__(func)

    def clone(self) -> set_grad_enabled:
        copy = object.__new__(set_grad_enabled)
        copy.mode = self.mode
        return copy


class inference_mode(_GradModeContext):  # noqa: N801
    """Like ``no_grad``, and tensors made inside are inference tensors: they can never take part
    in a recorded graph later."""

    def __new__(cls, mode: bool | Callable = True) -> Any:
        if callable(mode):  # used as a bare decorator: @inference_mode
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True) -> None:
        self.mode = bool(mode)

    def _enter_mode(self) -> None:
        if self.mode:
            _state.grad_enabled = False
            _state.inference_mode = True
        else:
            _state.inference_mode = False

    def clone(self) -> inference_mode:
        return inference_mode(self.mode)
