"""tk.onnx.export: models and single ops written as ONNX, checked by onnx's checker and run
by onnxruntime against the eager call; dynamic axes; custom ops; errors."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest

import tensorkit as tk
import tensorkit.nn as nn
import tensorkit.nn.functional as F  # noqa: N812
from tensorkit.jit import TracerWarning
from tensorkit.ops._apply import OpDef, apply

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

SCALE = OpDef("scale", lambda xp, x, factor: x * factor, None, key="testlib::scale")


def export_and_run(model, args, path, feeds=None, **options):
    """Export, check fully, and compare onnxruntime with the eager call on ``feeds`` (a list
    of argument tuples; default: ``args``). Returns the loaded model."""
    tk.onnx.export(model, args, path, **options)
    onnx.checker.check_model(str(path), full_check=True)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for call in feeds or [args]:
        got = session.run(
            None, {i.name: a.numpy() for i, a in zip(session.get_inputs(), call, strict=True)}
        )
        with tk.no_grad():
            want = model(*call)
        want = want if isinstance(want, tuple | list) else (want,)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            w = w.numpy()
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    return onnx.load(str(path))


def op_types(model) -> list[str]:
    return [node.op_type for node in model.graph.node]


# ---------------------------------------------------------------------- models
def test_mlp_matches_eager_and_names_initializers_by_parameter(tmp_path) -> None:
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3), nn.Softmax(-1))
    proto = export_and_run(model, (tk.randn(5, 4),), tmp_path / "mlp.onnx")
    names = {t.name for t in proto.graph.initializer}
    assert names == {name for name, _ in model.named_parameters()}
    weight = next(t for t in proto.graph.initializer if t.name == "0.weight")
    np.testing.assert_array_equal(
        onnx.numpy_helper.to_array(weight), model[0].weight.detach().numpy()
    )
    assert {"Gemm", "Relu", "Softmax"} <= set(op_types(proto))  # a linear layer: one Gemm
    assert "MatMul" not in op_types(proto)
    assert [i.name for i in proto.graph.input] == ["input_0"]
    assert [o.name for o in proto.graph.output] == ["output_0"]


def cnn() -> nn.Module:
    model = nn.Sequential(
        nn.Conv2d(3, 4, 3, padding=1),
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(4, 6, 3, stride=2, bias=False),
        nn.AvgPool2d(2, ceil_mode=True),
        nn.Flatten(),
        nn.Linear(6, 3),
    )
    with tk.no_grad():  # running stats that are not the identity
        model[1].running_mean.copy_(tk.randn(4))
        model[1].running_var.copy_(tk.rand(4) + 0.5)
    return model.eval()


def test_cnn_in_eval_mode_with_a_dynamic_batch(tmp_path) -> None:
    model = cnn()
    feeds = [(tk.randn(2, 3, 10, 10),), (tk.randn(5, 3, 10, 10),)]
    proto = export_and_run(
        model,
        feeds[0],
        tmp_path / "cnn.onnx",
        feeds=feeds,
        input_names=["image"],
        output_names=["logits"],
        dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}},
    )
    assert op_types(proto).count("Conv") == 2 and "MaxPool" in op_types(proto)
    dims = proto.graph.input[0].type.tensor_type.shape.dim
    assert dims[0].dim_param == "batch" and [d.dim_value for d in dims[1:]] == [3, 10, 10]
    assert proto.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert model.training is False  # the export leaves the mode as it was


class Block(nn.Module):
    """Embedding, LayerNorm, MultiheadAttention, scaled_dot_product_attention, GELU."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(11, 8)
        self.norm = nn.LayerNorm(8)
        self.attention = nn.MultiheadAttention(8, 2, batch_first=True)
        self.ff = nn.Linear(8, 8)
        self.act = nn.GELU()

    def forward(self, tokens):
        x = self.embed(tokens)
        h = self.norm(x)
        a, _ = self.attention(h, h, h, need_weights=False)
        x = x + a
        heads = x.view(x.shape[0], x.shape[1], 2, 4).transpose(1, 2)
        y = F.scaled_dot_product_attention(heads, heads, heads, is_causal=True)
        return x + self.act(self.ff(y.transpose(1, 2).reshape(x.shape)))


