"""DDP's bucket assignment (tensorkit.nn.parallel._buckets) against torch's
``_compute_bucket_assignment_by_size`` with the same limits (no ranks needed)."""

from __future__ import annotations

import pytest

import tensorkit as tk
from tensorkit.nn.parallel._buckets import FIRST_BUCKET_BYTES, make_buckets

# (shapes in forward order, bucket cap in bytes): an MLP whose second weight crosses the
# first bucket's 1 MiB, tiny caps (every weight closes a bucket), one bucket for everything
CASES = [
    ([(1024, 512), (1024,), (1024, 1024), (1024,), (10, 1024), (10,)], 25 * 1024 * 1024),
    ([(1024, 512), (1024,), (1024, 1024), (1024,), (10, 1024), (10,)], 1024 * 1024),
    ([(16, 6), (16,), (2, 16), (2,), (2, 16), (2,)], 104),
    ([(3, 3), (3,)], 10**9),
]


def _layout(buckets, params) -> list[list[int]]:
    """Each bucket's parameters as indices into the reversed parameter list."""
    position = {id(p): n for n, p in enumerate(reversed(params))}
    return [[position[id(p)] for p in bucket.params] for bucket in buckets]


@pytest.mark.torch
@pytest.mark.parametrize(("shapes", "cap"), CASES)
def test_buckets_are_torchs(shapes, cap) -> None:
    torch = pytest.importorskip("torch")
    from torch.distributed import _compute_bucket_assignment_by_size

    params = [tk.zeros(*shape, requires_grad=True) for shape in shapes]
    tensors = [torch.zeros(*shape) for shape in reversed(shapes)]
    limits = [min(FIRST_BUCKET_BYTES, cap), cap]
    expected, _ = _compute_bucket_assignment_by_size(tensors, limits)
    assert _layout(make_buckets(params, cap), params) == expected


def test_the_first_bucket_holds_the_gradient_that_fills_it() -> None:
    params = [tk.zeros(1024, 512), tk.zeros(1024), tk.zeros(1024, 1024), tk.zeros(10)]
    buckets = make_buckets(params, 25 * 1024 * 1024)
    assert _layout(buckets, params) == [[0, 1], [2, 3]]  # the 4 MiB weight fills the 1 MiB one
    assert [b.buffer.numel() for b in buckets] == [10 + 1024 * 1024, 1024 + 1024 * 512]


def test_a_dtype_change_closes_the_bucket() -> None:
    params = [tk.zeros(4), tk.zeros(4, dtype=tk.float64), tk.zeros(4, dtype=tk.float64)]
    buckets = make_buckets(params, 10**9)
    assert _layout(buckets, params) == [[0, 1], [2]]
    assert [b.buffer.dtype for b in buckets] == [tk.float64, tk.float32]
