"""``tk.cuda``: devices, streams, events and the memory-pool view.

Most tests run against ``StandInCupy`` (tests/cuda_standin.py), a test-only stand-in for the
few CuPy calls tk.cuda makes (runtime, Stream, Event, the default memory pool and MemoryHook),
injected as ``sys.modules["cupy"]``. It checks tk.cuda's own logic (peaks, stats keys, the
summary table, snapshots, context managers, errors) but none of CuPy's or the GPU's
behaviour: the tests marked ``cuda`` do that with the real CuPy on a GPU (scripts/gpu_check.sh).
"""

from __future__ import annotations

import sys
from typing import Any

import pytest
from cuda_standin import StandInCupy, StandInPool, install

import tensorkit as tk
from tensorkit import _state
from tensorkit.notebook.profile_model import block_view


@pytest.fixture
def standin(monkeypatch: pytest.MonkeyPatch) -> StandInCupy:
    yield install(monkeypatch, count=2)
    recorder = tk.cuda.memory._recorder
    if recorder in _state.observers:  # a failed history test must not leave it observing
        _state.remove_observer(recorder)


@pytest.fixture
def no_cupy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cupy", None)  # `import cupy` raises ImportError


# ------------------------------------------------------------------ availability
def test_unavailable_without_cupy(no_cupy: None) -> None:
    assert tk.cuda.is_available() is False
    assert tk.cuda.device_count() == 0


def test_unavailable_when_device_count_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = StandInCupy()

    def broken() -> int:
        raise RuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")

    fake.cuda.runtime.getDeviceCount = broken
    monkeypatch.setitem(sys.modules, "cupy", fake)
    assert tk.cuda.is_available() is False
    assert tk.cuda.device_count() == 0


def test_unavailable_with_zero_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cupy", StandInCupy(count=0))
    assert tk.cuda.is_available() is False
    assert tk.cuda.device_count() == 0


def test_cuda_tensor_without_a_reachable_gpu_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = StandInCupy()

    def broken() -> int:
        raise RuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient")

    fake.cuda.runtime.getDeviceCount = broken
    monkeypatch.setitem(sys.modules, "cupy", fake)
    with pytest.raises(
        RuntimeError,
        match=r"CUDA is not available: CuPy could not reach a GPU "
        r"\(RuntimeError: cudaErrorInsufficientDriver",
    ):
        tk.ones(2, device="cuda")
    monkeypatch.setitem(sys.modules, "cupy", StandInCupy(count=0))
    with pytest.raises(RuntimeError, match="CUDA is not available: CuPy found no GPU"):
        tk.zeros(1).cuda()


def test_cuda_device_index_beyond_the_gpus_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    install(monkeypatch, count=2, numpy_backed=True)
    with pytest.raises(
        RuntimeError,
        match=r"invalid device ordinal: cuda:5 was requested but "
        r"2 CUDA device\(s\) were found",
    ):
        tk.device("cuda:5")
    assert tk.device("cuda:1").index == 1


@pytest.mark.parametrize(
    "call",
    [
        tk.cuda.current_device,
        lambda: tk.cuda.set_device(0),
        tk.cuda.synchronize,
        tk.cuda.get_device_name,
        tk.cuda.get_device_properties,
        tk.cuda.Stream,
        tk.cuda.Event,
        tk.cuda.current_stream,
        tk.cuda.default_stream,
        tk.cuda.memory_allocated,
        tk.cuda.max_memory_reserved,
        tk.cuda.memory_stats,
        tk.cuda.memory_summary,
        tk.cuda.memory._record_memory_history,
        tk.cuda.memory._snapshot,
        lambda: tk.memory.memory_allocated("cuda"),
        lambda: tk.memory.memory_stats("cuda:0"),
        lambda: tk.cuda.device(0).__enter__(),
    ],
)
def test_gpu_calls_raise_a_clear_error_without_a_gpu(no_cupy: None, call: Any) -> None:
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        call()


