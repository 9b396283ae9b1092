"""tk.profiler's GPU timing: CUDA event pairs per op, the two ``cuda_timing`` modes, and GPU
times in every report.

Most tests run on the TEST-ONLY NumPy-backed stand-in CuPy (tests/cuda_standin.py): a "cuda"
device whose arrays are NumPy's and whose events read a fake GPU clock, so the profiler's
own logic (which ops get events, when it synchronizes, how times flow into the reports) is
checked without a GPU. The tests marked ``cuda`` check real GPU times on a GPU.
"""

from __future__ import annotations

import itertools
import json
import sys
import time
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from cuda_standin import StandInCupy, install
from test_profiler import BACKWARD, FORWARD, run_step, small_model

import tensorkit as tk
import tensorkit.profiler as profiler
from tensorkit._numbers import bytes_text
from tensorkit.profiler.report import format_time

GAP_MS = 10.0  # the fake GPU clock: op i starts at GAP_MS * i ...
STEP_MS = 0.5  # ... and takes STEP_MS * (i + 1)


def fake_stamps() -> Iterator[float]:
    """Start and end stamps (ms) of event pair i: GAP_MS * i and that plus STEP_MS * (i + 1)."""
    for i in itertools.count():
        yield GAP_MS * i
        yield GAP_MS * i + STEP_MS * (i + 1)


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> StandInCupy:
    module = install(monkeypatch, numpy_backed=True)
    module.gpu_clock_ms = fake_stamps().__next__
    return module


def cuda_leaf() -> tk.Tensor:
    return tk.tensor(np.arange(1.0, 5.0, dtype=np.float32), device="cuda", requires_grad=True)


def train_step(x: tk.Tensor) -> None:
    (x * 2).sum().backward()


# backward: one record per autograd node (the default)
OPS = [("mul", "forward"), ("sum", "forward"), ("SumBackward0", "backward")]
OPS += [("MulBackward0", "backward"), ("AccumulateGrad", "backward")]


# ------------------------------------------------------------------------------ events mode
def test_events_mode_records_a_pair_per_op_and_synchronizes_once_when_read(
    fake: StandInCupy,
) -> None:
    x = cuda_leaf()
    with profiler.profile() as prof:
        train_step(x)
    assert fake.sync_calls == 0  # nothing waited for the GPU while recording
    assert len(fake.recorded) == 2 * len(OPS)
    assert not any(event.complete for event in fake.recorded)
    records = prof.records
    assert fake.sync_calls == 1 and fake.cuda.runtime.synchronized == [0]
    assert [(r.name, r.phase) for r in records] == OPS
    assert [r.device for r in records] == ["cuda:0"] * len(OPS)
    assert [r.gpu_time_ns for r in records] == [round(STEP_MS * (i + 1) * 1e6) for i in range(5)]
    first = records[0].gpu_start_ns
    assert prof.start_ns <= first <= records[0].start_ns
    assert [r.gpu_start_ns - first for r in records] == [round(GAP_MS * i * 1e6) for i in range(5)]
    prof.events()
    prof.key_averages()
    assert fake.sync_calls == 1  # read once, kept


def test_a_tape_inside_the_profile_gets_gpu_times_and_the_mode(fake: StandInCupy) -> None:
    from tensorkit.notebook.profile_model import build_profile

    x = cuda_leaf()
    with profiler.profile() as prof, tk.autograd.Tape() as tape:
        train_step(x)
    assert fake.sync_calls == 1  # once, when the profile ended, for the Tape's sake
    times = [e.records["gpu_time_ns"] for e in tape.entries]
    assert times == [r.gpu_time_ns for r in prof.records]
    model = build_profile(tape)
    assert model["timing_mode"] == prof.timing_mode
    assert [row["gpu_time_ns"] for row in model["rows"]] == times


def test_records_read_inside_the_block_resolve_what_ran_so_far(fake: StandInCupy) -> None:
    x = cuda_leaf()
    with profiler.profile() as prof:
        y = x * 2
        assert [r.gpu_time_ns for r in prof.records] == [round(STEP_MS * 1e6)]
        y.sum()
    assert fake.sync_calls == 1
    assert [r.gpu_time_ns for r in prof.records] == [round(STEP_MS * 1e6), round(2 * STEP_MS * 1e6)]
    assert fake.sync_calls == 2


