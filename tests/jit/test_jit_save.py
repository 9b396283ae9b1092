"""tk.jit.save / tk.jit.load: traced graphs in a file, run in a process without their source."""

from __future__ import annotations

import io
import json
import math
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tensorkit as tk
import tensorkit.nn as nn
import tensorkit.nn.functional as F  # noqa: N812
from tensorkit import jit, serialization
from tensorkit.jit.ir import attr_refs
from tensorkit.ops._apply import OPS, OpDef, apply
from tensorkit.serialization import CheckpointError

ROOT = Path(__file__).resolve().parents[2]


def _blob(traced: jit.TracedFunction) -> bytes:
    stream = io.BytesIO()
    jit.save(traced, stream)
    return stream.getvalue()


def _reload(traced: jit.TracedFunction) -> Any:
    return jit.load(io.BytesIO(_blob(traced)))


def _np(t: tk.Tensor) -> np.ndarray:
    return t.detach().numpy()


def _mlp() -> nn.Module:
    tk.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))


# ---------------------------------------------------------------------------- round trips
def test_a_cnn_with_batchnorm_runs_the_same_after_loading(tmp_path: Path) -> None:
    tk.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 4, 3, padding=1),
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(16, 2),
    )
    traced = jit.trace(model, (tk.randn(2, 3, 4, 4),))
    path = tmp_path / "cnn.tkjit"
    jit.save(traced, path)
    loaded = jit.load(path)
    assert isinstance(loaded, jit.TracedFunction) and loaded.path == str(path)
    x = tk.randn(2, 3, 4, 4)
    np.testing.assert_array_equal(_np(loaded(x)), _np(traced(x)))
    # the running statistics are the loaded buffers, updated by the call like the originals
    for (name, buffer), original in zip(loaded.named_buffers(), model.buffers(), strict=True):
        assert buffer is not original, name
        np.testing.assert_array_equal(buffer.numpy(), original.numpy())


def test_loaded_parameters_are_fresh_and_training_graphs_backpropagate() -> None:
    model = _mlp()
    model[0].bias.requires_grad_(False)
    x = tk.randn(5, 4)
    traced = jit.trace(model, (x,))
    assert traced.graph.backward
    loaded = _reload(traced)
    params = dict(loaded.named_parameters())
    assert list(params) == [name for name, _ in model.named_parameters()]
    for (name, original), fresh in zip(model.named_parameters(), params.values(), strict=True):
        assert fresh is not original and type(fresh) is nn.Parameter, name
        assert fresh.requires_grad == original.requires_grad and fresh.is_leaf, name
        np.testing.assert_array_equal(fresh.detach().numpy(), original.detach().numpy())
    x2 = tk.randn(5, 4)
    (traced(x2) ** 2).sum().backward()
    (loaded(x2) ** 2).sum().backward()
    assert params["0.bias"].grad is None and model[0].bias.grad is None
    for name, original in model.named_parameters():
        if original.requires_grad:
            np.testing.assert_allclose(params[name].grad.numpy(), original.grad.numpy(), 1e-6)


