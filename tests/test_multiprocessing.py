"""tk.multiprocessing: share_memory_(), tensors through queues and pipes by shared memory
(changes visible both ways, any start method), reference-counted block lifetime, Hogwild."""

from __future__ import annotations

import os
import queue
import signal
import time
from multiprocessing.reduction import ForkingPickler

import numpy as np
import pytest

import tensorkit as tk
import tensorkit.multiprocessing as tkmp
from tensorkit.multiprocessing.sharing import reduce_tensor

tkmp.install()

TIMEOUT = 30  # seconds any single wait in these tests may take


def blocks(pids) -> set[str]:
    prefixes = tuple(f"tkmp{pid}_" for pid in pids)
    return {name for name in os.listdir("/dev/shm") if name.startswith(prefixes)}


@pytest.fixture
def started():
    """Processes a test starts; afterwards none may be alive and no block of theirs or ours
    may remain."""
    processes: list = []
    yield processes
    for process in processes:
        process.join(TIMEOUT)
        assert process.exitcode == 0
    assert tkmp.active_children() == []
    assert blocks([os.getpid(), *(p.pid for p in processes)]) == set()


def run(target, *args, context: str = "fork", started: list):
    process = tkmp.get_context(context).Process(target=target, args=args)
    process.start()
    started.append(process)
    return process


# ------------------------------------------------------------------- in one process


def test_api_and_install_are_idempotent():
    tkmp.install()
    assert tk.Tensor.share_memory_ is tkmp.share_memory_
    assert ForkingPickler._extra_reducers[tk.Tensor] is reduce_tensor
    for name in ("Process", "Queue", "Pipe", "Pool", "get_context", "set_start_method", "Event"):
        assert name in tkmp.__all__ and hasattr(tkmp, name)


def test_share_memory_in_place(started):
    t = tk.arange(6.0).reshape(2, 3)  # a view: its base moves too and stays aliased
    base, before = t._base, id(t)
    assert not t.is_shared()
    assert t.share_memory_() is t and id(t) == before
    assert t.is_shared() and base.is_shared() and t[1].is_shared()
    assert t.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]] and t.dtype == tk.float32
    base.add_(1)
    assert t.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    data = t._data
    t.share_memory_()
    assert t._data is data  # already shared: nothing moves
    assert len(blocks([os.getpid()])) == 1
    del t, base, data
    assert blocks([os.getpid()]) == set()  # freed as soon as the last array on it is


def test_shared_leaf_keeps_autograd():
    w = tk.randn(3, requires_grad=True).share_memory_()
    assert w.is_leaf and w.requires_grad and w.is_shared()
    (w * w).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 2 * w.detach().numpy())


def test_pipe_within_one_process_maps_the_same_block(started):
    sender, receiver = tkmp.Pipe()
    t = tk.zeros(3)
    sender.send(t)  # moves t into shared memory
    u = receiver.recv()
    assert t.is_shared() and u.is_shared() and u is not t
    u.add_(2)
    assert t.tolist() == [2.0, 2.0, 2.0]
    view = t[1:]
    sender.send(view)
    v = receiver.recv()
    v.fill_(9)
    assert t.tolist() == [2.0, 9.0, 9.0]
    sender.close()
    receiver.close()


def test_non_leaf_tensor_is_refused():
    w = tk.ones(2, requires_grad=True)
    sender, receiver = tkmp.Pipe()
    with pytest.raises(RuntimeError, match="graph leaves"):
        sender.send(w * 2)
    sender.close()
    receiver.close()


def test_unlink_removes_a_block_its_creator_left_empty():
    # A worker killed between shm_open and ftruncate leaves a zero-byte block, which cannot
    # be mapped; the DataLoader's cleanup must still remove it (CI once saw this).
    from _posixshmem import shm_open

    from tensorkit.multiprocessing import _shm

    name = f"tkdl{os.getpid()}_empty"
    os.close(shm_open("/" + name, os.O_CREAT | os.O_EXCL | os.O_RDWR, mode=0o600))
    assert _shm.leftovers(name) == [name]
    _shm.unlink(name)
    assert _shm.leftovers(name) == []
    _shm.unlink(name)  # already gone: nothing to do


