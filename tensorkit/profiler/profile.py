"""``profile``: an op observer that records every op, forward and backward, while active.

Inactive, it costs nothing: it is a registered observer only inside its ``with`` block.
"""

from __future__ import annotations

import contextlib
import time
import weakref
from typing import Any

from .. import _state, memory
from .._callsite import user_call_site
from ..tensor import Tensor
from . import memory as op_memory
from .events import TIMING_MODE, OpRecord, RangeRecord, make_record

__all__ = ["profile", "record_function"]

_scopes: list[str] = []  # names of the active record_function ranges, outermost first
_active: list[profile] = []  # profilers inside their with block

OPTIMIZER_PREFIX = "Optimizer."  # record_function("Optimizer.step#SGD.step") as in PyTorch


class record_function(contextlib.ContextDecorator):  # noqa: N801 (PyTorch's name)
    """Label a range of code; profilers record it, and ops inside carry its name in
    ``scopes``. Ops inside a range named ``Optimizer....`` get the phase "optimizer"."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._starts: list[int] = []  # a stack, so one instance can decorate recursive code

    def __enter__(self) -> record_function:
        _scopes.append(self.name)
        self._starts.append(time.perf_counter_ns())
        return self

    def __exit__(self, *exc: object) -> None:
        end_ns = time.perf_counter_ns()
        start_ns = self._starts.pop()
        _scopes.pop()
        for prof in _active:
            prof._ranges.append(RangeRecord(self.name, start_ns, end_ns, len(_scopes)))


class profile:  # noqa: N801 (PyTorch's name)
    """``with profile(record_shapes=True, record_memory=True, with_stack=True) as prof:``.

    Records name, phase, host wall time, device, module path and, for backward ops, the
    index of the forward op whose gradient rule ran them; shapes/dtypes, call sites and
    memory (see ``tensorkit.memory``) on request. Read with ``events()``, ``key_averages()``,
    ``export_chrome_trace()`` and the ``plot_*`` methods.
    """

    timing_mode = TIMING_MODE

    def __init__(
        self, *, record_shapes: bool = False, record_memory: bool = False, with_stack: bool = False
    ) -> None:
        self.record_shapes = record_shapes
        self.record_memory = record_memory
        self.with_stack = with_stack
        self._raw: list[tuple] = []
        self._records: list[OpRecord] = []
        self._ranges: list[RangeRecord] = []
        self._index_of_node: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._freed_seen = 0
        self._device_names: dict[Any, str] = {}
        self._peak = 0
        self._running = False
        self.start_ns = 0
        self.end_ns = 0

    # ------------------------------------------------------------------ recording
    def __enter__(self) -> profile:
        if self._running:
            raise RuntimeError("this profile is already running; use a new one to nest")
        self._running = True
        self._raw.clear()
        self._records.clear()
        self._ranges.clear()
        self._freed_seen = memory.freed_total
        self._peak = memory.memory_allocated()
        self.start_ns = time.perf_counter_ns()
        _active.append(self)
        _state.add_observer(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _state.remove_observer(self)
        _active.remove(self)
        self.end_ns = time.perf_counter_ns()
        self._running = False

    def op_started(self, event: Any) -> None:
        return None

    def op_finished(self, event: Any) -> None:
        raw = self._raw
        index = len(raw)
        phase = event.phase
        if _scopes and any(s.startswith(OPTIMIZER_PREFIX) for s in _scopes):
            phase = "optimizer"
        node = event.backward_node
        forward = None if node is None else self._index_of_node.get(node)
        outputs = event.outputs
        device = outputs[0]._device if outputs and type(outputs[0]) is Tensor else None
        records = event.records  # the Tape keeps this same dict, so these writes reach it
        records["time_ns"] = event.end_ns - event.start_ns
        records["profiler_index"] = index
        extra = None
        if self.record_shapes or self.with_stack or self.record_memory:
            extra = self._extra(event, device)
            if self.record_memory:
                records["alloc_bytes"], records["free_bytes"], records["live_bytes"] = extra[2][:3]
        raw.append(
            (
                event.name,
                phase,
                event.start_ns,
                event.end_ns,
                device,
                event.module_path,
                forward,
                tuple(_scopes) if _scopes else (),
                extra,
            )
        )
        if event.node is not None:
            self._index_of_node[event.node] = index

    def _extra(self, event: Any, device: Any) -> tuple:
        """(input and output tensors' shapes/dtypes, call site, memory) as requested."""
        shapes = None
        if self.record_shapes:
            shapes = (
                [
                    (x._data.shape, x._data.dtype) if isinstance(x, Tensor) else None
                    for x in event.inputs
                ],
                [(x._data.shape, x._data.dtype) for x in event.outputs if isinstance(x, Tensor)],
            )
        call_site = user_call_site() if self.with_stack else None
        measured = None
        if self.record_memory:
            name = self._device_names.get(device)
            if name is None:
                name = self._device_names[device] = "cpu" if device is None else str(device)
            allocated = op_memory.count_outputs(event.inputs, event.outputs, name)
            freed = memory.freed_total
            live = memory.memory_allocated(name)
            measured = (allocated, freed - self._freed_seen, live)
            self._freed_seen = freed
            if live > self._peak:
                self._peak = live
            measured = (*measured, self._peak)
        return shapes, call_site, measured

    @property
    def records(self) -> list[OpRecord]:
        """The ops recorded so far, as ``OpRecord`` objects (built on first read)."""
        built = self._records
        for index in range(len(built), len(self._raw)):
            built.append(make_record(index, self._raw[index]))
        return built

    # -------------------------------------------------------------------- reading
    def events(self) -> list[dict]:
        """One JSON-serializable dict per op, in the order they ran."""
        return [r.to_dict() for r in self.records]

    def ranges(self) -> list[dict]:
        """One dict per ``record_function`` range, in the order they closed."""
        return [r.to_dict() for r in self._ranges]

    def key_averages(self, group_by_input_shape: bool = False) -> Any:
        """Per (name, phase) totals, as rows with a ``.table()``; see ``report``."""
        from .report import key_averages

        return key_averages(self, group_by_input_shape)

    def export_chrome_trace(self, path: str) -> None:
        """Write the Chrome Trace Event JSON (chrome://tracing, Perfetto) to ``path``."""
        from .trace import export_chrome_trace

        export_chrome_trace(self, path)

    def plot_op_times(self, top: int = 15) -> Any:
        """Horizontal bars of total host time per op name, stacked by phase."""
        from .plots import plot_op_times

        return plot_op_times(self, top)

    def plot_module_times(self) -> Any:
        """Horizontal bars of host time per nn module path (backward ops join the module of
        the forward op they differentiate)."""
        from .plots import plot_module_times

        return plot_module_times(self)

    def show(self, **kwargs: Any) -> Any:
        """The profile view widget (needs anywidget); see
        :func:`tensorkit.notebook.profile_widget.show_profile`."""
        from ..notebook.profile_widget import show_profile

        return show_profile(self, **kwargs)

    def plot_memory_timeline(self) -> Any:
        """Counted bytes alive after each op, the start of backward and the peak marked."""
        from .plots import plot_memory_timeline

        return plot_memory_timeline(self)
