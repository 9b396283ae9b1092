"""TEST-ONLY: ``StandInCupy``, a stand-in for the few CuPy calls tensorkit makes, for tests
that must run without a GPU. Nothing here touches a GPU or is used by tensorkit itself.

It covers the runtime (devices, synchronize, properties), ``Stream``, ``Event``, the default
memory pool with ``MemoryHook`` callbacks and, with ``numpy_backed=True``, the array module
itself: every other attribute is NumPy's, so a tensor on ``device("cuda")`` holds NumPy arrays
and tensorkit's device-generic code runs unchanged. That checks tensorkit's own logic (which
device an op runs on, when events are recorded, when it synchronizes), never CuPy's or the
GPU's behaviour: the tests marked ``cuda`` do that on a GPU (scripts/gpu_check.sh).

Events read a fake GPU clock (``StandInCupy.gpu_clock_ms``, by default the host clock in ms)
when recorded; an event is complete only after a synchronize that covers it, and
``get_elapsed_time`` of an incomplete event raises, as CUDA's ``cudaErrorNotReady`` does.
``sync_calls`` counts every synchronize (device, stream or event).

Use :func:`install`, which also keeps the "cuda" devices made during a test from outliving it.
"""

from __future__ import annotations

import collections
import sys
import time
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest

import tensorkit as tk


class StandInRuntime:
    """``cupy.cuda.runtime``: devices, the current one, synchronize, properties."""

    def __init__(self, module: StandInCupy, count: int) -> None:
        self.module = module
        self.count = count
        self.current = 0
        self.synchronized: list[int] = []

    def getDeviceCount(self) -> int:
        return self.count

    def getDevice(self) -> int:
        return self.current

    def setDevice(self, index: int) -> None:
        if not 0 <= index < self.count:
            raise ValueError(f"invalid device ordinal {index}")
        self.current = index

    def deviceSynchronize(self) -> None:
        self.synchronized.append(self.current)
        self.module.complete(lambda event: event.device == self.current)

    def getDeviceProperties(self, index: int) -> dict[str, Any]:
        return {
            "name": f"Stand-in GPU {index}".encode(),
            "totalGlobalMem": 80 << 30,
            "major": 9,
            "minor": 0,
            "multiProcessorCount": 132,
        }


class StandInEvent:
    """``cupy.cuda.Event``: ``record`` stamps the module's fake GPU clock (ms)."""

    module: StandInCupy

    def __init__(self, block: bool = False, disable_timing: bool = False) -> None:
        self.disable_timing = disable_timing
        self.stamp: float | None = None
        self.stream: StandInStream | None = None
        self.device = type(self).module.cuda.runtime.current
        self.complete = False
        self.synchronized = 0

    def record(self, stream: StandInStream | None = None) -> None:
        module = type(self).module
        self.stamp = module.gpu_clock_ms()
        self.stream = module.cuda.get_current_stream() if stream is None else stream
        self.complete = False
        module.recorded.append(self)

    def synchronize(self) -> None:
        self.synchronized += 1
        type(self).module.sync_calls += 1
        self.complete = True

    @property
    def done(self) -> bool:
        return self.complete


class StandInStream:
    """``cupy.cuda.Stream``; ``use()`` makes it the module's current stream."""

    module: StandInCupy
    null: StandInStream

    def __init__(self, null: bool = False, non_blocking: bool = False, priority: Any = None):
        self.ptr = 0 if null else id(self)
        self.device = type(self).module.cuda.runtime.current
        self.waited: list[StandInEvent] = []
        self.synchronized = 0

    def use(self) -> StandInStream:  # current on the current device, as in CuPy
        module = type(self).module
        module.streams[module.cuda.runtime.current] = self
        return self

    def synchronize(self) -> None:
        self.synchronized += 1
        type(self).module.complete(lambda event: event.stream is self)

    @property
    def done(self) -> bool:
        return True

    def wait_event(self, event: StandInEvent) -> None:
        self.waited.append(event)

    def record(self, event: StandInEvent | None = None) -> StandInEvent:
        event = type(self).module.cuda.Event() if event is None else event
        event.record(self)
        return event