def test_transformer_block_with_a_dynamic_batch(tmp_path) -> None:
    model = Block().eval()
    feeds = [(tk.randint(0, 11, (2, 5)),), (tk.randint(0, 11, (3, 5)),)]
    with pytest.warns(TracerWarning):  # the embedding's bounds check reads a value
        proto = export_and_run(
            model, feeds[0], tmp_path / "block.onnx", feeds=feeds, dynamic_axes={"input_0": [0]}
        )
    assert {"Gather", "LayerNormalization", "Softmax", "Erf"} <= set(op_types(proto))
    dim = proto.graph.input[0].type.tensor_type.shape.dim[0]
    assert dim.dim_param == "input_0_dynamic_axes_1"


# ---------------------------------------------------------------------- single ops
X = tk.randn(2, 3, 4)
POSITIVE = tk.rand(2, 3, 4) + 0.1
OPS = {
    "arithmetic": lambda x: (x + 1.5, 2 - x, x * x, x / 3, -x, x**2, x.pow(3.5), 1 / x),
    "unary": lambda x: (x.exp(), x.abs().sqrt(), x.abs().rsqrt(), x.sigmoid(), x.tanh()),
    "more unary": lambda x: (x.sin(), x.cos(), x.floor(), x.ceil(), x.round(), x.sign()),
    "log": lambda x: (x.log(), x.log1p(), x.log2(), x.expm1(), tk.erfc(x), x.reciprocal()),
    "activations": lambda x: (F.gelu(x, approximate="tanh"), F.silu(x), F.leaky_relu(x)),
    "more activations": lambda x: (F.elu(x), F.softplus(x), F.relu6(x), F.hardtanh(x)),
    "softmax": lambda x: (F.softmax(x, 0), F.log_softmax(x, -1), x.logsumexp(1)),
    "compare": lambda x: (x > 0, x <= 0.5, x == x, x != 0, tk.where(x > 0, x, -x)),
    "logic": lambda x: ((x > 0) & (x < 1), (x > 0) | (x < -1), ~(x > 0), (x > 0) ^ (x < 1)),
    "casts": lambda x: (x.to(tk.int64), (x > 0).float(), x.double() + 1, x.half()),
    "clamp": lambda x: (x.clamp(-0.5, 0.5), x.clamp(min=0), tk.maximum(x, -x), tk.minimum(x, 0)),
    "reductions": lambda x: (x.sum(), x.sum(1), x.mean((0, 2), keepdim=True), x.amax(-1)),
    "more reductions": lambda x: (x.max(), x.amin(0), x.prod(2), x.var(1), x.std(-1)),
    "arg": lambda x: (x.argmax(-1), x.argmin(1, keepdim=True), x.argmax(), x.max(1)[0]),
    "logical reductions": lambda x: ((x > 0).all(1), (x > 0).any(), x.cumsum(2)),
    "shapes": lambda x: (x.reshape(6, 4), x.view(2, -1), x.flatten(), x.permute(2, 0, 1), x.T),
    "more shapes": lambda x: (x.unsqueeze(1), x[None], x[:1].squeeze(0), x.expand(3, 2, 3, 4)),
    "slices": lambda x: (x[:, 1:], x[..., ::2], x[1], x[:, -1], x[:, 0, 1:3], x[-1, -2:]),
    "joins": lambda x: (tk.cat([x, x * 2], 1), tk.stack([x, -x], -1), *x.split([1, 3], 2)),
    "pieces": lambda x: (*x.chunk(3, 1), *x.unbind(0), x.flip(1), x.repeat(1, 2, 1)),
    "triangles": lambda x: (x.tril(), x.triu(1), F.pad(x, (1, 2)), F.pad(x, (1, 1), value=2.0)),
    "matmul": lambda x: (x @ x.transpose(1, 2), x @ tk.ones(4), F.linear(x, tk.ones(2, 4))),
    "gather": lambda x: (x.gather(2, x.argmax(2, keepdim=True)), x[:, tk.tensor([2, 0])]),
}


