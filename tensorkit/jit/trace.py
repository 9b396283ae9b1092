"""``tk.jit.trace``: one call recorded, then replayed on inputs of the same kind."""

from __future__ import annotations

import warnings
from typing import Any

from .. import _notebook_hooks
from ..tensor import Tensor
from .capture import TracerWarning, capture, flatten
from .guards import GuardError, GuardFailure, failure_message
from .ir import INPUT, Graph
from .passes import optimize
from .runtime import CompiledGraph

__all__ = ["TracedFunction", "trace"]


class TracedFunction:
    """A traced function or module: call it like the original.

    ``graph`` is the optimized graph, ``captured`` the graph as recorded; ``code`` the
    generated forward plan's source. A call checks that its tensors have the traced shapes,
    dtypes and devices (a replay of a graph recorded for other sizes would be wrong).
    ``passes=False`` runs ``captured`` as it is (a graph ``tk.jit.load`` read, optimized
    before it was saved)."""

    def __init__(
        self, fn: Any, captured: Graph, tensors: list, input_spec: Any, *, passes: bool = True
    ) -> None:
        self.fn = fn
        self.captured = captured
        self.graph = optimize(captured) if passes else captured
        self.compiled = CompiledGraph(self.graph, _name_of(fn))
        self._tensors = tensors
        self._input_spec = input_spec
        self._inputs = [
            (i, p.value) for i, p in enumerate(self.graph.placeholders) if p.kind == INPUT
        ]

    @property
    def code(self) -> str:
        return self.compiled.forward_plan.source

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        leaves, spec = flatten((list(args), kwargs))
        if spec != self._input_spec:
            raise TypeError(
                f"{_name_of(self.fn)} was traced with arguments of structure "
                f"{self._input_spec}, got {spec}"
            )
        tensors = list(self._tensors)
        for index, value in self._inputs:
            position = int(self.graph.placeholders[index].name.split()[-1])
            given = leaves[position]
            _check_input(self.fn, position, given, value)
            tensors[index] = given
        try:
            return self.compiled.run(tensors)
        except GuardFailure as failure:
            raise GuardError(failure_message(failure, _name_of(self.fn))) from None

    def show(self) -> Any:
        """The graph widget of this traced graph (needs tensorkit.notebook and anywidget)."""
        return _notebook_hooks.lookup("jit.show")(self)

    def __repr__(self) -> str:
        return f"<tk.jit.TracedFunction of {_name_of(self.fn)}: {len(self.graph.nodes)} nodes>"


def trace(
    fn_or_module: Any, example_inputs: Any, *, example_kwarg_inputs: dict | None = None
) -> TracedFunction:
    """Record one call of ``fn_or_module(*example_inputs)`` into a graph (see
    :mod:`tensorkit.jit`), as ``torch.jit.trace`` does. Reading a tensor's value into Python
    inside the call warns with a ``TracerWarning`` naming the call site: the trace follows
    the branch that value took, and a replay that reads another value there raises
    :class:`~tensorkit.jit.guards.GuardError` naming the site and both values (a read no
    guard can repeat, such as ``numpy()``, stays a constant)."""
    args = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    kwargs = example_kwarg_inputs or {}
    module = fn_or_module if _is_module(fn_or_module) else None
    recorded = capture(fn_or_module, args, kwargs, module, warn=True)
    for graph_break in recorded.graph.breaks:
        if graph_break.kind != "value_read":  # those warned as they happened
            warnings.warn(f"tk.jit.trace: {graph_break}", TracerWarning, stacklevel=2)
    return TracedFunction(fn_or_module, recorded.graph, recorded.tensors, recorded.input_spec)


def _check_input(fn: Any, position: int, given: Any, value: Any) -> None:
    if not isinstance(given, Tensor):
        raise TypeError(
            f"{_name_of(fn)}: argument {position} was a Tensor when traced, got "
            f"{type(given).__name__}"
        )
    data = given._data
    if (
        tuple(data.shape) != value.shape
        or data.dtype.name != value.dtype
        or str(given._device) != value.device
    ):
        raise ValueError(
            f"{_name_of(fn)} was traced for argument {position} as {value.dtype}"
            f"{list(value.shape)} on {value.device}, got {data.dtype.name}{list(data.shape)} "
            f"on {given._device}; trace it again for these inputs (or use tk.compile, which "
            "traces once per kind of input)"
        )


def _is_module(obj: Any) -> bool:
    return callable(getattr(obj, "named_parameters", None)) and hasattr(obj, "_modules")


def _name_of(fn: Any) -> str:
    return getattr(fn, "__qualname__", None) or type(fn).__name__