class StandInMemoryHook:
    """``cupy.cuda.MemoryHook``: registered per name while entered; callbacks do nothing."""

    name = "MemoryHook"
    registry: collections.OrderedDict

    def __enter__(self) -> StandInMemoryHook:
        if self.name in self.registry:
            raise KeyError(f"memory hook {self.name} already exists")
        self.registry[self.name] = self
        return self

    def __exit__(self, *exc: object) -> None:
        del self.registry[self.name]

    def alloc_preprocess(self, **kwargs: Any) -> None: ...
    def alloc_postprocess(self, **kwargs: Any) -> None: ...
    def malloc_preprocess(self, **kwargs: Any) -> None: ...
    def malloc_postprocess(self, **kwargs: Any) -> None: ...
    def free_preprocess(self, **kwargs: Any) -> None: ...
    def free_postprocess(self, **kwargs: Any) -> None: ...


class StandInPool:
    """``cupy.get_default_memory_pool()``: 512-byte rounding, a free-block cache per device,
    the hook calls in CuPy's order, and an optional out-of-memory on the next device alloc."""

    def __init__(self, module: StandInCupy) -> None:
        self.module = module
        self.used: dict[int, dict[int, int]] = collections.defaultdict(dict)  # dev: ptr->size
        self.cached: dict[int, list[int]] = collections.defaultdict(list)  # dev: sizes
        self.next_ptr = 0x1000
        self.fail_next = False

    def _hooks(self, name: str, **kwargs: Any) -> None:
        for hook in list(self.module.cuda.memory_hook.registry.values()):
            getattr(hook, name)(**kwargs)

    def malloc(self, size: int) -> int:
        dev = self.module.cuda.runtime.current
        rounded = -(-size // 512) * 512
        self._hooks("malloc_preprocess", device_id=dev, size=size, mem_size=rounded)
        if rounded in self.cached[dev]:
            self.cached[dev].remove(rounded)
        else:
            for _ in range(2):  # CuPy retries once after freeing its cache
                self._hooks("alloc_preprocess", device_id=dev, mem_size=rounded)
                ptr = 0 if self.fail_next else self.next_ptr
                self._hooks("alloc_postprocess", device_id=dev, mem_size=rounded, mem_ptr=ptr)
                if ptr:
                    break
                self.cached[dev].clear()
            if not ptr:
                self.fail_next = False
                self._hooks(
                    "malloc_postprocess", device_id=dev, size=size, mem_size=rounded, mem_ptr=0
                )
                raise MemoryError(f"Out of memory allocating {size} bytes")
        ptr = self.next_ptr
        self.next_ptr += rounded
        self.used[dev][ptr] = rounded
        self._hooks("malloc_postprocess", device_id=dev, size=size, mem_size=rounded, mem_ptr=ptr)
        return ptr

    def free(self, ptr: int) -> None:
        dev = self.module.cuda.runtime.current
        size = self.used[dev][ptr]
        self._hooks("free_preprocess", device_id=dev, mem_size=size, mem_ptr=ptr)
        del self.used[dev][ptr]
        self.cached[dev].append(size)
        self._hooks("free_postprocess", device_id=dev, mem_size=size, mem_ptr=ptr)

    def used_bytes(self) -> int:
        return sum(self.used[self.module.cuda.runtime.current].values())

    def total_bytes(self) -> int:
        return self.used_bytes() + sum(self.cached[self.module.cuda.runtime.current])

    def free_all_blocks(self) -> None:
        self.cached[self.module.cuda.runtime.current].clear()


def _looks_like_cupy(cls: type) -> type:
    """Rebind ``cls``'s methods to globals named ``cupy...``, so their frames read as CuPy's
    (real CuPy's pool is compiled and shows no frames; tk.cuda skips cupy frames for call
    sites)."""
    namespace = {**globals(), "__name__": "cupy._stand_in"}
    for name, value in list(vars(cls).items()):
        if isinstance(value, types.FunctionType):
            setattr(cls, name, types.FunctionType(value.__code__, namespace, name))
    return cls


_looks_like_cupy(StandInPool)


class StandInCupy(types.ModuleType):
    """The ``cupy`` module as tensorkit sees it (TEST-ONLY; nothing here touches a GPU).

    With ``numpy_backed=True`` it is also the array module of the "cuda" devices: any
    attribute it does not define is NumPy's, and ``ndarray`` is ``numpy.ndarray``.
    """

    def __init__(self, count: int = 1, numpy_backed: bool = False) -> None:
        super().__init__("cupy")
        self.numpy_backed = numpy_backed
        runtime = StandInRuntime(self, count)
        registry: collections.OrderedDict = collections.OrderedDict()
        hook_type = type("MemoryHook", (StandInMemoryHook,), {"registry": registry})
        stream_type = type("Stream", (StandInStream,), {"module": self})
        self.cuda = types.SimpleNamespace(
            runtime=runtime,
            Device=self._device_context,
            Stream=stream_type,
            Event=type("Event", (StandInEvent,), {"module": self}),
            MemoryHook=hook_type,
            memory_hook=types.SimpleNamespace(registry=registry, get_memory_hooks=lambda: registry),
            get_current_stream=lambda: self.streams.get(runtime.current, stream_type.null),
            get_elapsed_time=self._elapsed_ms,
        )
        self.gpu_clock_ms: Callable[[], float] = lambda: time.perf_counter() * 1e3
        self.sync_calls = 0
        self.recorded: list[StandInEvent] = []
        self.streams: dict[int, StandInStream] = {}
        stream_type.null = stream_type(null=True)
        self.pool = StandInPool(self)

    def __getattr__(self, name: str) -> Any:
        if name != "numpy_backed" and self.numpy_backed and not name.startswith("__"):
            return getattr(np, name)
        raise AttributeError(f"the stand-in cupy has no attribute {name!r}")

    def get_default_memory_pool(self) -> StandInPool:
        return self.pool

    def complete(self, covered: Callable[[StandInEvent], bool]) -> None:
        """A synchronize: count it and complete the recorded events it covers."""
        self.sync_calls += 1
        for event in self.recorded:
            if covered(event):
                event.complete = True

    def _elapsed_ms(self, start: StandInEvent, end: StandInEvent) -> float:
        for event in (start, end):
            if event.stamp is None or event.disable_timing:
                raise RuntimeError("cudaErrorInvalidResourceHandle: event not recorded/timing")
        if not end.complete:
            raise RuntimeError("cudaErrorNotReady: device not ready")
        return end.stamp - start.stamp

    @contextmanager
    def _device_context(self, index: int) -> Iterator[None]:
        runtime = self.cuda.runtime
        previous = runtime.current
        runtime.setDevice(index)
        try:
            yield
        finally:
            runtime.current = previous

    def gpu_clock_steps(self, stamps_ms: list[float]) -> None:
        """Make the fake GPU clock read ``stamps_ms`` in turn, one value per event record."""
        values = iter(stamps_ms)
        self.gpu_clock_ms = lambda: next(values)


def install(
    monkeypatch: pytest.MonkeyPatch, count: int = 1, numpy_backed: bool = False
) -> StandInCupy:
    """Make a ``StandInCupy`` the ``cupy`` module for one test. A ``tk.device("cuda")`` holds
    its array module, so the test starts with no CUDA device interned (not even a real GPU's,
    on a machine that has one) and the devices it makes, with their random generators, are
    forgotten when it ends."""
    fake = StandInCupy(count, numpy_backed)
    monkeypatch.setitem(sys.modules, "cupy", fake)
    cpu_only = {key: dev for key, dev in tk.device._interned.items() if key[0] != "cuda"}
    monkeypatch.setattr(tk.device, "_interned", cpu_only)
    monkeypatch.setattr(tk.random, "_cuda_generators", {})  # their generators go with them
    return fake