def test_cpu_ops_get_no_events_beside_cuda_ops(fake: StandInCupy) -> None:
    x = cuda_leaf()
    host = tk.ones(3)
    with profiler.profile() as prof:
        host + 1
        x * 2
        host * 3
    assert len(fake.recorded) == 2
    assert [(r.device, r.gpu_time_ns) for r in prof.records] == [
        ("cpu", None),
        ("cuda:0", round(STEP_MS * 1e6)),
        ("cpu", None),
    ]


def test_an_op_that_raises_leaves_no_event_behind(fake: StandInCupy) -> None:
    x = cuda_leaf()
    with profiler.profile() as prof:
        with pytest.raises(RuntimeError, match="must match the size"):
            x + tk.ones(3, device="cuda")
        tk.ones(2) * 2
        x * 2
    assert len(fake.recorded) == 3  # the failed add's start, the CUDA mul's pair
    # the fake clock's stamps are 0 (the add), then GAP_MS * 0 + STEP_MS and GAP_MS (the mul)
    assert [(r.name, r.device, r.gpu_time_ns) for r in prof.records] == [
        ("mul", "cpu", None),
        ("mul", "cuda:0", round((GAP_MS - STEP_MS) * 1e6)),
    ]


def test_moving_to_the_gpu_is_timed(fake: StandInCupy) -> None:
    host = tk.ones(3)
    x = cuda_leaf()
    with profiler.profile() as prof:
        host.to("cuda")
        x.to("cpu")
    assert [(r.device, r.gpu_time_ns is not None) for r in prof.records] == [
        ("cuda:0", True),
        ("cpu", True),
    ]


def test_cuda_first_used_inside_the_profile(fake: StandInCupy) -> None:
    with profiler.profile() as prof:
        x = cuda_leaf()  # a factory, not an op: the first CUDA op finds no events armed
        y = x * 2
        y + 1
    assert [r.gpu_time_ns for r in prof.records] == [None, round(STEP_MS * 1e6)]


def test_without_cuda_the_profiler_touches_no_cupy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy would raise
    cpu_only = {key: dev for key, dev in tk.device._interned.items() if key[0] != "cuda"}
    monkeypatch.setattr(tk.device, "_interned", cpu_only)  # as if no GPU had been used
    with profiler.profile() as prof:
        tk.ones(3) * 2
    assert prof.records[0].gpu_time_ns is None and prof.records[0].gpu_start_ns is None


def test_a_training_step_on_the_standin_device_records_as_on_the_cpu(fake: StandInCupy) -> None:
    model, x, target = small_model()
    model.to("cuda")
    x, target = x.to("cuda"), target.to("cuda")
    options = {"record_shapes": True, "record_memory": True, "with_stack": True}
    with profiler.profile(**options, backward_ops=True) as prof:
        run_step(model, x, target)
    events = prof.events()
    assert [e["name"] for e in events[: len(FORWARD)]] == FORWARD
    linked = [
        (e["name"], None if e["forward_index"] is None else events[e["forward_index"]]["name"])
        for e in events[len(FORWARD) :]
    ]
    assert linked == BACKWARD
    assert {e["device"] for e in events} == {"cuda:0"}
    assert len(fake.recorded) == 2 * len(events)
    assert [e["gpu_time_ns"] for e in events] == [
        round(STEP_MS * (i + 1) * 1e6) for i in range(len(events))
    ]
    sites = {e["call_site"].rsplit(":", 1)[0] for e in events}
    assert sites == {run_step.__code__.co_filename}  # the user code that ran the step


# ------------------------------------------------------------------------ synchronized mode
def test_synchronized_mode_synchronizes_around_each_op(fake: StandInCupy) -> None:
    x = cuda_leaf()
    host_ns: list[tuple[int, int]] = []
    clock = fake_stamps()

    def stamp() -> float:  # remember when each event was recorded on the host
        host_ns.append((time.perf_counter_ns(), fake.sync_calls))
        return next(clock)

    fake.gpu_clock_ms = stamp
    with profiler.profile(cuda_timing="synchronized") as prof:
        train_step(x)
    assert fake.sync_calls == 2 * len(OPS)
    assert fake.cuda.runtime.synchronized == [0] * (2 * len(OPS))
    # each start event follows a synchronize, and each end event is followed by one
    assert [calls for _, calls in host_ns] == [c for i in range(len(OPS)) for c in (2 * i + 1,) * 2]
    records = prof.records
    assert fake.sync_calls == 2 * len(OPS)  # nothing left to wait for when reading
    assert [r.gpu_time_ns for r in records] == [round(STEP_MS * (i + 1) * 1e6) for i in range(5)]
    for record, (start, _), (end, _) in zip(records, host_ns[::2], host_ns[1::2], strict=True):
        assert record.start_ns >= start and record.end_ns >= end  # host time covers the sync
    assert prof.events()[0]["cuda_timing"] == "synchronized"