def test_no_ops_without_a_gpu(no_cupy: None) -> None:
    tk.cuda.empty_cache()
    tk.cuda.manual_seed(0)
    tk.cuda.manual_seed_all(0)
    with tk.cuda.device(None), tk.cuda.stream(None):
        pass
    assert tk.memory.memory_allocated() >= 0  # the CPU accounting is untouched


# ------------------------------------------------------------------ devices
def test_device_queries_and_selection(standin: StandInCupy) -> None:
    assert tk.cuda.is_available() and tk.cuda.device_count() == 2
    assert tk.cuda.current_device() == 0
    tk.cuda.set_device("cuda:1")
    assert tk.cuda.current_device() == 1
    tk.cuda.set_device(0)
    props = tk.cuda.get_device_properties(1)
    assert (props.name, props.total_memory, props.major, props.minor) == (
        "Stand-in GPU 1",
        80 << 30,
        9,
        0,
    )
    assert tk.cuda.get_device_name() == "Stand-in GPU 0"
    with pytest.raises(ValueError, match="expected a CUDA device"):
        tk.cuda.set_device("cpu")


def test_device_context_restores_the_previous_device(standin: StandInCupy) -> None:
    with tk.cuda.device("cuda:1"):
        assert tk.cuda.current_device() == 1
        with tk.cuda.device(0):
            assert tk.cuda.current_device() == 0
        assert tk.cuda.current_device() == 1
    assert tk.cuda.current_device() == 0
    with pytest.raises(KeyError), tk.cuda.device(1):
        raise KeyError("inside")
    assert tk.cuda.current_device() == 0
    with tk.cuda.device(-1):
        assert tk.cuda.current_device() == 0


def test_synchronize_runs_on_the_requested_device(standin: StandInCupy) -> None:
    tk.cuda.synchronize()
    tk.cuda.synchronize("cuda:1")
    assert standin.cuda.runtime.synchronized == [0, 1]
    assert tk.cuda.current_device() == 0


# ------------------------------------------------------------------ streams and events
def test_stream_context_sets_and_restores_the_current_stream(standin: StandInCupy) -> None:
    default = tk.cuda.default_stream()
    assert tk.cuda.current_stream() == default and default.cuda_stream == 0
    s = tk.cuda.Stream()
    with tk.cuda.stream(s):
        assert tk.cuda.current_stream() == s != default
        inner = tk.cuda.Stream()
        with tk.cuda.stream(inner):
            assert tk.cuda.current_stream() == inner
        assert tk.cuda.current_stream() == s
    assert tk.cuda.current_stream() == default


def test_stream_on_another_device_switches_device_inside_the_block(
    standin: StandInCupy,
) -> None:
    s = tk.cuda.Stream(device=1)
    assert s.device_index == 1
    with tk.cuda.stream(s):
        assert tk.cuda.current_device() == 1
        assert tk.cuda.current_stream() == s
    assert tk.cuda.current_device() == 0
    assert tk.cuda.current_stream(1) == tk.cuda.default_stream(1)


def test_stream_methods(standin: StandInCupy) -> None:
    a, b = tk.cuda.Stream(), tk.cuda.Stream()
    a.synchronize()
    assert a._stream.synchronized == 1 and a.query() is True
    event = a.record_event()
    assert isinstance(event, tk.cuda.Event) and event._event.stream is a._stream
    b.wait_event(event)
    assert b._stream.waited == [event._event]
    b.wait_stream(a)  # an event recorded on a, waited for on b
    assert b._stream.waited[-1].stream is a._stream


