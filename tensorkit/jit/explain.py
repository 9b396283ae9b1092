"""``tk.jit.explain``: what ``tk.compile`` makes of one call, and why (compare
``torch._dynamo.explain``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import _notebook_hooks
from .capture import GraphBreak, capture
from .compiler import CompiledFunction
from .ir import INPUT, Graph
from .passes import optimize
from .trace import _is_module

__all__ = ["ExplainOutput", "explain"]


@dataclass
class ExplainOutput:
    """One call explained: the captured graph, each graph break with its reason and call
    site, the guards a compiled entry checks, and the op count before and after the passes."""

    graph: Graph
    break_reasons: list[GraphBreak] = field(default_factory=list)
    guards: list[str] = field(default_factory=list)
    ops_captured: int = 0
    ops_optimized: int = 0

    @property
    def graph_break_count(self) -> int:
        return len(self.break_reasons)

    @property
    def graph_count(self) -> int:
        """Graphs a compiled call replays: one, or none when a break makes it eager."""
        return 0 if self.break_reasons else 1

    def show(self) -> Any:
        """The graph widget of the explained graph, its breaks and guards beside it."""
        return _notebook_hooks.lookup("jit.show")(self)

    def __str__(self) -> str:
        lines = [
            f"Graph count: {self.graph_count}",
            f"Graph break count: {self.graph_break_count}",
            f"Ops captured: {self.ops_captured} (after the passes: {self.ops_optimized})",
        ]
        if self.break_reasons:
            lines.append("Break reasons:")
            lines += [f"  {n}. {b}" for n, b in enumerate(self.break_reasons, 1)]
        lines.append("Guards:")
        lines += [f"  {g}" for g in self.guards]
        return "\n".join(lines)


def explain(fn: Any, *args: Any, **kwargs: Any) -> ExplainOutput:
    """Run ``fn(*args, **kwargs)`` once under a capture (it runs eagerly: its effects
    happen) and explain it. ``fn`` may be a function, a module or a ``tk.compile`` result."""
    target = fn.fn if isinstance(fn, CompiledFunction) else fn
    module = target if _is_module(target) else None
    recorded = capture(target, args, kwargs, module)
    graph = recorded.graph
    captured_ops = len(graph.nodes) + len(graph.backward)
    breaks = list(graph.breaks)
    optimized = optimize(graph) if not breaks else graph
    return ExplainOutput(
        graph=optimized,
        break_reasons=breaks,
        guards=_guard_lines(optimized, module),
        ops_captured=captured_ops,
        ops_optimized=len(optimized.nodes) + len(optimized.backward),
    )


def _guard_lines(graph: Graph, module: Any) -> list[str]:
    lines = ["grad mode is as now"]
    for placeholder in graph.placeholders:
        if placeholder.kind == INPUT:
            v = placeholder.value
            lines.append(
                f"{placeholder.name}: {v.dtype}{list(v.shape)} on {v.device}, "
                f"requires_grad={v.requires_grad}"
            )
    if module is not None:
        lines.append(f"{type(module).__name__}'s training flags and parameter identities")
    return lines