@pytest.mark.parametrize("name", list(OPS))
def test_single_ops_match_eager(name, tmp_path) -> None:
    fn = OPS[name]
    x = POSITIVE if name == "log" else X
    export_and_run(fn, (x,), tmp_path / "op.onnx")


@pytest.mark.parametrize(
    "layer",
    [
        nn.Conv1d(2, 4, 3, padding=2, dilation=2),
        nn.Conv2d(4, 4, (3, 1), groups=2, padding="same"),
        nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True),
        nn.MaxPool1d(2, dilation=2),
        nn.AdaptiveAvgPool2d((2, 3)),
        nn.Upsample(scale_factor=2, mode="bilinear"),
        nn.Unfold(2),
    ],
    ids=lambda layer: type(layer).__name__,
)
def test_conv_and_pooling_layers(layer, tmp_path) -> None:
    shape = (2, 2, 9) if "1d" in type(layer).__name__ else (2, 4, 7, 6)
    export_and_run(layer, (tk.randn(*shape),), tmp_path / "layer.onnx")


def test_several_inputs_and_outputs_with_names(tmp_path) -> None:
    def f(a, b):
        return a * b, (a - b).sum(0)

    proto = export_and_run(
        f, (tk.randn(3, 2), tk.randn(3, 2)), tmp_path / "two.onnx", input_names=["a"]
    )
    assert [i.name for i in proto.graph.input] == ["a", "input_1"]
    assert len(proto.graph.output) == 2


def test_promoted_arguments_are_cast(tmp_path) -> None:
    def f(x, n):
        return x * n + tk.arange(4)  # int64 promoted to float32

    export_and_run(f, (tk.randn(2, 4), tk.tensor([1, 2, 3, 4])), tmp_path / "cast.onnx")


def test_opset_18_takes_reduction_axes_as_inputs(tmp_path) -> None:
    proto = export_and_run(
        lambda x: x.mean(1) + x.amax(1), (X,), tmp_path / "18.onnx", opset_version=18
    )
    assert proto.opset_import[0].version == 18


# ---------------------------------------------------------------------- custom ops
def test_a_library_op_is_a_node_of_its_domain(tmp_path) -> None:
    x = tk.randn(2, 3)
    path = tmp_path / "custom.onnx"
    tk.onnx.export(lambda x: apply(SCALE, x.exp(), factor=2.5), (x,), path)
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto)
    node = next(n for n in proto.graph.node if n.domain == "testlib")
    assert node.op_type == "scale"
    assert onnx.helper.get_attribute_value(node.attribute[0]) == pytest.approx(2.5)
    assert {(o.domain, o.version) for o in proto.opset_import} == {("", 17), ("testlib", 1)}


# ---------------------------------------------------------------------- errors
class Inverts(nn.Module):
    def forward(self, x):
        return tk.linalg.inv(x)


def test_an_op_without_translation_names_key_site_and_module(tmp_path) -> None:
    model = nn.Sequential(nn.Linear(3, 3), Inverts())
    with pytest.raises(tk.onnx.UnsupportedOperatorError) as info:
        tk.onnx.export(model, (tk.randn(3, 3),), tmp_path / "inv.onnx")
    text = str(info.value)
    assert "'linalg_inv'" in text and "Sequential.1" in text and "test_onnx_export.py" in text
    assert isinstance(info.value, RuntimeError)
    assert not os.listdir(tmp_path)