def test_event_timing_and_synchronization(standin: StandInCupy) -> None:
    standin.gpu_clock_steps([5.0, 25.5, 30.0])  # the fake GPU clock at each record, in ms
    start, end = tk.cuda.Event(enable_timing=True), tk.cuda.Event(enable_timing=True)
    assert start.query() is False
    start.record()
    end.record()
    with pytest.raises(RuntimeError, match="cudaErrorNotReady"):
        start.elapsed_time(end)  # the end event has not completed
    end.synchronize()
    assert end.query() is True and end._event.synchronized == 1
    assert start.elapsed_time(end) == 20.5
    assert start._event.stream is tk.cuda.current_stream()._stream
    plain = tk.cuda.Event()
    plain.record()
    assert plain._event.disable_timing is True
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        start.elapsed_time(plain)
    s = tk.cuda.Stream()
    plain.wait(s)
    assert s._stream.waited == [plain._event]


# ------------------------------------------------------------------ memory
def test_allocated_reserved_and_peaks(standin: StandInCupy) -> None:
    pool = standin.pool
    assert tk.cuda.memory_allocated() == 0 and tk.cuda.max_memory_allocated() == 0
    a = pool.malloc(1000)  # rounded to 1024
    b = pool.malloc(4096)
    assert tk.cuda.memory_allocated() == 1024 + 4096
    pool.free(b)
    c = pool.malloc(100)
    assert tk.cuda.memory_allocated() == 1024 + 512
    assert tk.cuda.max_memory_allocated() == 1024 + 4096  # seen by the hook only
    assert tk.cuda.memory_reserved() == 1024 + 4096 + 512
    assert tk.cuda.max_memory_reserved() == 1024 + 4096 + 512
    tk.cuda.empty_cache()
    assert tk.cuda.memory_reserved() == 1024 + 512
    assert tk.cuda.max_memory_reserved() == 1024 + 4096 + 512
    tk.cuda.reset_peak_memory_stats()
    assert tk.cuda.max_memory_allocated() == 1024 + 512
    assert tk.cuda.max_memory_reserved() == 1024 + 512
    pool.free(a)
    pool.free(c)
    assert tk.cuda.memory_allocated() == 0
    assert tk.cuda.max_memory_allocated() == 1024 + 512


def test_peaks_are_per_device_and_seeded_from_the_pool(standin: StandInCupy) -> None:
    standin.pool.malloc(2048)  # before tk.cuda's hook exists
    with tk.cuda.device(1):
        standin.pool.malloc(512)
    assert tk.cuda.max_memory_allocated() == 2048
    assert tk.cuda.max_memory_allocated("cuda:1") == 512
    assert tk.cuda.memory_allocated(1) == 512


def test_memory_stats_keys_and_failure_counts(standin: StandInCupy) -> None:
    pool = standin.pool
    tk.cuda.memory_stats()  # counts start when tk.cuda's hook is installed
    ptr = pool.malloc(512)
    pool.free(ptr)
    pool.malloc(512)  # from the cache: no device allocation
    pool.fail_next = True
    with pytest.raises(MemoryError):
        pool.malloc(1 << 20)
    stats = tk.cuda.memory_stats()
    assert stats == {
        "allocated_bytes.all.current": 512,
        "allocated_bytes.all.peak": 512,
        "allocated_bytes.all.allocated": 1024,
        "allocated_bytes.all.freed": 512,
        "reserved_bytes.all.current": 512,
        "reserved_bytes.all.peak": 512,
        "inactive_split_bytes.all.current": 0,
        "allocation.all.allocated": 2,
        "allocation.all.freed": 1,
        "num_alloc_retries": 2,
        "num_ooms": 1,
    }


def test_tk_memory_delegates_cuda_devices(standin: StandInCupy) -> None:
    standin.pool.malloc(4096)
    assert tk.memory.memory_allocated("cuda") == 4096
    assert tk.memory.memory_stats("cuda:0") == tk.cuda.memory_stats(0)
    ptr = standin.pool.malloc(4096)
    standin.pool.free(ptr)
    assert tk.memory.max_memory_allocated("cuda:0") == 8192
    tk.memory.reset_peak_memory_stats("cuda")
    assert tk.memory.max_memory_allocated("cuda") == 4096
    assert tk.memory.memory_allocated() == tk.memory.memory_stats()["allocated_bytes.all.current"]


