"""Translations of views, copies between layouts and indexing."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..jit.ir import Ref
from ._builder import Builder
from ._table import translates

__all__: list[str] = []

_END = 2**63 - 1  # Slice's "to the end"


@translates("view", "reshape")
def _reshape(b: Builder) -> str:
    shape = b.node.attrs["shape"]
    return b.add("Reshape", [b.arg(0), b.shape_input("shape", shape, reshape=True)])


@translates("permute")
def _permute(b: Builder) -> str:
    return b.add("Transpose", [b.arg(0)], perm=list(b.node.attrs["axes"]))


@translates("expand")
def _expand(b: Builder) -> str:
    shape = b.node.attrs["shape"]
    return b.add("Expand", [b.arg(0), b.shape_input("shape", shape, reshape=False)])


@translates("getitem_slice", "select", "unsqueeze")
def _basic_index(b: Builder) -> str:
    """``x[index]`` for an index of ints, slices, None and Ellipsis."""
    x_ref = b.node.args[0]
    index = _expanded(b.node.attrs["index"], len(b.shape(x_ref)))
    starts, ends, axes, steps, dropped, added = [], [], [], [], [], []
    axis = 0
    for position, item in enumerate(index):
        if item is None:
            added.append(position - len(dropped))
            continue
        if type(item) is Ref or hasattr(item, "shape"):
            raise b.unsupported("an array in a basic index")
        if isinstance(item, slice):
            if item != slice(None):  # Slice reads negative and missing bounds as Python does
                step = 1 if item.step is None else item.step
                starts.append(item.start if item.start is not None else (0 if step > 0 else -1))
                ends.append(item.stop if item.stop is not None else (_END if step > 0 else -_END))
                axes.append(axis)
                steps.append(step)
        else:  # an int
            starts.append(item)
            ends.append(item + 1 if item != -1 else _END)
            axes.append(axis)
            steps.append(1)
            dropped.append(axis)
        axis += 1
    out = b.arg(0)
    if axes:
        inputs = [out, b.ints(starts), b.ints(ends), b.ints(axes), b.ints(steps)]
        out = b.add("Slice", inputs)
    if dropped:
        out = b.add("Squeeze", [out, b.ints(dropped)])
    if added:
        out = b.add("Unsqueeze", [out, b.ints(added)])
    return out


def _expanded(index: Any, rank: int) -> tuple:
    """``index`` as a tuple with its Ellipsis spelled out as full slices."""
    index = index if isinstance(index, tuple) else (index,)
    if any(item is Ellipsis for item in index):
        at = next(i for i, item in enumerate(index) if item is Ellipsis)
        used = sum(1 for item in index if item is not None and item is not Ellipsis)
        index = index[:at] + (slice(None),) * (rank - used) + index[at + 1 :]
    return index


@translates("index")
def _advanced_index(b: Builder) -> str:
    """``x[..., i, ...]`` with one integer array among full slices: a Gather."""
    x_ref = b.node.args[0]
    index = _expanded(b.node.attrs["index"], len(b.shape(x_ref)))
    arrays = [i for i, item in enumerate(index) if not isinstance(item, slice)]
    if (
        len(arrays) != 1
        or any(item != slice(None) for item in index if isinstance(item, slice))
        or _is_mask(b, index[arrays[0]])
    ):
        raise b.unsupported(
            "only indexing by one integer tensor among full slices (x[:, i]) is translated"
        )
    return b.add("Gather", [b.arg(0), b.tensor(index[arrays[0]], "int64")], axis=arrays[0])


def _is_mask(b: Builder, item: Any) -> bool:
    dtype = b.dtype(item) if type(item) is Ref else np.asarray(item).dtype.name
    return dtype == "bool"


@translates("gather")
def _gather(b: Builder) -> str:
    attrs = b.node.attrs
    index = b.tensor(attrs["index"], "int64")
    return b.add("GatherElements", [b.arg(0), index], axis=attrs["dim"])


@translates("cat")
def _cat(b: Builder) -> str:
    sizes = b.node.attrs["sizes"]
    inputs = [b.arg(i) for i, n in enumerate(sizes) if n is not None]
    return b.add("Concat", inputs, axis=b.node.attrs["axis"])


@translates("split")
def _split(b: Builder) -> list[str]:
    attrs = b.node.attrs
    b.check_static(b.node.args[0], [attrs["dim"]], "split")
    sizes = b.ints(attrs["sizes"])
    return b.add("Split", [b.arg(0), sizes], len(attrs["sizes"]), axis=attrs["dim"])


@translates("unbind")
def _unbind(b: Builder) -> list[str]:
    dim = b.node.attrs["dim"]
    b.check_static(b.node.args[0], [dim], "unbind")
    count = len(b.node.outputs)
    pieces = b.add("Split", [b.arg(0), b.ints([1] * count)], count, axis=dim)
    pieces = pieces if isinstance(pieces, list) else [pieces]
    return [b.add("Squeeze", [piece, b.ints([dim])]) for piece in pieces]


@translates("flip")
def _flip(b: Builder) -> str:
    axes = b.node.attrs["axes"]
    axes = [axes] if isinstance(axes, int) else list(axes)
    starts, ends, steps = [-1] * len(axes), [-_END] * len(axes), [-1] * len(axes)
    return b.add("Slice", [b.arg(0), b.ints(starts), b.ints(ends), b.ints(axes), b.ints(steps)])


@translates("tile")
def _tile(b: Builder) -> str:
    return b.add("Tile", [b.arg(0), b.ints(b.node.attrs["reps"])])


@translates("tril", "triu")
def _trilu(b: Builder) -> str:
    k = b.initializer(np.asarray(b.node.attrs["diagonal"], np.int64))
    return b.add("Trilu", [b.arg(0), k], upper=int(b.node.op == "triu"))


@translates("constant_pad")
def _constant_pad(b: Builder) -> str:
    attrs = b.node.attrs
    pads = [lo for lo, _ in attrs["padding"]] + [hi for _, hi in attrs["padding"]]
    value = b.const(attrs["value"], b.op_dtype(b.node))
    return b.add("Pad", [b.arg(0), b.ints(pads), value], mode="constant")
