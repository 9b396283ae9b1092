"""Process-wide switches read on every op; plain module globals so the hot path stays cheap.

- ``grad_enabled``: record graph nodes (``no_grad`` turns it off).
- ``inference_mode``: ``inference_mode`` is on (tensors made now are marked inference tensors).
- ``observers``: active op observers (a Tape, the profiler, anomaly mode); ``observing`` is
  ``bool(observers)``, checked once per op, so observers cost nothing when none is active.
- ``phase``: "forward", or "backward" while the engine runs a gradient rule.
- ``module_path``: names of the nn modules whose forward is running, outermost first.
- ``anomaly``: ``detect_anomaly`` is on.
"""

from __future__ import annotations

from typing import Any

grad_enabled: bool = True
inference_mode: bool = False
observers: list[Any] = []
observing: bool = False
phase: str = "forward"
backward_node: Any = None
module_path: list[str] = []
anomaly: bool = False
anomaly_check_nan: bool = True


def add_observer(observer: Any) -> None:
    global observing
    observers.append(observer)
    observing = True


def remove_observer(observer: Any) -> None:
    global observing
    observers.remove(observer)
    observing = bool(observers)
