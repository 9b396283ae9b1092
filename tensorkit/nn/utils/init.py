"""``skip_init``: a module whose parameters and buffers are left uninitialized."""

from __future__ import annotations

import inspect
from typing import Any

from ..modules.module import Module

__all__ = ["skip_init"]


def skip_init(module_cls: type, *args: Any, **kwargs: Any) -> Module:
    """``module_cls(*args, **kwargs)`` on ``device`` (default cpu) with its parameters and
    buffers left uninitialized (fresh storage from ``to_empty``). tensorkit has no meta
    device, so the constructor's own initialization still runs first."""
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    kwargs["device"] = final_device
    return module_cls(*args, **kwargs).to_empty(device=final_device)
