"""Rank program: every collective and ReduceOp on every rank's data against a NumPy reference
(each rank can rebuild every other rank's data from its seed), for contiguous and
non-contiguous tensors of float, int and bool dtypes (bool: SUM and MAX are OR, PRODUCT
and MIN are AND); async Work; groups; point-to-point; misuse errors. Prints one
"ok <check>" line per check group; any failure raises (ending every rank)."""

from __future__ import annotations

import numpy as np

import tensorkit as tk
import tensorkit.distributed as dist
from tensorkit.distributed import ReduceOp

dist.init_process_group("mpi")
RANK, WORLD = dist.get_rank(), dist.get_world_size()
DTYPES = ["float16", "float32", "float64", "int8", "uint8", "int16", "int32", "int64", "bool"]
OPS = [ReduceOp.SUM, ReduceOp.AVG, ReduceOp.PRODUCT, ReduceOp.MIN, ReduceOp.MAX]
SHAPE = (3, 4)


def data(rank: int, dtype: str, shape: tuple = SHAPE, salt: int = 0) -> np.ndarray:
    """Rank ``rank``'s values: small integers, so sums and products are exact in every dtype."""
    gen = np.random.default_rng(1000 * rank + salt)
    if dtype == "bool":
        return gen.integers(0, 2, size=shape).astype(bool)
    low = 0 if dtype == "uint8" else -3
    return gen.integers(low, 4, size=shape).astype(dtype)


def tensor(values: np.ndarray, contiguous: bool) -> tk.Tensor:
    """A tensor holding ``values``: contiguous, or a transposed view of a contiguous one."""
    if contiguous:
        return tk.tensor(values)
    base = tk.tensor(np.ascontiguousarray(values.T))
    view = base.t()
    assert not view.is_contiguous()
    return view


def reference(op: ReduceOp, arrays: list[np.ndarray]) -> np.ndarray:
    stack = np.stack(arrays)
    dtype = arrays[0].dtype
    if op is ReduceOp.SUM:
        return stack.sum(0, dtype=dtype)
    if op is ReduceOp.PRODUCT:
        return stack.prod(0, dtype=dtype)
    if op is ReduceOp.MIN:
        return stack.min(0)
    if op is ReduceOp.MAX:
        return stack.max(0)
    total = stack.sum(0, dtype=dtype)
    return total // WORLD if dtype.kind in "iu" else total / np.asarray(WORLD, dtype)


def check(got: tk.Tensor, want: np.ndarray, what: str) -> None:
    array = got.numpy()
    if array.dtype != want.dtype or not np.array_equal(array, want):
        raise AssertionError(f"rank {RANK} {what}: got {array!r}, want {want!r}")


def reductions() -> None:
    for dtype in DTYPES:
        everyone = [data(r, dtype) for r in range(WORLD)]
        for op in OPS:
            if dtype == "bool" and op is ReduceOp.AVG:
                message = "all_reduce does not support ReduceOp.AVG on bool tensors"
                flags = tk.tensor(everyone[RANK])
                expect(ValueError, message, lambda t=flags: dist.all_reduce(t, op=ReduceOp.AVG))
                continue
            want = reference(op, everyone)
            for contiguous in (True, False):
                what = f"{dtype} {op.name} contiguous={contiguous}"
                t = tensor(everyone[RANK], contiguous)
                dist.all_reduce(t, op=op)
                check(t, want, f"all_reduce {what}")
                t = tensor(everyone[RANK], contiguous)
                dist.reduce(t, dst=WORLD - 1, op=op)
                check(t, want if RANK == WORLD - 1 else everyone[RANK], f"reduce {what}")
                out = tensor(np.zeros(SHAPE, dtype), contiguous)
                rows = [data(r, dtype, salt=7) for r in range(WORLD)]  # rank r's input list
                inputs = [tk.tensor(rows[r]) for r in range(WORLD)]
                parts = [data(src, dtype, salt=RANK + 11) for src in range(WORLD)]
                dist.reduce_scatter(
                    out, [tk.tensor(data(RANK, dtype, salt=d + 11)) for d in range(WORLD)], op=op
                )
                check(out, reference(op, parts), f"reduce_scatter {what}")
                del inputs
                big = [data(r, dtype, shape=(WORLD * 3, 4), salt=5) for r in range(WORLD)]
                out = tensor(np.zeros(SHAPE, dtype), contiguous)
                dist.reduce_scatter_tensor(out, tk.tensor(big[RANK]), op=op)
                check(
                    out,
                    reference(op, [b[3 * RANK : 3 * RANK + 3] for b in big]),
                    f"reduce_scatter_tensor {what}",
                )
    print("ok reductions", flush=True)


