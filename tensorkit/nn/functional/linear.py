"""``linear`` and ``bilinear``: affine maps of the last dimension."""

from __future__ import annotations

import math

from ..._ranges import composite
from ...ops.matmul import einsum
from ...tensor import Tensor

__all__ = ["bilinear", "linear"]


@composite
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias`` for ``weight`` of shape (out_features, in_features)."""
    shape, weight_shape = input._data.shape, weight._data.shape
    if not shape or not weight_shape:
        raise RuntimeError(
            "both arguments to linear need to be at least 1D, but they are "
            f"{len(shape)}D and {len(weight_shape)}D"
        )
    if shape[-1] != weight_shape[-1]:
        columns = shape[-1]
        rows = math.prod(shape) // columns if columns else 0
        if len(weight_shape) == 1:
            raise RuntimeError(
                f"size mismatch, got input ({rows}), mat ({rows}x{columns}), "
                f"vec ({weight_shape[0]})"
            )
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({rows}x{columns} and "
            f"{weight_shape[-1]}x{weight_shape[0]})"
        )
    if len(shape) > 2 and len(weight_shape) == 2:
        # One (rows, in) @ (in, out) product over every leading index, as PyTorch's addmm:
        # a batched product would run many small GEMMs (strided ones for a transposed input)
        # and its weight gradient would be a stack of products summed afterwards.
        out = input.reshape(math.prod(shape[:-1]), shape[-1]) @ weight.T
        out = out if bias is None else out + bias
        return out.reshape(*shape[:-1], weight_shape[0])
    out = input @ weight.T
    return out if bias is None else out + bias


@composite
def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y[..., o] = input1[..., i] * weight[o, i, j] * input2[..., j] + bias[o]``."""
    if input1.ndim != input2.ndim:
        raise RuntimeError(
            f"bilinear(): input dimensions do not match: got {input1.ndim} and {input2.ndim}"
        )
    if tuple(input1.shape[:-1]) != tuple(input2.shape[:-1]):
        raise RuntimeError(
            "bilinear(): input batch dimensions do not match: got "
            f"{list(input1.shape[:-1])} and {list(input2.shape[:-1])}"
        )
    for position, (given, expected) in enumerate(
        ((input1.shape[-1], weight.shape[1]), (input2.shape[-1], weight.shape[2])), 1
    ):
        if given != expected:
            raise RuntimeError(
                f"bilinear(): input{position} size does not match weight size: got {given} but "
                f"expected {expected}"
            )
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != weight.shape[0]):
        raise RuntimeError(
            f"bilinear(): bias size does not match weight size: got {bias.shape[-1]} but "
            f"expected {weight.shape[0]}"
        )
    out = einsum("...i,oij,...j->...o", input1, weight, input2)
    return out if bias is None else out + bias