def test_memory_summary_table(standin: StandInCupy) -> None:
    standin.pool.malloc(3 << 20)
    summary = tk.cuda.memory_summary()
    lines = summary.splitlines()
    assert len({len(line) for line in lines}) == 1  # a rectangular table
    assert "tensorkit CUDA memory summary, device 0" in lines[1]
    allocated = next(line for line in lines if "Allocated memory" in line)
    assert allocated.count("3.00 MiB") == 2
    assert "Out-of-memory errors" in summary and "Allocation retries" in summary
    short = tk.cuda.memory_summary(abbreviated=True)
    assert "Reserved memory" in short and "Out-of-memory errors" not in short


class AllocatesOnTheStandIn(tk.autograd.Function):
    """A custom op whose forward allocates on the stand-in pool, as a CUDA op would."""

    pool: StandInPool

    @staticmethod
    def forward(ctx: Any, x: tk.Tensor) -> tk.Tensor:
        AllocatesOnTheStandIn.pool.malloc(256)
        return x * 2

    @staticmethod
    def backward(ctx: Any, grad: tk.Tensor) -> tk.Tensor:
        return grad * 2


def test_memory_history_records_events_ops_call_sites_and_live_blocks(
    standin: StandInCupy,
) -> None:
    pool = standin.pool
    before = pool.malloc(1024)  # not recorded: history is off
    tk.cuda.memory._record_memory_history(max_entries=100)
    try:
        assert tk.cuda.memory._recorder in _state.observers
        kept = pool.malloc(600)
        line = sys._getframe().f_lineno - 1
        dropped = pool.malloc(512)
        pool.free(dropped)
        AllocatesOnTheStandIn.pool = pool
        AllocatesOnTheStandIn.apply(tk.ones(3))
        with tk.cuda.device(1):
            pool.malloc(512)
        snapshot = tk.cuda.memory._snapshot()
    finally:
        tk.cuda.memory._record_memory_history(enabled=None)
    assert tk.cuda.memory._recorder not in _state.observers
    trace0, trace1 = snapshot["device_traces"]
    assert [(e["action"], e["size"]) for e in trace0] == [
        ("segment_alloc", 1024),
        ("alloc", 1024),
        ("segment_alloc", 512),
        ("alloc", 512),
        ("free", 512),
        ("alloc", 512),  # the cached block, reused inside the op
    ]
    assert trace0[1]["addr"] == kept and trace0[4]["addr"] == dropped
    assert trace0[1]["call_site"] == f"{__file__}:{line}"
    assert [e["op"] for e in trace0] == [None] * 5 + ["AllocatesOnTheStandIn"]
    assert [(e["action"], e["device"]) for e in trace1] == [("segment_alloc", 1), ("alloc", 1)]
    blocks = sorted((b["device"], b["size"], b["requested_size"]) for b in snapshot["blocks"])
    assert blocks == [(0, 512, 256), (0, 1024, 600), (1, 512, 512)]
    assert before not in {b["addr"] for b in snapshot["blocks"]}
    pool.malloc(512)
    assert tk.cuda.memory._snapshot() == {"device_traces": [[], []], "blocks": []}


def test_empty_cache_records_the_segments_returned_to_the_device(standin: StandInCupy) -> None:
    pool = standin.pool
    tk.cuda.memory._record_memory_history()
    try:
        kept = pool.malloc(1024)
        cached = pool.malloc(512)
        pool.free(cached)
        tk.cuda.empty_cache()
        snapshot = tk.cuda.memory._snapshot()
    finally:
        tk.cuda.memory._record_memory_history(enabled=None)
    trace = snapshot["device_traces"][0]
    assert [(e["action"], e["addr"], e["size"]) for e in trace[-2:]] == [
        ("free", cached, 512),
        ("segment_free", cached, 512),  # the segment holding `kept` stays reserved
    ]
    assert kept not in {e["addr"] for e in trace if e["action"] == "segment_free"}
    states = {block["addr"]: block["state"] for block in block_view(snapshot)["blocks"]}
    assert states == {kept: "in_use", cached: "returned"}


