"""``DistributedDataParallel``: one replica of a module per rank, gradients averaged over the
ranks during backward, as torch's.

At construction rank 0's parameters and buffers are broadcast to every rank. Gradients are
grouped into buckets in reverse parameter order (``_buckets``), rebuilt at the forward after
the first reduction in the order rank 0's gradients became ready; a post-accumulate-grad hook
per parameter copies its gradient, divided by the world size, into its bucket (as torch's
default hook divides before it reduces), and a full bucket starts an asynchronous
all-reduce at once (buckets start in the same order on every rank), so communication
overlaps the rest of backward. When the last bucket has started, the hook waits for all of
them and writes the averages into ``.grad``: a ``.grad`` made during the backward (the engine
accumulates out of place) becomes a view of its bucket, whose buffer is renewed at the next
forward, so that no later reduction writes into it; a ``.grad`` the backward left as it was is
updated in place.
"""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from ... import distributed as dist
from ..._backend import cpu
from ...autograd.grad_mode import is_grad_enabled, no_grad
from ...tensor import Tensor, wrap
from ..modules.module import Module
from ._buckets import FIRST_BUCKET_BYTES, Bucket, make_buckets

__all__ = ["DistributedDataParallel"]

_UNUSED_ERROR = (
    "Expected to have finished reduction in the prior iteration before starting a new one. "
    "This error indicates that your module has parameters that were not used in producing "
    "loss. You can enable unused parameter detection by passing the keyword argument "
    "`find_unused_parameters=True` to `tensorkit.nn.parallel.DistributedDataParallel`, and by "
    "making sure all `forward` function outputs participate in calculating loss."
)


