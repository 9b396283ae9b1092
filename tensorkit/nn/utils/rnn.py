"""Variable-length sequences for the recurrent layers: ``PackedSequence`` and the helpers that
pack, pad and unpad, as PyTorch's ``torch.nn.utils.rnn``.

A packed sequence holds the time steps of a batch sorted by length (longest first) one after
another: step ``t`` is ``batch_sizes[t]`` rows, the sequences still running at ``t``. Packing
and padding are one ``index_select`` each on a flattened tensor (padding selects from the data
plus one row of ``padding_value``), so gradients flow through them by that op's own rule.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from ... import _dtype
from ...ops.creation import full, tensor
from ...ops.indexing import argsort
from ...ops.shape import cat, stack
from ...tensor import Tensor

__all__ = [
    "PackedSequence",
    "invert_permutation",
    "pack_padded_sequence",
    "pack_sequence",
    "pad_packed_sequence",
    "pad_sequence",
    "unpack_sequence",
    "unpad_sequence",
]


class _PackedFields(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(_PackedFields):
    """The data and ``batch_sizes`` of a packed batch (made by :func:`pack_padded_sequence`
    or :func:`pack_sequence`, not by hand). ``sorted_indices`` is the order the batch was
    sorted into (None when it was sorted already), ``unsorted_indices`` its inverse;
    ``batch_sizes`` is an int64 tensor on the CPU."""

    def __new__(
        cls,
        data: Any,
        batch_sizes: Tensor | None = None,
        sorted_indices: Tensor | None = None,
        unsorted_indices: Tensor | None = None,
    ) -> PackedSequence:
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            if not (isinstance(data, list | tuple) and len(data) == 2):
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """``data.to(...)``; the indices follow the data's device, ``batch_sizes`` stays on
        the CPU. Returns ``self`` when the data does not change."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        indices = (self.sorted_indices, self.unsorted_indices)
        moved = [None if i is None else i.to(data.device) for i in indices]
        return type(self)(data, self.batch_sizes, *moved)

    def cuda(self, device: Any = None) -> PackedSequence:
        return self.to("cuda" if device is None else device)

    def cpu(self) -> PackedSequence:
        return self.to("cpu")

    def double(self) -> PackedSequence:
        return self.to(dtype=_dtype.float64)

    def float(self) -> PackedSequence:
        return self.to(dtype=_dtype.float32)

    def half(self) -> PackedSequence:
        return self.to(dtype=_dtype.float16)

    def long(self) -> PackedSequence:
        return self.to(dtype=_dtype.int64)

    def int(self) -> PackedSequence:
        return self.to(dtype=_dtype.int32)

    def short(self) -> PackedSequence:
        return self.to(dtype=_dtype.int16)

    def char(self) -> PackedSequence:
        return self.to(dtype=_dtype.int8)

    def byte(self) -> PackedSequence:
        return self.to(dtype=_dtype.uint8)

    @property
    def is_cuda(self) -> bool:
        """Whether the data is on a CUDA device."""
        return self.data.is_cuda


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of a 1-D permutation of indices (None stays None)."""
    if permutation is None:
        return None
    return argsort(permutation)


def _lengths_list(lengths: Tensor | Sequence[int]) -> list[int]:
    if isinstance(lengths, Tensor):
        if lengths.ndim != 1:
            raise RuntimeError(
                "'lengths' argument should be a 1D CPU int64 tensor, but got "
                f"{lengths.ndim}D cpu Long tensor"
            )
        return [int(n) for n in lengths.to(_dtype.int64).tolist()]
    return [int(n) for n in lengths]


def _batch_sizes(lengths: list[int]) -> list[int]:
    """How many sequences (sorted longest first) run at each time step."""
    return [sum(n > t for n in lengths) for t in range(lengths[0])]


def pack_padded_sequence(
    input: Tensor,
    lengths: Tensor | Sequence[int],
    batch_first: bool = False,
    enforce_sorted: bool = True,
) -> PackedSequence:
    """Pack a padded batch ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``) of sequences
    with the given lengths. With ``enforce_sorted`` the lengths must be decreasing; otherwise
    the batch is sorted here and the order kept in ``sorted_indices``."""
    sizes = _lengths_list(lengths)
    batch_dim = 0 if batch_first else 1
    sorted_indices, padded = None, input
    if not enforce_sorted:
        order = sorted(range(len(sizes)), key=lambda i: -sizes[i])
        sizes = [sizes[i] for i in order]
        sorted_indices = tensor(order, dtype=_dtype.int64, device=input.device)
        padded = input.index_select(batch_dim, sorted_indices)
    batch = padded.shape[batch_dim]
    if len(sizes) != batch:
        raise RuntimeError(
            f"Expected `len(lengths)` to be equal to batch_size, but got {len(sizes)} "
            f"(batch_size={batch})"
        )
    if sizes[-1] <= 0:
        raise RuntimeError(
            "Length of all samples has to be greater than 0, but found an element in "
            "'lengths' that is <= 0"
        )
    if any(a < b for a, b in itertools.pairwise(sizes)):
        raise RuntimeError(
            "`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
            "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
            "pack_sequence to sidestep this requirement if you do not need ONNX exportability."
        )
    batch_sizes = _batch_sizes(sizes)
    steps = padded.shape[1 - batch_dim]
    # row of (t, b) in the input flattened over its first two dimensions
    where = (lambda t, b: b * steps + t) if batch_first else (lambda t, b: t * batch + b)
    rows = [where(t, b) for t, size in enumerate(batch_sizes) for b in range(size)]
    flat = padded.reshape(batch * steps, *padded.shape[2:])
    data = flat.index_select(0, tensor(rows, dtype=_dtype.int64, device=input.device))
    return PackedSequence(data, tensor(batch_sizes, dtype=_dtype.int64), sorted_indices, None)


def pad_packed_sequence(
    sequence: PackedSequence,
    batch_first: bool = False,
    padding_value: float = 0.0,
    total_length: int | None = None,
) -> tuple[Tensor, Tensor]:
    """The inverse of :func:`pack_padded_sequence`: the padded batch ``(T, B, *)`` (or
    ``(B, T, *)``), in the original batch order, and the lengths (an int64 CPU tensor)."""
    data = sequence.data
    batch_sizes = [int(n) for n in sequence.batch_sizes.tolist()]
    steps = len(batch_sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence in "
                f"input, but got total_length={total_length} and max sequence length being "
                f"{steps}"
            )
        steps = total_length
    batch = batch_sizes[0]
    starts = [0]
    for size in batch_sizes:
        starts.append(starts[-1] + size)
    pad_row = starts[-1]  # the padding row appended after the data

    def source(t: int, b: int) -> int:
        return starts[t] + b if t < len(batch_sizes) and b < batch_sizes[t] else pad_row

    if batch_first:
        rows = [source(t, b) for b in range(batch) for t in range(steps)]
    else:
        rows = [source(t, b) for t in range(steps) for b in range(batch)]
    padding = full((1, *data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
    index = tensor(rows, dtype=_dtype.int64, device=data.device)
    padded = cat([data, padding]).index_select(0, index)
    outer = (batch, steps) if batch_first else (steps, batch)
    padded = padded.reshape(*outer, *data.shape[1:])
    lengths = [sum(size > b for size in batch_sizes) for b in range(batch)]
    if sequence.unsorted_indices is not None:
        order = sequence.unsorted_indices
        padded = padded.index_select(0 if batch_first else 1, order)
        lengths = [lengths[i] for i in order.tolist()]
    return padded, tensor(lengths, dtype=_dtype.int64)


def pad_sequence(
    sequences: Tensor | Iterable[Tensor],
    batch_first: bool = False,
    padding_value: float = 0.0,
    padding_side: str = "right",
) -> Tensor:
    """Stack sequences of sizes ``(L_i, *)`` into ``(T, B, *)`` (``(B, T, *)`` with
    ``batch_first``), padded with ``padding_value`` on ``padding_side`` to the longest."""
    if not isinstance(sequences, Iterable):
        raise RuntimeError(
            "pad_sequence: Expected iterable for input sequences, but got arg of type: "
            f"{type(sequences)}"
        )
    sequences = tuple(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise RuntimeError(
            f"Expected padding_side to be one of left or right, but got {padding_side}."
        )
    first = sequences[0]
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        s = s.to(first.dtype)
        missing = longest - s.shape[0]
        if missing:
            shape = (missing, *s.shape[1:])
            fill = full(shape, padding_value, dtype=first.dtype, device=s.device)
            s = cat([s, fill] if padding_side == "right" else [fill, s])
        padded.append(s)
    return stack(padded, 0 if batch_first else 1)


def unpad_sequence(
    padded_sequences: Tensor, lengths: Tensor, batch_first: bool = False
) -> list[Tensor]:
    """Split a padded batch back into its sequences, each cut to its length."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    lengths_list = _lengths_list(lengths)
    return [seq[:n] for seq, n in zip(padded_sequences.unbind(0), lengths_list, strict=True)]


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of sequences ``(L_i, *)``: :func:`pad_sequence`, then
    :func:`pack_padded_sequence`."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The sequences of a packed batch, in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