def test_memory_history_keeps_the_last_max_entries(standin: StandInCupy) -> None:
    tk.cuda.memory._record_memory_history(max_entries=3)
    try:
        for _ in range(4):
            standin.pool.free(standin.pool.malloc(512))
        trace = tk.cuda.memory._snapshot()["device_traces"][0]
    finally:
        tk.cuda.memory._record_memory_history(enabled=False)
    assert [e["action"] for e in trace] == ["free", "alloc", "free"]


def test_a_new_cupy_gets_a_fresh_hook(standin: StandInCupy, monkeypatch) -> None:
    standin.pool.malloc(4096)
    assert tk.cuda.max_memory_allocated() == 4096
    other = StandInCupy()
    monkeypatch.setitem(sys.modules, "cupy", other)
    assert tk.cuda.max_memory_allocated() == 0
    assert "tensorkit" in other.cuda.memory_hook.registry


# ------------------------------------------------------------------ real GPU (CuPy)
@pytest.mark.cuda
def test_gpu_device_queries() -> None:
    assert tk.cuda.device_count() >= 1
    props = tk.cuda.get_device_properties(0)
    assert props.name and props.total_memory > 0 and props.major >= 3
    assert tk.cuda.get_device_name() == tk.cuda.get_device_properties().name
    with tk.cuda.device(0):
        assert tk.cuda.current_device() == 0
    tk.cuda.synchronize()


@pytest.mark.cuda
def test_gpu_memory_accounting() -> None:
    tk.cuda.synchronize()
    before = tk.cuda.memory_allocated()
    x = tk.zeros(1024, device="cuda")
    after = tk.cuda.memory_allocated()
    assert after >= before + 4096
    assert tk.cuda.max_memory_allocated() >= after
    assert tk.cuda.memory_reserved() >= after
    assert tk.memory.memory_allocated("cuda") == after
    stats = tk.cuda.memory_stats()
    assert stats["allocated_bytes.all.current"] == after
    assert stats["reserved_bytes.all.peak"] >= stats["reserved_bytes.all.current"]
    del x
    assert tk.cuda.memory_allocated() == before
    tk.cuda.reset_peak_memory_stats()
    assert tk.cuda.max_memory_allocated() == before
    tk.cuda.empty_cache()
    assert tk.cuda.memory_reserved() >= tk.cuda.memory_allocated()
    assert "Allocated memory" in tk.cuda.memory_summary()


@pytest.mark.cuda
def test_gpu_event_times_a_matmul_and_streams_order_work() -> None:
    a = tk.randn(1024, 1024, device="cuda")
    start, end = tk.cuda.Event(enable_timing=True), tk.cuda.Event(enable_timing=True)
    start.record()
    b = a @ a
    end.record()
    end.synchronize()
    assert end.query() and start.elapsed_time(end) > 0
    s = tk.cuda.Stream()
    s.wait_stream(tk.cuda.current_stream())
    with tk.cuda.stream(s):
        assert tk.cuda.current_stream() == s
        c = b + 1
    assert tk.cuda.current_stream() == tk.cuda.default_stream()
    s.synchronize()
    assert s.query()
    assert float((c - b - 1).abs().max()) == 0.0


@pytest.mark.cuda
def test_gpu_memory_history_names_ops_and_call_sites() -> None:
    x = tk.ones(4096, device="cuda")
    tk.cuda.memory._record_memory_history(max_entries=1000)
    try:
        y = x * 2
        line = sys._getframe().f_lineno - 1
        snapshot = tk.cuda.memory._snapshot()
    finally:
        tk.cuda.memory._record_memory_history(enabled=None)
    allocs = [e for e in snapshot["device_traces"][0] if e["action"] == "alloc"]
    assert any(e["op"] == "mul" and e["call_site"] == f"{__file__}:{line}" for e in allocs)
    assert any(b["size"] >= y.nbytes for b in snapshot["blocks"])
