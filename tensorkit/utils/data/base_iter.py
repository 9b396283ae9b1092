"""What the single-process and the multi-process DataLoader iterators share."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from ... import cuda
from .pin_memory import pin_memory
from .sampler import draw_seed

if TYPE_CHECKING:
    from .dataloader import DataLoader


class BaseIter:
    """What both iterators share: the key stream, the base seed, pinning, length warnings."""

    def __init__(self, loader: DataLoader) -> None:
        self._dataset = loader.dataset
        self._iterable = loader._iterable
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._persistent_workers = loader.persistent_workers
        if loader.pin_memory and loader.pin_memory_device:
            warnings.warn(
                "pin_memory_device is deprecated, the current accelerator will be used as the "
                f"device,ignore pin_memory_device='{loader.pin_memory_device}'.",
                stacklevel=4,
            )
        if loader.pin_memory and not cuda.is_available():
            warnings.warn(
                "'pin_memory' argument is set as true but no accelerator is found, then device "
                "pinned memory won't be used.",
                stacklevel=4,
            )
        self._pin_memory = loader.pin_memory and cuda.is_available()
        self._base_seed = draw_seed(loader.generator)
        self._start_epoch(loader)

    def _start_epoch(self, loader: DataLoader) -> None:
        self._keys = iter(self._index_sampler)
        self._num_yielded = 0
        self._len_reported = loader._iterable_len_reported

    def __iter__(self) -> BaseIter:
        return self

    def __next__(self) -> Any:
        data = self._next_data()
        if self._pin_memory:
            data = pin_memory(data)
        self._num_yielded += 1
        if (
            self._iterable
            and self._len_reported is not None
            and self._num_yielded > self._len_reported
        ):
            message = (
                f"Length of IterableDataset {self._dataset} was reported to be "
                f"{self._len_reported}(when accessing len(dataloader)), but "
                f"{self._num_yielded} samples have been fetched. "
            )
            if self._num_workers > 0:
                message += (
                    "For multiprocessing data-loading, this could be caused by not properly "
                    "configuring the IterableDataset replica at each worker."
                )
            warnings.warn(message, stacklevel=2)
        return data

    def _next_data(self) -> Any:
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self._index_sampler)

    def __getstate__(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} cannot be pickled")