def data_movement() -> None:
    for dtype in DTYPES:
        everyone = [data(r, dtype) for r in range(WORLD)]
        for contiguous in (True, False):
            what = f"{dtype} contiguous={contiguous}"
            t = tensor(everyone[RANK], contiguous)
            dist.broadcast(t, src=1)
            check(t, everyone[1], f"broadcast {what}")
            outs = [tensor(np.zeros(SHAPE, dtype), contiguous) for _ in range(WORLD)]
            dist.all_gather(outs, tensor(everyone[RANK], contiguous))
            for r in range(WORLD):
                check(outs[r], everyone[r], f"all_gather {what} [{r}]")
            out = tk.zeros(WORLD * 3, 4, dtype=getattr(tk, dtype))
            dist.all_gather_into_tensor(out, tensor(everyone[RANK], contiguous))
            check(out, np.concatenate(everyone), f"all_gather_into_tensor {what}")
            stacked = tk.zeros(WORLD, 3, 4, dtype=getattr(tk, dtype))
            dist.all_gather_into_tensor(stacked, tk.tensor(everyone[RANK]))
            check(stacked, np.stack(everyone), f"all_gather_into_tensor stacked {what}")
            dst = WORLD - 1
            gathered = [tensor(np.zeros(SHAPE, dtype), contiguous) for _ in range(WORLD)]
            dist.gather(
                tensor(everyone[RANK], contiguous), gathered if dst == RANK else None, dst=dst
            )
            if dst == RANK:
                for r in range(WORLD):
                    check(gathered[r], everyone[r], f"gather {what} [{r}]")
            pieces = [data(0, dtype, salt=20 + r) for r in range(WORLD)]
            got = tensor(np.zeros(SHAPE, dtype), contiguous)
            dist.scatter(got, [tk.tensor(p) for p in pieces] if RANK == 0 else None, src=0)
            check(got, pieces[RANK], f"scatter {what}")
            rows = [data(r, dtype, shape=(WORLD * 2, 3), salt=30) for r in range(WORLD)]
            out = tensor(np.zeros((WORLD * 2, 3), dtype), contiguous)
            dist.all_to_all_single(out, tk.tensor(rows[RANK]))
            check(
                out,
                np.concatenate([rows[r][2 * RANK : 2 * RANK + 2] for r in range(WORLD)]),
                f"all_to_all_single {what}",
            )
    # uneven splits: rank r sends r + 1 + d rows to rank d
    sizes = [[r + 1 + d for d in range(WORLD)] for r in range(WORLD)]
    rows = [data(r, "int64", shape=(sum(sizes[r]), 2), salt=40) for r in range(WORLD)]
    mine = [sizes[src][RANK] for src in range(WORLD)]
    out = tk.zeros(sum(mine), 2, dtype=tk.int64)
    dist.all_to_all_single(
        out, tk.tensor(rows[RANK]), output_split_sizes=mine, input_split_sizes=sizes[RANK]
    )
    want = []
    for src in range(WORLD):
        start = sum(sizes[src][:RANK])
        want.append(rows[src][start : start + sizes[src][RANK]])
    check(out, np.concatenate(want), "all_to_all_single uneven")
    print("ok data movement", flush=True)


def async_and_point_to_point() -> None:
    t = tk.ones(1000) * (RANK + 1)
    work = dist.all_reduce(t, async_op=True)
    assert isinstance(work, dist.Work)
    assert work.wait() is True and work.is_completed()
    check(t, np.full(1000, WORLD * (WORLD + 1) / 2, np.float32), "async all_reduce")
    assert dist.barrier(async_op=True).wait()
    nxt, prev = (RANK + 1) % WORLD, (RANK - 1) % WORLD
    got = tk.zeros(5, dtype=tk.int32)
    receive = dist.irecv(got, src=prev, tag=3)
    send = dist.isend(tk.arange(5, dtype=tk.int32) + RANK, dst=nxt, tag=3)
    send.wait()
    receive.wait()
    check(got, np.arange(5, dtype=np.int32) + prev, "isend/irecv ring")
    if RANK == 0:
        senders = set()
        for _ in range(WORLD - 1):
            buf = tensor(np.zeros(SHAPE, np.float64), contiguous=False)
            sender = dist.recv(buf)  # from any rank
            check(buf, data(sender, "float64"), f"recv from any source ({sender})")
            senders.add(sender)
        assert senders == set(range(1, WORLD)), senders
    else:
        dist.send(tk.tensor(data(RANK, "float64")), dst=0)
    print("ok async and point to point", flush=True)


