"""``tk.cuda``: whether a GPU is usable, and basic device queries. CuPy is imported lazily and
any failure to reach a GPU (no CuPy, no driver, no device) means "not available"."""

from __future__ import annotations

from .._backend import cuda_available, cupy_module

__all__ = ["is_available", "device_count", "current_device", "manual_seed", "manual_seed_all"]


def is_available() -> bool:
    """True when CuPy imports and a CUDA device answers; never raises."""
    return cuda_available()


def device_count() -> int:
    if not cuda_available():
        return 0
    return int(cupy_module().cuda.runtime.getDeviceCount())


def current_device() -> int:
    _require()
    return int(cupy_module().cuda.runtime.getDevice())


def manual_seed(seed: int) -> None:
    """Seed the generator of the current CUDA device (a no-op without a GPU, as in PyTorch)."""
    if not cuda_available():
        return
    from .. import random
    from .._backend import device

    random.generator_for(device("cuda"), None)
    random._cuda_generators[device("cuda")].manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    for index in range(device_count()):
        from .. import random
        from .._backend import device

        target = device("cuda", index)
        random.generator_for(target, None)
        random._cuda_generators[target].manual_seed(seed)


def _require() -> None:
    if not cuda_available():
        raise RuntimeError(
            "CUDA is not available: no GPU was found, or CuPy is not installed "
            "(pip install tensorkit[cuda])"
        )
