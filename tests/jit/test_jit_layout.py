"""The channels-last pass: compiled convolutions computed with one row per output position
give eager's values and gradients, on every convolution it rewrites and every one it leaves."""

from __future__ import annotations

import numpy as np
import pytest

import tensorkit as tk
from tensorkit import nn
from tensorkit.jit.capture import capture
from tensorkit.jit.passes import optimize
from tensorkit.jit.passes.layout import channels_last_convolutions

pytest.importorskip("numba")


def _ops(nodes) -> list[str]:
    return [n.op if n.kind == "op" else "+".join(m.op for m in n.members) for n in nodes]


def _training_graph(model, x):
    def step(x):
        model.zero_grad()
        loss = model(x).pow(2).sum()
        loss.backward()
        return loss.detach()

    return capture(step, (x,), {}).graph


def _compiled_against_eager(model, x, rtol: float) -> None:
    """Three compiled calls (the last replays the plan), then eager; loss, input gradient
    and every parameter's gradient agree."""
    compiled = tk.compile(lambda x: model(x).pow(2).sum())
    for _ in range(3):
        model.zero_grad()
        x.grad = None
        loss = compiled(x)
        loss.backward()
    got = [loss.item(), *(t.grad.numpy().copy() for t in (x, *model.parameters()))]
    model.zero_grad()
    x.grad = None
    loss = model(x).pow(2).sum()
    loss.backward()
    want = [loss.item(), *(t.grad.numpy() for t in (x, *model.parameters()))]
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol)


def test_a_cnn_step_s_convolutions_run_channels_last() -> None:
    """Both convolutions of a CNN block are rewritten: windows as rows, no conv_bias, the
    weight's gradient by rows; each result stays in (N, H, W, C) memory, for the second's
    windows and for the max pool; one read by anything else goes back to eager's layout."""
    model = nn.Sequential(
        nn.Conv2d(2, 4, 3), nn.ReLU(), nn.Conv2d(4, 5, 3), nn.ReLU(), nn.MaxPool2d(2)
    ).double()
    x = tk.randn(3, 2, 10, 10, dtype=tk.float64)
    graph = channels_last_convolutions(_training_graph(model, x))
    ops = _ops([*graph.nodes, *graph.backward])
    assert "conv_bias" not in ops
    windows = [n for n in graph.nodes if n.op == "im2col"]
    sums = [n for n in graph.nodes if n.op == "col2im"]
    assert [n.attrs.get("channels_last") for n in windows] == [True, True]
    assert [n.outputs[0].shape for n in windows] == [(3, 8, 8, 3, 3, 2), (3, 6, 6, 3, 3, 4)]
    assert [n.attrs.get("channels_last") for n in sums] == [True]  # x needs no gradient
    first_relu, second_relu = (n for n in graph.nodes if n.op == "relu")
    assert first_relu.outputs[0].shape == (3, 8, 8, 4)  # before the permute back
    assert second_relu.outputs[0].shape == (3, 6, 6, 5)
    flattened = nn.Sequential(nn.Conv2d(2, 4, 3), nn.ReLU(), nn.Flatten()).double()
    graph = channels_last_convolutions(_training_graph(flattened, x))
    (relu,) = (n for n in graph.nodes if n.op == "relu")
    assert relu.outputs[0].shape == (3, 4, 8, 8)  # eager's (N, C, H, W), for the flatten
    fused = optimize(_training_graph(model, x))
    kernels = [m for n in fused.nodes if n.kind == "fused" for m in [_ops(n.members)]]
    assert kernels[:2] == [["add", "relu"], ["add", "relu"]]


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: nn.Conv2d(3, 4, 3, stride=2, padding=1), id="stride 2, padding 1"),
        pytest.param(lambda: nn.Conv2d(3, 4, (3, 2), dilation=2, padding=(2, 0)), id="dilated"),
        pytest.param(lambda: nn.Conv2d(3, 4, 3, padding="same"), id="same padding"),
        pytest.param(lambda: nn.Conv1d(3, 4, 3, padding=1), id="1-D"),
        pytest.param(lambda: nn.Conv3d(3, 4, 2, stride=(1, 2, 1)), id="3-D"),
    ],
)
@pytest.mark.parametrize("activation", [True, False], ids=["relu", "no activation"])
def test_rewritten_convolutions_give_eager_s_values_and_gradients(make, activation) -> None:
    conv = make().double()
    layers = [conv, nn.ReLU()] if activation else [conv]
    model = nn.Sequential(*layers, nn.Tanh())
    spatial = {1: (9,), 2: (9, 8), 3: (5, 6, 5)}[len(conv.kernel_size)]
    x = tk.randn(2, 3, *spatial, dtype=tk.float64, requires_grad=True)
    graph = channels_last_convolutions(_training_graph(model, x))
    assert [n.attrs.get("channels_last") for n in graph.nodes if n.op == "im2col"] == [True]
    assert [n.attrs.get("channels_last") for n in graph.nodes if n.op == "col2im"] == [True]
    _compiled_against_eager(model, x, rtol=1e-10)


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: nn.Conv2d(4, 6, 3, groups=2), id="grouped"),
        pytest.param(lambda: nn.Conv2d(4, 6, 3, bias=False), id="without a bias"),
    ],
)
def test_convolutions_outside_the_pattern_keep_eager_s_layout(make) -> None:
    model = nn.Sequential(make(), nn.ReLU()).double()
    x = tk.randn(2, 4, 7, 7, dtype=tk.float64, requires_grad=True)
    graph = channels_last_convolutions(_training_graph(model, x))
    assert [n.attrs.get("channels_last") for n in graph.nodes if n.op == "im2col"] == [None]
    _compiled_against_eager(model, x, rtol=1e-10)