def test_a_whole_sgd_step_keeps_training_after_loading() -> None:
    def run(load: bool) -> list[np.ndarray]:
        tk.manual_seed(1)
        model = _mlp()
        opt = tk.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        x, y = tk.randn(8, 4), tk.randint(0, 3, (8,))

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss.detach()

        step(x, y)  # the momentum buffers exist from here on
        traced = jit.trace(step, (x, y))
        run = _reload(traced) if load else traced
        for _ in range(3):
            run(x, y)
        if not load:  # in the order the step reads them: a linear op takes its bias first
            return [
                _np(p).copy() for layer in (model[0], model[2]) for p in (layer.bias, layer.weight)
            ]
        trained = [  # the step reads the parameters as external tensors, in order
            t
            for p, t in zip(run.graph.placeholders, run._tensors, strict=True)
            if p.kind == "external" and t.requires_grad
        ]
        assert not any(t is p for t in trained for p in model.parameters())
        return [_np(t) for t in trained]

    loaded, traced = run(True), run(False)
    assert len(loaded) == len(traced) == 4
    for a, b in zip(loaded, traced, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_external_tensors_constants_index_arrays_and_views_round_trip() -> None:
    scale = tk.tensor([1.5, -2.0, 0.5])

    def f(x):
        table = tk.tensor([[0.0, 1.0, 2.0]])  # a constant the call made
        picked = x[tk.tensor([2, 0])]  # an index array attribute
        positive = tk.where(x > 0, x, 0.0)  # a condition attribute read from the graph
        return (picked[1:, ..., None, ::2] * scale[::2]).sum() + (positive * scale + table).mean()

    x = tk.randn(3, 3)
    with tk.no_grad():
        traced = jit.trace(f, (x,))
    kinds = {p.kind for p in traced.graph.placeholders}
    assert {"external", "constant"} <= kinds
    loaded = _reload(traced)
    nodes = [m for n in loaded.graph.nodes for m in (n.members or [n])]  # fused: its members
    read = [list(attr_refs(v)) for node in nodes for v in node.attrs.values()]
    assert any(read)  # where's condition is a value of the graph, read by an attribute
    x2 = tk.randn(3, 3)
    np.testing.assert_allclose(_np(loaded(x2)), _np(f(x2)), rtol=1e-6)
    external = next(
        t
        for p, t in zip(loaded.graph.placeholders, loaded._tensors, strict=True)
        if p.kind == "external"
    )
    assert external is not scale
    np.testing.assert_array_equal(external.numpy(), scale.numpy())


def test_random_draws_are_drawn_again_as_the_traced_function_does() -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    with tk.no_grad():
        traced = jit.trace(lambda x: model(x) + tk.rand(4), (tk.ones(2, 4),))
    loaded = _reload(traced)
    tk.manual_seed(3)
    expected = traced(tk.ones(2, 4))
    tk.manual_seed(3)
    np.testing.assert_array_equal(_np(loaded(tk.ones(2, 4))), _np(expected))


def test_structured_inputs_outputs_and_constant_outputs_round_trip() -> None:
    def f(pair, scale=None):
        a, b = pair
        return {"sum": a + b, "parts": (a * scale["k"], 3, "text")}

    args = ((tk.ones(2), tk.ones(2)), {"k": tk.full((2,), 2.0)})
    traced = jit.trace(f, args[:1], example_kwarg_inputs={"scale": args[1]})
    loaded = _reload(traced)
    out = loaded((tk.ones(2), tk.full((2,), 4.0)), scale={"k": tk.full((2,), 3.0)})
    assert list(out) == ["sum", "parts"] and out["parts"][1:] == (3, "text")
    np.testing.assert_array_equal(out["sum"].numpy(), [5.0, 5.0])
    np.testing.assert_array_equal(out["parts"][0].numpy(), [3.0, 3.0])
    with pytest.raises(TypeError, match=r"f \(loaded from <BytesIO>\) was traced with"):
        loaded(tk.ones(2))


def test_wrong_inputs_are_refused_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "mlp.tkjit"
    jit.save(jit.trace(_mlp(), (tk.randn(5, 4),)), path)
    loaded = jit.load(path)
    message = re.escape(f"Sequential (loaded from {path}) was traced for argument 0 as float32")
    with pytest.raises(ValueError, match=message + r"\[5, 4\] on cpu, got float32\[2, 4\]"):
        loaded(tk.randn(2, 4))


def test_saving_a_loaded_function_writes_the_same_bytes() -> None:
    blob = _blob(jit.trace(_mlp(), (tk.randn(5, 4),)))
    assert _blob(jit.load(io.BytesIO(blob))) == blob


def test_the_file_is_a_tk_save_checkpoint_of_the_tensors_and_the_graph() -> None:
    model = _mlp()
    obj = tk.load(io.BytesIO(_blob(jit.trace(model, (tk.randn(5, 4),)))))
    assert sorted(obj) == ["array", "buffer", "constant", "external", "graph", "parameter"]
    assert list(obj["parameter"]) == [name for name, _ in model.named_parameters()]
    doc = json.loads(obj["graph"])
    assert {k: doc[k] for k in ("format", "version", "opset")} == {
        "format": "tensorkit.jit",
        "version": jit.serialize.FORMAT_VERSION,
        "opset": jit.serialize.OPSET_VERSION,
    }
    assert doc["tensorkit"] == tk.__version__ and doc["name"] == "Sequential"
    assert [n["op"] for n in doc["nodes"]][:2] == ["permute", "matmul"]


def test_a_new_file_gets_the_users_mode_and_a_failed_save_keeps_the_old_one(
    tmp_path: Path,
) -> None:
    path = tmp_path / "g.tkjit"
    old = os.umask(0o027)
    try:
        jit.save(jit.trace(_mlp(), (tk.randn(5, 4),)), path)
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o640
    before = path.read_bytes()
    bad = jit.trace(lambda x: _echo(x, value=object()), (tk.ones(2),))
    with pytest.raises(TypeError):
        jit.save(bad, path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.tkjit"]


# ---------------------------------------------------------------------------- a new process
_MODEL_SOURCE = """
import tensorkit as tk

class Tiny(tk.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = tk.nn.Linear(4, 3)
        self.norm = tk.nn.LayerNorm(3)

    def forward(self, x):
        return self.norm(self.fc(x)).relu() * 2 + x[:, :3]
"""

_CHILD = """
import importlib.util, sys
import numpy as np
import tensorkit as tk
graph, data, module = sys.argv[1:]
assert importlib.util.find_spec(module) is None
loaded = tk.jit.load(graph)
expected = tk.load(data)
out = loaded(expected["x"])
np.testing.assert_array_equal(out.detach().numpy(), expected["out"].numpy())
(out ** 2).sum().backward()
for name, p in loaded.named_parameters():
    np.testing.assert_allclose(p.grad.numpy(), expected["grads"][name].numpy(), rtol=1e-6)
assert module not in sys.modules
print("ok", len(expected["grads"]))
"""


def test_a_process_that_never_imported_the_model_runs_and_trains_it(tmp_path: Path) -> None:
    module = "jitsave_tiny_model_" + os.urandom(4).hex()
    source_dir = tmp_path / "src"
    source_dir.mkdir()
    (source_dir / f"{module}.py").write_text(_MODEL_SOURCE, encoding="utf-8")
    sys.path.insert(0, str(source_dir))
    try:
        model = __import__(module).Tiny()
    finally:
        sys.path.remove(str(source_dir))
        sys.modules.pop(module, None)
    x = tk.randn(2, 4)
    traced = jit.trace(model, (tk.randn(2, 4),))
    jit.save(traced, tmp_path / "tiny.tkjit")
    out = model(x)
    (out**2).sum().backward()
    grads = {name: p.grad for name, p in model.named_parameters()}
    tk.save({"x": x, "out": out.detach(), "grads": grads}, tmp_path / "data.safetensors")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            _CHILD,
            str(tmp_path / "tiny.tkjit"),
            str(tmp_path / "data.safetensors"),
            module,
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["ok", "4"]


# ---------------------------------------------------------------------------- attributes
_SEEN: list[dict] = []


def _echo_forward(xp: Any, x: Any, **attrs: Any) -> Any:
    _SEEN.append(attrs)
    return x * 1


_ECHO = OpDef("jitsave_echo", _echo_forward, None, key="jitsave_test::echo")


def _echo(x: tk.Tensor, **attrs: Any) -> tk.Tensor:
    return apply(_ECHO, x, **attrs)


_VALUES = [
    0,
    -1,
    2**53 - 1,
    2**53,
    -(2**53),
    2**100,
    -(2**20000),  # beyond int -> str's digit limit
    1.5,
    math.inf,
    -math.inf,
    math.nan,
    -0.0,
    5e-324,
    1 + 2j,
    complex(-0.0, math.inf),
    True,
    False,
    None,
    "text é ∑",
    (1, 2),
    [1, 2],
    (),
    [],
    ((1,), [2, (3,)]),
    slice(1, None, -2),
    slice(None),
    Ellipsis,
    np.dtype("float32"),
    np.dtype(">i8"),
    np.dtype(bool),
    tk.float32,
    tk.complex128,
    tk.device("cpu"),
    tk.Size([2, 3]),
    np.arange(6).reshape(2, 3),
    np.array([True, False]),
    np.array(2.5, dtype=np.float16),
    np.zeros((2, 0), np.complex64),
    np.float32(1.5),
    np.int64(-3),
    np.bool_(True),
    np.complex128(1j),
    {"a": 1, 2: (3,), (4, "b"): None},
    [(slice(0, 2), Ellipsis, None, np.array([0, 1])), {"k": [tk.int64, np.dtype("u1")]}],
]


def _same(a: Any, b: Any) -> bool:
    """Equal values of the same types (nan equal to nan, -0.0 different from 0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1, a) == math.copysign(1, b)
        )
    if isinstance(a, complex):
        return _same(a.real, b.real) and _same(a.imag, b.imag)
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
    if isinstance(a, np.dtype):
        return a.str == b.str
    if isinstance(a, np.generic):
        return a.dtype == b.dtype and a == b
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return _same(list(a), list(b)) and _same(list(a.values()), list(b.values()))
    if isinstance(a, slice):
        return _same((a.start, a.stop, a.step), (b.start, b.stop, b.step))
    return a is b or a == b


@pytest.mark.parametrize(
    "value", _VALUES, ids=[f"{i}-{type(v).__name__}" for i, v in enumerate(_VALUES)]
)
def test_attribute_values_round_trip_exactly(value: Any) -> None:
    traced = jit.trace(lambda x: _echo(x, value=value, other=[value, 1]), (tk.ones(2),))
    loaded = _reload(traced)
    (node,) = loaded.graph.nodes
    assert _same(node.attrs["value"], value), node.attrs["value"]
    assert _same(node.attrs["other"], [value, 1])
    _SEEN.clear()
    np.testing.assert_array_equal(loaded(tk.full((2,), 3.0)).numpy(), [3.0, 3.0])
    assert _same(_SEEN[-1]["value"], value)  # the generated code passes it to the op


def test_an_array_attribute_used_twice_is_stored_once() -> None:
    index = np.array([1, 0])
    traced = jit.trace(lambda x: _echo(x, a=index, b=(index,)), (tk.ones(2),))
    obj = tk.load(io.BytesIO(_blob(traced)))
    assert list(obj["array"]) == ["0"]
    (node,) = _reload(traced).graph.nodes
    assert node.attrs["a"] is node.attrs["b"][0]


class _Opaque:
    pass


@pytest.mark.parametrize(
    ("value", "type_name"),
    [
        (_Opaque(), "test_jit_save._Opaque"),
        ({1, 2}, "set"),
        (b"bytes", "bytes"),
        (tk.ones(2), "tensorkit.tensor.Tensor"),
        (print, "builtin_function_or_method"),
        (np.dtype(object), "numpy.dtypes.ObjectDType"),
        ([np.arange(2, dtype=np.uint16)], "uint16"),
        (np.uint32(1), "uint32"),
    ],
    ids=["object", "set", "bytes", "tensor", "function", "object dtype", "uint16", "uint32"],
)
def test_other_attribute_types_are_refused_naming_the_op_and_attribute(
    value: Any, type_name: str
) -> None:
    traced = jit.trace(lambda x: _echo(x * 2, weird=value), (tk.ones(2),))
    with pytest.raises(
        TypeError, match=r"tk\.jit\.save: attribute 'weird' of node 1 \(jitsave_test::echo\)"
    ) as info:
        jit.save(traced, io.BytesIO())
    assert type_name in str(info.value)


def test_a_custom_autograd_function_cannot_be_saved() -> None:
    class Double(tk.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    traced = jit.trace(lambda x: Double.apply(x) + 1, (tk.ones(2),))
    with pytest.raises(TypeError, match=r"node 0 is custom autograd\.Function Double.*tk\.library"):
        jit.save(traced, io.BytesIO())
    with pytest.raises(TypeError, match=r"expects a TracedFunction .* got function"):
        jit.save(lambda x: x, io.BytesIO())
    with pytest.raises(ValueError, match=r"has no compiled graph yet: .*tk\.jit\.explain"):
        jit.save(tk.compile(lambda x: x), io.BytesIO())


def test_a_compiled_function_saves_its_latest_guard_set(tmp_path: Path) -> None:
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh())
    compiled = tk.compile(model)
    for shape in [(2, 3), (5, 3)]:
        for _ in range(2):
            compiled(tk.randn(*shape))
    jit.save(compiled, tmp_path / "compiled.tkjit")
    loaded = jit.load(tmp_path / "compiled.tkjit")
    x = tk.randn(5, 3)
    np.testing.assert_allclose(loaded(x).detach().numpy(), model(x).detach().numpy(), rtol=1e-6)


def test_a_custom_op_is_saved_by_key_and_needs_registering_to_load(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "custom.tkjit"
    jit.save(jit.trace(lambda x: _echo(x + 1, k=2), (tk.ones(2),)), path)
    assert [n.op for n in jit.load(path).graph.nodes] == ["add", "jitsave_test::echo"]
    monkeypatch.delitem(OPS, "jitsave_test::echo")
    message = (
        f"{re.escape(str(path))}: nodes\\[1\\].op: custom op 'jitsave_test::echo' is not "
        "registered in this process; define it \\(tk.library\\) before loading this file"
    )
    with pytest.raises(jit.LoadError, match=message):
        jit.load(path)


# ---------------------------------------------------------------------------- refusals
def _tiny() -> jit.TracedFunction:
    """A module with a parameter, a buffer, an index array and a backward."""
    tk.manual_seed(0)
    model = nn.Linear(2, 1)
    model.register_buffer("shift", tk.tensor([0.5]))

    class Wrapper(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = model

        def forward(self, x):
            return (self.inner(x)[tk.tensor([0, 1])] + self.inner.shift).sum()

    return jit.trace(Wrapper(), (tk.ones(3, 2),))


def _edited(edit: Any, traced: jit.TracedFunction | None = None) -> io.BytesIO:
    """A well-checksummed file whose graph document (and tables) ``edit`` changed."""
    obj = tk.load(io.BytesIO(_blob(traced or _tiny())))
    doc = json.loads(obj["graph"])
    replaced = edit(doc, obj)
    obj["graph"] = replaced if isinstance(replaced, str) else json.dumps(doc)
    stream = io.BytesIO()
    tk.save(obj, stream)
    stream.seek(0)
    stream.name = "edited.tkjit"
    return stream


def test_the_tiny_graph_loads_unedited() -> None:
    traced = _tiny()
    doc_kinds = [p.kind for p in traced.graph.placeholders]
    assert doc_kinds[:3] == ["input", "parameter", "parameter"] and "buffer" in doc_kinds
    loaded = jit.load(_edited(lambda doc, obj: None))
    np.testing.assert_array_equal(_np(loaded(tk.ones(3, 2))), _np(traced(tk.ones(3, 2))))


def _set(path: str, value: Any) -> Any:
    """An edit setting ``doc[...]`` at a dotted path (numbers index lists)."""

    def edit(doc: dict, obj: dict) -> None:
        *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
        target = doc
        for key in parents:
            target = target[key]
        if value is _DELETE:
            del target[last]
        else:
            target[last] = value

    return edit


_DELETE = object()


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (_set("format", "onnx"), "the graph is not in the tensorkit.jit format \\(got 'onnx'\\)"),
        (
            lambda doc, obj: doc.update(version=2, tensorkit="9.1.0"),
            "written by tensorkit 9.1.0 in tensorkit.jit format version 2; this tensorkit reads "
            "version 1: load it with tensorkit 9.1.0 or newer",
        ),
        (_set("version", 0), "unknown tensorkit.jit format version 0"),
        (_set("version", "1"), "the graph's version must be an integer, got '1'"),
        (
            _set("opset", 3),
            r"the graph uses opset 3 \(written by tensorkit 0\.1\.0\); this tensorkit runs "
            "opset 2 only",
        ),
        (_set("opset", True), "the graph uses opset True"),
        (
            _set("nodes.0.op", "no_such_op"),
            "nodes\\[0\\].op: unknown op key 'no_such_op': this tensorkit has no such op",
        ),
        (
            _set("nodes.1.args.0", {"ref": 999}),
            "nodes\\[1\\].args\\[0\\]: refers to value %999, which is not defined",
        ),
        (
            _set("nodes.0.args.0", {"ref": 5}),
            "nodes\\[0\\].args\\[0\\]: refers to value %5, which is not defined",
        ),
        (_set("outputs.0", {"ref": 999}), "outputs\\[0\\]: refers to value %999"),
        (_set("grads.0.1", 999), "grads\\[0\\]\\[1\\]: refers to value %999"),
        (_set("grads.0.0", 4), "grads\\[0\\]\\[0\\]: placeholder 4 is a grad_output"),
        (_set("grads.0.0", 99), "grads\\[0\\]\\[0\\]: expected an integer from 0 below 5, got 99"),
        (_set("mutations", [[0, 999]]), "mutations\\[0\\]\\[1\\]: refers to value %999"),
        (
            _set("mutations", [[4, 5]]),
            r"mutations\[0\]\[0\]: placeholder 4 is a grad_output, not a tensor of a call",
        ),
        (_set("mutations", [[0, 5]]), None),  # an argument written in place
        (_set("nodes.0.kind", "function"), "nodes\\[0\\].kind: unknown node kind 'function'"),
        (_set("nodes.0.kind", "random"), "nodes\\[0\\].op: unknown random draw 'addmm'"),
        (_set("nodes.0.phase", "sideways"), "nodes\\[0\\].phase: unknown phase 'sideways'"),
        (_set("nodes.0.op", 7), "nodes\\[0\\].op: expected a string, got an integer"),
        (
            _set("nodes.0.multi_output", 0),
            "nodes\\[0\\].multi_output: expected true or false, got an integer",
        ),
        (_set("nodes.0.multi_output", True), None),  # loads: one output of a tuple
        (
            _set("nodes.0.cast", "object"),
            "nodes\\[0\\].cast: expected null or a dtype name, got 'object'",
        ),
        (_set("nodes.0.attrs", []), "nodes\\[0\\].attrs: expected an object, got an array"),
        (
            _set("nodes.0.attrs.axes", {"lambda": "x"}),
            "nodes\\[0\\].attrs\\['axes'\\]: bad value \\{'lambda': 'x'\\}",
        ),
        (_set("nodes.0.attrs.axes", {"np_dtype": "O"}), "bad NumPy dtype 'O'"),
        (_set("nodes.0.attrs.axes", {"array": "7"}), "tensor 'array.7' is not in the file"),
        (_set("nodes.0.attrs.axes", {"float": "1e999999"}), None),  # inf: a value, if a wrong one
        (_set("nodes.0.attrs.axes", {"float": "0x1p3"}), "bad float '0x1p3'"),
        (_set("nodes.0.attrs.axes", {"int": "12"}), "bad value \\{'int': '12'\\}"),
        (_set("nodes.0.attrs.axes", {"ref": 99}), "attrs\\['axes'\\]: refers to value %99"),
        (_set("nodes.0.attrs.axes", {"tuple": [1, [{"ref": 0}]]}), None),  # an index tuple
        (_set("nodes.0.attrs.axes", {"dict": [[1, {"ref": 0}]]}), "bad value \\{'ref': 0\\}"),
        (_set("nodes.0.args.0", [{"ref": 1}]), "bad value \\{'ref': 1\\}"),
        (
            _set("nodes.0.outputs.0.id", "6"),
            "nodes\\[0\\].outputs\\[0\\].id: expected an integer, got a string",
        ),
        (_set("nodes.0.outputs.0.id", True), "expected an integer, got true or false"),
        (
            _set("nodes.0.outputs.0.id", 0),
            "nodes\\[0\\].outputs\\[0\\].id: value %0 is defined twice",
        ),
        (_set("nodes.0.outputs.0.id", -1), "expected an integer from 0, got -1"),
        (
            _set("nodes.0.outputs.0.shape", [1, -2]),
            "shape\\[1\\]: expected an integer from 0, got -2",
        ),
        (_set("nodes.0.outputs.0.dtype", "float128"), "dtype: unknown dtype 'float128'"),
        (_set("nodes.0.outputs.0.device", "tpu:0"), "device: bad device 'tpu:0'"),
        (_set("nodes.0.outputs", []), "nodes\\[0\\].outputs: a single-output node has 0"),
        (
            _set("nodes.0.members", [{}]),
            "nodes\\[0\\].members: a fused node, and only one, has members",
        ),
        (
            _set("nodes.0.site", _DELETE),
            "nodes\\[0\\]: missing fields \\['site'\\], unexpected fields \\[\\]",
        ),
        (_set("nodes.0.extra", 1), "unexpected fields \\['extra'\\]"),
        (
            _set("placeholders.0.kind", "secret"),
            "placeholders\\[0\\].kind: unknown placeholder kind 'secret'",
        ),
        (
            _set("placeholders.0.name", "input 3"),
            "placeholders\\[0\\].name: an input placeholder is named 'input N'",
        ),
        (
            _set("placeholders.1.name", "other.weight"),
            "placeholders\\[1\\]: its tensor 'parameter.other.weight' is not in the file",
        ),
        (
            _set("placeholders.1.value.shape", [2, 1]),
            r"its tensor 'parameter\.inner\.weight' is float32\[1, 2\] on cpu, the graph says "
            r"float32\[2, 1\] on cpu",
        ),
        (
            _set("placeholders.1.value.device", "cuda:0"),
            "the graph says float32\\[1, 2\\] on cuda:0",
        ),
        (
            _set("placeholders.1.kind", "external"),
            "placeholders\\[1\\]: its tensor 'external.%1' is not in the file",
        ),
        (_set("placeholders", "none"), "placeholders: expected an array, got a string"),
        (_set("input_spec", ["set", []]), "input_spec: bad structure spec"),
        (_set("output_spec", ["tuple", ["leaf", "leaf"]]), "output_spec: does not have 1 leaves"),
        (_set("grad_outputs", []), "grad_outputs: do not match the gradient placeholders"),
        (_set("name", None), "name: expected a string, got null"),
        (_set("outputs", {}), "outputs: expected an array, got an object"),
        (
            lambda doc, obj: obj["array"].update(extra=tk.ones(1)),
            "the array tensors: \\['extra'\\] belong to no graph value",
        ),
        (lambda doc, obj: obj.update(weights=obj.pop("array")), "not a tk.jit file"),
        (lambda doc, obj: "{not json", "the graph is not valid JSON"),
        (
            lambda doc, obj: '{"format": "tensorkit.jit", "format": 1}',
            "the graph: duplicated key 'format'",
        ),
        (lambda doc, obj: "[1, NaN]", "the graph: NaN is not a JSON value"),
        (lambda doc, obj: "[1]", "the graph is not in the tensorkit.jit format \\(got 'list'\\)"),
    ],
)
def test_malformed_graphs_are_refused_naming_the_file_and_field(
    edit: Any, message: str | None
) -> None:
    stream = _edited(edit)
    if message is None:
        jit.load(stream)
        return
    with pytest.raises(jit.LoadError, match=message) as info:
        jit.load(stream)
    assert str(info.value).startswith("edited.tkjit: "), info.value
    assert isinstance(info.value, CheckpointError)


def test_random_edits_raise_load_error_or_load() -> None:
    """Edits that keep the file well-formed (a forged checksum): LoadError or a graph."""
    traced = _tiny()
    doc = json.loads(tk.load(io.BytesIO(_blob(traced)))["graph"])
    paths = list(_paths(doc))
    rng = np.random.default_rng(0)
    replacements = [None, True, 0, 1, -1, 2**70, "leaf", "input 0", "float32", [], {}, [[0, 1]]]
    replacements += [{"ref": 0}, {"ref": 3}, {"tuple": []}, {"array": "0"}, "fused", "random"]
    outcomes: dict[str, int] = defaultdict(int)
    for _ in range(300):
        path = paths[rng.integers(len(paths))]
        value = replacements[rng.integers(len(replacements))]
        try:
            jit.load(_edited(_set(path, json.loads(json.dumps(value))), traced))
        except jit.LoadError as error:
            assert str(error).startswith("edited.tkjit: "), error
            outcomes["refused"] += 1
        else:
            outcomes["loaded"] += 1
    assert outcomes["refused"] > 200, dict(outcomes)


def test_a_fused_step_with_a_missing_operand_is_refused_naming_it() -> None:
    """A member's operand edited to null (only clamp's bounds may be missing) is refused, not
    rendered into a kernel."""

    def edit(doc: dict, obj: dict) -> None:
        fused = next(node for node in doc["nodes"] if node["kind"] == "fused")
        fused["members"][0]["args"][1] = None

    with pytest.raises(jit.LoadError, match=r"edited\.tkjit: .*members\[0\]\.op: 'add' here "):
        jit.load(_edited(edit))


def _paths(obj: Any, prefix: str = "") -> Any:
    """Every dotted path into a JSON document (as ``_set`` takes them)."""
    items = (
        obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    )
    for key, value in items:
        path = f"{prefix}{key}"
        yield path
        yield from _paths(value, path + ".")


@pytest.mark.skipif(tk.cuda.is_available(), reason="needs a machine without CUDA")
def test_a_graph_for_a_device_missing_here_is_refused_naming_it() -> None:
    with tk.no_grad():
        traced = jit.trace(lambda x: x * 2, (tk.ones(2),))

    def to_cuda(doc: dict, obj: dict) -> None:
        for value in [doc["placeholders"][0]["value"], doc["nodes"][0]["outputs"][0]]:
            value["device"] = "cuda:0"

    with pytest.raises(
        jit.LoadError, match=r"edited\.tkjit: the graph: it runs on cuda:0, not avail"
    ):
        jit.load(_edited(to_cuda, traced))


@pytest.mark.skipif(not tk.cuda.is_available(), reason="needs CUDA")
def test_a_cuda_graph_comes_back_on_its_device() -> None:
    model = _mlp().to("cuda")
    x = tk.randn(5, 4, device="cuda")
    traced = jit.trace(lambda x: model(x)[tk.tensor([0, 2], device="cuda")], (x,))
    loaded = _reload(traced)
    out = loaded(x)
    assert out.device == tk.device("cuda:0")
    np.testing.assert_allclose(out.detach().cpu().numpy(), traced(x).detach().cpu().numpy())
    out.sum().backward()
    assert all(t.grad is not None for t in loaded._tensors if t is not None and t.requires_grad)


def test_other_files_are_refused() -> None:
    stream = io.BytesIO()
    tk.save({"weight": tk.ones(2)}, stream)
    stream.seek(0)
    with pytest.raises(
        jit.LoadError,
        match=r"<BytesIO>: not a tk\.jit file .* got \['weight'\]\); a tk\.save checkpoint "
        r"loads with tk\.load",
    ):
        jit.load(stream)
    with pytest.raises(jit.LoadError, match="too short for a safetensors header"):
        jit.load(io.BytesIO(b"\x00"))


def test_truncated_files_are_refused(tmp_path: Path) -> None:
    blob = _blob(_tiny())
    path = tmp_path / "cut.tkjit"
    for length in [0, 7, 8, 9, len(blob) // 3, len(blob) // 2, len(blob) - 8, len(blob) - 1]:
        path.write_bytes(blob[:length])
        with pytest.raises(jit.LoadError, match=re.escape(str(path)) + ": "):
            jit.load(path)


def test_every_bit_flip_is_refused_or_loads_the_same_graph() -> None:
    weight = tk.tensor([1.5, -2.0])
    with tk.no_grad():
        traced = jit.trace(lambda x: x[tk.tensor([1])] * weight, (tk.tensor([1.0, 2.0]),))
    blob = _blob(traced)
    assert len(blob) < 4000
    flipped = bytearray(blob)
    outcomes: dict[str, int] = defaultdict(int)
    for index in range(len(blob)):
        for bit in range(8):
            flipped[index] ^= 1 << bit
            try:
                loaded = jit.load(io.BytesIO(flipped))
            except CheckpointError as error:
                assert type(error) is jit.LoadError and str(error).startswith("<BytesIO>: ")
                outcomes["refused"] += 1
            else:
                assert _blob(loaded) == blob, f"bit {bit} of byte {index}"
                outcomes["identical"] += 1
            flipped[index] ^= 1 << bit
    assert outcomes["refused"] + outcomes["identical"] == 8 * len(blob)
    assert outcomes["refused"] > 0.99 * 8 * len(blob), dict(outcomes)


# ---------------------------------------------------------------------------- the codec
def test_fused_nodes_keep_their_members_and_no_source() -> None:
    from tensorkit.jit.ir import Graph, Node, Placeholder, Ref, Value
    from tensorkit.jit.serialize._decode import read_graph
    from tensorkit.jit.serialize._encode import document

    def value(i: int) -> Value:
        return Value(i, (2,), "float32", "cpu")

    members = [
        Node("exp", (Ref(0),), {}, (value(1),)),
        Node("mul", (Ref(1), 2.0), {}, (value(2),)),
    ]
    fused = Node(
        "fused", (Ref(0),), {}, (value(2),), kind="fused", members=members, source="def k(): ..."
    )
    graph = Graph(
        [Placeholder(value(0), "input", "input 0")], [fused], outputs=[Ref(2)], output_spec="leaf"
    )
    doc, tables = document(graph, [None], ["tuple", [["list", ["leaf"]], ["dict", []]]], "f")
    assert "source" not in json.dumps(doc)
    read, _, _, _ = read_graph(json.loads(json.dumps(doc)), tables, "<mem>")
    (node,) = read.nodes
    assert node.kind == "fused" and node.source == ""
    assert [(m.op, m.args) for m in node.members] == [("exp", (Ref(0),)), ("mul", (Ref(1), 2.0))]
    doc["nodes"][0]["members"][1]["args"][0] = {"ref": 7}
    with pytest.raises(jit.LoadError, match=r"members\[1\]\.args\[0\]: refers to value %7"):
        read_graph(doc, tables, "<mem>")
    doc["nodes"][0]["members"][1]["args"][0] = {"ref": 1}
    doc["nodes"][0]["outputs"][0]["id"] = 3
    with pytest.raises(jit.LoadError, match=r"nodes\[0\]\.outputs\[0\]: no member computes %3"):
        read_graph(doc, tables, "<mem>")


def test_the_package_never_names_code_loading_machinery() -> None:
    forbidden = re.compile(
        r"\b(pickle|marshal|shelve|eval|exec|__import__|importlib)\b|(?<![.\w])compile\b"
    )
    files = sorted(Path(jit.serialize.__file__).parent.glob("*.py"))
    assert len(files) == 4
    for file in files:
        match = forbidden.search(file.read_text(encoding="utf-8"))
        assert match is None, f"{file.name} mentions {match.group()}"


def test_load_error_is_a_checkpoint_error_exported_by_tk_jit() -> None:
    assert issubclass(jit.LoadError, CheckpointError)
    assert issubclass(jit.LoadError, serialization.CheckpointError)
    assert {"save", "load", "LoadError"} <= set(jit.__all__)


def _guarded() -> jit.TracedFunction:
    def f(x):
        return x * 2 if x.sum() > 0 else x * 3

    with pytest.warns(jit.TracerWarning):
        return jit.trace(f, (tk.ones(3),))


def _guard_at(doc: dict) -> dict:
    return next(node for node in doc["nodes"] if node["kind"] == "guard")


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda doc, obj: _guard_at(doc).update(op="numpy()"),
            "unknown guarded read 'numpy\\(\\)'",
        ),
        (
            lambda doc, obj: _guard_at(doc).update(args=[]),
            "a guard reads one value and has no outputs",
        ),
        (
            lambda doc, obj: _guard_at(doc)["attrs"].pop("number"),
            "a guard holds its 'value' and its integer 'number'",
        ),
        (
            lambda doc, obj: _guard_at(doc)["attrs"].update(value="True"),
            "attrs\\['value'\\]: a guard's value cannot be a str",
        ),
        (
            lambda doc, obj: doc["backward"].append(_guard_at(doc)),
            "backward\\[0\\]: a guard runs in the forward only",
        ),
        (lambda doc, obj: _guard_at(doc)["attrs"].update(value=False), None),  # loads
    ],
)
def test_malformed_guard_nodes_are_refused(edit: Any, message: str | None) -> None:
    stream = _edited(edit, _guarded())
    if message is None:
        with pytest.raises(
            jit.GuardError, match="read True, but the graph was traced when it read False"
        ):
            jit.load(stream)(tk.ones(3))
        return
    with pytest.raises(jit.LoadError, match=message):
        jit.load(stream)
