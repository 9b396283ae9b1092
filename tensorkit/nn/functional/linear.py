"""``linear`` and ``bilinear``: affine maps of the last dimension.

A linear layer with a bias on a matrix (or on rows folded into one) is one op, ``addmm``, as
PyTorch runs ``aten::addmm(bias, input, weight.T)`` under ``aten::linear``, its arguments in
that order (so a bias's gradient is ready before its weight's, as in PyTorch, which DDP's
buckets follow): one product, the bias added into the product's own new array, and one node
(``AddmmBackward0``) whose rule gives the weight's gradient in the weight's layout. The op
takes the weight as stored, (out_features, in_features), and transposes it inside. Without a
bias, or on a vector, it is ``input @ weight.T`` (``MmBackward0`` after the transpose's
node), as in PyTorch. The op's name differs from the function's, whose range (a profile's
row, a Tape's group) holds it, as PyTorch's profiler lists both.
"""

from __future__ import annotations

import math
from typing import Any

from ..._dtype import SCALAR_TYPE_NAMES
from ..._ranges import composite
from ...ops._apply import SAVE_INPUTS, OpDef, apply
from ...ops.matmul import einsum
from ...ops.shape import expanded_shape
from ...tensor import Tensor

__all__ = ["bilinear", "linear"]


def _linear_forward(xp: Any, bias: Any, input: Any, weight: Any) -> Any:
    out = xp.matmul(input, weight.T)
    out += bias  # the product's array is new: the bias lands in it
    return out


def _linear_rule(ctx: Any, space: Any, saved: tuple, g: Any) -> tuple:
    """``g`` for the bias, which the engine sums to the bias's shape as for any broadcast
    input, ``g @ conj(weight)`` and ``conj(g^H @ input)`` (the weight's C-ordered layout, so it
    is stored as ``.grad`` as it is)."""
    _, rows, weight = saved
    grad_bias = grad_input = grad_weight = None
    if ctx.edges[0] is not None:
        grad_bias = g
    if ctx.edges[1] is not None:
        grad_input = space.matmul(g, space.conj(weight))
    if ctx.edges[2] is not None:
        grad_weight = space.conj(space.matmul(space.mH(g), rows))
    return grad_bias, grad_input, grad_weight


_ADDMM = OpDef(
    "addmm",
    _linear_forward,
    None,
    rule=_linear_rule,
    saves=SAVE_INPUTS,
    node_name="AddmmBackward0",
)


def _check_bias(input: Tensor, weight: Tensor, bias: Tensor) -> None:
    """PyTorch's addmm checks, in its order: the bias's dtype, then the input's, against the
    weight's; then that the bias broadcasts to the (rows, out_features) result."""
    dtype = weight._data.dtype
    if bias._data.dtype is not dtype or input._data.dtype is not dtype:
        for role, other in (("self", bias), ("mat1", input)):
            if other._data.dtype != dtype:
                names = SCALAR_TYPE_NAMES
                raise RuntimeError(
                    f"{role} and mat2 must have the same dtype, but got "
                    f"{names[other._data.dtype.name]} and {names[dtype.name]}"
                )
    out_features = weight._data.shape[0]
    if bias._data.shape != (out_features,):  # a layer's own bias broadcasts
        expanded_shape(bias._data.shape, (input._data.shape[0], out_features))


@composite
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias`` for ``weight`` of shape (out_features, in_features)."""
    if not (
        isinstance(input, Tensor)
        and isinstance(weight, Tensor)
        and (bias is None or isinstance(bias, Tensor))
    ):
        raise _not_tensor_error(input, weight, bias)
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
        rows = input.reshape(math.prod(shape[:-1]), shape[-1])
        return _matrix_linear(rows, weight, bias).reshape(*shape[:-1], weight_shape[0])
    if len(shape) == 2 and len(weight_shape) == 2:
        return _matrix_linear(input, weight, bias)
    out = input @ weight.T
    return out if bias is None else out + bias


def _not_tensor_error(input: Any, weight: Any, bias: Any) -> TypeError:
    """PyTorch's TypeError for the first argument of ``linear`` that is not a Tensor (the bias
    may be None)."""
    arguments = (("input", input), ("weight", weight), ("bias", bias))
    position, name, value = next(
        (i, name, value)
        for i, (name, value) in enumerate(arguments, 1)
        if not isinstance(value, Tensor) and not (name == "bias" and value is None)
    )
    return TypeError(
        f"linear(): argument '{name}' (position {position}) must be Tensor, not "
        f"{type(value).__name__}"
    )


def _matrix_linear(input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    """``linear`` of a matrix by a matrix: the one op with a bias, a product without."""
    if bias is None:
        return input @ weight.T
    _check_bias(input, weight, bias)
    return apply(_ADDMM, bias, input, weight)


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
