"""Rank program: DistributedDataParallel against one process over the concatenated batch
(gradients, several optimizer steps), no_sync accumulation, unused parameters (found, or
named in torch's error), gradient_as_bucket_view, who owns .grad after a reduction, buffers
and state_dict keys."""

from __future__ import annotations

import numpy as np

import tensorkit as tk
import tensorkit.distributed as dist
import tensorkit.nn as nn
from tensorkit.nn.parallel import DistributedDataParallel as DDP  # noqa: N817 (torch users write DDP)

dist.init_process_group("mpi")
RANK, WORLD = dist.get_rank(), dist.get_world_size()
PER_RANK = 4
GEN = np.random.default_rng(0)  # the same data on every rank; each takes its own rows
X = tk.tensor(GEN.standard_normal((3, WORLD * PER_RANK, 6)), dtype=tk.float32)
Y = tk.tensor(GEN.standard_normal((3, WORLD * PER_RANK, 2)), dtype=tk.float32)
MINE = slice(RANK * PER_RANK, (RANK + 1) * PER_RANK)


class Net(nn.Module):
    def __init__(self, norm: bool = False) -> None:
        super().__init__()
        self.fc1 = nn.Linear(6, 16)
        # batch statistics are per rank (as in torch without SyncBatchNorm), so the gradient
        # checks run without it; the buffer checks with it
        self.norm = nn.BatchNorm1d(16) if norm else nn.Identity()
        self.fc2 = nn.Linear(16, 2)
        self.spare = nn.Linear(16, 2)  # used only when asked

    def forward(self, x: tk.Tensor, use_spare: bool = False) -> tk.Tensor:
        hidden = tk.relu(self.norm(self.fc1(x)))
        out = self.fc2(hidden)
        return out + self.spare(hidden) if use_spare else out


def pair(seed_offset: int = 0, norm: bool = False, **options: object) -> tuple[DDP, Net]:
    """A DDP model (each rank initialized differently) and a single-process copy of rank 0's."""
    tk.manual_seed(RANK + 100 * seed_offset)
    ddp = DDP(Net(norm), **options)
    reference = Net(norm)
    reference.load_state_dict(ddp.module.state_dict())
    return ddp, reference


def loss(model: nn.Module, x: tk.Tensor, y: tk.Tensor, **kw: object) -> tk.Tensor:
    return ((model(x, **kw) - y) ** 2).mean()


def assert_grads(ddp: DDP, reference: Net, what: str, names: tuple[str, ...] = ()) -> None:
    for (name, p), q in zip(ddp.module.named_parameters(), reference.parameters(), strict=True):
        if names and not name.startswith(names):
            continue
        assert p.grad is not None, f"{what}: {name} has no grad"
        np.testing.assert_allclose(
            p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6, err_msg=f"{what} {name}"
        )
        everyone = [tk.zeros_like(p.grad) for _ in range(WORLD)]
        dist.all_gather(everyone, p.grad)
        for other in everyone:
            assert np.array_equal(other.numpy(), p.grad.numpy()), (
                f"{what}: {name} differs across ranks"
            )


def matches_single_process() -> None:
    for options in ({}, {"bucket_cap_mb": 0.0002}, {"gradient_as_bucket_view": True}):
        ddp, reference = pair(**options)
        ddp_opt = tk.optim.SGD(ddp.parameters(), lr=0.1)
        ref_opt = tk.optim.SGD(reference.parameters(), lr=0.1)
        for step in range(3):
            ddp_opt.zero_grad()
            ref_opt.zero_grad()
            loss(ddp, X[step][MINE], Y[step][MINE], use_spare=True).backward()
            loss(reference, X[step], Y[step], use_spare=True).backward()
            assert_grads(ddp, reference, f"step {step} {options}")
            ddp_opt.step()
            ref_opt.step()
    many = DDP(Net(), bucket_cap_mb=0.0001)  # 104 bytes: each bucket closes at its weight
    assert [len(b.params) for b in many._buckets] == [2, 2, 2], many._buckets
    first = many._buckets[0].params
    assert first[0] is list(many.module.parameters())[-1]  # buckets in reverse order
    rebuilt_after_the_first_reduction()
    print("ok matches single process", flush=True)


class Backwards(nn.Module):
    """Layers registered in the reverse of the order forward uses them."""

    def __init__(self) -> None:
        super().__init__()
        self.last = nn.Linear(16, 2)
        self.first = nn.Linear(6, 16)

    def forward(self, x: tk.Tensor) -> tk.Tensor:
        return self.last(tk.relu(self.first(x)))


def rebuilt_after_the_first_reduction() -> None:
    """Buckets start in reverse parameter order, then follow the order gradients became ready
    (as torch's reducer rebuilds them); gradients stay right across the rebuild."""
    tk.manual_seed(RANK)
    ddp = DDP(Backwards(), bucket_cap_mb=0.0001)
    reference = Backwards()
    reference.load_state_dict(ddp.module.state_dict())

    def first_bucket() -> set[str]:
        return {ddp._names[id(p)] for p in ddp._buckets[0].params}

    assert first_bucket() == {"first.weight", "first.bias"}, first_bucket()
    for step in range(3):
        ddp.zero_grad()
        reference.zero_grad()
        loss(ddp, X[step][MINE], Y[step][MINE]).backward()
        loss(reference, X[step], Y[step]).backward()
        assert_grads(ddp, reference, f"rebuilt buckets, step {step}")
        if step == 0:  # rebuilt at the next forward, as torch's
            assert first_bucket() == {"first.weight", "first.bias"}, first_bucket()
        else:
            assert first_bucket() == {"last.weight", "last.bias"}, first_bucket()


