"""tk.utils.data: datasets, samplers, collation (against PyTorch where installed), and the
DataLoader in one process and with worker processes, including worker faults and cleanup."""

from __future__ import annotations

import gc
import mmap
import multiprocessing
import os
import random
import signal
import time
from collections import namedtuple
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tensorkit as tk
import tensorkit.multiprocessing as tkmp
from tensorkit.utils.data import (
    BatchSampler,
    ChainDataset,
    ConcatDataset,
    DataLoader,
    Dataset,
    DistributedSampler,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    StackDataset,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    collate,
    default_collate,
    default_collate_fn_map,
    default_convert,
    get_worker_info,
    random_split,
)
from tensorkit.utils.data.worker import numpy_seed

tkmp.install()

Point = namedtuple("Point", "x y")


# ----------------------------------------------------------------------------- helpers
# Datasets live at module level so that 'spawn' workers can unpickle them.


class Squares(Dataset):
    """Sample i is tensor([i, i*i]); optional faults at marked indices."""

    def __init__(self, n: int = 10, fault: str | None = None, at: int = -1) -> None:
        self.n, self.fault, self.at = n, fault, at

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> tk.Tensor:
        if index == self.at:
            if self.fault == "raise":
                raise ValueError(f"bad sample {index}")
            if self.fault == "keyerror":
                raise KeyError("missing")
            if self.fault == "two-args":
                raise NeedsTwoArgsError(index, "x")
            if self.fault == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            if self.fault == "exit":
                os._exit(3)
            if self.fault == "hang":
                time.sleep(30)
            if self.fault == "slow":
                time.sleep(1.0)
            if self.fault == "interrupt":
                os.kill(os.getppid(), signal.SIGINT)
                time.sleep(10)
        return tk.tensor([index, index * index])


class NeedsTwoArgsError(Exception):
    def __init__(self, a: int, b: str) -> None:
        super().__init__(a, b)


class Stream(IterableDataset):
    """range(n), each worker taking every num_workers-th item from its id."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))


class Probe(Dataset):
    """Reports, from inside the worker, what the worker knows and its first random draws."""

    def __len__(self) -> int:
        return 4

    def __getitem__(self, index: int) -> dict:
        info = get_worker_info()
        return {
            "index": index,
            "id": info.id,
            "num_workers": info.num_workers,
            "seed": info.seed,
            "dataset_is_probe": type(info.dataset) is Probe,
            "repr": repr(info),
            "tk": tk.rand(1).item(),
            "py": random.random(),
            "np": float(np.random.rand()),
            "pid": os.getpid(),
            "init": _INIT_MARK,
        }


_INIT_MARK = None


def mark_init(worker_id: int) -> None:
    global _INIT_MARK
    _INIT_MARK = f"init {worker_id}"


class Mixed(Dataset):
    """Samples mixing tensors, strings, arrays of odd layouts and empty arrays."""

    def __len__(self) -> int:
        return 6

    def __getitem__(self, index: int) -> dict:
        return {
            "x": tk.full((3, 2), float(index)),
            "name": f"item{index}",
            "strided": np.arange(12.0).reshape(3, 4)[:, ::2] + index,
            "empty": np.zeros((0, 2), dtype=np.float32),
            "point": Point(index, float(index)),
        }


def shm_segments() -> set[str]:
    """This test process's DataLoader and shared-tensor blocks in /dev/shm."""
    mine = (f"tkdl{os.getpid()}_", f"tkmp{os.getpid()}_")
    return {name for name in os.listdir("/dev/shm") if name.startswith(mine)}


@pytest.fixture
def no_leaks():
    """Fail unless the test leaves no worker process and no shared-memory block behind."""
    children, segments = set(multiprocessing.active_children()), shm_segments()
    yield
    assert set(multiprocessing.active_children()) - children == set()
    assert shm_segments() - segments == set()


def torch_or_skip():
    return pytest.importorskip("torch")


def as_plain(value):
    """Tensors of either library as (dtype name, shape, values); containers with type names."""
    if hasattr(value, "dtype") and hasattr(value, "tolist") and not isinstance(value, np.ndarray):
        return ("tensor", str(value.dtype).split(".")[-1], tuple(value.shape), value.tolist())
    if isinstance(value, dict):
        return ("dict", {key: as_plain(v) for key, v in value.items()})
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return (type(value).__name__, [as_plain(v) for v in value])
    if isinstance(value, list | tuple):
        return (type(value).__name__, [as_plain(v) for v in value])
    if isinstance(value, np.ndarray):
        return ("ndarray", value.dtype.str, value.tolist())
    return (type(value).__name__, value)


