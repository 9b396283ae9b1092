"""DDP's bucket assignment (tensorkit.nn.parallel._buckets) against torch's
``_compute_bucket_assignment_by_size`` with the limits torch's DDP gives it (no ranks
needed; the rebuild after the first reduction runs in programs/ddp.py)."""

from __future__ import annotations

import pytest

import tensorkit as tk
from tensorkit.nn.parallel._buckets import FIRST_BUCKET_BYTES, make_buckets

MLP = [(1024, 512), (1024,), (1024, 1024), (1024,), (10, 1024), (10,)]
MB = 1024 * 1024
# (shapes in forward order, bucket cap and first bucket's cap in bytes): the default caps
# (the MLP's second weight crosses the first bucket's 1 MiB), a cap given (torch's first
# bucket then takes it too), tiny caps (every weight closes a bucket), one bucket in all
CASES = [
    (MLP, 25 * MB, FIRST_BUCKET_BYTES),
    (MLP, 25 * MB, 25 * MB),
    (MLP, MB, MB),
    ([(16, 6), (16,), (2, 16), (2,), (2, 16), (2,)], 104, 104),
    ([(3, 3), (3,)], 10**9, 10**9),
]


def _layout(buckets, params) -> list[list[int]]:
    """Each bucket's parameters as indices into the reversed parameter list."""
    position = {id(p): n for n, p in enumerate(reversed(params))}
    return [[position[id(p)] for p in bucket.params] for bucket in buckets]


@pytest.mark.torch
@pytest.mark.parametrize(("shapes", "cap", "first"), CASES)
def test_buckets_are_torchs(shapes, cap, first) -> None:
    torch = pytest.importorskip("torch")
    from torch.distributed import _compute_bucket_assignment_by_size

    params = [tk.zeros(*shape, requires_grad=True) for shape in shapes]
    tensors = [torch.zeros(*shape) for shape in reversed(shapes)]
    limits = [first, cap]
    expected, _ = _compute_bucket_assignment_by_size(tensors, limits)
    assert _layout(make_buckets(params[::-1], cap, first), params) == expected


def test_the_first_bucket_holds_the_gradient_that_fills_it() -> None:
    params = [tk.zeros(1024, 512), tk.zeros(1024), tk.zeros(1024, 1024), tk.zeros(10)]
    buckets = make_buckets(params[::-1], 25 * MB, FIRST_BUCKET_BYTES)
    assert _layout(buckets, params) == [[0, 1], [2, 3]]  # the 4 MiB weight fills the 1 MiB one
    assert [b.buffer.numel() for b in buckets] == [10 + 1024 * 1024, 1024 + 1024 * 512]


def test_a_dtype_change_closes_the_bucket() -> None:
    params = [tk.zeros(4), tk.zeros(4, dtype=tk.float64), tk.zeros(4, dtype=tk.float64)]
    buckets = make_buckets(params[::-1], 10**9, 10**9)
    assert _layout(buckets, params) == [[0, 1], [2]]
    assert [b.buffer.dtype for b in buckets] == [tk.float64, tk.float32]
