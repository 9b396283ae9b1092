"""Value guards: graph breaks a compiled call checks instead of running eagerly.

A value read whose Python result can be compared for equality (``bool(t)``, ``item()``, the
number protocols, ``tolist()`` of at most ``MAX_LISTED`` elements) is recorded as a node of
kind "guard": it reads the tensor and holds the value the recording got (``attrs["value"]``)
and its position among the call's guards (``attrs["number"]``); ``op`` is the read (its
``how``, "item()"). A replay converts the array as the eager read does (the Tensor method
itself) and compares; a different value raises :class:`GuardFailure` from inside the plan,
before any of the replay's effects (outputs, writes, ``.grad``) exist.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._backend import device_of_array
from ..tensor import Tensor, wrap

__all__ = [
    "MAX_LISTED",
    "READS",
    "GuardError",
    "GuardFailure",
    "check",
    "failure_message",
    "same",
    "unguarded",
    "verify",
]

MAX_LISTED = 64  # the most elements a guarded tolist() compares

# The reads a guard can repeat, by the ``how`` tensor.py reports: the method that converts.
READS: dict[str, Callable[[Tensor], Any]] = {
    "item()": Tensor.item,
    "__bool__()": Tensor.__bool__,
    "__float__() / __int__()": Tensor._scalar,
    "tolist()": Tensor.tolist,
}


class GuardFailure(Exception):  # noqa: N818 (internal control flow, caught by tk.compile)
    """A replay read another value than its recording at guard ``number``: the failed
    replay had no effects; ``node`` is the guard, ``value`` what the replay read."""

    def __init__(self, node: Any, value: Any) -> None:
        super().__init__(node.site)
        self.node = node
        self.number: int = node.attrs["number"]
        self.value = value


class GuardError(RuntimeError):
    """A traced or loaded graph read another value at a graph break than when it was traced:
    its frozen path does not hold for this call."""


def unguarded(how: str, tensor: Tensor, value_given: bool) -> str:
    """Why a read of ``tensor`` by ``how`` cannot be guarded ("" when it can)."""
    if how == "numpy()":
        return "numpy() hands out the tensor's memory, which no guard on a value can follow"
    if how not in READS or not value_given:
        return "library code steers its work by the values, which no guard on one value can follow"
    if how == "tolist()" and tensor._data.size > MAX_LISTED:
        return f"tolist() of {tensor._data.size} elements (tk.compile guards at most {MAX_LISTED})"
    return ""


def same(recorded: Any, read: Any) -> bool:
    """Whether a read value is the recorded one: equal and of the same type (True is not 1),
    NaN matching NaN, lists element by element."""
    if type(recorded) is not type(read):
        return False
    if type(recorded) is list:
        return len(recorded) == len(read) and all(map(same, recorded, read))
    return recorded == read or (recorded != recorded and read != read)


def verify(node: Any, tensor: Tensor) -> None:
    """Read ``tensor`` as guard ``node``'s eager read does; raise :class:`GuardFailure` when
    the value is not the recorded one."""
    value = READS[node.op](tensor)
    if not same(node.attrs["value"], value):
        raise GuardFailure(node, value)


def check(node: Any) -> Callable[[Any], None]:
    """Guard ``node`` as a plan step: ``verify`` on an array."""

    def guard(array: Any) -> None:
        verify(node, wrap(array, device_of_array(array)))

    return guard


def failure_message(failure: GuardFailure, name: str) -> str:
    """A traced graph's error for a failed guard: the read, its call site, both values."""
    node = failure.node
    site = f" at {node.site}" if node.site else ""
    return (
        f"{name}: Tensor.{node.op}{site} read {failure.value!r}, but the graph was traced when "
        f"it read {node.attrs['value']!r}, and follows that branch only; trace it again for "
        "this value, or use tk.compile, which compiles a path per value"
    )
