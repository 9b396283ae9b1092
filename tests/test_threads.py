"""Intra-op threads: large host kernels split over a pool give the single-thread results."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator

import numpy as np
import pytest

import tensorkit as tk
import tensorkit.nn.functional as F  # noqa: N812
from tensorkit._backend import threads


@pytest.fixture
def two_threads() -> Iterator[None]:
    before = tk.get_num_threads()
    tk.set_num_threads(2)
    yield
    tk.set_num_threads(before)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (0, "set_num_threads expects a positive integer"),
        (-3, "set_num_threads expects a positive integer"),
        (1.5, "set_num_threads expects an int, but got float"),
        (True, "set_num_threads expects an int, but got bool"),
    ],
)
def test_set_num_threads_refuses_what_torch_refuses(value: object, message: str) -> None:
    before = tk.get_num_threads()
    with pytest.raises(RuntimeError, match=message):
        tk.set_num_threads(value)  # type: ignore[arg-type]
    assert tk.get_num_threads() == before


def record_parts(length: int, elements: int, array: object = None) -> list[tuple[slice, str]]:
    seen: list[tuple[slice, str]] = []
    lock = threading.Lock()

    def kernel(part: slice) -> None:
        with lock:
            seen.append((part, threading.current_thread().name))

    threads.parallel_parts(kernel, length, elements, array)
    return sorted(seen, key=lambda item: item[0].start or 0)


def test_large_work_is_cut_into_parts_that_cover_it_once(two_threads: None) -> None:
    seen = record_parts(7, threads.MIN_ELEMENTS)
    assert [part for part, _ in seen] == [slice(0, 3), slice(3, 7)]
    names = {name for _, name in seen}
    assert any(name.startswith("tensorkit-intraop") for name in names)
    assert threading.current_thread().name in names


def test_small_work_one_thread_or_a_gpu_array_runs_inline(two_threads: None) -> None:
    main = threading.current_thread().name
    assert record_parts(7, threads.MIN_ELEMENTS - 1) == [(slice(None), main)]
    assert record_parts(1, threads.MIN_ELEMENTS) == [(slice(None), main)]
    not_numpy = type("DeviceArray", (), {})()
    assert record_parts(7, threads.MIN_ELEMENTS, not_numpy) == [(slice(None), main)]
    tk.set_num_threads(1)
    assert record_parts(7, threads.MIN_ELEMENTS) == [(slice(None), main)]


def test_a_part_never_splits_again(two_threads: None) -> None:
    inner: list[list] = []

    def kernel(part: slice) -> None:
        inner.append(record_parts(4, threads.MIN_ELEMENTS))

    threads.parallel_parts(kernel, 2, threads.MIN_ELEMENTS)
    pool_side = [parts for parts in inner if parts[0][1].startswith("tensorkit-intraop")]
    assert pool_side and all(parts[0][0] == slice(None) for parts in pool_side)


def test_an_error_in_any_part_reaches_the_caller(two_threads: None) -> None:
    def kernel(part: slice) -> None:
        if part.start:
            raise ValueError(f"part {part.start} failed")

    with pytest.raises(ValueError, match="part 5 failed"):
        threads.parallel_parts(kernel, 10, threads.MIN_ELEMENTS)


def _child_relu(queue: multiprocessing.Queue) -> None:
    x = tk.arange(-300_000, 300_000, dtype=tk.float64).reshape(600, 1000)
    total = tk.relu(x).sum().item()
    pool = [t.name for t in threading.enumerate() if t.name.startswith("tensorkit-intraop")]
    queue.put((total, len(pool)))


def test_a_forked_child_gets_a_pool_of_its_own(two_threads: None) -> None:
    big = tk.ones(600, 1000)
    tk.relu(big)  # the parent's pool now exists
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child_relu, args=(queue,))
    child.start()
    try:
        assert queue.get(timeout=60) == (float(sum(range(1, 300_000))), 1)
    finally:
        child.join(timeout=60)
    assert child.exitcode == 0


def same_with_one_and_two_threads(fn: Callable[[], list[np.ndarray]]) -> None:
    tk.set_num_threads(1)
    expected = fn()
    tk.set_num_threads(2)
    got = fn()
    for a, b in zip(expected, got, strict=True):
        np.testing.assert_array_equal(a, b)


def grads(output: tk.Tensor, *inputs: tk.Tensor) -> list[np.ndarray]:
    weight = tk.tensor(np.random.default_rng(1).standard_normal(output.shape).astype(np.float32))
    found = tk.autograd.grad((output * weight).sum(), inputs)
    return [output.detach().numpy()] + [g.numpy() for g in found]


def test_conv_pool_relu_and_softmax_agree_bit_for_bit(two_threads: None) -> None:
    rng = np.random.default_rng(0)
    x = tk.tensor(rng.standard_normal((8, 32, 48, 48)).astype(np.float32), requires_grad=True)
    w = tk.tensor(rng.standard_normal((32, 32, 3, 3)).astype(np.float32), requires_grad=True)
    b = tk.tensor(rng.standard_normal(32).astype(np.float32), requires_grad=True)
    s = tk.tensor(rng.standard_normal((8, 4, 96, 96)).astype(np.float32), requires_grad=True)
    same_with_one_and_two_threads(lambda: grads(F.conv2d(x, w, b, padding=1), x, w, b))
    same_with_one_and_two_threads(lambda: grads(F.max_pool2d(F.relu(x), 2), x))
    same_with_one_and_two_threads(lambda: grads(F.softmax(s, -1), s))


def test_threshold_backward_keeps_nan_where_relu_passes_and_zero_where_it_blocks(
    two_threads: None,
) -> None:
    x = np.linspace(-1, 1, 600_000, dtype=np.float32).reshape(600, 1000)
    g = np.ones_like(x)
    g[0, 0] = np.inf  # blocked: x < 0 there
    g[599, 999] = np.nan  # passed: x > 0 there
    xt = tk.tensor(x, requires_grad=True)
    (grad,) = tk.autograd.grad(tk.relu(xt), xt, tk.tensor(g))
    got = grad.numpy()
    assert got[0, 0] == 0 and np.isnan(got[599, 999])
    np.testing.assert_array_equal(got[1:599], (x[1:599] > 0).astype(np.float32))


def default_threads(env_timeout: str | None) -> int:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OPENBLAS_THREAD_TIMEOUT", "OMP_NUM_THREADS")
    }
    if env_timeout is not None:
        env["OPENBLAS_THREAD_TIMEOUT"] = env_timeout
    code = "import tensorkit as tk; print(tk.get_num_threads())"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    return int(done.stdout)


@pytest.mark.skipif(not threads.numpy_uses_openblas(), reason="NumPy's BLAS is not OpenBLAS")
def test_one_thread_by_default_while_openblas_workers_spin_after_each_gemm() -> None:
    assert default_threads(None) == 1
    assert default_threads("20") == len(os.sched_getaffinity(0))
