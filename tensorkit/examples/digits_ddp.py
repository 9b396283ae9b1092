"""The digits CNN (``tensorkit.examples.digits``) trained data-parallel over several ranks.

Run with ``python -m tensorkit.distributed.run --nproc-per-node 2 -m
tensorkit.examples.digits_ddp`` (``--help`` lists the options; alone, it is a world of one).
Each rank reads its share of the training set through a ``DistributedSampler`` and batches of
``batch_size / world_size`` digits, so the global batch, and with it the accuracy, is the one
process's; ``DistributedDataParallel`` averages the gradients over the ranks during backward.
Rank 0 evaluates, saves the checkpoint (the inner module's state, without DDP's ``module.``
prefix, so ``digits.load_model`` reads it) and checks that it reloads.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import tensorkit as tk
import tensorkit.distributed as dist
from tensorkit.examples import digits
from tensorkit.nn.parallel import DistributedDataParallel
from tensorkit.optim.lr_scheduler import OneCycleLR
from tensorkit.utils.data import DataLoader, DistributedSampler


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The digits example's options; ``--workers`` defaults to 0 (the ranks use the cores)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = digits.parse_args(argv)
    if not any(arg.startswith("--workers") for arg in argv):
        args.workers = 0
    return args


def run(args: argparse.Namespace) -> digits.DigitsResult | None:
    """Train on every rank; rank 0 evaluates, saves and reloads (the others return None)."""
    start = time.perf_counter()
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.batch_size % world:
        raise ValueError(f"--batch-size {args.batch_size} must divide by the {world} ranks")
    tk.manual_seed(args.seed)
    train_set, test_set = digits.make_datasets(args.seed)
    sampler = DistributedSampler(train_set, num_replicas=world, rank=rank, seed=args.seed)
    loader = DataLoader(
        train_set,
        batch_size=args.batch_size // world,
        sampler=sampler,
        num_workers=args.workers,
        persistent_workers=args.workers > 0,
    )
    model = DistributedDataParallel(digits.DigitsCNN())
    optimizer = tk.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = OneCycleLR(
        optimizer, max_lr=args.lr, epochs=args.epochs, steps_per_epoch=len(loader)
    )
    if rank == 0:
        print(
            f"{world} ranks, {len(loader)} batches of {args.batch_size // world} per rank per epoch"
        )
    losses = []
    for epoch in range(1, args.epochs + 1):
        sampler.set_epoch(epoch)  # a new shuffle each epoch, the same on every rank
        description = f"rank {rank} epoch {epoch}/{args.epochs}"
        loss, _ = digits.train_one_epoch(model, loader, optimizer, scheduler, description)
        losses.append(loss)
    result = (
        _evaluate_and_save(args, model.module, optimizer, scheduler, test_set, losses, start)
        if rank == 0
        else None
    )
    dist.barrier()
    dist.destroy_process_group()
    return result


def _evaluate_and_save(
    args: argparse.Namespace,
    model: digits.DigitsCNN,
    optimizer: tk.optim.Optimizer,
    scheduler: OneCycleLR,
    test_set: digits.DigitsDataset,
    losses: list[float],
    start: float,
) -> digits.DigitsResult:
    test_loader = DataLoader(test_set, batch_size=256)
    accuracy = digits.evaluate(model, test_loader)
    with tempfile.TemporaryDirectory() as folder:
        path = args.checkpoint or Path(folder) / "digits_ddp.safetensors"
        path.parent.mkdir(parents=True, exist_ok=True)
        digits.save_checkpoint(path, model, optimizer, scheduler, epoch=args.epochs)
        reloaded, _ = digits.load_model(path)
    reloaded_accuracy = digits.evaluate(reloaded, test_loader)
    if reloaded_accuracy != accuracy:
        raise RuntimeError("the reloaded checkpoint does not reproduce the trained model")
    seconds = time.perf_counter() - start
    print(
        f"test accuracy {accuracy:.2%} (reloaded checkpoint: {reloaded_accuracy:.2%}) "
        f"in {seconds:.1f} s"
    )
    if args.checkpoint:
        print(f"checkpoint saved by rank 0 to {args.checkpoint}")
    return digits.DigitsResult(accuracy, reloaded_accuracy, losses, seconds)


def main(argv: Sequence[str] | None = None) -> None:
    run(parse_args(argv))


if __name__ == "__main__":
    main()
