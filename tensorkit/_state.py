"""Process-wide switches read on every op; plain module globals so the hot path stays cheap.

- ``grad_enabled``: record graph nodes (``no_grad`` turns it off).
- ``inference_mode``: ``inference_mode`` is on (tensors made now are marked inference tensors).
- ``inference_tensors_made``: an inference tensor has ever been made; until then the checks
  that refuse to save or change one in place cost one flag read.
- ``observers``: a tuple of the active op observers (a Tape, the profiler, anomaly mode),
  replaced, never changed in place, so an op notifies the observers it started with;
  ``observing`` is ``bool(observers)``, checked once per op, so observers cost nothing when
  none is active.
- ``node_observers``: a tuple of the observers whose ``backward_detail`` is "nodes": in a
  first-order backward they get ``op_started``/``op_finished`` once per autograd node (an
  ``autograd.engine.NodeEvent``), not for every op inside the rules.
  ``ops_in_backward``: some active observer lacks that attribute or asks for "ops" (a Tape,
  the CUDA memory history recorder), so backward runs every rule through the observed op
  path and all observers see its ops.
- ``phase``: "forward", or "backward" while the engine runs a gradient rule.
- ``module_path``: names of the nn modules whose forward is running, outermost first.
- ``anomaly``: ``detect_anomaly`` is on.
- ``tracer``: the ``tk.jit`` capture running (a ``jit.capture.Tracer``), or None: value reads,
  in-place writes and random draws tell it what an op observer cannot see.
"""

from __future__ import annotations

from typing import Any

grad_enabled: bool = True
inference_mode: bool = False
inference_tensors_made: bool = False
observers: tuple[Any, ...] = ()
observing: bool = False
node_observers: tuple[Any, ...] = ()
ops_in_backward: bool = False
phase: str = "forward"
backward_node: Any = None
module_path: list[str] = []
anomaly: bool = False
anomaly_check_nan: bool = True
tracer: Any = None


def add_observer(observer: Any) -> None:
    global observers, observing
    observers = (*observers, observer)
    observing = True
    _sort_backward_detail()


def remove_observer(observer: Any) -> None:
    global observers, observing
    if observer not in observers:
        raise ValueError(f"{observer!r} is not an active observer")
    index = observers.index(observer)
    observers = observers[:index] + observers[index + 1 :]
    observing = bool(observers)
    _sort_backward_detail()


def _sort_backward_detail() -> None:
    """Recompute ``node_observers`` and ``ops_in_backward`` from ``observers``."""
    global node_observers, ops_in_backward
    node_observers = tuple(o for o in observers if getattr(o, "backward_detail", "ops") == "nodes")
    ops_in_backward = len(node_observers) < len(observers)
