"""The profiler's plain records: one per op or backward node, one per ``record_function``
range."""

from __future__ import annotations

from typing import Any

from .stack import format_site

TIMING_MODE = (
    "host wall time (time.perf_counter_ns around each op's forward computation and each "
    "backward node's work)"
)


class OpRecord:
    """One observed op, or one backward node (``name`` "MulBackward0", phase "backward":
    the node's whole work). Times are nanoseconds; memory fields stay None unless recorded.

    ``gpu_time_ns`` is the op's GPU time from CUDA events and ``gpu_start_ns`` its GPU start
    on the host clock (see ``profiler.gpu``); both are None for ops that did not run on a
    CUDA device.

    Memory (with ``record_memory``), per device: on the CPU, ``alloc_bytes`` is the bytes of
    the new buffers behind the op's outputs and ``free_bytes`` the counted bytes freed since
    the previous CPU record (``tensorkit.memory``); on CUDA both come from the caching
    allocator (CuPy's pool): the bytes it handed out during the op, temporaries included,
    and the bytes returned to it since the device's previous record. ``live_bytes`` is what
    is alive on the op's device after it, ``peak_bytes`` the most of that so far in the
    profile, and ``reserved_bytes`` what the device's allocator holds (CuPy's pool, cached
    blocks included; on the CPU, which has no caching allocator, the live bytes).
    """

    __slots__ = (
        "alloc_bytes",
        "call_site",
        "device",
        "end_ns",
        "forward_index",
        "free_bytes",
        "gpu_start_ns",
        "gpu_time_ns",
        "index",
        "input_dtypes",
        "input_shapes",
        "live_bytes",
        "module_path",
        "name",
        "output_dtypes",
        "output_shapes",
        "peak_bytes",
        "phase",
        "reserved_bytes",
        "scopes",
        "start_ns",
    )

    def __init__(
        self,
        index: int,
        name: str,
        phase: str,
        start_ns: int,
        end_ns: int,
        device: str,
        module_path: str,
        forward_index: int | None,
        scopes: tuple[str, ...],
    ) -> None:
        self.index = index
        self.name = name
        self.phase = phase
        self.start_ns = start_ns
        self.end_ns = end_ns
        self.device = device
        self.module_path = module_path
        self.forward_index = forward_index
        self.scopes = scopes
        self.gpu_start_ns: int | None = None
        self.gpu_time_ns: int | None = None
        self.input_shapes: list | None = None
        self.input_dtypes: list | None = None
        self.output_shapes: list | None = None
        self.output_dtypes: list | None = None
        self.call_site: str | None = None
        self.alloc_bytes: int | None = None
        self.free_bytes: int | None = None
        self.live_bytes: int | None = None
        self.peak_bytes: int | None = None
        self.reserved_bytes: int | None = None

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns

    def to_dict(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in self.__slots__}
        out["scopes"] = list(self.scopes)
        out["duration_ns"] = self.duration_ns
        return out


USER_ANNOTATION = "user_annotation"  # the phase of a record_function range, as PyTorch names it


class RangeRecord:
    """One named range: a ``record_function`` range (``phase`` "user_annotation") or a call
    of a composite function such as ``conv2d`` (``phase`` the phase its ops ran in, see
    ``tensorkit._ranges``); ``depth`` 0 is outermost."""

    __slots__ = ("depth", "end_ns", "name", "phase", "start_ns")

    def __init__(
        self, name: str, start_ns: int, end_ns: int, depth: int, phase: str = USER_ANNOTATION
    ) -> None:
        self.name = name
        self.start_ns = start_ns
        self.end_ns = end_ns
        self.depth = depth
        self.phase = phase

    @property
    def composite(self) -> bool:
        """Whether this is a composite function's range (not a user annotation)."""
        return self.phase != USER_ANNOTATION

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "start_ns": self.start_ns,
            "end_ns": self.end_ns,
            "depth": self.depth,
            "phase": self.phase,
            "duration_ns": self.duration_ns,
        }


# In a shape key (``profile.shape_key``): the marker between the inputs' and the outputs'
# (shape, dtype) values.
OUTPUTS = "->"
CORE_FIELDS = 8  # per op: name, phase, start, end, device, module path, forward index, scopes
DEVICE_FIELD = 4  # the device's place among them
EXTRA_FIELDS = 6  # per op, with any option: shapes, call site, alloc, freed, live, peak bytes


def make_record(
    index: int,
    core: list,
    extra: list | None,
    gpu: tuple[int, int] | None,
    reserved: int | None = None,
) -> OpRecord:
    """An ``OpRecord`` from the profiler's flat lists (op ``index`` holds ``CORE_FIELDS``
    values in ``core`` and, when options were on, ``EXTRA_FIELDS`` in ``extra``), for a
    CUDA op its (GPU start, GPU time) in ns and, with memory recording, the allocator's
    reserved bytes after it (None on the CPU: the live bytes)."""
    at = index * CORE_FIELDS
    record = OpRecord(index, *core[at : at + CORE_FIELDS])
    if gpu is not None:
        record.gpu_start_ns, record.gpu_time_ns = gpu
    if extra is None:
        return record
    at = index * EXTRA_FIELDS
    shapes, site, alloc, freed, live, peak = extra[at : at + EXTRA_FIELDS]
    record.call_site = format_site(site)
    if shapes is not None:
        split = shapes.index(OUTPUTS)
        inputs, outputs = shapes[:split], shapes[split + 1 :]
        record.input_shapes = [None if s is None else list(s) for s in inputs[::2]]
        record.input_dtypes = [None if d is None else str(d) for d in inputs[1::2]]
        record.output_shapes = [list(s) for s in outputs[::2]]
        record.output_dtypes = [str(d) for d in outputs[1::2]]
    if alloc is not None:
        record.alloc_bytes, record.free_bytes, record.live_bytes, record.peak_bytes = (
            alloc,
            freed,
            live,
            peak,
        )
        record.reserved_bytes = live if reserved is None else reserved
    return record