@pytest.mark.parametrize("mode", ["Events", "sync", None, 1])
def test_cuda_timing_is_validated(mode: Any) -> None:
    expected = r"cuda_timing must be one of \('events', 'synchronized'\).*got " + repr(mode)
    with pytest.raises(ValueError, match=expected):
        profiler.profile(cuda_timing=mode)


# ------------------------------------------------------------------------------- reports
@pytest.fixture
def gpu_prof(fake: StandInCupy) -> profiler.profile:
    x = cuda_leaf()
    with profiler.profile(record_shapes=True) as prof:
        train_step(x)
        x * 3
    return prof


def test_gpu_times_in_key_averages_and_table(gpu_prof: profiler.profile) -> None:
    rows = {(r.name, r.phase): r for r in gpu_prof.key_averages()}
    mul = rows[("mul", "forward")]
    assert mul.count == 2
    assert mul.device_time_total == round(STEP_MS * 1e6) + round(6 * STEP_MS * 1e6)
    assert mul.cuda_time_total == mul.self_device_time_total == mul.device_time_total
    assert mul.device_time == mul.device_time_total / 2
    assert mul.to_dict()["device_time_total"] == mul.device_time_total
    table = gpu_prof.key_averages().table(sort_by="device_time_total")
    lines = table.splitlines()
    for header in ("Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg"):
        assert header in lines[1]
    first_row = lines[3]
    assert first_row.startswith("mul ") and "forward" in first_row and "3.500ms" in first_row
    total = sum(round(STEP_MS * (i + 1) * 1e6) for i in range(6))
    assert f"Self CUDA time total: {total / 1e6:.3f}ms" in table
    assert 'cuda_timing="events"' in lines[-1] and "not serialized" in lines[-1]
    by_cuda = gpu_prof.key_averages().table(sort_by="self_cuda_time_total").splitlines()
    assert by_cuda[3] == first_row


def test_cpu_table_has_no_cuda_columns_but_names_the_mode() -> None:
    with profiler.profile(cuda_timing="synchronized") as prof:
        tk.ones(2) * 2
    table = prof.key_averages().table()
    assert "CUDA total" not in table and "Self CUDA time total" not in table
    assert table.splitlines()[-1].startswith("Timing: host wall time")
    assert 'cuda_timing="synchronized"' in table


def test_gpu_times_in_the_chrome_trace(gpu_prof: profiler.profile, tmp_path: Any) -> None:
    path = tmp_path / "trace.json"
    gpu_prof.export_chrome_trace(str(path))
    document = json.loads(path.read_text())
    assert document["otherData"]["cuda_timing"] == "events"
    assert document["otherData"]["timing"] == gpu_prof.timing_mode
    events = document["traceEvents"]
    gpu = [e for e in events if e.get("cat") == "gpu"]
    assert [e["name"] for e in gpu] == [r.name for r in gpu_prof.records]
    assert {e["tid"] for e in gpu} == {100}
    assert [e["dur"] for e in gpu] == [STEP_MS * (i + 1) * 1e3 for i in range(6)]
    assert [e["ts"] - gpu[0]["ts"] for e in gpu] == pytest.approx(
        [GAP_MS * i * 1e3 for i in range(6)]
    )
    names = [e["args"]["name"] for e in events if e["ph"] == "M" and e["tid"] == 100]
    assert names == ["GPU cuda:0 (CUDA events)"]
    ops = [e for e in events if e["ph"] == "X" and e["cat"] in ("forward", "backward")]
    assert [e["args"]["gpu_time_us"] for e in ops] == [e["dur"] for e in gpu]


def test_gpu_times_in_events_and_the_mode_in_plots(gpu_prof: profiler.profile) -> None:
    events = gpu_prof.events()
    assert [e["gpu_time_ns"] for e in events] == [r.gpu_time_ns for r in gpu_prof.records]
    assert {e["cuda_timing"] for e in events} == {"events"}
    assert events[0]["input_shapes"] == [[4], None]
    json.dumps(events)
    pytest.importorskip("matplotlib")
    title = gpu_prof.plot_op_times().axes[0].get_title()
    assert "cuda_timing='events'" in title
    assert "cuda_timing='events'" in gpu_prof.plot_module_times().axes[0].get_title()


