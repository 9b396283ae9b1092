"""CUDA streams and events on CuPy's, following ``torch.cuda.Stream`` / ``torch.cuda.Event``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ._runtime import cupy, device_index, on_device


class Stream:
    """A CUDA stream (wraps ``cupy.cuda.Stream``); work queued on it runs in order."""

    def __init__(self, device: Any = None, priority: int = 0) -> None:
        cp = cupy()
        self.device_index = device_index(device)
        with on_device(self.device_index):
            self._stream = cp.cuda.Stream(non_blocking=False, priority=priority or None)

    @classmethod
    def _wrap(cls, cupy_stream: Any, index: int) -> Stream:
        stream = cls.__new__(cls)
        stream.device_index = index
        stream._stream = cupy_stream
        return stream

    @property
    def cuda_stream(self) -> int:
        """The raw ``cudaStream_t`` pointer (0 for the default stream)."""
        return int(self._stream.ptr)

    def synchronize(self) -> None:
        """Wait until all work queued on this stream has finished."""
        self._stream.synchronize()

    def query(self) -> bool:
        """True when all work queued on this stream has finished."""
        return bool(self._stream.done)

    def wait_event(self, event: Event) -> None:
        """Make work queued on this stream from now on wait for ``event``."""
        self._stream.wait_event(event._event)

    def wait_stream(self, stream: Stream) -> None:
        """Make work queued on this stream from now on wait for the work queued on ``stream``."""
        self._stream.wait_event(stream._stream.record())

    def record_event(self, event: Event | None = None) -> Event:
        """Record ``event`` (a new one when None) on this stream and return it."""
        event = Event() if event is None else event
        event.record(self)
        return event

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Stream):
            return NotImplemented
        return self.device_index == other.device_index and self.cuda_stream == other.cuda_stream

    def __hash__(self) -> int:
        return hash((self.device_index, self.cuda_stream))

    def __repr__(self) -> str:
        return f"<tk.cuda.Stream device=cuda:{self.device_index} cuda_stream={self.cuda_stream:#x}>"


class Event:
    """A CUDA event (wraps ``cupy.cuda.Event``): a marker in a stream, used to synchronize
    and, with ``enable_timing=True``, to time the work between two markers."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False) -> None:
        self.enable_timing = enable_timing
        self._event = cupy().cuda.Event(block=blocking, disable_timing=not enable_timing)

    def record(self, stream: Stream | None = None) -> None:
        """Record the event on ``stream`` (default: the current stream)."""
        stream = current_stream() if stream is None else stream
        self._event.record(stream._stream)

    def wait(self, stream: Stream | None = None) -> None:
        """Make work queued on ``stream`` (default: the current one) wait for this event."""
        (current_stream() if stream is None else stream).wait_event(self)

    def synchronize(self) -> None:
        """Wait until the work before this event's record has finished."""
        self._event.synchronize()

    def query(self) -> bool:
        """True when the work before this event's record has finished."""
        return bool(self._event.done)

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds between this event's record and ``end_event``'s (both must time)."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with enable_timing=True")
        return float(cupy().cuda.get_elapsed_time(self._event, end_event._event))


def current_stream(device: Any = None) -> Stream:
    """The stream that work on ``device`` (default: the current device) is queued on now."""
    cp = cupy()
    index = device_index(device)
    with on_device(index):
        return Stream._wrap(cp.cuda.get_current_stream(), index)


def default_stream(device: Any = None) -> Stream:
    """The default (null) stream of ``device``."""
    return Stream._wrap(cupy().cuda.Stream.null, device_index(device))


@contextmanager
def stream(stream: Stream | None) -> Iterator[None]:
    """Queue work on ``stream`` (and its device) inside the block; restore both afterwards.
    ``None`` changes nothing, as in PyTorch."""
    if stream is None:
        yield
        return
    with on_device(stream.device_index):
        previous = cupy().cuda.get_current_stream()
        stream._stream.use()
        try:
            yield
        finally:
            previous.use()
