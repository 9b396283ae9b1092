"""``profile``: an op observer that records every forward op and each backward node (or,
with ``backward_ops=True``, each op the gradient rules run) while active.

Inactive, it costs nothing: it is a registered observer only inside its ``with`` block.
While active, the per-op work is kept small: a few values appended to flat lists, turned
into ``OpRecord`` objects (and CUDA event pairs into GPU times) only when records are read.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from .. import _notebook_hooks, _state, memory
from .._backend import cpu, cuda_in_use, cupy_module
from .._ranges import close_scope, open_scope, phase_in_scope, report_range
from .._ranges import scopes as _scopes
from ..cuda.memory import allocator_totals, memory_reserved
from ..memory import count_arrays, count_tensors
from ..tensor import Tensor
from . import memory as op_memory
from .events import (
    CORE_FIELDS,
    EXTRA_FIELDS,
    OUTPUTS,
    USER_ANNOTATION,
    OpRecord,
    RangeRecord,
    make_record,
)
from .gpu import GpuTimer, check_mode, timing_text
from .stack import call_site

_history = memory._events  # len() of it: the memory history's position (see memory.settle)

__all__ = ["profile", "record_function"]


_NO_TENSOR = (None, None)


def shape_key(event: Any) -> tuple:
    """The (shape, dtype) of each input (None, None for a non-tensor input or a missing
    gradient), ``OUTPUTS``, then those of the outputs, as one flat tuple (see
    ``events.make_record``): flat, it is built and hashed faster than nested pairs."""
    key: list = []
    if event.op is None:  # a backward node: gradient arrays, None where there is none
        for g in event.inputs:
            key += _NO_TENSOR if g is None else (g.shape, g.dtype)
        key.append(OUTPUTS)
        for g in event.outputs:
            if g is not None:
                key += (g.shape, g.dtype)
    else:
        for x in event.inputs:
            if isinstance(x, Tensor):
                data = x._data
                key += (data.shape, data.dtype)
            else:
                key += _NO_TENSOR
        key.append(OUTPUTS)
        for y in event.outputs:
            if type(y) is Tensor:
                data = y._data
                key += (data.shape, data.dtype)
    return tuple(key)


class record_function(contextlib.ContextDecorator):  # noqa: N801 (PyTorch's name)
    """Label a range of code; profilers record it, and ops inside carry its name in
    ``scopes``. Ops inside a range named ``Optimizer....`` get the phase "optimizer"."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._starts: list[int] = []  # a stack, so one instance can decorate recursive code

    def __enter__(self) -> record_function:
        open_scope(self.name, "range")
        self._starts.append(time.perf_counter_ns())
        return self

    def __exit__(self, *exc: object) -> None:
        end_ns = time.perf_counter_ns()
        start_ns = self._starts.pop()
        close_scope()
        report_range(self.name, start_ns, end_ns, len(_scopes), USER_ANNOTATION)