# -------------------------------------------------------------------------- real GPU (CuPy)
@pytest.mark.cuda
def test_gpu_events_mode_times_every_op() -> None:
    a = tk.randn(2048, 2048, device="cuda", requires_grad=True)
    with profiler.profile() as prof:
        ((a @ a).relu().sum()).backward()
    records = prof.records
    assert records and all(r.device.startswith("cuda") for r in records)
    assert all(r.gpu_time_ns is not None and r.gpu_time_ns >= 0 for r in records)  # views: ~0
    matmul = max((r for r in records if r.name == "matmul"), key=lambda r: r.gpu_time_ns)
    assert matmul.gpu_time_ns > 10_000  # a 2048^3 matmul takes well over 10 us
    assert "CUDA total" in prof.key_averages().table()


@pytest.mark.cuda
def test_gpu_synchronized_times_sum_to_about_the_wall_time() -> None:
    a = tk.randn(4096, 4096, device="cuda")
    (a @ a) * 1e-3  # compile and load the kernels before timing
    tk.cuda.synchronize()
    with profiler.profile(cuda_timing="synchronized") as prof:
        start = time.perf_counter_ns()
        y = a
        for _ in range(10):
            y = (y @ a) * 1e-3
        tk.cuda.synchronize()
        wall = time.perf_counter_ns() - start
    gpu = sum(r.gpu_time_ns for r in prof.records)
    host = sum(r.duration_ns for r in prof.records)
    assert 0.5 * wall <= gpu <= 1.05 * wall  # the GPU work fills the synchronized run
    assert gpu <= 1.05 * host  # each op's host time waits for its GPU work


@pytest.mark.cuda
def test_gpu_memory_records_read_the_pool() -> None:
    a = tk.randn(1024, 1024, device="cuda")  # 4 MiB
    with profiler.profile(record_memory=True) as prof:
        b = a * 2
        del b
        c = a + 1
    first, second = prof.records
    assert first.alloc_bytes == 4 << 20 and first.live_bytes >= 2 * (4 << 20)
    assert second.free_bytes == 4 << 20 and second.alloc_bytes == 4 << 20
    assert first.reserved_bytes >= first.live_bytes and second.peak_bytes >= second.live_bytes
    del c


def test_record_memory_keeps_the_pools_reserved_bytes(fake: StandInCupy) -> None:
    from tensorkit.notebook.profile_model import build_profile

    x = cuda_leaf()
    with profiler.profile(record_memory=True) as prof, tk.autograd.Tape() as tape:
        train_step(x)
    records = prof.records
    assert [r.reserved_bytes for r in records] == [
        e.records["reserved_bytes"] for e in tape.entries
    ]
    assert all(r.reserved_bytes is not None for r in records)
    assert records[-1].reserved_bytes == tk.cuda.memory_reserved("cuda:0")
    timeline = build_profile(prof)["memory"]
    assert timeline["caching"] and None not in timeline["reserved"]


def test_cpu_reserved_bytes_are_the_live_bytes() -> None:
    x = tk.ones(4, requires_grad=True)
    with profiler.profile(record_memory=True) as prof:
        train_step(x)
    assert [r.reserved_bytes for r in prof.records] == [r.live_bytes for r in prof.records]


def pooled_exp(module: StandInCupy) -> Any:
    """``exp`` for the stand-in that takes its result from the stand-in's memory pool (freed
    back to it when the array dies) and a 1024-byte temporary it frees before returning, as
    a CuPy kernel with scratch space would."""
    pool = module.get_default_memory_pool()

    def exp(x: Any) -> Any:
        out = np.exp(x)
        weakref.finalize(out, pool.free, pool.malloc(out.nbytes))
        pool.free(pool.malloc(1024))
        return out

    return exp


