"""Misuse of ops: the exception type and message, family by family, checked against PyTorch.

Each row is a call written against a module ``m`` (tensorkit, then torch), the exception it
must raise and a pattern its message must match. Where PyTorch words the message
differently, ``torch_match`` is the pattern for PyTorch's; the type must always agree.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

import tensorkit as tk

try:
    import torch
except ImportError:  # PyTorch is an optional oracle
    torch = None

OUT_OF_RANGE = r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"


@dataclass(frozen=True)
class Misuse:
    """``call(m)`` must raise ``error`` with a message matching ``match``."""

    name: str
    call: Callable[[Any], Any]
    error: type[Exception]
    match: str
    torch_match: str | None = None
    xfail: str | None = None


def _x(m: Any) -> Any:
    """A 2x3 float tensor."""
    return m.arange(6.0).reshape(2, 3)


def _setitem(index: Any, value: Any = 1.0) -> Callable[[Any], Any]:
    def call(m: Any) -> None:
        _x(m)[index] = value

    return call


def _setitem_into_long(
    index: Callable[[Any], Any], value: Callable[[Any], Any]
) -> Callable[[Any], Any]:
    def call(m: Any) -> None:
        m.zeros(3, dtype=m.int64)[index(m)] = value(m)

    return call


BINARY = [
    Misuse(
        "add-broadcast",
        lambda m: _x(m) + m.ones(2, 4),
        RuntimeError,
        r"The size of tensor a \(3\) must match the size of tensor b \(4\) at non-singleton "
        r"dimension 1",
    ),
    Misuse(
        "mul-broadcast-leading",
        lambda m: m.ones(3, 1) * m.ones(2, 4),
        RuntimeError,
        r"The size of tensor a \(3\) must match the size of tensor b \(2\) at non-singleton "
        r"dimension 0",
    ),
    Misuse(
        "where-broadcast",
        lambda m: m.where(m.ones(2, 3, dtype=m.bool), _x(m), m.ones(4)),
        RuntimeError,
        r"The size of tensor a \(3\) must match the size of tensor b \(4\) at non-singleton "
        r"dimension 1",
    ),
    Misuse(
        "bool-sub",
        lambda m: m.tensor([True]) - m.tensor([False]),
        RuntimeError,
        r"Subtraction, the `-` operator, with two bool tensors is not supported",
    ),
    Misuse(
        "bool-sub-scalar",
        lambda m: m.tensor([True]) - True,
        RuntimeError,
        r"Subtraction, the `-` operator, with two bool tensors is not supported",
    ),
    Misuse(
        "sub-bool-float",
        lambda m: _x(m) - m.tensor([True, False, True]),
        RuntimeError,
        r"Subtraction, the `-` operator, with a bool tensor is not supported",
    ),
    Misuse(
        "rsub-bool",
        lambda m: 1 - m.tensor([True]),
        RuntimeError,
        r"Subtraction, the `-` operator, with a bool tensor is not supported",
    ),
    Misuse(
        "floor_divide-bool",
        lambda m: m.tensor([True]) // m.tensor([True]),
        NotImplementedError,
        r"not implemented for 'Bool'",
    ),
    Misuse(
        "pow-bool",
        lambda m: m.pow(m.tensor([True]), m.tensor([True])),
        NotImplementedError,
        r"not implemented for 'Bool'",
    ),
    Misuse(
        "shift-bool",
        lambda m: m.tensor([True]) << m.tensor([True]),
        NotImplementedError,
        r"not implemented for '[Bb]ool'",
    ),
    Misuse(
        "addcdiv-int",
        lambda m: m.addcdiv(_x(m), m.tensor([1, 2, 3]), m.tensor([1, 1, 2])),
        RuntimeError,
        r"Integer division with addcdiv is no longer supported",
    ),
    Misuse(
        "bool-neg",
        lambda m: -m.tensor([True]),
        RuntimeError,
        r"Negation, the `-` operator, on a bool tensor is not supported",
    ),
    Misuse(
        "int-pow-negative",
        lambda m: m.tensor([2, 3]) ** -1,
        RuntimeError,
        r"Integers to negative integer powers are not allowed",
    ),
    Misuse(
        "int-pow-negative-function",
        lambda m: m.pow(m.tensor([2, 3]), -2),
        RuntimeError,
        r"Integers to negative integer powers are not allowed",
    ),
    Misuse(
        "int-floor-divide-by-zero",
        lambda m: m.tensor([1, 2]) // m.tensor([1, 0]),
        RuntimeError,
        r"ZeroDivisionError",
    ),
    Misuse(
        "int-remainder-by-zero",
        lambda m: m.tensor([1, 2]) % 0,
        RuntimeError,
        r"ZeroDivisionError",
    ),
    Misuse(
        "int-fmod-by-zero",
        lambda m: m.fmod(m.tensor([1, 2]), m.tensor([0, 1])),
        RuntimeError,
        r"ZeroDivisionError",
    ),
    Misuse(
        "int-trunc-div-by-zero",
        lambda m: m.div(m.tensor([3]), 0, rounding_mode="trunc"),
        RuntimeError,
        r"ZeroDivisionError",
    ),
    Misuse(
        "div-rounding-mode",
        lambda m: m.div(_x(m), 2, rounding_mode="round"),
        RuntimeError,
        r"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'round'",
    ),
    Misuse(
        "bitwise-float",
        lambda m: m.bitwise_and(_x(m), _x(m)),
        NotImplementedError,
        r'"bitwise_and.*" not implemented for',
    ),
    *(
        Misuse(
            f"{name}-int",
            lambda m, name=name: getattr(m, name)(m.tensor([1, 2]), m.tensor([3, 4])),
            NotImplementedError,
            rf"\"{name}_cpu\" not implemented for 'Long'",
        )
        for name in ("hypot", "logaddexp", "logaddexp2", "nextafter")
    ),
    *(
        Misuse(
            f"{name}-float",
            lambda m, name=name: getattr(m, name)(_x(m), _x(m)),
            NotImplementedError,
            rf"\"{name}_cpu\" not implemented for 'Float'",
        )
        for name in ("gcd", "lcm")
    ),
    Misuse(
        "heaviside-dtypes",
        lambda m: m.heaviside(_x(m), m.tensor([1])),
        RuntimeError,
        r"heaviside is not yet implemented for tensors with different dtypes\.",
    ),
    Misuse(
        "frexp-int",
        lambda m: m.frexp(m.tensor([1, 2])),
        RuntimeError,
        r"torch\.frexp\(\) only supports floating-point dtypes",
    ),
    Misuse(
        "shift-float",
        lambda m: _x(m) << 1,
        NotImplementedError,
        r"not implemented for",
    ),
    Misuse(
        "where-condition-dtype",
        lambda m: m.where(_x(m), _x(m), 0.0),
        RuntimeError,
        r"where expected condition to be a boolean tensor, but got a tensor with dtype",
    ),
    Misuse(
        "clamp-no-bounds",
        lambda m: m.clamp(_x(m)),
        RuntimeError,
        r"At least one of 'min' or 'max' must not be None",
    ),
]

UNARY = [
    Misuse(
        "invert-operator-float",
        lambda m: ~_x(m),
        TypeError,
        r"~ \(operator.invert\) is only implemented on integer and Boolean-type tensors",
    ),
    Misuse(
        "bitwise_not-float",
        lambda m: m.bitwise_not(_x(m)),
        NotImplementedError,
        r'"bitwise_not.*" not implemented for',
    ),
    Misuse(
        "requires-grad-int",
        lambda m: m.tensor([1, 2]).requires_grad_(),
        RuntimeError,
        r"only Tensors of floating point( and complex)? dtype can require gradients",
    ),
]

REDUCTION = [
    Misuse("sum-dim", lambda m: m.sum(_x(m), 2), IndexError, OUT_OF_RANGE),
    Misuse("sum-negative-dim", lambda m: _x(m).sum(-3), IndexError, r"Dimension out of range"),
    Misuse(
        "sum-repeated-dim",
        lambda m: m.sum(_x(m), (0, 0)),
        RuntimeError,
        r"dim 0 appears multiple times in the list of dims",
    ),
    Misuse(
        "sum-repeated-negative-dim",
        lambda m: m.sum(_x(m), (1, -1)),
        RuntimeError,
        r"dim 1 appears multiple times in the list of dims",
    ),
    Misuse("mean-dim", lambda m: m.mean(_x(m), (0, 2)), IndexError, OUT_OF_RANGE),
    Misuse(
        "mean-int",
        lambda m: m.mean(m.tensor([1, 2])),
        RuntimeError,
        r"mean\(\): could not infer output dtype. Input dtype must be either a floating point "
        r"or complex dtype",
    ),
    Misuse(
        "var-int",
        lambda m: m.var(m.tensor([1, 2])),
        RuntimeError,
        r"std and var only support floating point and complex dtypes",
    ),
    Misuse(
        "nanmean-int",
        lambda m: m.nanmean(m.tensor([1, 2])),
        RuntimeError,
        r"nanmean\(\): expected input to have floating point or complex dtype but got",
    ),
    Misuse("prod-dim", lambda m: m.prod(_x(m), 2), IndexError, OUT_OF_RANGE),
    Misuse("amax-dim", lambda m: m.amax(_x(m), -3), IndexError, r"Dimension out of range"),
    Misuse(
        "amax-empty",
        lambda m: m.amax(m.ones(0, 2)),
        RuntimeError,
        r"amax\(\): Expected reduction dim to be specified for input.numel\(\) == 0",
    ),
    Misuse(
        "amax-empty-dim",
        lambda m: m.amax(m.ones(0, 2), 0),
        IndexError,
        r"amax\(\): Expected reduction dim 0 to have non-zero size",
    ),
    Misuse(
        "max-empty",
        lambda m: m.max(m.ones(0, 2)),
        RuntimeError,
        r"Expected reduction dim to be specified for input.numel\(\) == 0",
    ),
    Misuse(
        "max-empty-dim",
        lambda m: m.max(m.ones(0, 2), 0),
        IndexError,
        r"max\(\): Expected reduction dim 0 to have non-zero size",
    ),
    Misuse(
        "argmax-empty",
        lambda m: m.argmax(m.ones(0)),
        IndexError,
        r"argmax\(\): Expected reduction dim to be specified for input.numel\(\) == 0",
    ),
    Misuse("max-dim", lambda m: m.max(_x(m), 2), IndexError, OUT_OF_RANGE),
    Misuse("argmin-dim", lambda m: m.argmin(_x(m), 2), IndexError, OUT_OF_RANGE),
    Misuse("var-dim", lambda m: m.var(_x(m), 2), IndexError, OUT_OF_RANGE),
    Misuse("logsumexp-dim", lambda m: m.logsumexp(_x(m), 2), IndexError, OUT_OF_RANGE),
    Misuse("cumsum-dim", lambda m: m.cumsum(_x(m), 2), IndexError, OUT_OF_RANGE),
    Misuse("cumprod-dim", lambda m: m.cumprod(_x(m), -3), IndexError, r"Dimension out of range"),
    Misuse("all-dim", lambda m: m.all(_x(m), 2), IndexError, OUT_OF_RANGE),
    Misuse("count_nonzero-dim", lambda m: m.count_nonzero(_x(m), 2), IndexError, OUT_OF_RANGE),
    Misuse(
        "median-empty-dim",
        lambda m: m.median(m.empty(0, 3), 0),
        IndexError,
        r"median\(\): Expected reduction dim 0 to have non-zero size\.",
    ),
    Misuse(
        "nanmedian-empty-dim",
        lambda m: m.nanmedian(m.empty(0, 3), 0),
        IndexError,
        r"median\(\): Expected reduction dim 0 to have non-zero size\.",
    ),
    Misuse("median-dim-range", lambda m: m.median(_x(m), 2), IndexError, OUT_OF_RANGE),
    Misuse(
        "quantile-q-range",
        lambda m: m.quantile(_x(m), 1.5),
        RuntimeError,
        r"quantile\(\) q must be in the range \[0, 1\] but got 1\.5",
    ),
    Misuse(
        "nanquantile-q-values",
        lambda m: m.nanquantile(_x(m), m.tensor([0.5, -0.1])),
        RuntimeError,
        r"quantile\(\) q values must be in the range \[0, 1\]",
    ),
    Misuse(
        "quantile-interpolation",
        lambda m: m.quantile(_x(m), 0.5, interpolation="cubic"),
        RuntimeError,
        r"quantile\(\) interpolation must be one of linear, lower, higher, midpoint or nearest, "
        r"but got cubic",
    ),
    Misuse(
        "quantile-empty",
        lambda m: m.quantile(m.empty(0), 0.5),
        RuntimeError,
        r"quantile\(\) input tensor must be non-empty",
    ),
    Misuse(
        "quantile-int",
        lambda m: m.quantile(m.arange(6), 0.5),
        RuntimeError,
        r"quantile\(\) input tensor must be either float or double dtype",
    ),
    Misuse(
        "quantile-q-dtype",
        lambda m: m.quantile(_x(m), m.tensor([0.5], dtype=m.float64)),
        RuntimeError,
        r"quantile\(\) q tensor must be same dtype as the input tensor",
    ),
    Misuse(
        "quantile-q-2d",
        lambda m: m.quantile(_x(m), m.full((2, 2), 0.5)),
        RuntimeError,
        r"quantile\(\) q must be a scalar or 1D tensor",
    ),
    Misuse("quantile-dim-range", lambda m: m.quantile(_x(m), 0.5, 2), IndexError, OUT_OF_RANGE),
    Misuse(
        "cholesky_solve-not-square",
        lambda m: m.cholesky_solve(m.ones(3, 2), m.ones(2, 3)),
        RuntimeError,
        r"A must be batches of square matrices, but they are 2 by 3 matrices",
    ),
    Misuse(
        "cholesky_solve-sizes",
        lambda m: m.cholesky_solve(m.ones(2, 2), m.eye(3)),
        RuntimeError,
        r"Incompatible matrix sizes for cholesky_solve: each A matrix is 3 by 3 but each b "
        r"matrix is 2 by 2",
    ),
    Misuse(
        "cholesky_solve-1d",
        lambda m: m.cholesky_solve(m.ones(3), m.eye(3)),
        RuntimeError,
        r"b should have at least 2 dimensions, but has 1 dimensions instead",
    ),
    Misuse(
        "cholesky_inverse-not-square",
        lambda m: m.cholesky_inverse(m.ones(2, 3)),
        RuntimeError,
        r"cholesky_inverse: A must be batches of square matrices, but they are 2 by 3 matrices",
    ),
    Misuse(
        "cholesky_inverse-1d",
        lambda m: m.cholesky_inverse(m.ones(3)),
        RuntimeError,
        r"cholesky_inverse: The input tensor A must have at least 2 dimensions\.",
    ),
    Misuse(
        "mode-empty-dim",
        lambda m: m.mode(m.empty(0, 3), 0),
        IndexError,
        r"mode\(\): Expected reduction dim 0 to have non-zero size\.",
    ),
    Misuse("cummax-dim-range", lambda m: m.cummax(_x(m), 2), IndexError, OUT_OF_RANGE),
    Misuse(
        "cummin-dim-range", lambda m: m.cummin(_x(m), -3), IndexError, r"Dimension out of range"
    ),
    Misuse(
        "logcumsumexp-int",
        lambda m: m.logcumsumexp(m.tensor([1, 2]), 0),
        NotImplementedError,
        r"logcumsumexp\(\): not implemented for \S*int64",
        torch_match=r"not implemented for 'Long'",
    ),
    Misuse(
        "trace-vector",
        lambda m: m.trace(m.ones(3)),
        RuntimeError,
        r"trace: expected a matrix, but got tensor with dim 1",
    ),
    Misuse(
        "diff-scalar",
        lambda m: m.diff(m.tensor(1.0)),
        RuntimeError,
        r"diff expects input to be at least one-dimensional",
    ),
    Misuse(
        "diff-negative-n",
        lambda m: m.diff(m.ones(3), n=-1),
        RuntimeError,
        r"order must be non-negative but got -1",
    ),
    Misuse(
        "diff-prepend-ndim",
        lambda m: m.diff(_x(m), prepend=m.ones(3)),
        RuntimeError,
        r"diff expects prepend or append to be the same dimension as input",
    ),
]

SHAPE = [
    Misuse(
        "flip-repeated-dim",
        lambda m: m.flip(_x(m), (0, -2)),
        RuntimeError,
        r"dim 0 appears multiple times in the list of dims",
    ),
    Misuse(
        "reshape-size",
        lambda m: _x(m).reshape(4, 2),
        RuntimeError,
        r"shape '\[4, 2\]' is invalid for input of size 6",
    ),
    Misuse(
        "reshape-infer-size",
        lambda m: _x(m).reshape(-1, 4),
        RuntimeError,
        r"shape '\[-1, 4\]' is invalid for input of size 6",
    ),
    Misuse(
        "reshape-two-infers",
        lambda m: _x(m).reshape(-1, -1),
        RuntimeError,
        r"only one dimension can be inferred",
    ),
    Misuse(
        "reshape-negative",
        lambda m: _x(m).reshape(-2, 3),
        RuntimeError,
        r"invalid shape dimension -2",
    ),
    Misuse(
        "view-size",
        lambda m: _x(m).view(5),
        RuntimeError,
        r"shape '\[5\]' is invalid for input of size 6",
    ),
    Misuse(
        "view-strides",
        lambda m: _x(m).t().view(6),
        RuntimeError,
        r"view size is not compatible with input tensor's size and stride",
    ),
    Misuse(
        "flatten-order",
        lambda m: m.flatten(_x(m), 1, 0),
        RuntimeError,
        r"flatten\(\) has invalid args: start_dim cannot come after end_dim",
    ),
    Misuse(
        "unflatten-sizes",
        lambda m: _x(m).unflatten(1, (2, 2)),
        RuntimeError,
        r"unflatten: Provided sizes \[2, 2\] don't multiply up to the size of dim 1 \(3\)",
    ),
    Misuse("squeeze-dim", lambda m: _x(m).squeeze(2), IndexError, OUT_OF_RANGE),
    Misuse(
        "unsqueeze-dim",
        lambda m: _x(m).unsqueeze(3),
        IndexError,
        r"Dimension out of range \(expected to be in range of \[-3, 2\], but got 3\)",
    ),
    Misuse("transpose-dim", lambda m: _x(m).transpose(0, 2), IndexError, OUT_OF_RANGE),
    Misuse("permute-dim", lambda m: _x(m).permute(0, 2), IndexError, OUT_OF_RANGE),
    Misuse(
        "permute-length",
        lambda m: _x(m).permute(0, 1, 2),
        RuntimeError,
        r"number of dimensions in the tensor input does not match the length of the desired "
        r"ordering of dimensions",
    ),
    Misuse(
        "permute-duplicate",
        lambda m: _x(m).permute(0, 0),
        RuntimeError,
        r"permute\(\): duplicate dims are not allowed",
    ),
    Misuse("movedim-dim", lambda m: m.movedim(_x(m), 0, 2), IndexError, OUT_OF_RANGE),
    Misuse(
        "movedim-lengths",
        lambda m: m.movedim(_x(m), (0, 1), (1,)),
        RuntimeError,
        r"movedim: Invalid source or destination dims",
    ),
    Misuse(
        "t-3d",
        lambda m: m.t(m.ones(2, 2, 2)),
        RuntimeError,
        r"t\(\) expects a tensor with <= 2 dimensions, but self is 3D",
    ),
    Misuse(
        "mT-1d",
        lambda m: m.ones(3).mT,
        RuntimeError,
        r"tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor",
    ),
    Misuse(
        "expand-size",
        lambda m: _x(m).expand(2, 4),
        RuntimeError,
        r"The expanded size of the tensor \(4\) must match the existing size \(3\) at "
        r"non-singleton dimension 1.  Target sizes: \[2, 4\].  Tensor sizes: \[2, 3\]",
    ),
    Misuse(
        "expand-fewer-sizes",
        lambda m: _x(m).expand(3),
        RuntimeError,
        r"the number of sizes provided \(1\) must be greater or equal to the number of "
        r"dimensions in the tensor \(2\)",
    ),
    Misuse(
        "expand-leading-infer",
        lambda m: _x(m).expand(-1, 2, 3),
        RuntimeError,
        r"The expanded size of the tensor \(-1\) isn't allowed in a leading, non-existing "
        r"dimension 0",
    ),
    Misuse(
        "multi-output-view-write-in-place",
        lambda m: (m.ones(2, 3, requires_grad=True) * 1).unbind(1)[2].mul_(2.0),
        RuntimeError,
        r"Output 2 of Unbind is a view and is being modified inplace",
    ),
    Misuse(
        "expand-write-in-place",
        lambda m: m.zeros(1, 3).expand(2, 3).add_(1.0),
        RuntimeError,
        r"unsupported operation: more than one element of the written-to tensor refers to a "
        r"single memory location",
    ),
    Misuse(
        "broadcast_to-size",
        lambda m: m.broadcast_to(_x(m), (3, 3)),
        RuntimeError,
        r"The expanded size of the tensor \(3\) must match the existing size \(2\) at "
        r"non-singleton dimension 0",
    ),
    Misuse(
        "narrow-past-end",
        lambda m: m.narrow(_x(m), 1, 2, 2),
        RuntimeError,
        r"start \(2\) \+ length \(2\) exceeds dimension size \(3\)",
    ),
    Misuse(
        "narrow-start",
        lambda m: m.narrow(_x(m), 1, 4, 0),
        IndexError,
        r"start out of range \(expected to be in range of \[-3, 3\], but got 4\)",
    ),
    Misuse(
        "narrow-length",
        lambda m: m.narrow(_x(m), 1, 0, -1),
        RuntimeError,
        r"narrow\(\): length must be non-negative",
    ),
    Misuse("narrow-dim", lambda m: m.narrow(_x(m), 2, 0, 1), IndexError, OUT_OF_RANGE),
    Misuse(
        "diagonal-same-dims",
        lambda m: m.diagonal(_x(m), 0, 1, -1),
        RuntimeError,
        r"diagonal dimensions cannot be identical 1, -1",
    ),
    Misuse(
        "cat-sizes",
        lambda m: m.cat([_x(m), m.ones(1, 4)]),
        RuntimeError,
        r"Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 "
        r"for tensor number 1 in the list",
    ),
    Misuse(
        "cat-ndim",
        lambda m: m.cat([_x(m), m.ones(3)], 1),
        RuntimeError,
        r"Tensors must have same number of dimensions: got 2 and 1",
    ),
    Misuse(
        "cat-scalar",
        lambda m: m.cat([m.ones(()), m.ones(())]),
        RuntimeError,
        r"zero-dimensional tensor \(at position 0\) cannot be concatenated",
    ),
    Misuse(
        "cat-empty-list",
        lambda m: m.cat([]),
        ValueError,
        r"expected a non-empty list of Tensors",
    ),
    Misuse("cat-dim", lambda m: m.cat([_x(m), _x(m)], 2), IndexError, OUT_OF_RANGE),
    Misuse(
        "stack-sizes",
        lambda m: m.stack([_x(m), m.ones(2, 4)]),
        RuntimeError,
        r"stack expects each tensor to be equal size, but got \[2, 3\] at entry 0 and \[2, 4\] "
        r"at entry 1",
    ),
    Misuse(
        "split-sizes-sum",
        lambda m: m.split(_x(m), [1, 1], 1),
        RuntimeError,
        r"split_with_sizes expects split_sizes to sum exactly to 3",
    ),
    Misuse(
        "split-negative",
        lambda m: m.split(_x(m), -1),
        RuntimeError,
        r"split expects split_size be non-negative, but got split_size=-1",
    ),
    Misuse(
        "split-zero",
        lambda m: m.split(_x(m), 0),
        RuntimeError,
        r"split_size can only be 0 if dimension size is 0, but got dimension size of 2",
    ),
    Misuse(
        "chunk-zero",
        lambda m: m.chunk(_x(m), 0),
        RuntimeError,
        r"chunk expects `chunks` to be greater than 0, got: 0",
    ),
    Misuse(
        "tensor_split-zero",
        lambda m: m.tensor_split(_x(m), 0),
        RuntimeError,
        r"number of sections must be larger than 0, got 0",
    ),
    Misuse(
        "repeat-fewer-dims",
        lambda m: _x(m).repeat(2),
        RuntimeError,
        r"Number of dimensions of repeat dims can not be smaller than number of dimensions of "
        r"tensor",
    ),
    Misuse(
        "repeat_interleave-sizes",
        lambda m: m.repeat_interleave(_x(m), m.tensor([1, 2]), dim=1),
        RuntimeError,
        r"repeats must have the same size as input along dim, but got repeats.size\(0\) = 2 "
        r"and input.size\(1\) = 3",
    ),
    Misuse(
        "roll-lengths",
        lambda m: m.roll(_x(m), (1, 2), (0,)),
        RuntimeError,
        r"shifts and dimensions must align",
    ),
    Misuse("flip-dim", lambda m: m.flip(_x(m), (2,)), IndexError, OUT_OF_RANGE),
    Misuse(
        "tril-1d",
        lambda m: m.tril(m.ones(3)),
        RuntimeError,
        r"tril: input tensor must have at least 2 dimensions",
    ),
    Misuse(
        "diag-3d",
        lambda m: m.diag(m.ones(2, 2, 2)),
        RuntimeError,
        r"diag\(\): Supports 1D or 2D tensors. Got 3D",
    ),
    Misuse(
        "rot90-one-dim",
        lambda m: m.rot90(_x(m), 1, [0]),
        RuntimeError,
        r"expected total rotation dims == 2, but got dims = 1",
    ),
    Misuse(
        "rot90-vector",
        lambda m: m.rot90(m.ones(2)),
        RuntimeError,
        r"expected total dims >= 2, but got total dims = 1",
    ),
    Misuse(
        "rot90-same-dims",
        lambda m: m.rot90(_x(m), 1, [0, -2]),
        RuntimeError,
        r"expected rotation dims to be different, but got dim0 = 0 and dim1 = -2",
    ),
    Misuse("rot90-dim-range", lambda m: m.rot90(_x(m), 1, [0, 2]), IndexError, OUT_OF_RANGE),
    Misuse(
        "meshgrid-indexing",
        lambda m: m.meshgrid(m.ones(2), m.ones(3), indexing="foo"),
        RuntimeError,
        r'torch.meshgrid: indexing must be one of "xy" or "ij", but received: foo',
    ),
    Misuse(
        "meshgrid-matrix",
        lambda m: m.meshgrid(_x(m), m.ones(3), indexing="ij"),
        RuntimeError,
        r"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: ",
    ),
    Misuse(
        "tril_indices-negative-row",
        lambda m: m.tril_indices(-1, 3),
        RuntimeError,
        r"row must be non-negative, got-1",
    ),
    Misuse(
        "triu_indices-negative-col",
        lambda m: m.triu_indices(3, -2),
        RuntimeError,
        r"col must be non-negative, got-2",
    ),
    Misuse(
        "addmm-shapes",
        lambda m: m.addmm(m.ones(2, 2), _x(m), m.ones(4, 2)),
        RuntimeError,
        r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x2\)",
    ),
    Misuse(
        "addmv-sizes",
        lambda m: m.addmv(m.ones(2), _x(m), m.ones(4)),
        RuntimeError,
        r"size mismatch, got input \(2\), mat \(2x3\), vec \(4\)",
    ),
    Misuse(
        "addr-vec1-2d",
        lambda m: m.addr(m.ones(2, 3), m.ones(2, 2), m.ones(3)),
        RuntimeError,
        r"addr: Expected 1-D argument vec1, but got 2-D",
    ),
    Misuse(
        "addr-input-shape",
        lambda m: m.addr(m.ones(2, 4), m.ones(2), m.ones(3)),
        RuntimeError,
        r"The expanded size of the tensor \(3\) must match the existing size \(4\)",
    ),
    Misuse(
        "inner-last-dim",
        lambda m: m.inner(_x(m), m.ones(4)),
        RuntimeError,
        r"inner\(\) the last dimension must match on both input tensors but got shapes "
        r"\[2, 3\] and \[4\]",
    ),
    Misuse(
        "histc-bins",
        lambda m: m.histc(_x(m), bins=0),
        RuntimeError,
        r"torch.histogram\(\): bins must be > 0, but got 0 for dimension 0",
    ),
    Misuse(
        "histc-min-above-max",
        lambda m: m.histc(_x(m), bins=4, min=3, max=0),
        RuntimeError,
        r"torch.histc: max must be larger than min",
    ),
    Misuse(
        "histc-infinite-range",
        lambda m: m.histc(_x(m), bins=4, min=1, max=float("inf")),
        RuntimeError,
        r"torch.histc: range of \[1, inf\] is not finite",
    ),
    Misuse(
        "histc-int",
        lambda m: m.histc(m.ones(3, dtype=m.int64)),
        NotImplementedError,
        r"\"histogram_cpu\" not implemented for 'Long'",
    ),
    Misuse(
        "bincount-negative",
        lambda m: m.bincount(m.tensor([0, -1])),
        RuntimeError,
        r"bincount only supports 1-d non-negative integral inputs\.",
    ),
    Misuse(
        "bincount-2d",
        lambda m: m.bincount(m.zeros(2, 2, dtype=m.int64)),
        RuntimeError,
        r"bincount only supports 1-d non-negative integral inputs\.",
    ),
    Misuse(
        "bincount-float",
        lambda m: m.bincount(_x(m).flatten()),
        NotImplementedError,
        r"\"bincount_cpu\" not implemented for 'Float'",
    ),
    Misuse(
        "bincount-minlength",
        lambda m: m.bincount(m.tensor([0, 1]), minlength=-1),
        RuntimeError,
        r"minlength should be >= 0",
    ),
    Misuse(
        "bincount-weights-length",
        lambda m: m.bincount(m.tensor([0, 1]), weights=m.ones(3)),
        RuntimeError,
        r"weights should be 1-d and have the same length as input",
    ),
    Misuse(
        "renorm-maxnorm",
        lambda m: m.renorm(_x(m), 2, 0, -1),
        RuntimeError,
        r"renorm: expected maxnorm to be >= 0 but got -1",
    ),
    Misuse(
        "renorm-p",
        lambda m: m.renorm(_x(m), 0, 0, 1),
        RuntimeError,
        r"renorm: non-positive-norm not supported",
    ),
    Misuse(
        "renorm-1d",
        lambda m: m.renorm(m.ones(3), 2, 0, 1),
        RuntimeError,
        r"renorm: input needs at least 2 dimensions, got 1 dimensions",
    ),
    Misuse("renorm-dim", lambda m: m.renorm(_x(m), 2, 2, 1), IndexError, OUT_OF_RANGE),
    Misuse(
        "cross-no-size-3",
        lambda m: m.cross(m.ones(2, 4), m.ones(2, 4)),
        RuntimeError,
        r"no dimension of size 3 in input",
    ),
    Misuse(
        "cross-dim-length",
        lambda m: m.cross(m.ones(2, 3), m.ones(2, 4), dim=-1),
        RuntimeError,
        r"linalg.cross: inputs dimension -1 must have length 3. Got 3 and 4",
    ),
    Misuse(
        "cross-ndim",
        lambda m: m.cross(m.ones(2, 3), m.ones(3), dim=-1),
        RuntimeError,
        r"linalg.cross: inputs must have the same number of dimensions\.",
    ),
]

INDEXING = [
    Misuse(
        "index-int",
        lambda m: _x(m)[2],
        IndexError,
        r"index 2 is out of bounds for dimension 0 with size 2",
    ),
    Misuse(
        "index-int-second-dim",
        lambda m: _x(m)[:, 3],
        IndexError,
        r"index 3 is out of bounds for dimension 1 with size 3",
    ),
    Misuse(
        "index-negative-int",
        lambda m: _x(m)[-3],
        IndexError,
        r"index -3 is out of bounds for dimension 0 with size 2",
    ),
    Misuse(
        "index-after-ellipsis",
        lambda m: _x(m)[..., 5],
        IndexError,
        r"index 5 is out of bounds for dimension 1 with size 3",
    ),
    Misuse(
        "index-list",
        lambda m: _x(m)[[0, 5]],
        IndexError,
        r"index 5 is out of bounds for dimension 0 with size 2",
    ),
    Misuse(
        "index-tensor",
        lambda m: _x(m)[:, m.tensor([1, -4])],
        IndexError,
        r"index -4 is out of bounds for dimension 1 with size 3",
        torch_match=r"index -4 is out of bounds for dimension 0 with size 3",  # sic
    ),
    Misuse(
        "index-too-many",
        lambda m: _x(m)[0, 0, 0],
        IndexError,
        r"too many indices for tensor of dimension 2",
    ),
    Misuse(
        "index-negative-step",
        lambda m: _x(m)[::-1],
        ValueError,
        r"step must be greater than zero",
    ),
    Misuse(
        "index-negative-step-second-dim",
        lambda m: _x(m)[:, 2:0:-1],
        ValueError,
        r"step must be greater than zero",
    ),
    Misuse("index-zero-step", lambda m: _x(m)[::0], ValueError, r"slice step cannot be zero"),
    Misuse(
        "index-mask-shape",
        lambda m: _x(m)[m.tensor([True, False, True])],
        IndexError,
        r"The shape of the mask \[3\] at index 0 does not match the shape of the indexed tensor "
        r"\[2, 3\]",
    ),
    Misuse(
        "index-float-tensor",
        lambda m: _x(m)[m.tensor([0.0])],
        IndexError,
        r"tensors used as indices must be long, int, byte or bool tensors",
    ),
    Misuse(
        "setitem-int",
        _setitem(5),
        IndexError,
        r"index 5 is out of bounds for dimension 0 with size 2",
    ),
    Misuse(
        "setitem-list",
        _setitem(([0, 7],)),
        IndexError,
        r"index 7 is out of bounds for dimension 0 with size 2",
    ),
    Misuse(
        "setitem-negative-step",
        _setitem(slice(None, None, -1)),
        ValueError,
        r"step must be greater than zero",
    ),
    Misuse(
        "gather-index-dtype",
        lambda m: m.gather(_x(m), 1, m.tensor([[0.0]])),
        RuntimeError,
        r"gather\(\): Expected dtype int32/int64 for index",
    ),
    Misuse(
        "gather-index-ndim",
        lambda m: m.gather(_x(m), 1, m.tensor([0, 1])),
        RuntimeError,
        r"Index tensor must have the same number of dimensions as input tensor",
    ),
    Misuse(
        "gather-index-range",
        lambda m: m.gather(_x(m), 1, m.tensor([[0, 3]])),
        RuntimeError,
        r"index 3 is out of bounds for dimension 1 with size 3",
    ),
    Misuse(
        "gather-negative-index",
        lambda m: m.gather(_x(m), 1, m.tensor([[-1]])),
        RuntimeError,
        r"index -1 is out of bounds for dimension 1 with size 3",
    ),
    Misuse("gather-dim", lambda m: m.gather(_x(m), 2, m.tensor([[0]])), IndexError, OUT_OF_RANGE),
    Misuse(
        "scatter-index-dtype",
        lambda m: m.scatter(_x(m), 0, m.tensor([[0.0]]), 1.0),
        RuntimeError,
        r"scatter\(\): Expected dtype int32/int64 for index",
    ),
    Misuse(
        "scatter-src-dtype",
        lambda m: m.scatter_add(_x(m), 0, m.tensor([[0]]), m.ones(1, 1, dtype=m.float64)),
        RuntimeError,
        r"scatter(_add)?\(\): Expected self.dtype to be equal to src.dtype",
        torch_match=r"scatter\(\): Expected self.dtype to be equal to src.dtype",
    ),
    Misuse(
        "scatter-reduce",
        lambda m: m.scatter(_x(m), 1, m.tensor([[0]]), value=1.0, reduce="max"),
        RuntimeError,
        r"reduce argument must be either add or multiply",
    ),
    Misuse(
        "index_select-index-ndim",
        lambda m: m.index_select(_x(m), 0, m.tensor([[0]])),
        IndexError,
        r"index_select\(\): Index is supposed to be a vector",
    ),
    Misuse(
        "index_select-range",
        lambda m: m.index_select(_x(m), 0, m.tensor([5])),
        IndexError,
        r"index 5 is out of bounds for dimension 0 with size 2",
        torch_match=r"index out of range in self",
    ),
    Misuse(
        "index_select-negative-index",
        lambda m: m.index_select(_x(m), 0, m.tensor([-1])),
        IndexError,
        r"index -1 is out of bounds for dimension 0 with size 2",
        torch_match=r"index out of range in self",
    ),
    Misuse(
        "index_add-negative-index",
        lambda m: m.index_add(_x(m), 0, m.tensor([-1]), m.ones(1, 3)),
        RuntimeError,
        r"index -1 is out of bounds for dimension 0 with size 2",
    ),
    Misuse(
        "index_add-range",
        lambda m: m.index_add(_x(m), 0, m.tensor([2]), m.ones(1, 3)),
        RuntimeError,
        r"index 2 is out of bounds for dimension 0 with size 2",
    ),
    Misuse(
        "index_add-dtype",
        lambda m: m.index_add(_x(m), 0, m.tensor([0]), m.ones(1, 3, dtype=m.float64)),
        RuntimeError,
        r"index_add.*\(\): .*(same scalar type|equal to src.dtype)",
    ),
    Misuse(
        "masked_fill-mask-dtype",
        lambda m: m.masked_fill(_x(m), m.ones(2, 3), 0.0),
        RuntimeError,
        r"masked_fill_ only supports boolean masks, but got mask with dtype",
    ),
    Misuse(
        "masked_fill-value-ndim",
        lambda m: m.masked_fill(_x(m), m.ones(2, 3, dtype=m.bool), m.ones(3)),
        RuntimeError,
        r"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 "
        r"dimension",
    ),
    Misuse(
        "masked_select-mask-dtype",
        lambda m: m.masked_select(_x(m), m.ones(2, 3, dtype=m.int64)),
        RuntimeError,
        r"masked_select: expected BoolTensor for mask",
    ),
    Misuse("sort-dim", lambda m: m.sort(_x(m), 2), IndexError, OUT_OF_RANGE),
    Misuse("argsort-dim", lambda m: m.argsort(_x(m), -3), IndexError, r"Dimension out of range"),
    Misuse("topk-k", lambda m: m.topk(_x(m), 4), RuntimeError, r"selected index k out of range"),
    Misuse(
        "topk-negative-k",
        lambda m: m.topk(_x(m), -1),
        RuntimeError,
        r"selected index k out of range",
    ),
    Misuse(
        "kthvalue-k",
        lambda m: m.kthvalue(_x(m), 4),
        RuntimeError,
        r"kthvalue\(\): selected number k out of range for dimension 1",
    ),
    Misuse(
        "kthvalue-zero",
        lambda m: m.kthvalue(_x(m), 0, 0),
        RuntimeError,
        r"kthvalue\(\): selected number k out of range for dimension 0",
    ),
    Misuse(
        "scatter_reduce-reduce",
        lambda m: _x(m).scatter_reduce(0, m.tensor([[0]]), _x(m), "foo"),
        RuntimeError,
        r"reduce argument must be either sum, prod, mean, amax or amin, got foo",
    ),
    Misuse(
        "scatter_reduce-dtype",
        lambda m: _x(m).scatter_reduce(0, m.tensor([[0]]), _x(m).double(), "sum"),
        RuntimeError,
        r"scatter\(\): Expected self.dtype to be equal to src.dtype",
    ),
    Misuse(
        "index_copy-count",
        lambda m: m.ones(3).index_copy(0, m.tensor([0, 1]), m.ones(3)),
        IndexError,
        r"index_copy_\(\): Number of indices \(2\) should be equal to source.size\(dim\) "
        r"\(3\)",
    ),
    Misuse(
        "index_copy-bounds",
        lambda m: m.ones(3).index_copy(0, m.tensor([0, 5]), m.ones(2)),
        IndexError,
        r"index_copy_\(\): index 5 is out of bounds for dimension 0 with size 3",
    ),
    Misuse(
        "index_copy-float-index",
        lambda m: m.ones(3).index_copy(0, m.tensor([0.0]), m.ones(1)),
        RuntimeError,
        r"index_copy_\(\): Expected a long tensor for index, but got Float",
    ),
    Misuse(
        "index_fill-bounds",
        lambda m: m.ones(3).index_fill(0, m.tensor([0, 5]), 2.0),
        IndexError,
        r"index 5 is out of bounds for dimension 0 with size 3",
    ),
    Misuse(
        "index_fill-float-index",
        lambda m: m.ones(3).index_fill(0, m.tensor([0.0]), 2.0),
        IndexError,
        r"index_fill_\(\): Expected dtype int64 for index\.",
    ),
    Misuse(
        "index_fill-value-dim",
        lambda m: _x(m).index_fill(0, m.tensor([0]), m.ones(2)),
        RuntimeError,
        r"index_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 "
        r"dimension\(s\)\.",
    ),
    Misuse(
        "take-bounds",
        lambda m: m.take(_x(m), m.tensor([6])),
        IndexError,
        r"out of range: tried to access index 6 on a tensor of 6 elements\.",
    ),
    Misuse(
        "take-negative-bounds",
        lambda m: m.take(_x(m), m.tensor([-7])),
        IndexError,
        r"out of range: tried to access index -7 on a tensor of 6 elements\.",
    ),
    Misuse(
        "slice_scatter-src-shape",
        lambda m: m.slice_scatter(_x(m), m.ones(2, 3), 1, 0, 2),
        RuntimeError,
        r"expected src to have a size equal to the slice of self\. src size = \[2, 3\], "
        r"slice size = \[2, 2\]",
    ),
    Misuse(
        "select_scatter-src-shape",
        lambda m: m.select_scatter(_x(m), m.ones(2), 0, 0),
        RuntimeError,
        r"src size = \[2\], slice size = \[3\]",
    ),
    Misuse(
        "diagonal_scatter-src-shape",
        lambda m: m.diagonal_scatter(_x(m), m.ones(3)),
        RuntimeError,
        r"src size = \[3\], slice size = \[2\]",
    ),
    Misuse(
        "put-numel",
        lambda m: m.put(_x(m), m.tensor([0, 1]), m.ones(3)),
        IndexError,
        r"put_\(\): Expected source and index to have the same number of elements, but got "
        r"source\.numel\(\) = 3, index\.numel\(\) = 2",
    ),
    Misuse(
        "put-bounds",
        lambda m: _x(m).put_(m.tensor([-1, 6]), m.ones(2)),
        IndexError,
        r"out of range: tried to access index 6 on a tensor of 6 elements\.",
    ),
    Misuse(
        "put-dtype",
        lambda m: m.put(_x(m), m.tensor([0]), m.ones(1, dtype=m.float64)),
        RuntimeError,
        r"put_\(\): self and source expected to have the same dtype, but got self\.dtype = "
        r"Float and source\.dtype = Double",
    ),
    Misuse(
        "index_put-accumulate-shape",
        lambda m: m.index_put(_x(m), (m.tensor([0]),), m.ones(2), accumulate=True),
        RuntimeError,
        r"shape mismatch: value tensor of shape \[2\] cannot be broadcast to indexing result "
        r"of shape \[1, 3\]",
    ),
    Misuse(
        "fill_diagonal_-1d",
        lambda m: m.ones(3).fill_diagonal_(1),
        RuntimeError,
        r"dimensions must larger than 1",
    ),
    Misuse(
        "fill_diagonal_-unequal",
        lambda m: m.ones(2, 3, 3).fill_diagonal_(1),
        RuntimeError,
        r"all dimensions of input must be of equal length",
    ),
    Misuse(
        "t_-3d",
        lambda m: m.ones(2, 3, 4).t_(),
        RuntimeError,
        r"t_\(\) expects a tensor with <= 2 dimensions, but self is 3D",
    ),
    Misuse(
        "squeeze_-leaf",
        lambda m: m.ones(2, 1, requires_grad=True).squeeze_(),
        RuntimeError,
        r"a leaf Variable that requires grad is being used in an in-place operation",
    ),
    Misuse(
        "transpose_-dim",
        lambda m: m.ones(2, 3).transpose_(0, 2),
        IndexError,
        r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)",
    ),
    Misuse(
        "take-int32-index",
        lambda m: m.take(_x(m), m.tensor([0], dtype=m.int32)),
        RuntimeError,
        r"take\(\): Expected a long tensor for index, but got Int",
    ),
]

CONVERSION = [
    Misuse(
        "to-device-string",
        lambda m: _x(m).to("gpu"),
        RuntimeError,
        r"Expected one of cpu, cuda.* device type at start of device string: gpu",
    ),
    Misuse(
        "to-argument",
        lambda m: _x(m).to([1]),
        TypeError,
        r"to\(\) received an invalid (argument|combination of arguments)",
    ),
]

COMPLEX = [
    Misuse(
        "imag-real",
        lambda m: m.imag(_x(m)),
        RuntimeError,
        r"imag is not implemented for tensors with non-complex dtypes",
    ),
    Misuse(
        "complex-dtypes",
        lambda m: m.complex(_x(m), _x(m).double()),
        RuntimeError,
        r"Expected both inputs to be Half, Float or Double tensors but got \S*float32 and "
        r"\S*float64",
        torch_match=r"Expected object of scalar type Float but got scalar type Double",
    ),
    Misuse(
        "complex-int",
        lambda m: m.complex(m.tensor([1]), m.tensor([2])),
        RuntimeError,
        r"Expected both inputs to be Half, Float or Double tensors",
    ),
]


def _c(m: Any) -> Any:
    """A complex tensor of two elements."""
    return m.tensor([1 + 1j, 2 - 1j])


# Dtypes an op does not take, and operands whose dtypes differ where PyTorch wants one.
DTYPES = [
    *(
        Misuse(
            f"{name}-bool",
            lambda m, name=name: getattr(m, name)(m.tensor([True, False])),
            RuntimeError,
            rf"{name}\(\): does not support bool input",
        )
        for name in ("argmax", "argmin")
    ),
    Misuse(
        "argmax-complex",
        lambda m: m.argmax(_c(m), 0),
        RuntimeError,
        r"argmax\(\): does not support complex input",
    ),
    Misuse(
        "topk-bool",
        lambda m: m.topk(m.tensor([True, False]), 1),
        RuntimeError,
        r"topk does not support bool dtypes on CPU",
    ),
    Misuse(
        "topk-complex",
        lambda m: m.topk(_c(m), 1),
        RuntimeError,
        r"topk does not support complex dtypes on CPU",
    ),
    Misuse(
        "kthvalue-bool",
        lambda m: m.kthvalue(m.tensor([True, False]), 1),
        NotImplementedError,
        r"\"kthvalue_cpu\" not implemented for 'Bool'",
    ),
    Misuse(
        "kthvalue-empty",
        lambda m: m.kthvalue(m.ones(2, 0), 1),
        IndexError,
        r"kthvalue\(\): Expected reduction dim 1 to have non-zero size\.",
    ),
    *(
        Misuse(
            f"{name}-complex",
            lambda m, name=name: getattr(m, name)(_c(m)),
            NotImplementedError,
            rf"\"{kernel}\" not implemented for 'ComplexFloat'",
        )
        for name, kernel in (
            ("max", "max_all"),
            ("min", "min_all"),
            ("amax", "max_values_cpu"),
            ("amin", "min_values_cpu"),
            ("aminmax", "aminmax_cpu"),
        )
    ),
    Misuse(
        "max-dim-complex",
        lambda m: m.max(_c(m), 0),
        RuntimeError,
        r"max\(\): does not support complex input",
    ),
    *(
        Misuse(
            f"{name}-complex",
            lambda m, name=name: getattr(m, name)(_c(m), _c(m)),
            RuntimeError,
            rf"{name} not implemented for complex tensors\.",
        )
        for name in ("maximum", "minimum", "fmax", "fmin")
    ),
    *(
        Misuse(
            f"{name}-complex",
            lambda m, name=name: getattr(m, name)(_c(m)),
            RuntimeError,
            r"Sort does not support complex dtypes on CPU",
        )
        for name in ("sort", "argsort")
    ),
    *(
        Misuse(
            f"{name}-complex",
            lambda m, name=name: getattr(m, name)(_c(m), 2),
            NotImplementedError,
            rf"\"{kernel}\" not implemented for 'ComplexFloat'",
        )
        for name, kernel in (
            ("floor_divide", "div_floor_cpu"),
            ("remainder", "remainder_cpu"),
            ("fmod", "fmod_cpu"),
        )
    ),
    Misuse(
        "div-trunc-complex",
        lambda m: m.div(m.tensor([1j], dtype=m.complex128), 2, rounding_mode="trunc"),
        NotImplementedError,
        r"\"div_trunc_cpu\" not implemented for 'ComplexDouble'",
    ),
    *(
        Misuse(
            f"{name}-complex",
            lambda m, name=name: getattr(m, name)(_c(m)),
            RuntimeError,
            rf"{name} does not support complex inputs\.",
        )
        for name in ("isposinf", "isneginf")
    ),
    Misuse(
        "signbit-complex",
        lambda m: m.signbit(_c(m)),
        NotImplementedError,
        r"signbit is not implemented for complex tensors\.",
    ),
    Misuse(
        "add-int-float-alpha",
        lambda m: m.add(m.tensor([1]), m.tensor([2]), alpha=0.5),
        RuntimeError,
        r"For integral input tensors, argument alpha must not be a floating point number\.",
    ),
    Misuse(
        "add-bool-result-float-alpha",
        lambda m: m.add(m.tensor([True]), m.tensor([True]), alpha=2.0),
        RuntimeError,
        r"For integral input tensors, argument alpha must not be a floating point number\.",
    ),
    Misuse(
        "add-int-bool-alpha",
        lambda m: m.add(m.tensor([1]), m.tensor([2]), alpha=True),
        RuntimeError,
        r"Boolean alpha only supported for Boolean results\.",
    ),
    Misuse(
        "add-float-complex-alpha",
        lambda m: m.add(_x(m), 1.0, alpha=1j),
        RuntimeError,
        r"For non-complex input tensors, argument alpha must not be a complex number\.",
    ),
    Misuse(
        "add-alpha-1d-tensor",
        lambda m: m.add(_x(m), _x(m), alpha=m.tensor([2.0])),
        TypeError,
        r"add\(\): argument 'alpha' must be Number, not Tensor",
    ),
    Misuse(
        "lerp-int",
        lambda m: m.lerp(m.tensor([1]), m.tensor([2]), 0.5),
        NotImplementedError,
        r"\"lerp_kernel_scalar\" not implemented for 'Long'",
    ),
    Misuse(
        "lerp-int-tensor-weight",
        lambda m: m.lerp(m.tensor([1]), m.tensor([2]), m.tensor([1])),
        NotImplementedError,
        r"\"lerp_kernel_tensor\" not implemented for 'Long'",
    ),
    Misuse(
        "lerp-end-dtype",
        lambda m: m.lerp(_x(m), _x(m).double(), 0.5),
        RuntimeError,
        r"expected dtype float for `end` but got dtype double",
    ),
    Misuse(
        "lerp-weight-dtype",
        lambda m: m.lerp(_x(m), _x(m), _x(m).double()),
        RuntimeError,
        r"expected dtype float for `weight` but got dtype double",
    ),
    *(
        Misuse(
            f"matmul-dtypes-{a}x{b}",
            lambda m, a=a, b=b: m.ones(*a) @ m.ones(*b, dtype=m.float64),
            RuntimeError,
            message,
        )
        for a, b, message in (
            (
                (2, 2),
                (2, 2),
                r"expected m1 and m2 to have the same dtype, but got: float != double",
            ),
            (
                (3, 2, 2),
                (2, 2),
                r"expected m1 and m2 to have the same dtype, but got: float != double",
            ),
            ((2,), (2, 2), r"expected m1 and m2 to have the same dtype, but got: float != double"),
            ((2, 2), (3, 2, 2), r"expected scalar type Float but found Double"),
            (
                (2,),
                (2,),
                r"dot : expected both vectors to have same dtype, but found Float and Double",
            ),
            (
                (2, 2),
                (2,),
                r"addmv input tensors must have the same dtype, but got Double, Float, and Double",
            ),
        )
    ),
    Misuse(
        "mm-dtypes",
        lambda m: m.mm(m.ones(2, 2, dtype=m.int64), m.ones(2, 2)),
        RuntimeError,
        r"expected m1 and m2 to have the same dtype, but got: long int != float",
    ),
    Misuse(
        "bmm-dtypes",
        lambda m: m.bmm(m.ones(1, 2, 2, dtype=m.complex64), m.ones(1, 2, 2)),
        RuntimeError,
        r"expected scalar type ComplexFloat but found Float",
    ),
    Misuse(
        "dot-dtypes",
        lambda m: m.dot(m.ones(2, dtype=m.int32), m.ones(2, dtype=m.int64)),
        RuntimeError,
        r"dot : expected both vectors to have same dtype, but found Int and Long",
    ),
    Misuse(
        "mv-dtypes",
        lambda m: m.mv(m.ones(2, 2, dtype=m.float16), m.ones(2)),
        RuntimeError,
        r"addmv input tensors must have the same dtype, but got Float, Half, and Float",
    ),
    Misuse(
        "tensordot-dtypes",
        lambda m: m.tensordot(m.ones(2, 2), m.ones(2, 2, dtype=m.float64)),
        RuntimeError,
        r"both inputs should have same dtype",
    ),
    *(
        Misuse(
            f"{name}-int8-overflow",
            call,
            RuntimeError,
            r"value cannot be converted to type int8_t without overflow",
        )
        for name, call in (
            ("where", lambda m: m.where(m.tensor([True]), m.tensor([1], dtype=m.int8), 300)),
            ("where-first", lambda m: m.where(m.tensor([True]), -129, m.tensor([1], dtype=m.int8))),
            ("clamp", lambda m: m.clamp(m.tensor([1], dtype=m.int8), max=128)),
            ("clamp_min", lambda m: m.clamp_min(m.tensor([1], dtype=m.int8), -300)),
        )
    ),
    Misuse(
        "clamp-uint8-overflow",
        lambda m: m.clamp(m.tensor([1], dtype=m.uint8), min=-256),
        RuntimeError,
        r"value cannot be converted to type uint8_t without overflow",
    ),
    Misuse(
        "clamp-int32-overflow",
        lambda m: m.clamp(m.tensor([1], dtype=m.int32), max=2**31),
        RuntimeError,
        r"value cannot be converted to type int without overflow",
    ),
    *(
        Misuse(
            f"setitem-{name}-dtype",
            _setitem_into_long(index, value),
            RuntimeError,
            r"Index put requires the source and destination dtypes match, got Long for the "
            r"destination and Float for the source\.",
        )
        for name, index, value in (
            ("index", lambda m: m.tensor([0]), lambda m: m.ones(1)),
            ("index-0d", lambda m: m.tensor([0]), lambda m: m.tensor(1.0)),
            ("list", lambda m: [0, 1], lambda m: m.ones(2)),
            ("mask", lambda m: m.tensor([True, False, True]), lambda m: m.ones(2)),
        )
    ),
    Misuse(
        "setitem-basic-expand-dims",
        lambda m: _setitem(1, m.ones(2, 4))(m),
        RuntimeError,
        r"expand\(torch\.FloatTensor\{\[2, 4\]\}, size=\[3\]\): the number of sizes "
        r"provided \(1\) must be greater or equal to the number of dimensions in the tensor "
        r"\(2\)",
    ),
    Misuse(
        "setitem-basic-expand-size",
        lambda m: _setitem((slice(0, 1),), m.ones(2, 3))(m),
        RuntimeError,
        r"The expanded size of the tensor \(1\) must match the existing size \(2\) at "
        r"non-singleton dimension 0\.  Target sizes: \[1, 3\]\.  Tensor sizes: \[2, 3\]",
    ),
    Misuse(
        "setitem-advanced-shape",
        lambda m: _setitem(m.tensor([0]), m.ones(2, 4))(m),
        RuntimeError,
        r"shape mismatch: value tensor of shape \[2, 4\] cannot be broadcast to indexing "
        r"result of shape \[1, 3\]",
    ),
    *(
        Misuse(
            f"{convert.__name__}-many-elements",
            lambda m, convert=convert: convert(m.tensor([1, 2])),
            ValueError,
            r"only one element tensors can be converted to Python scalars",
        )
        for convert in (int, float, complex)
    ),
    Misuse(
        "bool-many-elements",
        lambda m: bool(m.tensor([1, 2])),
        RuntimeError,
        r"Boolean value of Tensor with more than one value is ambiguous",
    ),
    Misuse(
        "flip-no-dims",
        lambda m: _x(m).flip(),
        TypeError,
        r'flip\(\) missing 1 required positional arguments: "dims"',
    ),
    Misuse(
        "repeat_interleave-counts-2d",
        lambda m: m.repeat_interleave(m.tensor([[1, 2]])),
        RuntimeError,
        r"repeat_interleave only accept 1D vector as repeat",
    ),
    Misuse(
        "repeat_interleave-counts-float",
        lambda m: m.repeat_interleave(m.tensor([1.0])),
        NotImplementedError,
        r"\"repeat_interleave_cpu\" not implemented for 'Float'",
    ),
    Misuse(
        "repeat_interleave-counts-negative",
        lambda m: m.repeat_interleave(m.tensor([1, -2])),
        RuntimeError,
        r"repeats can not be negative",
    ),
]


METHODS = [
    Misuse(
        "select-index",
        lambda m: m.select(_x(m), 1, 5),
        IndexError,
        r"select\(\): index 5 out of range for tensor of size \[2, 3\] at dimension 1",
    ),
    Misuse(
        "hsplit-indivisible",
        lambda m: m.hsplit(_x(m), 2),
        RuntimeError,
        r"torch.hsplit attempted to split along dimension 1, but the size of the dimension 3 "
        r"is not divisible by the split_size 2!",
    ),
    Misuse(
        "hsplit-scalar",
        lambda m: m.hsplit(m.tensor(1.0), 2),
        RuntimeError,
        r"torch.hsplit requires a tensor with at least 1 dimension, but got a tensor with 0 "
        r"dimensions!",
    ),
    Misuse(
        "vsplit-1d",
        lambda m: m.vsplit(m.ones(3), 1),
        RuntimeError,
        r"torch.vsplit requires a tensor with at least 2 dimension, but got a tensor with 1",
    ),
    Misuse(
        "dsplit-2d",
        lambda m: m.dsplit(_x(m), 1),
        RuntimeError,
        r"torch.dsplit requires a tensor with at least 3 dimension, but got a tensor with 2",
    ),
    Misuse(
        "unfold-size",
        lambda m: _x(m).unfold(1, 4, 1),
        RuntimeError,
        r"maximum size for tensor at dimension 1 is 3 but size is 4",
    ),
    Misuse(
        "unfold-step", lambda m: _x(m).unfold(1, 2, 0), RuntimeError, r"step is 0 but must be > 0"
    ),
    Misuse(
        "sum_to_size-not-expandable",
        lambda m: _x(m).sum_to_size(2),
        RuntimeError,
        r"size \{\[2\]\} is not expandable to size \{\[2, 3\]\}\.",
    ),
    Misuse(
        "sum_to_size-longer",
        lambda m: _x(m).sum_to_size(4, 2, 3),
        RuntimeError,
        r"size \{\[4, 2, 3\]\} is not expandable to size \{\[2, 3\]\}\.",
    ),
    Misuse(
        "cov-3d",
        lambda m: m.cov(m.ones(2, 2, 2)),
        RuntimeError,
        r"cov\(\): expected input to have two or fewer dimensions but got an input with 3 "
        r"dimensions",
    ),
    Misuse(
        "cov-float-fweights",
        lambda m: m.cov(_x(m), fweights=m.tensor([1.0, 2.0, 3.0])),
        RuntimeError,
        r"cov\(\): expected fweights to have integral dtype but got fweights with Float dtype",
    ),
    Misuse(
        "cov-fweights-numel",
        lambda m: m.cov(_x(m), fweights=m.tensor([1, 2])),
        RuntimeError,
        r"cov\(\): expected fweights to have the same numel as there are observations in the "
        r"input but got 2 != 3",
    ),
    Misuse(
        "cov-negative-aweights",
        lambda m: m.cov(_x(m), aweights=m.tensor([1.0, -2.0, 3.0])),
        RuntimeError,
        r"cov\(\): aweights cannot be negative",
    ),
    Misuse(
        "dist-shapes",
        lambda m: m.dist(_x(m), m.ones(3, 2)),
        RuntimeError,
        r"The size of tensor a \(3\) must match the size of tensor b \(2\) at non-singleton "
        r"dimension 1",
    ),
]


def _c4(m: Any) -> Any:
    """A complex (1, 2, 4, 4) tensor: one image of two channels."""
    return m.ones(1, 2, 4, 4, dtype=m.complex64) * (1 + 1j)


def _no_complex_kernel(
    name: str, call: Callable[[Any], Any], kernel: str, scalar: str = "ComplexFloat"
) -> Misuse:
    return Misuse(
        f"{name}-complex",
        call,
        NotImplementedError,
        rf"\"{kernel}\" not implemented for '{scalar}'",
    )


def _functional(name: str, *args: Any, **kwargs: Any) -> Callable[[Any], Any]:
    """``m.nn.functional.<name>(a complex image, *args, **kwargs)``."""
    return lambda m: getattr(m.nn.functional, name)(_c4(m), *args, **kwargs)


# Ops and functions PyTorch has no complex kernel for (NumPy would order complex numbers
# lexicographically, or compute something meaningless).
NO_COMPLEX = [
    *(
        _no_complex_kernel(name, lambda m, name=name: getattr(m, name)(_c(m), 0), f"{name}_cpu")
        for name in ("lt", "le", "gt", "ge")
    ),
    _no_complex_kernel("gt-operator", lambda m: m.ones(2) > _c(m), "gt_cpu"),
    _no_complex_kernel(
        "lt-double", lambda m: _c(m).to(m.complex128) < 1, "lt_cpu", "ComplexDouble"
    ),
    *(
        Misuse(
            f"{name}-complex",
            call,
            NotImplementedError,
            r"^clamp is not supported for complex types$",
        )
        for name, call in (
            ("clamp", lambda m: m.clamp(_c(m), 0, 1)),
            ("clamp_min", lambda m: m.clamp_min(_c(m), 0)),
            ("relu", lambda m: m.relu(_c(m))),
            ("hardtanh", _functional("hardtanh")),
            ("relu6", _functional("relu6")),
        )
    ),
    _no_complex_kernel("softmax", lambda m: m.softmax(_c(m), 0), "softmax_lastdim_kernel_impl"),
    *(
        _no_complex_kernel(f"F.{name}", _functional(name, *args), kernel)
        for name, args, kernel in (
            ("elu", (), "elu_cpu"),
            ("selu", (), "elu_cpu"),
            ("celu", (), "elu_cpu"),
            ("gelu", (), "GeluKernelImpl"),
            ("glu", (), "glu_cpu"),
            ("leaky_relu", (), "leaky_relu_cpu"),
            ("rrelu", (), "leaky_relu_cpu"),
            ("threshold", (0.0, 0.0), "threshold_cpu"),
            ("logsigmoid", (), "log_sigmoid_cpu"),
            ("hardshrink", (), "hardshrink_cpu"),
            ("softshrink", (), "softshrink_check"),
            ("softplus", (), "softplus_cpu"),
            ("hardsigmoid", (), "hardsigmoid_cpu"),
            ("hardswish", (), "hardswish_cpu"),
            ("mish", (), "mish_cpu"),
            ("softmax", (-1,), "softmax_lastdim_kernel_impl"),
            ("softmin", (-1,), "softmax_lastdim_kernel_impl"),
            ("log_softmax", (-1,), "log_softmax_lastdim_kernel_impl"),
            ("layer_norm", ((4,),), "LayerNormKernelImpl"),
            ("group_norm", (1,), "GroupNormKernelImpl"),
            ("instance_norm", (), "batch_norm"),
            ("local_response_norm", (2,), "avg_pool3d_out_frame"),
            ("max_pool2d", (2,), "max_pool2d"),
            ("adaptive_max_pool2d", (2,), "adaptive_max_pool2d"),
            ("dropout", (), "bernoulli_scalar_cpu_"),
            ("dropout2d", (), "bernoulli_scalar_cpu_"),
        )
    ),
    _no_complex_kernel(
        "F.batch_norm", _functional("batch_norm", None, None, training=True), "batch_norm"
    ),
    _no_complex_kernel(
        "F.max_pool1d",
        lambda m: m.nn.functional.max_pool1d(_c4(m)[0], 2),
        "max_pool1d_impl",
    ),
    *(
        _no_complex_kernel(
            f"F.{name}",
            lambda m, name=name: getattr(m.nn.functional, name)(_c4(m)[None], 2),
            kernel,
        )
        for name, kernel in (
            ("max_pool3d", "max_pool3d"),
            ("avg_pool3d", "avg_pool3d_out_frame"),
            ("adaptive_max_pool3d", "adaptive_max_pool3d_cpu"),
            ("adaptive_avg_pool3d", "adaptive_avg_pool3d_cpu"),
        )
    ),
    _no_complex_kernel(
        "F.prelu",
        lambda m: m.nn.functional.prelu(_c4(m), m.ones(1, dtype=m.complex64)),
        "prelu_cpu",
    ),
    *(
        _no_complex_kernel(
            f"F.{name}", lambda m, name=name: getattr(m.nn.functional, name)(_c4(m), _c4(m)), kernel
        )
        for name, kernel in (
            ("mse_loss", "mse_cpu"),
            ("huber_loss", "huber_cpu"),
            ("smooth_l1_loss", "smooth_l1_cpu"),
        )
    ),
    Misuse(
        "F.cosine_similarity-complex",
        lambda m: m.nn.functional.cosine_similarity(_c4(m), _c4(m)),
        RuntimeError,
        r"expected common dtype to be floating point, yet common dtype is ComplexFloat",
    ),
    Misuse(
        "F.cosine_similarity-long",
        lambda m: m.nn.functional.cosine_similarity(
            m.ones(1, 2, dtype=m.int64), m.ones(1, 2, dtype=m.int64)
        ),
        RuntimeError,
        r"expected common dtype to be floating point, yet common dtype is Long",
    ),
]


MISUSES = [
    *BINARY,
    *UNARY,
    *REDUCTION,
    *SHAPE,
    *INDEXING,
    *CONVERSION,
    *COMPLEX,
    *DTYPES,
    *METHODS,
    *NO_COMPLEX,
]
assert len({m.name for m in MISUSES}) == len(MISUSES), "misuse names must be unique"


def _params(with_xfail: bool) -> list:
    params = []
    for misuse in MISUSES:
        marks = []
        if with_xfail and misuse.xfail:
            marks.append(pytest.mark.xfail(strict=True, reason=misuse.xfail))
        params.append(pytest.param(misuse, id=misuse.name, marks=marks))
    return params


@pytest.mark.parametrize("misuse", _params(with_xfail=True))
def test_tensorkit_raises(misuse: Misuse) -> None:
    with pytest.raises(misuse.error, match=misuse.match):
        misuse.call(tk)


@pytest.mark.parametrize("misuse", _params(with_xfail=False))
def test_torch_raises_alike(misuse: Misuse) -> None:
    """The expectations are PyTorch's: same exception type, same message content."""
    if torch is None:
        pytest.skip("PyTorch not installed")
    with pytest.raises(misuse.error, match=misuse.torch_match or misuse.match):
        misuse.call(torch)
