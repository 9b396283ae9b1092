"""Fetchers: turn one key (or a list of keys) from the sampler into a collated batch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .dataset import IterableDataset


class MapFetcher:
    """``collate_fn([dataset[i] for i in keys])`` (``dataset.__getitems__`` when defined)."""

    def __init__(self, dataset: Any, auto_collation: bool, collate_fn: Callable) -> None:
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn

    def fetch(self, key: Any) -> Any:
        if not self.auto_collation:
            return self.collate_fn(self.dataset[key])
        getitems = getattr(self.dataset, "__getitems__", None)
        samples = getitems(key) if getitems else [self.dataset[i] for i in key]
        return self.collate_fn(samples)


class IterableFetcher:
    """The next ``len(keys)`` samples of the dataset's stream; StopIteration once it is
    exhausted (or when the last short batch is dropped)."""

    def __init__(
        self, dataset: Any, auto_collation: bool, collate_fn: Callable, drop_last: bool
    ) -> None:
        self.stream = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.ended = False

    def fetch(self, key: Any) -> Any:
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.stream))
        samples = []
        for _ in key:
            try:
                samples.append(next(self.stream))
            except StopIteration:
                self.ended = True
                break
        if not samples or (self.drop_last and len(samples) < len(key)):
            raise StopIteration
        return self.collate_fn(samples)


def create_fetcher(
    dataset: Any, auto_collation: bool, collate_fn: Callable, drop_last: bool
) -> MapFetcher | IterableFetcher:
    """The fetcher for this kind of dataset."""
    if isinstance(dataset, IterableDataset):
        return IterableFetcher(dataset, auto_collation, collate_fn, drop_last)
    return MapFetcher(dataset, auto_collation, collate_fn)
