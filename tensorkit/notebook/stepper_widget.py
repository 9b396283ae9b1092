"""The backward stepper widget (anywidget) over a :class:`BackwardStepper`.

Its state is synced traits: ``state`` (:meth:`BackwardStepper.state`), ``graph`` (the backward
graph), ``checks`` (finite-difference results), ``chain_rule`` (show chain-rule sums on the
edges), ``notice`` (why the last action failed, "" if it did not) and ``action``. The front
end sets ``action`` to one of :data:`ACTIONS`, optionally followed by ``:`` and an argument
(``"run_to:n3"``, ``"break_at:n1,n4"``, ``"break_on_grad_norm:10"``,
``"break_on_nonfinite:true"``, ``"check_node:n2"``); an observer here runs it, updates
``state`` or ``checks`` (or ``notice``, re-raising the error) and clears ``action``.
``reset`` also clears ``checks``; ``check_graph`` puts each node's result into
``checks["nodes"]`` too, so that every node is coloured by its check, and keeps in
``checks["graph"]`` the verdicts only (each comparison is sent once). A trait (rather
than a custom message) keeps the protocol testable from Python and visible in saved widget
state.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import anywidget
import traitlets

from ..tensor import Tensor
from .check import check_graph, check_node
from .graph_model import build_graph
from .recorded import recording_payload, stepper_replay
from .stepper import BackwardStepper
from .values import finite_or_label
from .widgets import STATIC, _FallbackHTML

__all__ = ["ACTIONS", "StepperWidget", "step_backward"]

MOVES = ("next", "previous", "reset", "run_to_end")  # BackwardStepper methods, no argument
ACTIONS = (
    *MOVES,
    "run_to",
    "break_on_nonfinite",
    "break_at",
    "break_on_grad_norm",
    "check_node",
    "check_graph",
)
CHAIN_RULE_MAX_NODES = 40  # chain-rule sums are on by default for scalar graphs this small


class StepperWidget(_FallbackHTML, anywidget.AnyWidget):
    """Step a :class:`BackwardStepper` from the notebook, its graph beside it."""

    _esm = STATIC / "stepper.js"
    _css = STATIC / "widgets.css"
    state = traitlets.Dict().tag(sync=True)
    graph = traitlets.Dict().tag(sync=True)
    checks = traitlets.Dict().tag(sync=True)
    chain_rule = traitlets.Bool(False).tag(sync=True)
    notice = traitlets.Unicode("").tag(sync=True)
    action = traitlets.Unicode("").tag(sync=True)

    def __init__(self, stepper: BackwardStepper, **kwargs: Any) -> None:
        self.stepper = stepper
        kwargs.setdefault("chain_rule", small_scalar_graph(stepper))
        super().__init__(
            state=stepper.state(),
            graph=build_graph(stepper.loss),
            checks={"nodes": {}, "graph": None},
            **kwargs,
        )

    def _recording(self) -> dict:
        """The pass replayed from its first step (opened at the current position); the graph
        alone when no step can be described."""
        passes = stepper_replay(self.stepper)
        if not passes:
            return recording_payload(["graph"], graph=self.graph)
        return recording_payload(["replay"], replay=passes, position=self.stepper.position)

    @traitlets.observe("action")
    def _run_action(self, change: dict) -> None:
        action = change["new"]
        if not action:
            return
        try:
            name, has_argument, argument = action.partition(":")
            if name not in ACTIONS:
                raise ValueError(f"unknown stepper action {name!r}; expected one of {ACTIONS}")
            if name in MOVES:
                if argument:
                    raise ValueError(f"the {name} action takes no argument, got {argument!r}")
                if name == "reset":  # back to a clean graph: no check marks either
                    self.checks = {"nodes": {}, "graph": None}
                self.state = getattr(self.stepper, name)()
            else:
                getattr(self, f"_{name}")(argument if has_argument else None)
            self.notice = ""
        except Exception as error:  # shown by the front end, raised for the kernel's log
            text = error.args[0] if isinstance(error, KeyError) and error.args else error
            self.notice = f"{type(error).__name__}: {text}"
            raise
        finally:
            self.action = ""

    # ---------------------------------------------------------------------- actions
    def _run_to(self, argument: str | None) -> None:
        self.state = self.stepper.run_to(_required(argument, "run_to", "a node id"))

    def _break_on_nonfinite(self, argument: str | None) -> None:
        value = _required(argument, "break_on_nonfinite", "true or false")
        if value not in ("true", "false"):
            raise ValueError(f"break_on_nonfinite takes true or false, got {value!r}")
        self.stepper.break_on_nonfinite = value == "true"
        self.state = self.stepper.state()

    def _break_at(self, argument: str | None) -> None:
        ids = _required(argument, "break_at", "comma-separated node ids (or nothing)")
        self.stepper.break_at = [i.strip() for i in ids.split(",") if i.strip()]
        self.state = self.stepper.state()

    def _break_on_grad_norm(self, argument: str | None) -> None:
        text = _required(argument, "break_on_grad_norm", "a number or none").strip()
        if text.lower() in ("", "none"):
            self.stepper.break_on_grad_norm = None
        else:
            try:
                bound = float(text)
            except ValueError:
                raise ValueError(
                    f"break_on_grad_norm takes a number or none, got {text!r}"
                ) from None
            self.stepper.break_on_grad_norm = bound
        self.state = self.stepper.state()

    def _check_node(self, argument: str | None) -> None:
        stepper = self.stepper
        if argument:
            node = stepper.node(argument)
        elif stepper.current_step is not None:
            node = stepper.current_step.node
        else:
            raise ValueError("check_node: the stepper has not run a step yet; pass a node id")
        node_id = stepper.ids[node]
        try:
            result = check_node(node, inputs=stepper.forward_inputs.get(node))
        except (ValueError, RuntimeError) as reason:
            result = {"node": node.name(), "ok": None, "verdict": f"not checked: {reason}"}
        results = {**self.checks.get("nodes", {}), node_id: _finite({**result, "id": node_id})}
        self.checks = {**self.checks, "nodes": results}

    def _check_graph(self, argument: str | None) -> None:
        if argument:
            raise ValueError(f"the check_graph action takes no argument, got {argument!r}")
        report = _finite(check_graph(self.stepper))
        results = {r["id"]: r for r in report["nodes"]}
        for skipped in report["skipped"]:
            verdict = f"not checked: {skipped['reason']}"
            results[skipped["id"]] = {**skipped, "ok": None, "verdict": verdict}
        # each node's comparison is sent once, in checks["nodes"]; the report lists verdicts
        report["nodes"] = [_without_inputs(r) for r in report["nodes"]]
        if report["first_failure"] is not None:
            report["first_failure"] = _without_inputs(report["first_failure"])
        self.checks = {"nodes": {**self.checks.get("nodes", {}), **results}, "graph": report}


def small_scalar_graph(stepper: BackwardStepper) -> bool:
    """Whether every gradient of the pass is a scalar and the graph is small (for the
    micrograd-style chain-rule sums on the edges)."""
    nodes = list(stepper.ids)
    if len(nodes) > CHAIN_RULE_MAX_NODES:
        return False
    return all(meta is None or len(meta[0]) == 0 for node in nodes for meta in node.input_meta)


def step_backward(
    loss: Tensor | Callable[..., Tensor],
    inputs: Sequence[Any] | None = None,
    *,
    chain_rule: bool | None = None,
    **kwargs: Any,
) -> StepperWidget:
    """A :class:`StepperWidget` over ``loss``'s backward pass; ``kwargs`` go to
    :class:`BackwardStepper`. With a loss function and its ``inputs``, the forward is run
    under a capture so that the widget can check every node
    (:meth:`BackwardStepper.from_function`). ``chain_rule`` shows chain-rule sums on the
    edges (default: for small scalar graphs)."""
    stepper = _stepper(loss, inputs, kwargs)
    options = {} if chain_rule is None else {"chain_rule": chain_rule}
    return StepperWidget(stepper, **options)


def _stepper(loss: Any, inputs: Sequence[Any] | None, kwargs: dict) -> BackwardStepper:
    if inputs is not None:
        if isinstance(loss, Tensor) or not callable(loss):
            raise TypeError(
                f"step_backward(loss_fn, inputs) needs a loss function, got {type(loss).__name__}"
            )
        return BackwardStepper.from_function(loss, inputs, **kwargs)
    if not isinstance(loss, Tensor):
        raise TypeError(
            f"step_backward expects a loss tensor (or a loss function and inputs=), "
            f"got {type(loss).__name__}"
        )
    return BackwardStepper(loss, **kwargs)


def _required(argument: str | None, action: str, what: str) -> str:
    if argument is None:
        raise ValueError(f"the {action} action needs an argument after ':' ({what})")
    return argument


def _without_inputs(result: dict) -> dict:
    """A check result without its per-input comparison (the values, the difference map)."""
    return {key: value for key, value in result.items() if key != "inputs"}


def _finite(value: Any) -> Any:
    """``value`` with non-finite floats as strings, so that the trait is strict JSON."""
    if isinstance(value, float):
        return finite_or_label(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value