def backing(tensor: tk.Tensor) -> object:
    """The object at the bottom of a CPU tensor's memory."""
    base = tensor.numpy()
    while isinstance(base, np.ndarray):
        base = base.base
    return base


# ---------------------------------------------------------------------------- datasets


def test_tensor_dataset():
    x, y = tk.arange(12.0).reshape(4, 3), tk.arange(4)
    dataset = TensorDataset(x, y)
    assert len(dataset) == 4
    a, b = dataset[2]
    assert a.tolist() == [6.0, 7.0, 8.0] and b.item() == 2
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(x, tk.arange(5))


def test_concat_dataset_indexing_and_errors():
    dataset = ConcatDataset([list(range(3)), list(range(10, 15))])
    assert len(dataset) == 8 and dataset.cumulative_sizes == [3, 8]
    assert [dataset[i] for i in range(8)] == [0, 1, 2, 10, 11, 12, 13, 14]
    assert dataset[-1] == 14 and dataset[-8] == 0
    with pytest.raises(ValueError, match="absolute value of index should not exceed"):
        dataset[-9]
    with pytest.raises(AssertionError, match="should not be an empty iterable"):
        ConcatDataset([])
    with pytest.raises(AssertionError, match="does not support IterableDataset"):
        ConcatDataset([Stream(2)])
    added = Squares(2) + Squares(3)
    assert isinstance(added, ConcatDataset) and len(added) == 5


def test_chain_dataset():
    chained = Stream(3) + Stream(2)
    assert isinstance(chained, ChainDataset)
    assert list(chained) == [0, 1, 2, 0, 1]
    with pytest.raises(AssertionError, match="only supports IterableDataset"):
        list(ChainDataset([Squares(2)]))


def test_subset_and_getitems():
    class Batched(Dataset):
        def __getitems__(self, indices):
            return [("batched", i) for i in indices]

    subset = Subset(Batched(), [5, 7, 9])
    assert len(subset) == 3 and subset.__getitems__([0, 2]) == [("batched", 5), ("batched", 9)]
    plain = Subset(list(range(10)), [4, 2])
    assert plain[1] == 2 and plain.__getitems__([0, 1]) == [4, 2]

    class OnlyGetitem(Subset):
        def __getitem__(self, index):
            return 0

    with pytest.raises(NotImplementedError, match="overrides __getitem__ but not __getitems__"):
        OnlyGetitem(list(range(3)), [0])


class Batched(Dataset):
    """Fetches whole batches: sample i is ("batched", i)."""

    def __len__(self) -> int:
        return 4

    def __getitem__(self, index):
        return ("single", index)

    def __getitems__(self, indices):
        return [("batched", i) for i in indices]


def test_stack_dataset():
    stacked = StackDataset(list(range(4)), Batched())
    assert len(stacked) == 4 and stacked[1] == (1, ("single", 1))
    assert stacked.__getitems__([0, 3]) == [(0, ("batched", 0)), (3, ("batched", 3))]
    named = StackDataset(x=list("abcd"), y=Batched())
    assert named[2] == {"x": "c", "y": ("single", 2)}
    assert named.__getitems__([1]) == [{"x": "b", "y": ("batched", 1)}]
    batches = list(DataLoader(named, batch_size=2))
    assert batches[1]["x"] == ["c", "d"] and batches[1]["y"][1].tolist() == [2, 3]


def _assert_raises_like_torch(
    theirs: Callable[[], Any], ours: Callable[[], Any], expected: type[Exception] = Exception
) -> None:
    """``ours()`` raises the exception type and message that ``theirs()`` (PyTorch) raises."""
    with pytest.raises(expected) as raised:
        theirs()
    with pytest.raises(type(raised.value)) as got:
        ours()
    assert str(got.value) == str(raised.value)