class profile:  # noqa: N801 (PyTorch's name)
    """``with profile(record_shapes=True, record_memory=True, with_stack=True) as prof:``.

    Records name, phase, host wall time, device, module path and, for backward records, the
    index of the forward op they differentiate. Backward is recorded as PyTorch's profiler
    does, one record per autograd node ("MulBackward0", "AccumulateGrad": the node's whole
    work), on the engine's fast array path; ``backward_ops=True`` records every op the
    gradient rules run instead (slower: the rules then run through the observed op path), as
    does any profile while an op-level observer (a Tape, anomaly mode) is active or under
    ``create_graph=True``. Shapes/dtypes, call sites and
    memory (see ``tensorkit.memory``) on request; for ops on a CUDA device, GPU time from
    CUDA events, taken as ``cuda_timing`` says ("events" or "synchronized", see
    ``profiler.gpu``). Read with ``events()``, ``key_averages()``, ``export_chrome_trace()``
    and the ``plot_*`` methods; each states the timing mode (``timing_mode``).
    """

    def __init__(
        self,
        *,
        record_shapes: bool = False,
        record_memory: bool = False,
        with_stack: bool = False,
        cuda_timing: str = "events",
        backward_ops: bool = False,
    ) -> None:
        if not isinstance(backward_ops, bool):
            raise TypeError(
                "profile(): backward_ops must be a bool (True: record each op the gradient "
                f"rules run; False: one record per autograd node), got {backward_ops!r}"
            )
        self.backward_ops = backward_ops
        # What the engine reports to this observer in backward (see tensorkit._state).
        self.backward_detail = "ops" if backward_ops else "nodes"
        self.record_shapes = record_shapes
        self.record_memory = record_memory
        self.with_stack = with_stack
        self.cuda_timing = check_mode(cuda_timing)
        self._core: list = []  # CORE_FIELDS values per op (see events.make_record)
        self._extra: list | None = [] if record_shapes or record_memory or with_stack else None
        self._tuples: dict[tuple, tuple] = {}  # shapes, call sites, scopes: each kept once
        self._records: list[OpRecord] = []
        self._ranges: list[RangeRecord] = []
        self._index_of_node: dict[int, int] = {}  # a forward node's seq -> its op's index
        # The records dicts of ops that another observer (a Tape) saw too: GPU times are
        # written into them when the profile ends.
        self._shared: dict[int, dict] = {}
        self._reserved: dict[int, int] = {}  # op index -> CUDA pool bytes (memory recording)
        # CUDA memory from the pool's hook: its (allocated, freed) totals when the running op
        # started, and each device's freed total at its last record.
        self._op_start_totals: tuple[int, int] | None = None
        self._freed_mark: dict[str, int] = {}
        self._gpu: GpuTimer | None = None
        # Memory: [history position, CPU live bytes, peak] after the last resolved op, and
        # the ops resolved (see profiler.memory.resolve).
        self._memory_state: list = [0, 0, {}]
        self._resolved = 0
        self._running = False
        self.start_ns = 0
        self.end_ns = 0

    @property
    def timing_mode(self) -> str:
        """How times were taken: host wall time, and the CUDA timing mode."""
        return timing_text(self.cuda_timing)

    # ------------------------------------------------------------------ recording
    def __enter__(self) -> profile:
        if self._running:
            raise RuntimeError("this profile is already running; use a new one to nest")
        self._running = True
        self._core.clear()
        if self._extra is not None:
            self._extra.clear()
        self._tuples.clear()
        self._records.clear()
        self._ranges.clear()
        self._index_of_node.clear()
        self._shared.clear()
        self._reserved.clear()
        self._op_start_totals = None
        self._freed_mark.clear()
        self._gpu = None
        if cuda_in_use():
            self._time_gpu()
        self._resolved = 0
        if self.record_memory:
            position, live = memory.keep_history(True)
            self._memory_state[:] = [position, live, {"cpu": live}]
        self.start_ns = time.perf_counter_ns()
        _state.add_observer(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _state.remove_observer(self)
        self.end_ns = time.perf_counter_ns()
        self._running = False
        if self.record_memory:
            self._resolve_memory()
            memory.keep_history(False)  # and the history goes, unless another profile reads it
        if self._gpu is not None and self._shared:
            self._share_gpu_times()

    def _share_gpu_times(self) -> None:
        """Give a Tape recorded inside this profile its ops' GPU times (one synchronize per
        device, now that the profiled code has finished) and the timing mode."""
        times = self._gpu.resolve()  # type: ignore[union-attr]
        mode = self.timing_mode
        for index, records in self._shared.items():
            timed = times.get(index)
            if timed is not None:
                records["gpu_time_ns"] = timed[1]
                records["timing_mode"] = mode

    def _time_gpu(self) -> None:
        """From now on, record CUDA events around ops on a CUDA device."""
        self._gpu = GpuTimer(self.cuda_timing, cupy_module())

    def op_started(self, event: Any) -> None:
        if self._gpu is not None:  # a CUDA device is in use: see _time_gpu
            self._start_gpu_timing(event)

    def _start_gpu_timing(self, event: Any) -> None:
        dev = None
        if event.op is None:  # a backward node (autograd.engine.NodeEvent)
            dev = event.device
        else:
            for x in event.inputs:
                if isinstance(x, Tensor):
                    dev = x._device
                    break
            if getattr(event.op, "moves_device", False):
                dev = event.attrs["device"] if dev is None or dev.type != "cuda" else dev
        if dev is not None and dev.type == "cuda":
            if self.record_memory:
                self._op_start_totals = allocator_totals(dev)
            self._gpu.start()  # type: ignore[union-attr]
        else:  # a CPU op (an op that raised after its start event must not time this one)
            self._gpu.running = None  # type: ignore[union-attr]

    def op_finished(self, event: Any) -> None:
        # Per op, only strs, ints and None are stored, appended to flat lists; tuples that
        # repeat (shapes, call sites, scopes) are kept once each. So a long profile leaves
        # the garbage collector nothing new to track, and collections stay cheap.
        core = self._core
        index = len(core) // CORE_FIELDS
        phase = event.phase
        scopes = ()
        if _scopes:
            scopes = self._interned(tuple(_scopes))
            phase = phase_in_scope(phase)
        node = event.backward_node
        forward = None if node is None else self._index_of_node.get(node.seq)
        if event.op is None:  # a backward node: gradient arrays on event.device
            dev = event.device
        else:
            outputs = event.outputs
            dev = outputs[0]._device if outputs and type(outputs[0]) is Tensor else cpu
        end_ns = event.end_ns
        gpu = self._gpu
        if gpu is None:
            if dev is not cpu:
                self._time_gpu()  # a CUDA device was first used inside the profile
        elif gpu.running is not None:
            gpu.finish(index)
            if gpu.mode == "synchronized":
                end_ns = time.perf_counter_ns()  # the host time covers the GPU work
        records = event.records  # a Tape observing too keeps this dict: the writes reach it
        if len(_state.observers) > 1:
            records["time_ns"] = end_ns - event.start_ns
            records["profiler_index"] = index
            if phase != event.phase:
                records["phase"] = phase  # "optimizer", from a record_function range
            if gpu is not None:
                self._shared[index] = records
        core.extend(
            (
                event.name,
                phase,
                event.start_ns,
                end_ns,
                dev._name,
                event.module_path,
                forward,
                scopes,
            )
        )
        if self._extra is not None:
            self._record_extra(event, dev._name, records, forward)
        if event.node is not None:
            self._index_of_node[event.node.seq] = index

    def _interned(self, value: tuple) -> tuple:
        """The first tuple equal to ``value`` that this profile stored."""
        kept = self._tuples.get(value)
        if kept is None:
            kept = self._tuples[value] = value
        return kept

    def add_range(self, name: str, start_ns: int, end_ns: int, depth: int, phase: str) -> None:
        """Keep a closed range: a ``record_function`` range (phase "user_annotation") or a
        composite function's (the phase it ran in; see ``tensorkit._ranges``)."""
        self._ranges.append(RangeRecord(name, start_ns, end_ns, depth, phase))

    def _record_extra(self, event: Any, device: str, records: dict, forward: int | None) -> None:
        """Shapes/dtypes, call site and memory, as requested (None where not). A backward
        node's call site is that of the forward op it differentiates (``forward``), if
        recorded."""
        shapes = site = None
        if self.record_shapes:
            shapes = self._interned(shape_key(event))
        if self.with_stack:
            if event.op is None:  # a backward node (autograd.engine.NodeEvent)
                if forward is not None:
                    site = self._extra[forward * EXTRA_FIELDS + 1]
            else:
                site = call_site(3)  # from the caller of op_finished
                if site is not None:
                    site = self._interned(site)
        if not self.record_memory:
            self._extra.extend((shapes, site, None, None, None, None))
            return
        self._record_memory(event, device, records, forward, shapes, site)

    def _record_memory(
        self,
        event: Any,
        device: str,
        records: dict,
        forward: int | None,
        shapes: tuple | None = None,
        site: tuple | None = None,
    ) -> None:
        """The extra fields with memory. Freed, live (on the CPU) and peak bytes are derived
        from memory's history when records are read (``_resolve_memory``): here, only the
        history's position."""
        if device != "cpu":
            self._record_cuda_memory(device, shapes, site)
        else:
            if event.op is None:  # a backward node: gradient arrays
                allocated = count_arrays(event.inputs, event.outputs, device)
            else:
                allocated = count_tensors(event.inputs, event.outputs, device)
            self._extra.extend((shapes, site, allocated, len(_history), None, None))
        if len(_state.observers) > 1:
            self._resolve_memory()
            at = len(self._extra) - 3
            records["alloc_bytes"] = self._extra[at - 1]
            records["free_bytes"] = self._extra[at]
            records["live_bytes"] = live = self._extra[at + 1]
            records["reserved_bytes"] = (
                live if device == "cpu" else self._reserved[len(self._core) // CORE_FIELDS - 1]
            )

    def _record_cuda_memory(self, device: str, shapes: tuple | None, site: tuple | None) -> None:
        """The memory fields of an op on a CUDA device, from the caching allocator (CuPy's
        pool, through ``tk.cuda``'s hook): bytes it handed out during the op (temporaries
        included; None for an op that started before CUDA timing did), bytes returned to
        it since the device's previous record, and its live and reserved bytes after."""
        allocated_total, freed_total = allocator_totals(device)
        start = self._op_start_totals
        self._op_start_totals = None
        allocated = None if start is None else allocated_total - start[0]
        mark = self._freed_mark.get(device, freed_total if start is None else start[1])
        self._freed_mark[device] = freed_total
        live = memory.memory_allocated(device)
        self._extra.extend((shapes, site, allocated, freed_total - mark, live, None))
        self._reserved[len(self._core) // CORE_FIELDS - 1] = memory_reserved(device)

    def _resolve_memory(self) -> None:
        """Derive the memory fields of the ops recorded since the last call."""
        count = len(self._core) // CORE_FIELDS
        if self._resolved < count:
            op_memory.resolve(self._core, self._extra, self._resolved, count, self._memory_state)
            self._resolved = count

    @property
    def records(self) -> list[OpRecord]:
        """The ops recorded so far, as ``OpRecord`` objects (built on first read; CUDA event
        times are read then, after one synchronize per device)."""
        built = self._records
        count = len(self._core) // CORE_FIELDS
        if len(built) == count:
            return built
        if self.record_memory:
            self._resolve_memory()
        gpu = {} if self._gpu is None else self._gpu.resolve()
        for index in range(len(built), count):
            built.append(
                make_record(
                    index, self._core, self._extra, gpu.get(index), self._reserved.get(index)
                )
            )
        return built

    # -------------------------------------------------------------------- reading
    def events(self) -> list[dict]:
        """One JSON-serializable dict per op, in the order they ran; each names the profile's
        ``cuda_timing`` mode."""
        mode = self.cuda_timing
        return [{**r.to_dict(), "cuda_timing": mode} for r in self.records]

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
        return _notebook_hooks.lookup("profile.show")(self, **kwargs)

    def plot_memory_timeline(self) -> Any:
        """Bytes alive after each op per device (and a CUDA allocator's reserved bytes), the
        start of backward and each device's peak marked."""
        from .plots import plot_memory_timeline

        return plot_memory_timeline(self)