class DistributedDataParallel(Module):
    """Data parallelism over the ranks of ``process_group`` (the default group by default).

    Each rank feeds its own batch; after ``loss.backward()`` every rank holds the same
    gradients, the mean over ranks. ``no_sync()`` skips the reduction (gradients accumulate
    locally until the next synchronized backward). ``state_dict`` keys start with
    ``module.``, as torch's.
    """

    def __init__(
        self,
        module: Module,
        device_ids: list[Any] | None = None,
        output_device: Any = None,
        dim: int = 0,
        broadcast_buffers: bool = True,
        process_group: Any = None,
        bucket_cap_mb: float | None = None,
        find_unused_parameters: bool = False,
        check_reduction: bool = False,
        gradient_as_bucket_view: bool = False,
        static_graph: bool = False,
    ) -> None:
        super().__init__()
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise RuntimeError(
                "DistributedDataParallel is not needed when a module doesn't have any "
                "parameter that requires a gradient."
            )
        devices = {p.device for p in module.parameters()}
        if (device_ids is not None or output_device is not None) and all(
            d.type == "cpu" for d in devices
        ):
            raise ValueError(
                "DistributedDataParallel device_ids and output_device arguments only work "
                "with single-device/multiple-device GPU modules or CPU modules, but got "
                f"device_ids {device_ids}, output_device {output_device}, and module "
                f"parameters {devices}."
            )
        self.module = module
        self.device_ids = device_ids
        self.output_device = output_device
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.process_group = process_group
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.world_size = dist.get_world_size(process_group)
        cap_mb = 25.0 if bucket_cap_mb is None else float(bucket_cap_mb)
        self._cap_bytes = int(cap_mb * 1024 * 1024)
        # as torch: a small first bucket only with the default cap
        self._first_cap_bytes = FIRST_BUCKET_BYTES if bucket_cap_mb is None else self._cap_bytes
        self._names = {id(p): name for name, p in module.named_parameters()}
        self._params = params
        self._position = {id(p): n for n, p in enumerate(params)}
        self._verify_same_model()
        self._sync_module_states()
        self._set_buckets(list(reversed(params)))
        self._ready_order: list[int] | None = []  # recorded during the first reduction
        self._rebuild_order: list[int] | None = None
        self._next_bucket = 0
        self._expect_reduction = False
        self._handles = [p.register_post_accumulate_grad_hook(self._grad_ready) for p in params]

    # ------------------------------------------------------------------ construction
    def _verify_same_model(self) -> None:
        """Every rank must wrap the same parameters (count, shapes, dtypes)."""
        shapes = ";".join(f"{p.dtype}{list(p.shape)}" for p in self._params)
        mine = np.array([len(self._params), zlib.crc32(shapes.encode())], dtype=np.int64)
        everyone = wrap(np.zeros((self.world_size, 2), dtype=np.int64), cpu)
        dist.all_gather_into_tensor(everyone, wrap(mine, cpu), group=self.process_group)
        rows = everyone._data
        for rank, (count, crc) in enumerate(rows):
            if count != rows[0][0]:
                raise RuntimeError(
                    f"DDP expects same model across all ranks, but Rank {self._rank()} has "
                    f"{len(self._params)} params, while rank {rank} has inconsistent {count} "
                    "params."
                )
            if crc != rows[0][1]:
                raise RuntimeError(
                    "DDP expects same model across all ranks, but the parameters' shapes or "
                    f"dtypes of rank {rank} differ from rank 0's (rank {self._rank()} has "
                    f"{shapes})"
                )

    def _set_buckets(self, ready_order: list[Tensor]) -> None:
        self._buckets = make_buckets(ready_order, self._cap_bytes, self._first_cap_bytes)
        self._where: dict[int, tuple[Bucket, int]] = {}
        for bucket in self._buckets:
            for index, param in enumerate(bucket.params):
                self._where[id(param)] = (bucket, index)

    def _rebuild_buckets(self) -> None:
        """At the forward after the first reduction, buckets in the order rank 0's gradients
        became ready (as torch's reducer rebuilds them), the same on every rank."""
        order = wrap(np.array(self._rebuild_order, dtype=np.int64), cpu)
        self._rebuild_order = None
        src = dist.get_process_group_ranks(self.process_group)[0]
        dist.broadcast(order, src=src, group=self.process_group)
        self._set_buckets([self._params[i] for i in order._data])

    def _rank(self) -> int:
        return dist.get_rank(self.process_group)

    def _sync_module_states(self) -> None:
        """Rank 0's parameters and buffers, on every rank."""
        src = dist.get_process_group_ranks(self.process_group)[0]
        with no_grad():
            for tensor in [*self.module.parameters(), *self.module.buffers()]:
                dist.broadcast(tensor.detach(), src=src, group=self.process_group)

    # ------------------------------------------------------------------ forward
    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        if self._expect_reduction:
            self._raise_unfinished()
        if self._rebuild_order is not None:
            self._rebuild_buckets()
        if self.broadcast_buffers and self.world_size > 1:
            src = dist.get_process_group_ranks(self.process_group)[0]
            with no_grad():
                for buffer in self.module.buffers():
                    dist.broadcast(buffer.detach(), src=src, group=self.process_group)
        output = self.module(*inputs, **kwargs)
        if is_grad_enabled() and self.require_backward_grad_sync:
            self._prepare_for_backward(output)
        return output

    def _prepare_for_backward(self, output: Any) -> None:
        for bucket in self._buckets:
            bucket.reset()
        self._next_bucket = 0
        self._expect_reduction = True
        if self.find_unused_parameters:
            used = _reached_leaves(output)
            for param in self._params:
                if id(param) not in used:
                    self._mark_ready(param, local_grad=False)

    def _raise_unfinished(self) -> None:
        indices = []
        for index, param in enumerate(self._params):
            bucket, slot = self._where[id(param)]
            if not bucket.ready[slot]:
                indices.append(index)
        missing = [self._names.get(id(self._params[i]), "?") for i in indices]
        self._expect_reduction = False
        raise RuntimeError(
            f"{_UNUSED_ERROR}\nParameter indices which did not receive grad for rank "
            f"{self._rank()}: {' '.join(map(str, indices))}\nParameters which did not receive "
            f"grad for rank {self._rank()}: {', '.join(missing)}"
        )

    # ------------------------------------------------------------------ backward
    def _grad_ready(self, param: Tensor) -> None:
        if self._expect_reduction:
            self._progress()
            self._mark_ready(param, local_grad=True)

    def _progress(self) -> None:
        """Test the all-reduces in flight: MPI moves a nonblocking collective on only inside
        MPI calls, so each hook lends it one (this is what lets it overlap backward)."""
        for bucket in self._buckets[: self._next_bucket]:
            bucket.work.is_completed()

    def _mark_ready(self, param: Tensor, local_grad: bool) -> None:
        bucket, index = self._where[id(param)]
        if bucket.ready[index]:
            return
        if self._ready_order is not None:
            self._ready_order.append(self._position[id(param)])
        bucket.ready[index] = True
        bucket.used[index] = local_grad
        slot = bucket.slot(index)
        grad = param.grad
        if grad is None:
            slot[...] = 0
        else:  # divided on the way in, as torch's hook (one pass; the sum is then the mean)
            param._device.xp.divide(grad._data, self.world_size, out=slot)
        bucket.pending -= 1
        self._launch_ready_buckets()

    def _launch_ready_buckets(self) -> None:
        """Start every full bucket from the next one in order; finish after the last."""
        while self._next_bucket < len(self._buckets):
            bucket = self._buckets[self._next_bucket]
            if bucket.pending:
                return
            bucket.work = dist.all_reduce(bucket.buffer, group=self.process_group, async_op=True)
            self._next_bucket += 1
        self._finish_reduction()

    def _finish_reduction(self) -> None:
        self._expect_reduction = False
        used_anywhere = self._used_anywhere() if self.find_unused_parameters else None
        for bucket in self._buckets:
            bucket.work.wait()
            for index, param in enumerate(bucket.params):
                if used_anywhere is not None and not used_anywhere[id(param)]:
                    continue  # no rank used it: its .grad stays as it was, as in torch
                slot = bucket.slot(index)
                if self.gradient_as_bucket_view:
                    param.grad = wrap(slot, param._device)
                elif param.grad is None or id(param.grad) != bucket.grad_ids[index]:
                    # a .grad made during this backward (accumulation is out of place): only
                    # the parameter holds it, so the bucket's memory takes its place
                    param.grad = wrap(slot, param._device)
                    bucket.handed_out = True
                else:  # the .grad of before, unchanged (no gradient here): updated in place
                    param.grad._data[...] = slot
        if self._ready_order is not None:  # the next forward rebuilds the buckets
            self._rebuild_order, self._ready_order = self._ready_order, None

    def _used_anywhere(self) -> dict[int, bool]:
        """Whether some rank's forward used each parameter (one small all-reduce)."""
        params = [p for bucket in self._buckets for p in bucket.params]
        local = [used for bucket in self._buckets for used in bucket.used]
        counts = wrap(np.array(local, dtype=np.int32), cpu)
        dist.all_reduce(counts, group=self.process_group)
        return {id(p): bool(c) for p, c in zip(params, counts._data, strict=True)}

    # ------------------------------------------------------------------ no_sync
    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Inside, backward leaves gradients local (they accumulate); the first backward after
        the block reduces the sum."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous


def _reached_leaves(output: Any) -> set[int]:
    """The ids of the leaf tensors that ``output``'s graph reaches (the used parameters)."""
    stack = [t.grad_fn for t in _tensors(output) if t.grad_fn is not None]
    seen: set[int] = set()
    leaves: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None)
        if variable is not None:
            leaves.add(id(variable))
        for nxt, _ in node.next_functions:
            if nxt is not None:
                stack.append(nxt)
    return leaves


def _tensors(value: Any) -> Iterator[Tensor]:
    if isinstance(value, Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item)
