"""Train a small CNN on scikit-learn's 8x8 handwritten digits, save a checkpoint, reload it.

Run with ``python -m tensorkit.examples.digits`` (``--help`` lists the options). The 1797
digits ship inside scikit-learn, so nothing is downloaded. The example shows a whole training
job in tensorkit:

1. a held-out split (80/20, stratified, fixed seed) wrapped in a ``Dataset``;
2. a ``DataLoader`` that makes batches in worker processes;
3. a CNN built from ``tk.nn`` layers, trained with Adam and a one-cycle learning-rate
   schedule, with a tqdm progress bar per epoch on a terminal (on stderr; when stderr is a
   file or a pipe, as in a log or CI, one line per epoch instead);
4. evaluation under ``tk.no_grad()`` with the model in ``eval()`` mode;
5. a checkpoint (model, optimizer, scheduler, epoch) written with ``tk.save``, loaded with
   ``tk.load`` into a fresh model that must score exactly the same.

By default it reaches about 99% test accuracy in about five seconds on two CPU cores.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from tqdm import tqdm

import tensorkit as tk
import tensorkit.nn as nn
import tensorkit.nn.functional as F  # noqa: N812 (PyTorch's usual name)
from tensorkit.optim.lr_scheduler import OneCycleLR
from tensorkit.utils.data import DataLoader, Dataset


# ----------------------------------------------------------------------------- data
class DigitsDataset(Dataset[tuple[tk.Tensor, tk.Tensor]]):
    """Images of shape (1, 8, 8) scaled to [0, 1], with their labels (0-9)."""

    def __init__(self, images: np.ndarray, labels: np.ndarray) -> None:
        self.images = tk.tensor(images.reshape(-1, 1, 8, 8) / 16.0, dtype=tk.float32)
        self.labels = tk.tensor(labels, dtype=tk.int64)

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> tuple[tk.Tensor, tk.Tensor]:
        return self.images[index], self.labels[index]


def make_datasets(seed: int, test_fraction: float = 0.2) -> tuple[DigitsDataset, DigitsDataset]:
    """The training and held-out sets: a stratified split of the digits, fixed by ``seed``."""
    digits = load_digits()
    x_train, x_test, y_train, y_test = train_test_split(
        digits.data,
        digits.target,
        test_size=test_fraction,
        stratify=digits.target,
        random_state=seed,
    )
    return DigitsDataset(x_train, y_train), DigitsDataset(x_test, y_test)


# ----------------------------------------------------------------------------- model
class DigitsCNN(nn.Module):
    """Two 3x3 convolution blocks (8x8 -> 4x4 -> 2x2) and a linear classifier."""

    def __init__(self, channels: int = 32, dropout: float = 0.2) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, channels, kernel_size=3, padding=1),
            nn.BatchNorm2d(channels),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(channels, 2 * channels, kernel_size=3, padding=1),
            nn.BatchNorm2d(2 * channels),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(
            nn.Flatten(),
            nn.Dropout(dropout),
            nn.Linear(2 * channels * 2 * 2, 10),
        )

    def forward(self, images: tk.Tensor) -> tk.Tensor:
        return self.classifier(self.features(images))


# ----------------------------------------------------------------------------- training
def train_one_epoch(
    model: nn.Module,
    loader: DataLoader,
    optimizer: tk.optim.Optimizer,
    scheduler: OneCycleLR,
    description: str,
) -> tuple[float, float]:
    """One pass over ``loader``; returns the mean loss and the accuracy on the training set."""
    model.train()
    total_loss, correct, seen = 0.0, 0, 0
    start = time.perf_counter()
    on_terminal = sys.stderr.isatty()  # a bar redrawn per batch would flood a log file
    progress = tqdm(loader, desc=description, unit="batch", leave=True, disable=not on_terminal)
    for images, labels in progress:
        logits = model(images)
        loss = F.cross_entropy(logits, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()  # OneCycleLR moves the learning rate after every batch

        total_loss += loss.item() * len(labels)
        correct += int((logits.argmax(dim=1) == labels).sum().item())
        seen += len(labels)
        progress.set_postfix(loss=f"{total_loss / seen:.4f}", acc=f"{correct / seen:.2%}")
    if not on_terminal:
        print(
            f"{description}: {len(loader)} batches in {time.perf_counter() - start:.1f} s, "
            f"loss={total_loss / seen:.4f}, acc={correct / seen:.2%}",
            file=sys.stderr,
            flush=True,
        )
    return total_loss / seen, correct / seen


def evaluate(model: nn.Module, loader: DataLoader) -> float:
    """The fraction of ``loader``'s samples that ``model`` classifies correctly."""
    model.eval()  # BatchNorm uses its running statistics, Dropout lets everything through
    correct, seen = 0, 0
    with tk.no_grad():  # no graph is recorded: faster, and nothing to free afterwards
        for images, labels in loader:
            correct += int((model(images).argmax(dim=1) == labels).sum().item())
            seen += len(labels)
    return correct / seen


