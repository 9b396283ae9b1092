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
    site (and whether a compiled call guards on its value or runs eagerly), the guards a
    compiled entry checks, the op count before and after the passes, and what the passes
    rewrote (fused kernels, convolutions run channels last, by module)."""

    graph: Graph
    break_reasons: list[GraphBreak] = field(default_factory=list)
    guards: list[str] = field(default_factory=list)
    ops_captured: int = 0
    ops_optimized: int = 0
    rewrites: list[str] = field(default_factory=list)

    @property
    def graph_break_count(self) -> int:
        return len(self.break_reasons)

    @property
    def eager(self) -> bool:
        """Whether a break makes tk.compile run the call eagerly (one it cannot guard)."""
        return not all(b.guarded for b in self.break_reasons)

    @property
    def graph_count(self) -> int:
        """The regions between graph breaks (breaks + 1, as ``torch._dynamo.explain``
        counts them) when every break is guarded; 0 when a break makes the call eager."""
        return 0 if self.eager else self.graph_break_count + 1

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
            lines += [f"  {n}. {b}: {verdict(b)}" for n, b in enumerate(self.break_reasons, 1)]
        lines.append("Guards:")
        lines += [f"  {g}" for g in self.guards]
        if self.rewrites:
            lines.append("Rewrites:")
            lines += [f"  {r}" for r in self.rewrites]
        return "\n".join(lines)


def verdict(graph_break: GraphBreak) -> str:
    """What tk.compile does at a break, in words."""
    if graph_break.guarded:
        return (
            f"guarded: the compiled call checks it reads {graph_break.value!r} again, and "
            "another value takes (or compiles) another path"
        )
    return "the call runs eagerly"


def explain(fn: Any, *args: Any, **kwargs: Any) -> ExplainOutput:
    """Run ``fn(*args, **kwargs)`` once under a capture (it runs eagerly: its effects
    happen) and explain it. ``fn`` may be a function, a module or a ``tk.compile`` result."""
    target = fn.fn if isinstance(fn, CompiledFunction) else fn
    module = target if _is_module(target) else None
    recorded = capture(target, args, kwargs, module)
    graph = recorded.graph
    captured_ops = len(graph.nodes) + len(graph.backward)
    breaks = list(graph.breaks)
    optimized = optimize(graph) if all(b.guarded for b in breaks) else graph
    return ExplainOutput(
        graph=optimized,
        break_reasons=breaks,
        guards=_guard_lines(optimized, module),
        ops_captured=captured_ops,
        ops_optimized=len(optimized.nodes) + len(optimized.backward),
        rewrites=rewrite_lines(optimized),
    )


def rewrite_lines(graph: Graph) -> list[str]:
    """What the passes changed that a reader comparing with eager should know: how many
    fused kernels, and which convolutions run channels last (passes/layout.py)."""
    nodes = [*graph.nodes, *graph.backward]
    lines = []
    fused = sum(1 for n in nodes if n.kind == "fused")
    if fused:
        lines.append(f"fused kernels: {fused}")
    convolutions = [
        n.module or "a convolution"
        for n in nodes
        if n.kind == "op" and n.op == "im2col" and n.attrs.get("channels_last")
    ]
    if convolutions:
        lines.append(
            f"convolutions run channels last: {len(convolutions)} ({', '.join(convolutions)})"
        )
    return lines


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
    return lines + value_guard_lines(graph)


def value_guard_lines(graph: Graph) -> list[str]:
    """One line per guard node: the value read, where (and in which module's forward, when
    one read it), and the value this graph holds for it."""
    lines = []
    for node in graph.nodes:
        if node.kind == "guard":
            inside = f" in {node.module}" if node.module else ""
            lines.append(
                f"Tensor.{node.op}{inside} at {node.site or 'an unknown site'} == "
                f"{node.attrs['value']!r}"
            )
    return lines
