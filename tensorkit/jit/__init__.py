"""tk.jit: capture a call into a graph, optimize it, and replay it without per-op dispatch.

``trace(fn, example_inputs)`` records one call through the op observer channel
(``capture.py``) into the IR (``ir.py``); ``passes/`` rewrite it; ``plan.py`` lowers it to a
generated function over arrays; ``runtime.py`` runs it and links it into autograd.
"""

from __future__ import annotations

from .capture import GraphBreak, TracerWarning, TracingError
from .compiler import CompiledFunction, compile  # noqa: A004
from .config import config
from .explain import ExplainOutput, explain
from .guards import GuardError
from .ir import Graph
from .serialize import LoadError, load, save
from .trace import TracedFunction, trace

__all__ = [
    "CompiledFunction",
    "ExplainOutput",
    "Graph",
    "GraphBreak",
    "GuardError",
    "LoadError",
    "TracedFunction",
    "TracerWarning",
    "TracingError",
    "compile",
    "config",
    "explain",
    "load",
    "save",
    "trace",
]
