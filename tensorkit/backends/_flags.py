"""A module whose attributes are checked switches, as torch.backends' modules are."""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any


def switch(
    name: str, setter_name: str, read: Callable[[], bool], write: Callable[[bool], None]
) -> property:
    """A bool property; anything else raises PyTorch's error (``set_enabled_cudnn expects a
    bool, but got str``)."""

    def fset(module: Any, value: Any) -> None:
        if not isinstance(value, bool):
            raise RuntimeError(f"{setter_name} expects a bool, but got {type(value).__name__}")
        write(value)

    return property(lambda module: read(), fset, doc=f"``{name}`` (a bool)")


class FlagModule(types.ModuleType):
    """A module that refuses attributes it does not define (``Unknown attribute foo``)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("__") or name in type(self).__dict__ or name in self.__dict__:
            super().__setattr__(name, value)
            return
        raise AttributeError(f"Unknown attribute {name}")
