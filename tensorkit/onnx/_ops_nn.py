"""Translations of matmul, linear, softmax, layer norm and the convolution and pooling primitives.

A convolution is ``im2col`` and a matmul in tensorkit (``nn/functional/conv.py``): a matmul
of a weight's view by a view of ``im2col``'s windows is written as one ONNX ``Conv``, and the
windows alone (``F.unfold``) as a depthwise ``Conv`` with one-hot kernels. Max pooling is a
``MaxPool`` with the kernel, stride, padding and dilation read back from its window tables;
``resample`` (average and adaptive pooling, interpolation, reflect and replicate padding) is
a matmul along one axis by the dense matrix of its table.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..jit.ir import Ref
from ._builder import Builder
from ._table import translates

__all__: list[str] = []


# ---------------------------------------------------------------------- matmul and conv
@translates("matmul")
def _matmul(b: Builder) -> str:
    conv = _as_conv(b)
    return conv if conv is not None else b.add("MatMul", [b.arg(0), b.arg(1)])


@translates("addmm")
def _addmm(b: Builder) -> str:
    """``addmm(bias, input, weight)``, linear's ``input @ weight.T + bias``, is ONNX's
    ``Gemm`` with ``transB``, as torch.onnx writes a linear layer."""
    return b.add("Gemm", [b.arg(1), b.arg(2), b.arg(0)], transB=1)


def _as_conv(b: Builder) -> str | None:
    """``view(weight) @ view(im2col(x))`` as a Conv, laid out as the matmul's (groups,
    out/groups, N * L) result; None when the node is not that pattern."""
    node = b.node
    w_view, cols_view = (b.producers.get(a.id) if type(a) is Ref else None for a in node.args)
    if node.cast is not None or w_view is None or cols_view is None:
        return None
    cols = b.producers.get(cols_view.args[0].id) if cols_view.op == "view" else None
    if w_view.op != "view" or cols is None or cols.op != "im2col":
        return None
    attrs = cols.attrs
    weight = w_view.args[0]
    groups, per_group, _ = w_view.attrs["shape"]
    if attrs["batch_first"] or len(b.shape(weight)) != 2 + len(attrs["kernel"]):
        return None
    pads = _conv_pads(attrs["padding"])
    if pads is None:
        return None
    x = cols.args[0]
    b.check_static(x, range(2, len(b.shape(x))), "a convolution")
    conv = b.add(
        "Conv",
        [b.name(x.id), b.name(weight.id)],
        group=groups,
        strides=list(attrs["stride"]),
        dilations=list(attrs["dilation"]),
        pads=pads,
        kernel_shape=list(attrs["kernel"]),
    )
    out_size = b.shape(cols.outputs[0])[-len(attrs["kernel"]) :]
    channels = groups * per_group
    b.conv_outputs[node.outputs[0].id] = conv
    rows = b.add("Reshape", [conv, b.ints([0, channels, math.prod(out_size)])])
    rows = b.add("Transpose", [rows], perm=[1, 0, 2])
    return b.add("Reshape", [rows, b.ints([groups, per_group, -1])])


def _conv_pads(padding: Any) -> list[int] | None:
    if any(lo < 0 or hi < 0 for lo, hi in padding):
        return None
    return [lo for lo, _ in padding] + [hi for _, hi in padding]


@translates("conv_bias")
def _conv_bias(b: Builder) -> str:
    """``y`` (channels, N * L) plus a bias, as (N, channels, *out)."""
    y = b.node.args[0]
    shape = b.node.attrs["shape"]
    column = b.add("Reshape", [b.arg(1), b.ints([shape[1]] + [1] * (len(shape) - 2))])
    if y.id in b.conv_outputs:
        return b.add("Add", [b.conv_outputs[y.id], column])
    rows = b.add("Reshape", [b.arg(0), b.ints([shape[1], -1, math.prod(shape[2:])])])
    rows = b.add("Transpose", [rows], perm=[1, 0, 2])
    return b.add("Add", [b.add("Reshape", [rows, b.ints([0, 0, *shape[2:]])]), column])


@translates("im2col")
def _im2col(b: Builder) -> str:
    """Every window of ``x`` (N, C, *S), by a depthwise Conv whose kernels pick one offset
    each (exact for finite values: a non-finite one reaches every window it lies in)."""
    attrs = b.node.attrs
    x_ref = b.node.args[0]
    kernel = tuple(attrs["kernel"])
    pads = _conv_pads(attrs["padding"])
    if pads is None:
        raise b.unsupported("im2col with negative padding (a crop)")
    channels, taps, d = b.shape(x_ref)[1], math.prod(kernel), len(kernel)
    b.check_static(x_ref, range(1, 2 + d), "im2col")
    picks = np.zeros((channels * taps, 1, *kernel), b.dtype(x_ref))
    for c in range(channels):
        for t, offset in enumerate(np.ndindex(*kernel)):
            picks[(c * taps + t, 0, *offset)] = 1
    windows = b.add(
        "Conv",
        [b.arg(0), b.initializer(picks)],
        group=channels,
        strides=list(attrs["stride"]),
        dilations=list(attrs["dilation"]),
        pads=pads,
        kernel_shape=list(kernel),
    )
    out_size = b.node.outputs[0].shape[-d:]
    windows = b.add("Reshape", [windows, b.ints([0, channels, *kernel, *out_size])])
    if attrs["batch_first"]:
        return windows
    return b.add("Transpose", [windows], perm=[1, *range(2, 2 + d), 0, *range(2 + d, 2 + 2 * d)])


# ---------------------------------------------------------------------- pooling
@translates("max_pool")
def _max_pool(b: Builder) -> str:
    tables = b.node.attrs.get("tables")
    if tables is None:
        raise b.unsupported("max_pool whose window_argmax was not recorded")
    x_ref = b.node.args[0]
    spatial = b.shape(x_ref)[2:]
    b.check_static(x_ref, range(2, 2 + len(spatial)), "max pooling")
    options = [_window_options(np.asarray(t), n) for t, n in zip(tables, spatial, strict=True)]
    if any(o is None for o in options):
        raise b.unsupported(
            "max pooling over windows that are not a regular grid (adaptive max pooling) "
            "is not translated"
        )
    kernel, stride, pad, dilation, ceil = zip(*options, strict=True)
    return b.add(
        "MaxPool",
        [b.arg(0)],
        kernel_shape=list(kernel),
        strides=list(stride),
        pads=list(pad) * 2,
        dilations=list(dilation),
        ceil_mode=int(any(ceil)),
    )


def _window_options(table: np.ndarray, size: int) -> tuple | None:
    """(kernel, stride, pad, dilation, ceil_mode) of a pooling table (out, kernel) of input
    positions, -1 for padding; None when no regular grid gives it."""
    out, kernel = table.shape
    valid = table >= 0
    dilation = _step(table, valid, axis=1)
    stride = _step(table, valid, axis=0) or max(size, 1)
    rows, cols = np.nonzero(valid)
    if rows.size == 0:
        return None
    pad = int(rows[0] * stride + cols[0] * (dilation or 1) - table[rows[0], cols[0]])
    dilation = dilation or 1
    grid = np.arange(out)[:, None] * stride - pad + np.arange(kernel)[None, :] * dilation
    if not np.array_equal(np.where((grid >= 0) & (grid < size), grid, -1), table):
        return None
    span = size + 2 * pad - dilation * (kernel - 1) - 1
    floor_out = span // stride + 1
    if out == floor_out:
        return kernel, stride, pad, dilation, False
    if out == -(-span // stride) + 1:
        return kernel, stride, pad, dilation, True
    return None


def _step(table: np.ndarray, valid: np.ndarray, axis: int) -> int:
    """The difference between neighbours along ``axis`` where both are real (0: none)."""
    a, b = (table[1:], table[:-1]) if axis == 0 else (table[:, 1:], table[:, :-1])
    both = (valid[1:] & valid[:-1]) if axis == 0 else (valid[:, 1:] & valid[:, :-1])
    steps = (a - b)[both]
    return int(steps[0]) if steps.size else 0


@translates("resample")
def _resample(b: Builder) -> str:
    """``out[.., i, ..] = sum_t weight[i, t] * x[.., index[i, t], ..]``: a matmul by the
    (size, out) matrix of the table along ``axis``."""
    attrs = b.node.attrs
    x_ref = b.node.args[0]
    axis, rank = attrs["axis"], len(b.shape(x_ref))
    b.check_static(x_ref, [axis], "resample")
    if type(attrs["index"]) is Ref or type(attrs["weight"]) is Ref:
        raise b.unsupported("resample by a computed table")
    index = np.asarray(attrs["index"])
    weight = np.ones(index.shape) if attrs["weight"] is None else np.asarray(attrs["weight"])
    matrix = np.zeros((b.shape(x_ref)[axis], index.shape[0]), b.dtype(x_ref))
    rows = np.broadcast_to(np.arange(index.shape[0])[:, None], index.shape)
    real = index >= 0
    np.add.at(matrix, (index[real], rows[real]), weight[real])
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    x = b.arg(0)
    if axis % rank != rank - 1:
        x = b.add("Transpose", [x], perm=perm)
    out = b.add("MatMul", [x, b.initializer(matrix)])
    if axis % rank != rank - 1:
        out = b.add("Transpose", [out], perm=perm)
    return out


# ---------------------------------------------------------------------- normalization
@translates("softmax")
def _softmax(b: Builder) -> str:
    return b.add("Softmax", [b.arg(0)], axis=b.node.attrs["axis"])


@translates("log_softmax")
def _log_softmax(b: Builder) -> str:
    return b.add("LogSoftmax", [b.arg(0)], axis=b.node.attrs["axis"])


@translates("native_layer_norm")
def _layer_norm(b: Builder) -> list[str]:
    """The normalized input and 1 / std (LayerNormalization's first and third outputs)."""
    x_ref = b.node.args[0]
    rank = len(b.shape(x_ref))
    axes = sorted(a % rank for a in b.node.attrs["axes"])
    if axes != list(range(axes[0], rank)):
        raise b.unsupported(f"layer norm over axes {axes} that are not the last ones")
    b.check_static(x_ref, axes, "layer norm")
    ones = b.initializer(np.ones(b.shape(x_ref)[axes[0] :], b.dtype(x_ref)))
    names = [b.fresh("layer_norm"), "", b.fresh("layer_norm_rstd")]
    b.add(
        "LayerNormalization",
        [b.arg(0), ones],
        names,
        axis=axes[0],
        epsilon=float(b.node.attrs["eps"]),
    )
    return [names[0], names[2]]
