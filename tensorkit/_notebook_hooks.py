"""The functions the notebook package lends to the core: ``Tape.show``/``save``/``to_html``,
``Profile.show``, the ``show`` of tk.jit's traced and compiled functions and the Tape's
recorder of backward steps are written in ``tensorkit.notebook``, which the core (tensor,
ops, autograd, profiler) never imports.
``tensorkit.notebook`` registers them here when it is imported; a core method looks its
function up, importing ``tensorkit.notebook`` once if nothing is registered yet.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

#: The hooks the core looks up, each with the call that needs it (for the error).
KINDS = {
    "tape.show": "Tape.show()",
    "tape.save": "Tape.save()",
    "tape.to_html": "Tape.to_html()",
    "tape.pass_recorder": "Tape(step_details=...)",
    "profile.show": "profile.show()",
    "jit.show": "TracedFunction.show() / CompiledFunction.show()",
}

_hooks: dict[str, Callable[..., Any]] = {}


def register(kind: str, function: Callable[..., Any]) -> None:
    """Make ``function`` the one the core calls for ``kind`` (one of :data:`KINDS`)."""
    if kind not in KINDS:
        raise ValueError(f"unknown notebook hook {kind!r}; the core looks up {sorted(KINDS)}")
    _hooks[kind] = function


def lookup(kind: str) -> Callable[..., Any]:
    """The function registered for ``kind``, importing ``tensorkit.notebook`` (which registers
    them all) the first time."""
    function = _hooks.get(kind)
    if function is not None:
        return function
    try:
        importlib.import_module("tensorkit.notebook")
    except ImportError as error:
        raise ImportError(
            f"{KINDS[kind]} needs tensorkit.notebook: import it or pip install "
            f"tensorkit[notebook] ({error})"
        ) from error
    function = _hooks.get(kind)
    if function is None:
        raise RuntimeError(f"tensorkit.notebook registered no {kind!r} hook")
    return function
