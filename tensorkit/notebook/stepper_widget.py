"""The backward stepper widget (anywidget) over a :class:`BackwardStepper`.

Its state is synced traits: ``state`` (:meth:`BackwardStepper.state`), ``graph`` (the backward
graph) and ``action``. The front end's buttons set ``action`` to ``"next"``, ``"previous"``,
``"reset"`` or ``"run_to_end"``; an observer here runs it on the :class:`BackwardStepper`,
updates ``state`` and clears ``action``. A trait (rather than a custom message) keeps the
protocol testable from Python and visible in saved widget state.
"""

from __future__ import annotations

from typing import Any

import anywidget
import traitlets

from ..tensor import Tensor
from .graph_model import build_graph
from .stepper import BackwardStepper
from .widgets import STATIC, _FallbackHTML

__all__ = ["StepperWidget", "step_backward"]

ACTIONS = ("next", "previous", "reset", "run_to_end")


class StepperWidget(_FallbackHTML, anywidget.AnyWidget):
    """Step a :class:`BackwardStepper` from the notebook, its graph beside it."""

    _esm = STATIC / "stepper.js"
    _css = STATIC / "widgets.css"
    state = traitlets.Dict().tag(sync=True)
    graph = traitlets.Dict().tag(sync=True)
    action = traitlets.Unicode("").tag(sync=True)

    def __init__(self, stepper: BackwardStepper, **kwargs: Any) -> None:
        self.stepper = stepper
        super().__init__(state=stepper.state(), graph=build_graph(stepper.loss), **kwargs)

    @traitlets.observe("action")
    def _run_action(self, change: dict) -> None:
        action = change["new"]
        if not action:
            return
        try:
            if action not in ACTIONS:
                raise ValueError(f"unknown stepper action {action!r}; expected one of {ACTIONS}")
            self.state = getattr(self.stepper, action)()
        finally:
            self.action = ""


def step_backward(loss: Tensor, **kwargs: Any) -> StepperWidget:
    """A :class:`StepperWidget` over ``loss``'s backward pass; ``kwargs`` go to
    :class:`BackwardStepper`."""
    return StepperWidget(BackwardStepper(loss, **kwargs))
