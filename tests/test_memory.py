"""tk.memory's accounting with profile(record_memory=True) (frees at the op they follow,
exact live and peak bytes, the totals read in the middle of a profile) and with
``tk.memory.track()``."""

from __future__ import annotations

import tensorkit as tk
import tensorkit.memory as tkmem
from tensorkit import profiler

N = 1000  # float64 elements: 8000-byte buffers
NBYTES = 8 * N


def memory_fields(prof: profiler.profile) -> list[tuple]:
    return [
        (e["alloc_bytes"], e["free_bytes"], e["live_bytes"], e["peak_bytes"]) for e in prof.events()
    ]


def drop_between_ops(read_totals: bool) -> tuple[int, list[tuple], list[int]]:
    """Ops on a factory tensor, dropping results between them; ``read_totals`` reads
    tk.memory's totals between the ops as well."""
    x = tk.ones(N, dtype=tk.float64)
    before = tkmem.memory_allocated()
    seen = []
    with profiler.profile(record_memory=True) as prof:
        a = x * 2  # op 0
        b = x * 3  # op 1
        if read_totals:
            seen.append(tkmem.memory_allocated())
        del a
        if read_totals:
            seen.append(tkmem.memory_allocated())
            seen.append(tkmem.memory_stats()["allocation.all.current"])
        c = x * 4  # op 2
        del b, c
        d = x + 1  # op 3
    fields = memory_fields(prof)
    del d
    return before, fields, seen


def test_frees_are_recorded_at_the_next_op_and_live_is_exact() -> None:
    before, fields, _ = drop_between_ops(read_totals=False)
    assert fields == [
        (NBYTES, 0, before + NBYTES, before + NBYTES),
        (NBYTES, 0, before + 2 * NBYTES, before + 2 * NBYTES),
        (NBYTES, NBYTES, before + 2 * NBYTES, before + 2 * NBYTES),  # a went before c came
        (NBYTES, 2 * NBYTES, before + NBYTES, before + 2 * NBYTES),
    ]
    assert tkmem.memory_allocated() == before


def test_reading_the_totals_mid_profile_changes_nothing() -> None:
    before, fields, seen = drop_between_ops(read_totals=True)
    assert fields == drop_between_ops(read_totals=False)[1]
    allocations = seen[2]
    assert seen[:2] == [before + 2 * NBYTES, before + NBYTES]
    assert allocations >= 1
    assert tkmem.memory_allocated() == before


def test_peak_follows_the_order_of_allocations_and_frees() -> None:
    x = tk.ones(N, dtype=tk.float64)
    before = tkmem.memory_allocated()
    tkmem.reset_peak_memory_stats()
    with profiler.profile(record_memory=True):
        a = x * 2
        del a  # freed before b exists: the peak is one buffer, not two
        b = x * 3
    assert tkmem.max_memory_allocated() == before + NBYTES
    with profiler.profile(record_memory=True):
        c = x * 4  # two alive at once
    assert tkmem.max_memory_allocated() == before + 2 * NBYTES
    del b, c
    assert tkmem.memory_allocated() == before
    assert tkmem.max_memory_allocated() == before + 2 * NBYTES


def test_reset_peak_in_the_middle_of_a_profile() -> None:
    x = tk.ones(N, dtype=tk.float64)
    before = tkmem.memory_allocated()
    with profiler.profile(record_memory=True) as prof:
        a = x * 2
        b = x * 3
        del a, b
        tkmem.reset_peak_memory_stats()
        assert tkmem.max_memory_allocated() == before
        c = x * 4
        assert tkmem.max_memory_allocated() == before + NBYTES
    # the profile's own peak is its running maximum, which the reset does not touch
    assert [f[3] for f in memory_fields(prof)] == [before + NBYTES] + [before + 2 * NBYTES] * 2
    del c
    assert tkmem.memory_allocated() == before
    assert tkmem.max_memory_allocated() == before + NBYTES


def test_frees_after_the_profile_are_subtracted_and_the_stats_agree() -> None:
    x = tk.ones(N, dtype=tk.float64)
    start = tkmem.memory_stats()
    with profiler.profile(record_memory=True):
        kept = [x * k for k in range(3)]
    del kept[0]
    stats = tkmem.memory_stats()
    assert stats["allocated_bytes.all.current"] == start["allocated_bytes.all.current"] + 2 * NBYTES
    assert stats["allocated_bytes.all.allocated"] - start["allocated_bytes.all.allocated"] == (
        3 * NBYTES
    )
    assert stats["allocated_bytes.all.freed"] - start["allocated_bytes.all.freed"] == NBYTES
    assert stats["allocation.all.allocated"] - start["allocation.all.allocated"] == 3
    assert stats["allocation.all.freed"] - start["allocation.all.freed"] == 1
    assert stats["allocation.all.current"] - start["allocation.all.current"] == 2
    del kept
    assert tkmem.memory_allocated() == start["allocated_bytes.all.current"]


