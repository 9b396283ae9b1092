"""An observer that keeps each recorded node's forward inputs, so its op can be re-run."""

from __future__ import annotations

from typing import Any

from .. import _state
from ..autograd.graph import Node

__all__ = ["ForwardCapture"]


class ForwardCapture:
    """``with ForwardCapture() as capture:`` maps each node made inside to ``(inputs, attrs)``.

    Unlike the Tape it holds the input tensors strongly: use it for one short forward pass.
    """

    def __init__(self) -> None:
        self.inputs: dict[Node, tuple[tuple, dict]] = {}

    def __enter__(self) -> ForwardCapture:
        _state.add_observer(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _state.remove_observer(self)

    def op_started(self, event: Any) -> None:
        return None

    def op_finished(self, event: Any) -> None:
        if event.node is not None and event.phase == "forward":
            self.inputs[event.node] = (tuple(event.inputs), dict(event.attrs))