def test_cuda_memory_comes_from_the_caching_allocator(
    fake: StandInCupy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fake, "exp", pooled_exp(fake), raising=False)
    x = tk.ones(4, device="cuda")  # a factory tensor: the stand-in pool does not see it
    host = tk.ones(1000, dtype=tk.float64)
    with profiler.profile(record_memory=True) as prof, tk.autograd.Tape() as tape:
        y = x.exp()  # op 0: a 512-byte block (16 bytes rounded up) and the 1024-byte scratch
        del y  # freed between ops: counted at the next record on the device
        cpu = host * 2  # op 1: a CPU op between them, counted by tensorkit, 8000 bytes
        z = x.exp()  # op 2
    fields = [
        (r.device, r.alloc_bytes, r.free_bytes, r.live_bytes, r.peak_bytes, r.reserved_bytes)
        for r in prof.records
    ]
    pool = fake.get_default_memory_pool()
    cpu_before = fields[1][3] - 8000
    assert fields == [
        ("cuda:0", 512 + 1024, 1024, 512, 512, 512 + 1024),
        ("cpu", 8000, 0, cpu_before + 8000, cpu_before + 8000, cpu_before + 8000),
        ("cuda:0", 512 + 1024, 512 + 1024, 512, 512, pool.total_bytes()),
    ]
    # a Tape recorded alongside carries the same numbers
    assert [
        (e.records["alloc_bytes"], e.records["free_bytes"], e.records["live_bytes"])
        for e in tape.entries
    ] == [(a, f, live) for _, a, f, live, _, _ in fields]
    del cpu, z


@pytest.fixture
def mixed_prof(fake: StandInCupy, monkeypatch: pytest.MonkeyPatch) -> Iterator[profiler.profile]:
    """A memory profile of three ops: on CUDA (pool-allocating exp), the CPU, CUDA again."""
    monkeypatch.setattr(fake, "exp", pooled_exp(fake), raising=False)
    x = tk.ones(4, device="cuda")
    host = tk.ones(1000, dtype=tk.float64)
    with profiler.profile(record_memory=True) as prof:
        y = x.exp()
        cpu = host * 2
        z = y.exp()
    yield prof
    del y, cpu, z


def test_memory_timeline_draws_each_device_and_the_pools_reserved_bytes(
    mixed_prof: profiler.profile,
) -> None:
    pytest.importorskip("matplotlib")
    prof = mixed_prof
    ax = prof.plot_memory_timeline().axes[0]
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert set(lines) == {"allocated (cpu)", "allocated (cuda:0)", "reserved (cuda:0)"}
    records = prof.records
    assert list(lines["allocated (cuda:0)"].get_xdata()) == [0, 2]
    assert list(lines["allocated (cuda:0)"].get_ydata()) == [r.live_bytes for r in records[::2]]
    assert list(lines["reserved (cuda:0)"].get_ydata()) == [r.reserved_bytes for r in records[::2]]
    assert list(lines["allocated (cpu)"].get_ydata()) == [records[1].live_bytes]
    peaks = {t.get_text() for t in ax.texts if t.get_text().startswith("peak")}
    assert peaks == {
        f"peak {bytes_text(records[1].live_bytes)} (cpu)",
        f"peak {bytes_text(max(r.live_bytes for r in records[::2]))} (cuda:0)",
    }


def test_the_profile_views_timeline_draws_one_device(mixed_prof: profiler.profile) -> None:
    from tensorkit.notebook.profile_model import build_profile

    prof = mixed_prof
    timeline = build_profile(prof)["memory"]
    records = prof.records
    assert timeline["device"] == "cuda:0" and timeline["index"] == [0, 2]
    assert timeline["allocated"] == [records[0].live_bytes, records[2].live_bytes]
    assert "cuda:0 only (1 op on other devices not drawn)" in timeline["allocator"]
    with profiler.profile(record_memory=True) as cpu_only:
        tk.ones(3) * 3
    timeline = build_profile(cpu_only)["memory"]
    assert timeline["device"] == "cpu" and "not drawn" not in timeline["allocator"]


def test_a_composite_range_has_the_gpu_time_of_its_ops(fake: StandInCupy) -> None:
    x = cuda_leaf()
    target = tk.tensor(np.ones(4, dtype=np.float32), device="cuda")
    with profiler.profile() as prof:
        tk.nn.functional.mse_loss(x, target)
    rows = {(r.name, r.phase): r for r in prof.key_averages()}
    loss = rows[("mse_loss", "forward")]
    ops = [r for r in rows.values() if not r.is_range]
    assert loss.is_range and loss.device_time_total == sum(r.device_time_total for r in ops) > 0
    assert loss.self_device_time_total == loss.self_cuda_time_total == 0
    table = prof.key_averages().table()
    total_line = next(line for line in table.splitlines() if line.startswith("Self CUDA time"))
    assert format_time(sum(r.device_time_total for r in ops)) in total_line  # not counted twice