# --------------------------------------------------------------- across processes


def add_then_report(inbox, outbox):
    x = inbox.get(timeout=TIMEOUT)
    x.add_(1)
    outbox.put("added")
    assert inbox.get(timeout=TIMEOUT) == "check"
    outbox.put(x.tolist())


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_queue_changes_visible_both_ways(context, started):
    ctx = tkmp.get_context(context)
    inbox, outbox = ctx.Queue(), ctx.Queue()
    t = tk.zeros(4).share_memory_()
    run(add_then_report, inbox, outbox, context=context, started=started)
    inbox.put(t)
    assert outbox.get(timeout=TIMEOUT) == "added"
    assert t.tolist() == [1.0, 1.0, 1.0, 1.0]  # the child's change, seen here
    t.mul_(5)
    inbox.put("check")
    assert outbox.get(timeout=TIMEOUT) == [5.0, 5.0, 5.0, 5.0]  # ours, seen there
    started[0].join(TIMEOUT)
    del t


def fill_through_pipe(conn):
    x = conn.recv()
    with tk.no_grad():
        x.fill_(x.numel())
    conn.send(x.requires_grad)
    conn.close()


def test_pipe_to_child(started):
    parent_end, child_end = tkmp.Pipe()
    w = tk.zeros(5, requires_grad=True)
    run(fill_through_pipe, child_end, started=started)
    parent_end.send(w)
    assert parent_end.poll(TIMEOUT) and parent_end.recv() is True  # the flag travelled too
    assert w.tolist() == [5.0] * 5
    parent_end.close()
    started[0].join(TIMEOUT)
    del w


def send_and_forget(outbox):
    t = tk.full((3,), 7.0)
    outbox.put(t)
    outbox.put(t[1:])
    del t  # the block must outlive this process: the messages hold references


def test_sender_may_drop_and_exit_before_the_receiver_maps(started):
    outbox = tkmp.Queue()
    child = run(send_and_forget, outbox, started=started)
    child.join(TIMEOUT)
    assert child.exitcode == 0
    whole, tail = outbox.get(timeout=TIMEOUT), outbox.get(timeout=TIMEOUT)
    assert whole.tolist() == [7.0, 7.0, 7.0] and whole.is_shared()
    tail.fill_(1)
    assert whole.tolist() == [7.0, 1.0, 1.0]
    assert len(blocks([child.pid])) == 1
    del whole, tail


def bump(x):
    x.add_(1)
    return x.sum().item()


def test_pool_map_shares_tensors(started):
    tensors = [tk.zeros(2) for _ in range(3)]
    with tkmp.get_context("fork").Pool(2) as pool:
        sums = pool.map(bump, tensors)
    assert sums == [2.0, 2.0, 2.0]
    assert [t.tolist() for t in tensors] == [[1.0, 1.0]] * 3
    del tensors


# ---------------------------------------------------------------------------- Hogwild


def mse(x, w, b, y) -> float:
    with tk.no_grad():
        return ((x @ w + b - y) ** 2).mean().item()


def hogwild_train(rank, w, b, steps_done, x, y, steps, lr, errors):
    try:
        for _ in range(steps):
            w.grad = b.grad = None
            loss = ((x @ w + b - y) ** 2).mean()
            loss.backward()
            with tk.no_grad():
                w.sub_(lr * w.grad)
                b.sub_(lr * b.grad)
                steps_done[rank] += 1
    except BaseException as error:  # reported, so the test can show it
        errors.put(repr(error))
        raise