@pytest.mark.torch
@pytest.mark.parametrize(
    "make",
    [
        lambda lib: lib.StackDataset(),
        lambda lib: lib.StackDataset([1, 2], [1]),
        lambda lib: lib.StackDataset(a=[1, 2], b=[1]),
        lambda lib: lib.StackDataset([1], b=[1]),
    ],
    ids=["none", "args-mismatch", "kwargs-mismatch", "both"],
)
def test_stack_dataset_errors_match_torch(make):
    torch = torch_or_skip()
    _assert_raises_like_torch(lambda: make(torch.utils.data), lambda: make(tk.utils.data))


def test_random_split_lengths_and_determinism():
    parts = random_split(range(10), [3, 7], generator=tk.Generator().manual_seed(1))
    again = random_split(range(10), [3, 7], generator=tk.Generator().manual_seed(1))
    assert [len(p) for p in parts] == [3, 7]
    assert [list(p) for p in parts] == [list(p) for p in again]
    assert sorted(list(parts[0]) + list(parts[1])) == list(range(10))
    with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
        random_split(range(10), [3, 8])
    with pytest.raises(ValueError, match="Fraction at index 1 is not between 0 and 1"):
        random_split(range(10), [0.5, 1.5, -1.0])
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        random_split(range(2), [0.9, 0.1])


@pytest.mark.torch
def test_random_split_fraction_sizes_match_torch():
    torch = torch_or_skip()
    for n, fractions in [(10, [0.33, 0.33, 0.34]), (7, [0.5, 0.5]), (11, [0.1, 0.2, 0.7])]:
        ours = [len(s) for s in random_split(range(n), fractions)]
        theirs = [len(s) for s in torch.utils.data.random_split(range(n), fractions)]
        assert ours == theirs


# ---------------------------------------------------------------------------- samplers


def test_sequential_and_subset_random_samplers():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
    sampler = SubsetRandomSampler([10, 20, 30, 40], generator=tk.Generator().manual_seed(0))
    drawn = list(sampler)
    assert sorted(drawn) == [10, 20, 30, 40] and len(sampler) == 4


def test_random_sampler():
    sampler = RandomSampler(range(10), generator=tk.Generator().manual_seed(3))
    first = list(sampler)
    assert sorted(first) == list(range(10)) and first != list(range(10))
    assert list(RandomSampler(range(10), generator=tk.Generator().manual_seed(3))) == first
    assert list(sampler) != first  # the generator moved on: a new order each pass
    longer = list(RandomSampler(range(4), num_samples=10, generator=tk.Generator()))
    assert len(longer) == 10 and sorted(longer[:4]) == [0, 1, 2, 3]
    drawn = list(RandomSampler(range(5), replacement=True, num_samples=70))
    assert len(drawn) == 70 and set(drawn) <= set(range(5))
    tk.manual_seed(11)
    unseeded = list(RandomSampler(range(8)))
    tk.manual_seed(11)
    assert list(RandomSampler(range(8))) == unseeded


def test_weighted_random_sampler():
    sampler = WeightedRandomSampler([0.0, 1.0, 0.0, 2.0], 50, generator=tk.Generator())
    drawn = list(sampler)
    assert len(drawn) == 50 and set(drawn) <= {1, 3}
    distinct = list(WeightedRandomSampler([1.0, 1.0, 1.0, 1.0], 4, replacement=False))
    assert sorted(distinct) == [0, 1, 2, 3]


