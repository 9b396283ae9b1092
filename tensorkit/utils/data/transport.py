"""Batches from worker processes to the main one through shared memory.

The worker pickles a batch with protocol 5, taking every array buffer (the data of each tensor
and NumPy array) out of band, writes those buffers into one new shared-memory block, and
sends only the small pickle plus the block's name and the buffers' (offset, size) spans. The
main process maps the block, removes its name at once, and unpickles with the buffers pointing
into the mapping: the batch's tensors are views of the shared memory (no copy), and the memory
is freed when the last array using it is garbage collected.
"""

from __future__ import annotations

import io
import pickle
from dataclasses import dataclass
from itertools import count
from typing import Any

import numpy as np

from ...multiprocessing import _shm

_ALIGN = 64


@dataclass(frozen=True)
class Packed:
    """A batch on its way: the pickle, the block holding its buffers, and where each one is."""

    payload: bytes
    block: str | None
    spans: tuple[tuple[int, int], ...]


class _BatchPickler(pickle.Pickler):
    def reducer_override(self, obj: Any) -> Any:
        # Strided arrays would travel inside the pickle; make them contiguous buffers instead.
        if type(obj) is np.ndarray and not (obj.flags.c_contiguous or obj.flags.f_contiguous):
            return np.ascontiguousarray(obj).__reduce_ex__(5)
        return NotImplemented


class BlockWriter:
    """Packs one worker's batches into blocks named ``prefix`` + a running number."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self._numbers = count()

    def pack(self, data: Any) -> Packed:
        buffers: list[pickle.PickleBuffer] = []
        stream = io.BytesIO()
        _BatchPickler(stream, protocol=5, buffer_callback=buffers.append).dump(data)
        raws = [buffer.raw() for buffer in buffers]
        spans = []
        size = 0
        for raw in raws:
            spans.append((size, raw.nbytes))
            size = -(-(size + raw.nbytes) // _ALIGN) * _ALIGN
        if size == 0:
            return Packed(stream.getvalue(), None, tuple(spans))
        name = f"{self.prefix}{next(self._numbers)}"
        block, mapping = _shm.create(name, size)
        try:
            for (offset, nbytes), raw in zip(spans, raws, strict=True):
                mapping[offset : offset + nbytes] = raw
        finally:
            mapping.close()
            block.close()
        return Packed(stream.getvalue(), name, tuple(spans))


def unpack(packed: Packed) -> Any:
    """The batch, its arrays mapped from the block (whose name is removed here)."""
    if packed.block is None:
        views = [memoryview(bytearray()) for _ in packed.spans]
    else:
        block, mapping = _shm.attach(packed.block)
        block.unlink()
        block.close()
        whole = memoryview(mapping)
        views = [whole[offset : offset + nbytes] for offset, nbytes in packed.spans]
    return pickle.loads(packed.payload, buffers=views)


def discard(packed: Packed) -> None:
    """Free a batch that will not be used."""
    if packed.block is not None:
        _shm.unlink(packed.block)
