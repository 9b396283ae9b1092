"""Seeding the CUDA generators (no-ops without a GPU, as in PyTorch)."""

from __future__ import annotations

from .._backend import device
from ._runtime import device_count, is_available


def manual_seed(seed: int) -> None:
    """Seed the generator of the current CUDA device (a no-op without a GPU, as in PyTorch)."""
    if not is_available():
        return
    _seed(device("cuda"), seed)


def manual_seed_all(seed: int) -> None:
    """Seed the generators of every CUDA device."""
    for index in range(device_count()):
        _seed(device("cuda", index), seed)


def _seed(target: device, seed: int) -> None:
    from .. import random  # imported late: tensorkit.random needs the ops, loaded after us

    random.generator_for(target, None)
    random._cuda_generators[target].manual_seed(seed)