def test_records_read_during_a_profile_and_nested_profiles() -> None:
    x = tk.ones(N, dtype=tk.float64)
    before = tkmem.memory_allocated()
    with profiler.profile(record_memory=True) as outer:
        a = x * 2
        with profiler.profile(record_memory=True) as inner:
            b = x * 3  # counted once, by the profile that observes it first (the outer)
            del a
        assert [r.free_bytes for r in outer.records] == [0, 0]  # read mid-profile
        c = x * 4
    assert memory_fields(inner) == [(0, 0, before + 2 * NBYTES, before + 2 * NBYTES)]
    assert memory_fields(outer) == [
        (NBYTES, 0, before + NBYTES, before + NBYTES),
        (NBYTES, 0, before + 2 * NBYTES, before + 2 * NBYTES),
        (NBYTES, NBYTES, before + 2 * NBYTES, before + 2 * NBYTES),
    ]
    del b, c
    assert tkmem.memory_allocated() == before
    assert len(tkmem._events) == 0  # no profile reads the history: it is not kept


def test_backward_gradients_are_counted_and_freed() -> None:
    x = tk.ones(N, dtype=tk.float64, requires_grad=True)
    before = tkmem.memory_allocated()
    with profiler.profile(record_memory=True) as prof:
        (x * 2).sum().backward()
    events = prof.events()
    assert sum(e["alloc_bytes"] for e in events) - sum(e["free_bytes"] for e in events) == (
        events[-1]["live_bytes"] - before
    )
    assert before + NBYTES <= tkmem.memory_allocated() <= events[-1]["live_bytes"]  # x.grad
    x.grad = None
    assert tkmem.memory_allocated() == before


def test_track_counts_a_buffer_once_until_it_is_freed() -> None:
    import numpy as np

    before = tkmem.memory_allocated()
    buffer = np.ones(N)
    assert not tkmem.is_counted(buffer)
    assert tkmem.count_buffer(buffer, "cpu") == NBYTES
    assert tkmem.is_counted(buffer) and tkmem.count_buffer(buffer, "cpu") == 0
    assert tkmem.memory_allocated() == before + NBYTES
    del buffer
    assert tkmem.memory_allocated() == before


# ------------------------------------------------------------------ tk.memory.track()
def test_track_counts_forward_outputs_and_their_frees() -> None:
    x = tk.ones(N, dtype=tk.float64)  # a factory tensor: not counted
    before = tkmem.memory_allocated()
    with tkmem.track():
        a = x * 2
        b = a + 1
        assert tkmem.memory_allocated() == before + 2 * NBYTES
        v = b[: N // 2]  # a view: no new buffer
        assert tkmem.memory_allocated() == before + 2 * NBYTES
        del a
        assert tkmem.memory_allocated() == before + NBYTES
    assert tk._state.observers == ()
    c = x * 3  # counting is off outside the block
    assert tkmem.memory_allocated() == before + NBYTES
    del b, v  # a buffer counted inside stays counted until freed, after the block too
    assert tkmem.memory_allocated() == before
    del c


def test_track_counts_backward_gradients_and_keeps_the_peak() -> None:
    w = tk.ones(N, dtype=tk.float64, requires_grad=True)
    before = tkmem.memory_allocated()
    tkmem.reset_peak_memory_stats()
    with tkmem.track():
        loss = (w * w).sum()
        loss.backward()
    grad_bytes = w.grad.nbytes
    # w * w (N floats), the sum (one float) and the gradients of backward: at least .grad
    assert tkmem.max_memory_allocated() >= before + NBYTES + grad_bytes
    stats = tkmem.memory_stats()
    assert stats["allocation.all.allocated"] >= 3
    del loss
    w.grad = None
    assert tkmem.memory_allocated() == before


def test_track_blocks_nest_and_decorate() -> None:
    x = tk.ones(N, dtype=tk.float64)
    before = tkmem.memory_allocated()

    @tkmem.track()
    def step() -> tk.Tensor:
        with tkmem.track():
            inner = x * 2
        return inner + 1  # the outer block still counts

    assert tk._state.observers == ()
    out = step()
    assert tk._state.observers == ()
    assert tkmem.memory_allocated() == before + NBYTES  # inner is freed: only out is alive
    del out
    assert tkmem.memory_allocated() == before


def test_track_and_a_memory_profile_count_each_buffer_once() -> None:
    x = tk.ones(N, dtype=tk.float64)
    before = tkmem.memory_allocated()
    with tkmem.track(), profiler.profile(record_memory=True) as prof:
        a = x * 2
    assert [e["alloc_bytes"] for e in prof.events()] == [NBYTES]
    assert tkmem.memory_allocated() == before + NBYTES
    del a
    assert tkmem.memory_allocated() == before