def test_hogwild_two_processes_train_shared_parameters(started):
    gen = tk.Generator().manual_seed(0)
    x = tk.randn(128, 3, generator=gen)
    true_w, true_b = tk.tensor([[1.0], [-2.0], [3.0]]), 0.5
    y = x @ true_w + true_b
    w = tk.zeros(3, 1, requires_grad=True).share_memory_()
    b = tk.zeros(1, requires_grad=True).share_memory_()
    steps_done = tk.zeros(2, dtype=tk.int64).share_memory_()

    start_loss = mse(x, w, b, y)
    errors = tkmp.Queue()
    for rank in range(2):
        shard = slice(rank * 64, (rank + 1) * 64)
        run(
            hogwild_train, rank, w, b, steps_done, x[shard], y[shard], 150, 0.05, errors,
            started=started,
        )  # fmt: skip
    for process in started:
        process.join(TIMEOUT)
    try:
        failure = errors.get(timeout=0.1)
    except queue.Empty:
        failure = None
    assert failure is None
    assert steps_done.tolist() == [150, 150]  # both processes ran every step on shared memory
    assert mse(x, w, b, y) < start_loss * 1e-3
    np.testing.assert_allclose(w.detach().numpy().ravel(), [1.0, -2.0, 3.0], atol=0.05)
    np.testing.assert_allclose(b.item(), 0.5, atol=0.05)
    del w, b, steps_done


# ------------------------------------------------------------- spawn / start_processes


def write_index(i, t):
    t[i] = i + 1


def fail_at_one(i):
    if i == 1:
        raise ValueError(f"bad {i}")


def exit_three(i):
    os._exit(3)


def kill_self(i):
    os.kill(os.getpid(), signal.SIGKILL)


def finish(context) -> None:
    """Join a ProcessContext, never waiting more than TIMEOUT in all."""
    deadline = time.monotonic() + TIMEOUT
    while not context.join(timeout=1):
        assert time.monotonic() < deadline, "processes did not finish in time"


def test_spawn_runs_fn_with_its_index_and_shares_tensors():
    t = tk.zeros(3).share_memory_()
    assert tkmp.spawn(write_index, args=(t,), nprocs=3) is None
    assert t.tolist() == [1.0, 2.0, 3.0]
    context = tkmp.start_processes(write_index, (t,), nprocs=2, join=False, start_method="fork")
    assert isinstance(context, tkmp.ProcessContext) and len(context.pids()) == 2
    finish(context)
    assert context.join() is True and tkmp.active_children() == []
    del t


def test_spawn_start_method_warns_as_torch():
    with pytest.warns(FutureWarning, match="only supports start_method=spawn \\(got: fork\\)"):
        context = tkmp.spawn(fail_at_one, nprocs=1, join=False, start_method="fork")
    finish(context)


def test_start_processes_raises_the_childs_error_with_its_traceback():
    context = tkmp.start_processes(fail_at_one, nprocs=2, join=False, start_method="fork")
    with pytest.raises(tkmp.ProcessRaisedException) as caught:
        finish(context)
    error = caught.value
    assert str(error).startswith("\n\n-- Process 1 terminated with the following error:\n")
    assert "Traceback" in str(error) and "ValueError: bad 1" in str(error)
    assert error.error_index == 1 and error.error_pid == context.pids()[1]
    assert tkmp.active_children() == []


@pytest.mark.parametrize(
    ("fn", "message", "code", "name"),
    [
        (exit_three, "process 0 terminated with exit code 3", 3, None),
        (kill_self, "process 0 terminated with signal SIGKILL", -9, "SIGKILL"),
    ],
    ids=["exit-code", "signal"],
)
def test_start_processes_reports_exit_codes_and_signals(fn, message, code, name):
    context = tkmp.start_processes(fn, nprocs=1, join=False, start_method="fork")
    with pytest.raises(tkmp.ProcessExitedException, match=f"^{message}$") as caught:
        finish(context)
    assert (caught.value.exit_code, caught.value.signal_name) == (code, name)
    assert caught.value.error_index == 0
    assert isinstance(caught.value, tkmp.ProcessException)


def test_sharing_strategies():
    assert tkmp.get_all_sharing_strategies() == {"file_system"}
    assert tkmp.get_sharing_strategy() == "file_system"
    tkmp.set_sharing_strategy("file_system")
    with pytest.raises(AssertionError, match="sharing strategy 'file_descriptor' is not avail"):
        tkmp.set_sharing_strategy("file_descriptor")