def groups() -> None:
    pair = dist.new_group([0, WORLD - 1])
    if RANK in (0, WORLD - 1):
        assert dist.get_world_size(pair) == 2 and dist.get_rank(pair) == (0 if RANK == 0 else 1)
        t = tk.tensor([float(RANK)])
        dist.all_reduce(t, group=pair)
        check(t, np.array([WORLD - 1], np.float32), "all_reduce in a group")
        t = tk.tensor([float(RANK)])
        dist.broadcast(t, src=WORLD - 1, group=pair)
        check(t, np.array([WORLD - 1], np.float32), "broadcast from a global rank in a group")
        dist.destroy_process_group(pair)
    else:
        assert pair is dist.GroupMember.NON_GROUP_MEMBER
        assert dist.get_rank(pair) == -1 and dist.get_world_size(pair) == -1
    assert dist.get_process_group_ranks(None) == list(range(WORLD))
    print("ok groups", flush=True)


def expect(error: type, text: str, call: object) -> None:
    try:
        call()  # type: ignore[operator]
    except error as raised:
        assert text in str(raised), f"{text!r} not in {str(raised)!r}"
    else:
        raise AssertionError(f"expected {error.__name__}: {text}")


def misuse() -> None:
    t = tk.zeros(2, 3)
    expect(
        TypeError,
        "Expected parameter `tensor` of type tensorkit.Tensor",
        lambda: dist.all_reduce([t]),
    )
    expect(
        ValueError,
        "does not support ReduceOp.MAX on complex tensors",
        lambda: dist.all_reduce(tk.zeros(2, dtype=tk.complex64), op=ReduceOp.MAX),
    )
    expect(
        ValueError,
        f"must hold one tensor per rank of the group ({WORLD}), got 1",
        lambda: dist.all_gather([t], t),
    )
    expect(
        ValueError,
        "tensor_list[1] is float64[2, 3], but the tensor is float32[2, 3]",
        lambda: dist.all_gather([t, tk.zeros(2, 3, dtype=tk.float64), *[t] * (WORLD - 2)], t),
    )
    expect(
        ValueError,
        "output tensor size must be equal to world_size times input tensor size",
        lambda: dist.all_gather_into_tensor(t, t),
    )
    expect(
        ValueError,
        "input tensor must be the same size as output size times world size",
        lambda: dist.reduce_scatter_tensor(t, t),
    )
    expect(ValueError, "Must specify global_rank or group_rank", lambda: dist.broadcast(t))
    expect(
        ValueError, f"does not contain global rank {WORLD}", lambda: dist.broadcast(t, src=WORLD)
    )
    expect(
        ValueError,
        "Invalid destination rank: should not be the same as the rank of the current process.",
        lambda: dist.send(t, dst=RANK),
    )
    if RANK == 0:
        expect(
            ValueError,
            "Argument ``gather_list`` must be specified on destination rank.",
            lambda: dist.gather(t, None, dst=0),
        )
    else:
        expect(
            ValueError,
            "Argument ``gather_list`` must NOT be specified on non-destination ranks.",
            lambda: dist.gather(t, [t] * WORLD, dst=0),
        )
    expect(
        ValueError,
        "must divide evenly by the world size",
        lambda: dist.all_to_all_single(tk.zeros(WORLD + 1), tk.zeros(WORLD + 1)),
    )
    expect(
        ValueError,
        "trying to initialize the default process group twice!",
        lambda: dist.init_process_group("mpi"),
    )
    print("ok misuse", flush=True)


reductions()
data_movement()
async_and_point_to_point()
groups()
misuse()
dist.barrier()
dist.destroy_process_group()
assert not dist.is_initialized()
print(f"rank {RANK} of {WORLD}: all checks passed", flush=True)
