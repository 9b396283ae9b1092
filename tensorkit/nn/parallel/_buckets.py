"""Gradient buckets of DistributedDataParallel: parameters in the order their gradients become
ready, grouped by dtype and device up to a byte cap, each with one flat buffer that is
all-reduced as a whole."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...tensor import Tensor, wrap

__all__ = ["Bucket", "make_buckets"]

# torch's dist._DEFAULT_FIRST_BUCKET_BYTES: with the default bucket_cap_mb the first bucket is
# small, so communication starts early
FIRST_BUCKET_BYTES = 1024 * 1024


@dataclass(eq=False)
class Bucket:
    """Parameters whose gradients travel together in ``buffer`` (a flat tensor)."""

    params: list[Tensor]
    offsets: list[int]
    buffer: Tensor
    pending: int = 0  # parameters whose gradient has not arrived this iteration
    work: Any = None  # the all-reduce in flight
    ready: list[bool] = field(default_factory=list)  # its gradient is in the buffer
    used: list[bool] = field(default_factory=list)  # this rank's forward used it
    # id() of each .grad at the forward (None: none); a .grad with another id was made since
    grad_ids: list[int | None] = field(default_factory=list)
    handed_out: bool = False  # some .grad is a view of ``buffer``: the next reset renews it

    def slot(self, index: int) -> Any:
        """The part of the buffer (an array) that holds parameter ``index``'s gradient."""
        param = self.params[index]
        start = self.offsets[index]
        return self.buffer._data[start : start + param.numel()].reshape(param._data.shape)

    def reset(self) -> None:
        """Ready for another reduction; a buffer whose slots became ``.grad`` is replaced by a
        new one, so that no reduction writes into a gradient handed out before."""
        if self.handed_out:
            self.buffer = wrap(
                self.buffer._device.xp.empty_like(self.buffer._data), self.buffer._device
            )
            self.handed_out = False
        self.pending = len(self.params)
        self.work = None
        self.ready = [False] * len(self.params)
        self.used = [False] * len(self.params)
        self.grad_ids = [None if p.grad is None else id(p.grad) for p in self.params]


def make_buckets(ready_order: list[Tensor], cap_bytes: int, first_cap_bytes: int) -> list[Bucket]:
    """Buckets over parameters in the order their gradients become ready (reverse parameter
    order before the first backward), as torch's ``_compute_bucket_assignment_by_size``: a
    bucket closes once it holds at least its limit (the parameter that reaches the limit is
    its last), the first bucket's limit being ``first_cap_bytes``; a change of dtype or
    device closes it too."""
    groups: list[list[Tensor]] = []
    size = 0
    key: tuple | None = None
    closed = True
    for param in ready_order:
        if closed or (param.dtype, param.device) != key:
            groups.append([])
            size = 0
            key = (param.dtype, param.device)
        groups[-1].append(param)
        size += param.nbytes
        closed = size >= (first_cap_bytes if len(groups) == 1 else cap_bytes)
    return [_bucket(group) for group in groups]


def _bucket(params: list[Tensor]) -> Bucket:
    offsets = []
    total = 0
    for param in params:
        offsets.append(total)
        total += param.numel()
    xp = params[0]._device.xp
    buffer = wrap(xp.zeros(total, dtype=params[0]._data.dtype), params[0]._device)
    bucket = Bucket(params, offsets, buffer)
    bucket.reset()
    return bucket