# ----------------------------------------------------------------------------- checkpoints
def save_checkpoint(
    path: Path,
    model: nn.Module,
    optimizer: tk.optim.Optimizer,
    scheduler: OneCycleLR,
    epoch: int,
) -> None:
    """Everything needed to resume training, as one safetensors file."""
    checkpoint = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "epoch": epoch,
    }
    tk.save(checkpoint, path)


def load_model(path: Path) -> tuple[DigitsCNN, dict[str, Any]]:
    """A fresh model with the weights from ``path``, and the whole checkpoint."""
    checkpoint = tk.load(path)
    model = DigitsCNN()
    model.load_state_dict(checkpoint["model"])
    return model, checkpoint


# ----------------------------------------------------------------------------- main
def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=12, help="passes over the training set")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.01, help="peak learning rate")
    parser.add_argument("--workers", type=int, default=2, help="DataLoader worker processes")
    parser.add_argument("--seed", type=int, default=0, help="fixes the split, init and order")
    parser.add_argument(
        "--checkpoint", type=Path, default=None, help="where to save (default: a temporary file)"
    )
    return parser.parse_args(argv)


@dataclass
class DigitsResult:
    accuracy: float  # on the held-out split, after training
    reloaded_accuracy: float  # the same, from a fresh model loaded from the checkpoint
    epoch_losses: list[float]  # mean training loss of each epoch
    seconds: float


def run(args: argparse.Namespace) -> DigitsResult:
    """Train, evaluate, save a checkpoint, reload it into a fresh model and evaluate again."""
    start = time.perf_counter()
    tk.manual_seed(args.seed)  # the weights' initialization and dropout
    train_set, test_set = make_datasets(args.seed)
    train_loader = DataLoader(
        train_set,
        batch_size=args.batch_size,
        shuffle=True,
        num_workers=args.workers,
        generator=tk.Generator().manual_seed(args.seed),  # the order of the batches
        persistent_workers=args.workers > 0,  # start the workers once, not every epoch
    )
    test_loader = DataLoader(test_set, batch_size=256)

    model = DigitsCNN()
    optimizer = tk.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = OneCycleLR(
        optimizer, max_lr=args.lr, epochs=args.epochs, steps_per_epoch=len(train_loader)
    )
    print(
        f"{len(train_set)} training and {len(test_set)} test digits, "
        f"{sum(p.numel() for p in model.parameters())} parameters, {args.epochs} epochs"
    )
    epoch_losses = []
    for epoch in range(1, args.epochs + 1):
        description = f"epoch {epoch}/{args.epochs}"
        loss, _ = train_one_epoch(model, train_loader, optimizer, scheduler, description)
        epoch_losses.append(loss)
    accuracy = evaluate(model, test_loader)

    with tempfile.TemporaryDirectory() as folder:
        path = args.checkpoint or Path(folder) / "digits.safetensors"
        path.parent.mkdir(parents=True, exist_ok=True)
        save_checkpoint(path, model, optimizer, scheduler, epoch=args.epochs)
        reloaded, checkpoint = load_model(path)
    reloaded_accuracy = evaluate(reloaded, test_loader)
    if reloaded_accuracy != accuracy or checkpoint["epoch"] != args.epochs:
        raise RuntimeError("the reloaded checkpoint does not reproduce the trained model")
    if args.checkpoint:
        print(f"checkpoint (epoch {checkpoint['epoch']}) saved to {args.checkpoint}")

    seconds = time.perf_counter() - start
    print(
        f"test accuracy {accuracy:.2%} (reloaded checkpoint: {reloaded_accuracy:.2%}) "
        f"in {seconds:.1f} s"
    )
    return DigitsResult(accuracy, reloaded_accuracy, epoch_losses, seconds)


def main(argv: Sequence[str] | None = None) -> None:
    run(parse_args(argv))


if __name__ == "__main__":
    main()