def test_random_draws_and_opaque_functions_are_refused(tmp_path) -> None:
    dropout = nn.Sequential(nn.Dropout(0.5))  # training mode: a random draw
    with pytest.raises(tk.onnx.UnsupportedOperatorError, match=r"random draw.*model\.eval"):
        tk.onnx.export(dropout, (X,), tmp_path / "d.onnx")

    class Double(tk.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    with pytest.raises(tk.onnx.UnsupportedOperatorError, match=r"autograd\.Function 'Double'"):
        tk.onnx.export(Double.apply, (X,), tmp_path / "f.onnx")


def test_a_training_batch_norm_is_refused(tmp_path) -> None:
    with pytest.raises(tk.onnx.ExportError, match=r"into .*running_mean.*running_var.*model\.eval"):
        tk.onnx.export(nn.BatchNorm1d(4), (tk.randn(3, 4),), tmp_path / "bn.onnx")


def test_bad_paths_name_the_file_and_leave_nothing(tmp_path) -> None:
    missing = tmp_path / "no" / "such" / "m.onnx"
    with pytest.raises(FileNotFoundError, match=re.escape(str(missing))):
        tk.onnx.export(nn.Linear(2, 2), (tk.randn(1, 2),), missing)
    with pytest.raises(TypeError, match=r"path must be a str or os\.PathLike, got int"):
        tk.onnx.export(nn.Linear(2, 2), (tk.randn(1, 2),), 3)


def test_a_failed_export_keeps_the_old_file(tmp_path) -> None:
    path = tmp_path / "m.onnx"
    path.write_bytes(b"old")
    with pytest.raises(tk.onnx.UnsupportedOperatorError):
        tk.onnx.export(Inverts(), (tk.randn(2, 2),), path)
    assert path.read_bytes() == b"old" and os.listdir(tmp_path) == ["m.onnx"]


def test_options_are_checked(tmp_path) -> None:
    model, args, path = nn.Linear(2, 2), (tk.randn(1, 2),), tmp_path / "m.onnx"
    with pytest.raises(ValueError, match="opset_version must be an int from 17"):
        tk.onnx.export(model, args, path, opset_version=11)
    with pytest.raises(ValueError, match="dynamic_axes names 'x', which is none of"):
        tk.onnx.export(model, args, path, dynamic_axes={"x": [0]})
    with pytest.raises(ValueError, match="names axis 2, but input_0 has 2 dims"):
        tk.onnx.export(model, args, path, dynamic_axes={"input_0": [2]})
    with pytest.raises(ValueError, match="input_names has 2 names"):
        tk.onnx.export(model, args, path, input_names=["a", "b"])


def test_a_size_the_graph_cannot_follow_is_an_error(tmp_path) -> None:
    def f(x):
        return x + tk.arange(x.shape[1])  # a constant made at the traced size

    with pytest.raises(tk.onnx.ExportError, match="dynamic dim 'n': a tensor made inside"):
        tk.onnx.export(
            f, (tk.randn(2, 3),), tmp_path / "m.onnx", dynamic_axes={"input_0": {1: "n"}}
        )

    def g(x):
        return x[:, : x.shape[1] - 1]  # a slice bound from the size

    with pytest.raises(tk.onnx.ExportError, match=r"attribute index=.*test_onnx_export.py"):
        tk.onnx.export(g, (tk.randn(2, 3),), tmp_path / "m.onnx", dynamic_axes={"input_0": [1]})


def test_a_value_read_warns_and_exports_the_branch_taken(tmp_path) -> None:
    def f(x):
        return x * 2 if x.sum() > 0 else x * 3

    x = tk.ones(3)
    with pytest.warns(TracerWarning, match="reads a tensor's value"):
        tk.onnx.export(f, (x,), tmp_path / "m.onnx")
    session = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    (out,) = session.run(None, {"input_0": -np.ones(3, np.float32)})
    np.testing.assert_array_equal(out, -2 * np.ones(3))  # the branch traced, as torch's


def test_import_tensorkit_does_not_load_onnx() -> None:
    code = "import sys, tensorkit; print('onnx' in sys.modules, 'tensorkit.onnx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


class ClassToken(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.token = nn.Parameter(tk.randn(1, 1, 4))

    def forward(self, x):
        y = tk.cat([self.token.expand(x.shape[0], -1, -1), x], 1)  # expand to the batch
        return y.reshape(x.shape[0], -1, 2).sum(-1), y.reshape(-1, 4)


def test_two_dynamic_dims_through_expand_cat_and_reshape(tmp_path) -> None:
    feeds = [(tk.randn(2, 3, 4),), (tk.randn(5, 7, 4),)]
    proto = export_and_run(
        ClassToken(),
        feeds[0],
        tmp_path / "token.onnx",
        feeds=feeds,
        dynamic_axes={"input_0": {0: "batch", 1: "seq"}},
    )
    assert "Shape" in op_types(proto)  # the expand's batch entry is computed at run time