def test_an_activation_read_twice_stays_where_eager_ran_it() -> None:
    """The ReLU's result is read by the next layer and by the output: the activation still
    runs on the rewritten product, and both readers see eager's values."""
    conv = nn.Conv2d(2, 3, 3).double()

    def f(x):
        y = conv(x).relu()
        return (y * y.sum()).sum()

    x = tk.randn(2, 2, 6, 6, dtype=tk.float64, requires_grad=True)
    compiled = tk.compile(f)
    for _ in range(3):
        conv.zero_grad()
        x.grad = None
        compiled(x).backward()
    got = [x.grad.numpy().copy(), conv.weight.grad.numpy().copy()]
    conv.zero_grad()
    x.grad = None
    f(x).backward()
    np.testing.assert_allclose(got[0], x.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(got[1], conv.weight.grad.numpy(), rtol=1e-10)


def test_a_float32_cnn_step_matches_eager_within_float_rounding() -> None:
    model = nn.Sequential(
        nn.Conv2d(1, 8, 3), nn.ReLU(), nn.Conv2d(8, 8, 3), nn.ReLU(), nn.MaxPool2d(2)
    )
    x = tk.randn(4, 1, 12, 12, requires_grad=True)
    _compiled_against_eager(model, x, rtol=2e-4)


def test_a_compiled_convolution_passes_gradcheck() -> None:
    conv = nn.Conv2d(2, 3, 2, padding=1).double()
    compiled = tk.compile(lambda x, w, b: tk.nn.functional.conv2d(x, w, b, padding=1).relu())
    x = tk.randn(2, 2, 4, 3, dtype=tk.float64, requires_grad=True)
    w = conv.weight.detach().requires_grad_()
    b = conv.bias.detach().requires_grad_()
    assert tk.autograd.gradcheck(compiled, (x, w, b))


def test_what_leaves_the_graph_is_in_eager_s_c_order() -> None:
    """A compiled model's result and its input's gradient come out C-ordered, as eager's do
    (``.view`` works on them), though the graph computed them in channels-last memory."""
    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.MaxPool2d(2))
    x = tk.randn(2, 1, 8, 8, requires_grad=True)
    compiled = tk.compile(model)
    for _ in range(3):
        x.grad = None
        y = compiled(x)
        y.sum().backward()
    assert y.is_contiguous() and x.grad.is_contiguous()
    assert y.view(2, -1).shape == (2, 36)
    graph = compiled.latest().path.compiled.graph
    assert [n.op for n in graph.nodes if n.op == "max_pool"]  # pooled in channels-last memory
    (out,) = graph.outputs
    producer = next(
        n for n in [*graph.nodes, *graph.backward] if out.id in {v.id for v in n.outputs}
    )
    assert producer.op == "contiguous"


def test_an_inference_call_under_no_grad_is_rewritten_and_matches_eager() -> None:
    model = nn.Sequential(nn.Conv2d(3, 5, 3, padding=1), nn.ReLU(), nn.Conv2d(5, 2, 2)).double()
    x = tk.randn(2, 3, 7, 7, dtype=tk.float64)
    compiled = tk.compile(model)
    with tk.no_grad():
        for _ in range(3):
            got = compiled(x)
        graph = compiled.latest().path.compiled.graph
        assert [n.attrs.get("channels_last") for n in graph.nodes if n.op == "im2col"] == [
            True,
            True,
        ]
        np.testing.assert_allclose(got.numpy(), model(x).numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("frozen", ["weight", "bias", "both"])
def test_a_convolution_with_frozen_parameters_is_rewritten_and_matches_eager(frozen) -> None:
    """The gradient rules then record only some of their nodes (no weight gradient, no bias
    sum): the pass rewrites what is there."""
    model = nn.Sequential(nn.Conv2d(2, 3, 3), nn.ReLU(), nn.Conv2d(3, 2, 2)).double()
    for name, parameter in model[0].named_parameters():
        if frozen in (name, "both"):
            parameter.requires_grad_(False)
    x = tk.randn(2, 2, 6, 6, dtype=tk.float64, requires_grad=True)
    graph = channels_last_convolutions(_training_graph(model, x))
    assert [n.attrs.get("channels_last") for n in graph.nodes if n.op == "im2col"] == [True] * 2
    _compiled_against_eager_where_grads(model, x)


def _compiled_against_eager_where_grads(model, x) -> None:
    tensors = [x, *(p for p in model.parameters() if p.requires_grad)]
    compiled = tk.compile(lambda x: model(x).pow(2).sum())
    for _ in range(3):
        for t in tensors:
            t.grad = None
        compiled(x).backward()
    got = [t.grad.numpy().copy() for t in tensors]
    for t in tensors:
        t.grad = None
    model(x).pow(2).sum().backward()
    for a, t in zip(got, tensors, strict=True):
        np.testing.assert_allclose(a, t.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_explain_names_the_convolutions_run_channels_last() -> None:
    """A reader comparing compiled with eager values learns which layers changed layout."""
    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Conv2d(4, 4, 3, groups=2))
    explained = tk.jit.explain(model, tk.randn(2, 1, 9, 9))
    assert "convolutions run channels last: 1 (Sequential.0)" in explained.rewrites
    assert "Rewrites:" in str(explained)