def test_batch_sampler():
    assert list(BatchSampler(range(7), 3, False)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(BatchSampler(range(7), 3, True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(BatchSampler(range(7), 3, False)) == 3
    assert len(BatchSampler(range(7), 3, True)) == 2


@pytest.mark.torch
@pytest.mark.parametrize(
    "make",
    [
        lambda lib: lib.RandomSampler(range(3), replacement=1),
        lambda lib: lib.RandomSampler(range(3), num_samples=0),
        lambda lib: lib.BatchSampler(range(3), 0, False),
        lambda lib: lib.BatchSampler(range(3), True, False),
        lambda lib: lib.BatchSampler(range(3), 2, 1),
        lambda lib: lib.WeightedRandomSampler([1.0], 0),
        lambda lib: lib.WeightedRandomSampler([1.0], 2, replacement=1),
        lambda lib: lib.WeightedRandomSampler([[1.0, 2.0]], 2),
    ],
)
def test_sampler_errors_match_torch(make):
    torch = torch_or_skip()
    _assert_raises_like_torch(lambda: make(torch.utils.data), lambda: make(tk.utils.data))


@pytest.mark.torch
@pytest.mark.parametrize("n", [0, 1, 7, 8, 10])
@pytest.mark.parametrize("replicas", [1, 3, 4])
@pytest.mark.parametrize("drop_last", [False, True])
def test_distributed_sampler_matches_torch_without_shuffle(n, replicas, drop_last):
    torch = torch_or_skip()
    for rank in range(replicas):
        kwargs = {"num_replicas": replicas, "rank": rank, "shuffle": False, "drop_last": drop_last}
        theirs = torch.utils.data.DistributedSampler(range(n), **kwargs)
        ours = DistributedSampler(range(n), **kwargs)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)
        assert (ours.num_samples, ours.total_size) == (theirs.num_samples, theirs.total_size)


def test_distributed_sampler_shuffles_by_seed_and_epoch():
    def shards(epoch=0, seed=0, drop_last=False):
        samplers = [
            DistributedSampler(range(10), 3, r, seed=seed, drop_last=drop_last) for r in range(3)
        ]
        for sampler in samplers:
            sampler.set_epoch(epoch)
        return [list(sampler) for sampler in samplers]

    first = shards()
    assert [len(shard) for shard in first] == [4, 4, 4]
    assert {i for shard in first for i in shard} == set(
        range(10)
    )  # two indices repeated as padding
    assert shards() == first and shards(epoch=1) != first and shards(seed=1) != first
    dropped = [i for shard in shards(drop_last=True) for i in shard]
    assert len(dropped) == len(set(dropped)) == 9
    loader = DataLoader(list(range(10)), batch_size=2, sampler=DistributedSampler(range(10), 2, 1))
    assert len(loader) == 3


@pytest.mark.torch
def test_distributed_sampler_errors():
    torch = torch_or_skip()
    with pytest.raises(ValueError) as theirs:
        torch.utils.data.DistributedSampler(range(4), num_replicas=2, rank=2)
    with pytest.raises(ValueError) as ours:
        DistributedSampler(range(4), num_replicas=2, rank=2)
    assert str(ours.value) == str(theirs.value)
    with pytest.raises(
        ValueError, match=r"Invalid rank -1, rank should be in the interval \[0, 1\]"
    ):
        DistributedSampler(range(4), num_replicas=2, rank=-1)
    with pytest.raises(RuntimeError, match=r"^Requires distributed package to be available$"):
        DistributedSampler(range(4))


# ----------------------------------------------------------------------------- collate


def nested_samples(lib):
    return [
        {
            "tensor": lib.tensor([i, i + 1.0]),
            "array": np.array([i, 2 * i], dtype=np.int16),
            "np_scalar": np.float32(i / 2),
            "float": i * 0.1,
            "int": i,
            "bool": i % 2 == 0,
            "str": f"s{i}",
            "bytes": b"x",
            "point": Point(i, lib.tensor(i)),
            "list": [i, (i * 1.5, np.int8(i))],
            "strings": [f"s{i}", ("t", b"u")],
            "nested": {"a": [np.ones((2, 2)) * i]},
        }
        for i in range(3)
    ]


@pytest.mark.torch
def test_default_collate_matches_torch_on_nested_structures():
    torch = torch_or_skip()
    ours = default_collate(nested_samples(tk))
    theirs = torch.utils.data.default_collate(nested_samples(torch))
    assert as_plain(ours) == as_plain(theirs)
    assert ours["float"].dtype == tk.float64 and ours["int"].dtype == tk.int64
    assert ours["float"].tolist() == [0.0, 0.1, 0.2]  # exactly, not rounded through float32


@pytest.mark.torch
def test_default_convert_matches_torch():
    torch = torch_or_skip()
    data = {"a": np.arange(3, dtype=np.int32), "b": (np.float64(2.5), "s"), "c": [1, 2]}
    data["p"] = Point(np.ones(2), 3)
    data["strings"] = np.array(["x", "y"])
    ours = default_convert(data)
    theirs = torch.utils.data.default_convert(data)
    assert as_plain(ours) == as_plain(theirs)


@pytest.mark.torch
@pytest.mark.parametrize(
    "batch",
    [[[1, 2], [3]], [object(), object()], [np.array(["a"]), np.array(["b"])]],
    ids=["unequal", "object", "strings"],
)
def test_default_collate_errors_match_torch(batch):
    torch = torch_or_skip()
    _assert_raises_like_torch(
        lambda: torch.utils.data.default_collate(batch), lambda: default_collate(batch)
    )


def test_default_collate_keeps_columns_of_strings_as_tuples():
    batch = default_collate([["a", 1], ["b", 2]])
    assert batch[0] == ("a", "b") and batch[1].tolist() == [1, 2]
    assert default_collate([Point("p", 1), Point("q", 2)]).x == ("p", "q")
    assert default_collate(["a", "b"]) == ["a", "b"]  # the batch itself stays a list


def test_collate_with_custom_type():
    class Box:
        def __init__(self, v):
            self.v = v

    def collate_boxes(batch, *, collate_fn_map=None):
        return sum(b.v for b in batch)

    custom = {**default_collate_fn_map, Box: collate_boxes}
    out = collate([(Box(1), 2.0), (Box(5), 3.0)], collate_fn_map=custom)
    assert out[0] == 6 and out[1].tolist() == [2.0, 3.0]


# ------------------------------------------------------------ DataLoader: one process


def test_batching_drop_last_and_len():
    dataset = TensorDataset(tk.arange(10.0), tk.arange(10))
    loader = DataLoader(dataset, batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and [b[1].tolist() for b in batches] == [
        [0, 1, 2, 3],
        [4, 5, 6, 7],
        [8, 9],
    ]
    assert len(DataLoader(dataset, batch_size=4, drop_last=True)) == 2
    assert len(list(DataLoader(dataset, batch_size=4, drop_last=True))) == 2


def test_no_auto_batching_converts_numpy():
    loader = DataLoader([np.arange(2), np.arange(3)], batch_size=None)
    out = list(loader)
    assert all(isinstance(t, tk.Tensor) for t in out) and out[1].tolist() == [0, 1, 2]


def test_batch_sampler_and_sampler_arguments():
    loader = DataLoader(list(range(10)), batch_sampler=[[3, 1], [0, 9, 8]])
    assert [b.tolist() for b in loader] == [[3, 1], [0, 9, 8]]
    loader = DataLoader(list(range(6)), batch_size=2, sampler=[5, 4, 3, 2, 1, 0])
    assert [b.tolist() for b in loader] == [[5, 4], [3, 2], [1, 0]]


def test_shuffle_is_deterministic_with_a_generator():
    def order(seed, workers=0):
        loader = DataLoader(
            list(range(20)),
            batch_size=5,
            shuffle=True,
            num_workers=workers,
            generator=tk.Generator().manual_seed(seed),
        )
        return [x for batch in loader for x in batch.tolist()]

    first = order(5)
    assert sorted(first) == list(range(20)) and first != list(range(20))
    assert order(5) == first and order(6) != first
    assert order(5, workers=2) == first  # the order is drawn in the main process


def test_attributes_are_frozen_after_init():
    loader = DataLoader(list(range(3)))
    with pytest.raises(ValueError, match="batch_size attribute should not be set after"):
        loader.batch_size = 2


def test_timeout_needs_workers():
    with pytest.raises(AssertionError, match="requires timeout == 0"):
        iter(DataLoader(list(range(3)), timeout=1))


def test_iterable_dataset_len_and_overrun_warning():
    class Liar(IterableDataset):
        def __iter__(self):
            return iter(range(4))

        def __len__(self):
            return 2

    loader = DataLoader(Liar(), batch_size=None)
    assert len(loader) == 2
    with pytest.warns(UserWarning, match="was reported to be 2"):
        assert list(loader) == [0, 1, 2, 3]
    assert len(DataLoader(Liar(), batch_size=3)) == 1
    assert len(DataLoader(Liar(), batch_size=3, drop_last=True)) == 0


def test_pin_memory_without_gpu_warns():
    if tk.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.warns(UserWarning, match="no accelerator is found"):
        list(DataLoader(list(range(2)), pin_memory=True))


@pytest.mark.cuda
def test_pin_memory_with_gpu_pins_batches():
    import cupy

    batch = next(iter(DataLoader(TensorDataset(tk.arange(4.0)), batch_size=2, pin_memory=True)))
    host = batch[0].numpy()
    assert cupy.cuda.runtime.pointerGetAttributes(host.ctypes.data).type == 1  # host, pinned
    assert batch[0].tolist() == [0.0, 1.0]


@pytest.mark.torch
@pytest.mark.parametrize(
    "make",
    [
        lambda lib, ds: lib.DataLoader(ds, num_workers=-1),
        lambda lib, ds: lib.DataLoader(ds, timeout=-1),
        lambda lib, ds: lib.DataLoader(ds, prefetch_factor=2),
        lambda lib, ds: lib.DataLoader(ds, num_workers=1, prefetch_factor=-1),
        lambda lib, ds: lib.DataLoader(ds, persistent_workers=True),
        lambda lib, ds: lib.DataLoader(ds, shuffle=True, sampler=[0, 1]),
        lambda lib, ds: lib.DataLoader(ds, batch_size=2, batch_sampler=[[0]]),
        lambda lib, ds: lib.DataLoader(ds, batch_sampler=[[0]], drop_last=True),
        lambda lib, ds: lib.DataLoader(ds, batch_size=None, drop_last=True),
        lambda lib, ds: lib.DataLoader(ds, multiprocessing_context="spawn"),
        lambda lib, ds: lib.DataLoader(ds, num_workers=1, multiprocessing_context="nope"),
        lambda lib, ds: lib.DataLoader(ds, num_workers=1, multiprocessing_context=3),
    ],
)
def test_argument_errors_match_torch(make):
    torch = torch_or_skip()
    _assert_raises_like_torch(
        lambda: make(torch.utils.data, list(range(4))), lambda: make(tk.utils.data, list(range(4)))
    )


@pytest.mark.torch
@pytest.mark.parametrize("option", ["shuffle", "sampler", "batch_sampler"])
def test_iterable_dataset_argument_errors_match_torch(option):
    torch = torch_or_skip()

    class TorchStream(torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter(range(3))

    value = {"shuffle": True, "sampler": [0], "batch_sampler": [[0]]}[option]
    _assert_raises_like_torch(
        lambda: torch.utils.data.DataLoader(TorchStream(), **{option: value}),
        lambda: DataLoader(Stream(3), **{option: value}),
        expected=ValueError,
    )


# ------------------------------------------------------------- DataLoader: workers


def test_workers_batches_in_order_through_shared_memory(no_leaks):
    loader = DataLoader(Squares(10), batch_size=3, num_workers=2)
    batches = list(loader)
    assert [b.tolist() for b in batches] == [
        [[i, i * i] for i in range(s, min(s + 3, 10))] for s in (0, 3, 6, 9)
    ]
    mapping = backing(batches[0])
    assert isinstance(mapping, memoryview) and isinstance(mapping.obj, mmap.mmap)
    assert batches[0].numpy().flags.writeable
    assert not isinstance(backing(next(iter(DataLoader(Squares(3), batch_size=3)))), memoryview)
    assert shm_segments() == set()  # names are removed as soon as the batch is mapped
    del batches, mapping
    gc.collect()


def test_workers_carry_mixed_structures(no_leaks):
    batches = list(DataLoader(Mixed(), batch_size=3, num_workers=2))
    single = list(DataLoader(Mixed(), batch_size=3))
    assert as_plain(batches) == as_plain(single)
    assert batches[1]["name"] == ["item3", "item4", "item5"]
    assert batches[0]["empty"].shape == (3, 0, 2)


def test_custom_collate_numpy_through_workers(no_leaks):
    def transpose_collate(batch):
        return np.stack([b.numpy() for b in batch]).T  # a non-contiguous array

    out = list(DataLoader(Squares(4), batch_size=2, num_workers=1, collate_fn=transpose_collate))
    assert isinstance(out[0], np.ndarray) and out[1].tolist() == [[2, 3], [4, 9]]


def test_iterable_dataset_sharded_across_workers(no_leaks):
    out = [b.tolist() for b in DataLoader(Stream(11), batch_size=2, num_workers=2)]
    assert out == [[0, 2], [1, 3], [4, 6], [5, 7], [8, 10], [9]]
    out = [b.tolist() for b in DataLoader(Stream(11), batch_size=2, num_workers=2, drop_last=True)]
    assert out == [[0, 2], [1, 3], [4, 6], [5, 7], [8, 10]]


@pytest.mark.torch
@pytest.mark.parametrize("drop_last", [False, True])
def test_iterable_worker_interleaving_matches_torch(drop_last, no_leaks):
    torch = torch_or_skip()

    class TorchStream(torch.utils.data.IterableDataset):
        def __iter__(self):
            info = torch.utils.data.get_worker_info()
            return iter(range(info.id, 13, info.num_workers))

    kwargs = {"batch_size": 3, "num_workers": 2, "drop_last": drop_last}
    theirs = [b.tolist() for b in torch.utils.data.DataLoader(TorchStream(), **kwargs)]
    ours = [b.tolist() for b in DataLoader(Stream(13), **kwargs)]
    assert ours == theirs


class Gated(Dataset):
    """Sample i is tensor([i, i*i]); sample 0 waits (30 s at most) until ``gate`` is set."""

    def __init__(self, n: int, gate: Any) -> None:
        self.n, self.gate = n, gate

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> tk.Tensor:
        if index == 0:
            self.gate.wait(30)
        return tk.tensor([index, index * index])


def test_in_order_false_hands_out_batches_as_they_arrive(no_leaks):
    assert DataLoader(list(range(3))).in_order is True
    gate = multiprocessing.get_context("fork").Event()
    loader = DataLoader(Gated(6, gate), num_workers=2, in_order=False, timeout=60)
    seen = []
    for batch in loader:  # batch 0 is held back until another batch has arrived
        seen.append(batch[0, 0].item())
        gate.set()
    assert seen[0] != 0 and sorted(seen) == list(range(6))


def test_worker_info_and_init_fn(no_leaks):
    assert get_worker_info() is None
    out = list(DataLoader(Probe(), batch_size=None, num_workers=2, worker_init_fn=mark_init))
    assert [s["id"] for s in out] == [0, 1, 0, 1]
    assert all(s["num_workers"] == 2 and s["dataset_is_probe"] for s in out)
    assert [s["init"] for s in out] == ["init 0", "init 1", "init 0", "init 1"]
    assert out[0]["repr"].startswith("WorkerInfo(id=0, num_workers=2, seed=")
    assert out[0]["pid"] != out[1]["pid"] != os.getpid()


def test_worker_seeds_follow_the_generator(no_leaks):
    def run(seed):
        loader = DataLoader(
            Probe(), batch_size=None, num_workers=2, generator=tk.Generator().manual_seed(seed)
        )
        return list(loader)

    out = run(7)
    base = int(tk.randint(0, 2**63, (), generator=tk.Generator().manual_seed(7)))
    for worker_id in (0, 1):
        first = out[worker_id]
        seed = base + worker_id
        assert first["seed"] == seed
        assert first["tk"] == tk.rand(1, generator=tk.Generator().manual_seed(seed)).item()
        assert first["py"] == random.Random(seed).random()
        assert first["np"] == np.random.RandomState(numpy_seed(base, worker_id)).rand()
    assert out[0]["np"] != out[1]["np"] and out[0]["tk"] != out[1]["tk"]
    again = run(7)
    assert [(s["seed"], s["tk"], s["py"], s["np"]) for s in again] == [
        (s["seed"], s["tk"], s["py"], s["np"]) for s in out
    ]
    assert run(8)[0]["seed"] != out[0]["seed"]


@pytest.mark.torch
def test_numpy_worker_seed_matches_torch():
    torch_or_skip()
    from torch.utils.data._utils.worker import _generate_state

    for base, worker_id in [(0, 0), (123456789012345, 3), (2**63 - 5, 7)]:
        assert numpy_seed(base, worker_id).tolist() == _generate_state(base, worker_id)


def test_spawn_context(no_leaks):
    loader = DataLoader(Squares(5), batch_size=2, num_workers=2, multiprocessing_context="spawn")
    assert [b[:, 0].tolist() for b in loader] == [[0, 1], [2, 3], [4]]
    # A dataset's tensors reach spawned workers as shared memory (moved there in place).
    dataset = TensorDataset(tk.arange(6.0))
    loader = DataLoader(dataset, batch_size=3, num_workers=1, multiprocessing_context="spawn")
    assert [b[0].tolist() for b in loader] == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert dataset.tensors[0].is_shared()
    del dataset, loader


def test_persistent_workers_keep_processes_across_epochs(no_leaks):
    class Pids(Dataset):
        def __len__(self):
            return 6

        def __getitem__(self, index):
            return index, os.getpid()

    loader = DataLoader(Pids(), batch_size=2, num_workers=2, persistent_workers=True)
    epochs = [list(loader) for _ in range(2)]
    assert [b[0].tolist() for b in epochs[1]] == [[0, 1], [2, 3], [4, 5]]
    pids = [{p for b in epoch for p in b[1].tolist()} for epoch in epochs]
    assert pids[0] == pids[1] and len(pids[0]) == 2
    for _batch in loader:  # stop early: the next epoch must not see this one's leftovers
        break
    assert [b[0].tolist() for b in loader] == [[0, 1], [2, 3], [4, 5]]
    iterable = DataLoader(Stream(5), batch_size=2, num_workers=2, persistent_workers=True)
    assert [b.tolist() for b in iterable] == [b.tolist() for b in iterable] == [[0, 2], [1, 3], [4]]
    del loader, iterable, _batch


def test_prefetch_factor_bounds_tasks_per_worker(no_leaks):
    loader = DataLoader(Squares(40), num_workers=2, prefetch_factor=3)
    it = iter(loader)
    assert it._sent == 6 and it._outstanding == [3, 3]
    next(it)  # frees a slot of worker 0, maybe of worker 1 too (if its batch came early)
    assert max(it._outstanding) <= 3 and it._sent in (7, 8)
    assert len(list(it)) == 39
    del it


# ----------------------------------------------------------------------- worker faults


def test_worker_exception_reaches_main_with_traceback(no_leaks):
    loader = DataLoader(Squares(8, "raise", at=5), batch_size=2, num_workers=2)
    with pytest.raises(ValueError) as caught:
        list(loader)
    text = str(caught.value)
    assert text.startswith("Caught ValueError in DataLoader worker process 0.\nOriginal Traceback")
    assert "bad sample 5" in text and 'raise ValueError(f"bad sample {index}")' in text
    del caught


def test_worker_exception_types(no_leaks):
    with pytest.raises(KeyError) as caught:
        list(DataLoader(Squares(4, "keyerror", at=1), num_workers=1))
    assert "Original Traceback" in str(caught.value) and "\\n" not in str(caught.value)
    with pytest.raises(
        RuntimeError, match="Caught NeedsTwoArgsError in DataLoader worker process 0"
    ):
        list(DataLoader(Squares(4, "two-args", at=1), num_workers=1))
    del caught


def test_iteration_continues_after_a_worker_exception(no_leaks):
    it = iter(DataLoader(Squares(4, "raise", at=1), num_workers=2))
    assert next(it).tolist() == [[0, 0]]
    with pytest.raises(ValueError, match="bad sample 1"):
        next(it)
    assert [b.tolist() for b in it] == [[[2, 4]], [[3, 9]]]
    del it


@pytest.mark.parametrize(
    ("fault", "reason"),
    [("kill", r"killed by signal SIGKILL \(Killed\)"), ("exit", "exit code 3")],
)
def test_dead_worker_raises_promptly(fault, reason, no_leaks):
    loader = DataLoader(Squares(8, fault, at=3), num_workers=2)
    start = time.monotonic()
    with pytest.raises(
        RuntimeError, match=rf"DataLoader worker 1 \(pid \d+\) exited unexpectedly: {reason}"
    ):
        list(loader)
    assert time.monotonic() - start < 5


def test_timeout(no_leaks):
    loader = DataLoader(Squares(4, "hang", at=1), num_workers=1, timeout=0.5)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"^DataLoader timed out after 0.5 seconds$"):
        list(loader)
    assert time.monotonic() - start < 5


def test_early_break_cleans_up(no_leaks):
    loader = DataLoader(Squares(64), batch_size=2, num_workers=2, prefetch_factor=4)
    for seen, _ in enumerate(loader):
        if seen == 2:
            break  # batches are in flight: their blocks must be freed too


def test_keyboard_interrupt_cleans_up(no_leaks):
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        loader = DataLoader(Squares(8, "interrupt", at=4), num_workers=2)
        with pytest.raises(KeyboardInterrupt):
            for _ in loader:
                pass
    finally:
        signal.signal(signal.SIGINT, previous)