def no_sync_accumulates() -> None:
    ddp, reference = pair(seed_offset=1)
    with ddp.no_sync():
        loss(ddp, X[0][MINE], Y[0][MINE], use_spare=True).backward()
    local = ddp.module.fc1.weight.grad.clone()
    everyone = [tk.zeros_like(local) for _ in range(WORLD)]
    dist.all_gather(everyone, local)
    assert WORLD == 1 or not np.array_equal(everyone[0].numpy(), everyone[1].numpy())
    loss(ddp, X[1][MINE], Y[1][MINE], use_spare=True).backward()
    loss(reference, X[0], Y[0], use_spare=True).backward()
    loss(reference, X[1], Y[1], use_spare=True).backward()
    assert_grads(ddp, reference, "no_sync then sync")
    print("ok no_sync", flush=True)


def grad_ownership() -> None:
    """A .grad made by the backward is the bucket's memory, and the next reduction writes a
    new buffer, never into it; gradients zeroed in place accumulate and reduce right."""
    ddp, reference = pair(seed_offset=4)
    loss(ddp, X[0][MINE], Y[0][MINE], use_spare=True).backward()
    kept = ddp.module.fc1.weight.grad
    value = kept.clone()
    ddp.zero_grad()  # set_to_none: the next backward makes new gradients
    loss(ddp, X[1][MINE], Y[1][MINE], use_spare=True).backward()
    assert ddp.module.fc1.weight.grad is not kept
    assert np.array_equal(kept.numpy(), value.numpy()), "a reduction wrote into an old .grad"
    reference.zero_grad()
    loss(reference, X[1], Y[1], use_spare=True).backward()
    assert_grads(ddp, reference, "after set_to_none")
    ddp.zero_grad(set_to_none=False)
    reference.zero_grad()
    loss(ddp, X[2][MINE], Y[2][MINE], use_spare=True).backward()
    loss(reference, X[2], Y[2], use_spare=True).backward()
    assert_grads(ddp, reference, "after zeroing in place")
    print("ok grad ownership", flush=True)


def unused_parameters() -> None:
    ddp, reference = pair(seed_offset=2, find_unused_parameters=True)
    loss(ddp, X[0][MINE], Y[0][MINE]).backward()  # spare unused on every rank
    loss(reference, X[0], Y[0]).backward()
    assert_grads(ddp, reference, "find_unused", names=("fc", "norm"))
    assert ddp.module.spare.weight.grad is None
    loss(ddp, X[1][MINE], Y[1][MINE], use_spare=True).backward()
    assert ddp.module.spare.weight.grad is not None
    strict = DDP(Net())
    loss(strict, X[0][MINE], Y[0][MINE]).backward()
    try:
        strict(X[1][MINE])
    except RuntimeError as error:
        text = str(error)
        assert "Expected to have finished reduction in the prior iteration" in text, text
        assert "find_unused_parameters=True" in text, text
        assert f"did not receive grad for rank {RANK}: spare.weight, spare.bias" in text, text
    else:
        raise AssertionError("an unused parameter must raise at the next forward")
    print("ok unused parameters", flush=True)


def state_and_buffers() -> None:
    ddp, _ = pair(seed_offset=3, norm=True)
    keys = list(ddp.state_dict())
    assert keys[0] == "module.fc1.weight" and "module.norm.running_mean" in keys, keys
    weights = [tk.zeros_like(ddp.module.fc1.weight) for _ in range(WORLD)]
    dist.all_gather(weights, ddp.module.fc1.weight.detach())
    assert all(np.array_equal(w.numpy(), weights[0].numpy()) for w in weights)
    ddp.module.norm.running_mean.add_(float(RANK))  # diverge; the next forward re-broadcasts
    with tk.no_grad():
        ddp.eval()  # (so that the forward itself leaves the statistics alone)
        ddp(X[0][MINE])  # no backward expected after a forward without grad
        ddp.train()
    means = [tk.zeros(16) for _ in range(WORLD)]
    dist.all_gather(means, ddp.module.norm.running_mean)
    assert all(np.array_equal(m.numpy(), means[0].numpy()) for m in means)
    ddp(X[0][MINE], use_spare=True).sum().backward()
    try:
        DDP(nn.Linear(2, 2), device_ids=[0])
    except ValueError as error:
        assert "device_ids and output_device arguments only work" in str(error)
    else:
        raise AssertionError("device_ids with a CPU module must raise")
    print("ok state and buffers", flush=True)


matches_single_process()
no_sync_accumulates()
grad_ownership()
unused_parameters()
state_and_buffers()
dist.destroy_process_group()
print(f"rank {RANK} of {WORLD}: all checks passed", flush=True)
