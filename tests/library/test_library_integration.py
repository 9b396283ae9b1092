"""A custom op is an op like the built-in ones: on the Tape, in the stepper, in the profiler,
in tk.jit graphs and saved files, and in ONNX exports (in its own domain)."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest

import tensorkit as tk
from tensorkit import Tensor, jit
from tensorkit.library import custom_op
from tensorkit.library._custom_op import unregister
from tensorkit.notebook.stepper import BackwardStepper


def _cube() -> tk.library.CustomOpDef:
    @custom_op("integ::cube", mutates_args=())
    def cube(x: Tensor, shift: float = 0.0) -> Tensor:
        return x * x * x + shift

    cube.register_fake(lambda x, shift=0.0: tk.empty_like(x))

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    cube.register_autograd(
        lambda ctx, g: (3 * g * ctx.saved_tensors[0] ** 2, None), setup_context=setup_context
    )
    return cube


def test_the_tape_records_it_by_its_qualified_name() -> None:
    cube = _cube()
    x = tk.randn(3, requires_grad=True)
    with tk.autograd.Tape() as tape:
        cube(x.exp(), shift=1.0).sum().backward()
    names = [entry.name for entry in tape.entries]
    assert names[:3] == ["exp", "integ::cube", "sum"]
    entry = tape.entries[1]
    assert (
        entry.grad_fn == "GeneratedBackwardFor_integ_cube_defaultBackward"
        and entry.phase == "forward"
    )
    assert any(e.phase == "backward" for e in tape.entries)


def test_the_stepper_stops_at_its_node() -> None:
    cube = _cube()
    x = tk.randn(3, requires_grad=True)
    loss = cube(x.exp()).sum()
    stepper = BackwardStepper(loss, break_at=[loss.grad_fn.next_functions[0][0]])
    state = stepper.run_to_end()
    assert state["stopped_by"]["kind"] == "node"
    assert state["step"]["node"]["name"] == "GeneratedBackwardFor_integ_cube_defaultBackward"
    rule = state["step"]["rule"]
    assert rule["op"] == "integ::cube"
    assert rule["function"].endswith("_cube.<locals>.<lambda>")
    assert "test_library_integration.py:" in rule["where"]
    assert x.grad is None
    stepper.run_to_end()
    np.testing.assert_allclose(x.grad.numpy(), 3 * np.exp(x.detach().numpy()) ** 3, rtol=1e-5)


def test_the_profiler_times_it() -> None:
    cube = _cube()
    x = tk.randn(64, requires_grad=True)
    with tk.profiler.profile(backward_ops=True) as prof:
        cube(x).sum().backward()
    rows = {(row.name, row.phase): row for row in prof.key_averages()}
    assert rows[("integ::cube", "forward")].count == 1
    assert rows[("integ::cube", "forward")].cpu_time_total >= 0


def test_tk_jit_keeps_it_as_a_named_node_and_replays_it() -> None:
    cube = _cube()
    x = tk.randn(5, requires_grad=True)
    traced = jit.trace(lambda t: cube(t.sin(), shift=2.0) * 2, (x,))
    assert [n.op for n in traced.graph.nodes] == ["sin", "integ::cube", "mul"]
    node = traced.graph.nodes[1]
    assert node.attrs == {"shift": 2.0} and node.kind == "op"
    other = tk.randn(5, requires_grad=True)
    out = traced(other)
    expected = (other.detach().sin() ** 3 + 2.0) * 2
    np.testing.assert_allclose(out.detach().numpy(), expected.numpy(), rtol=1e-6)
    out.sum().backward()  # the captured backward runs the op's rule
    np.testing.assert_allclose(
        other.grad.numpy(),
        (6 * np.sin(other.detach().numpy()) ** 2 * np.cos(other.detach().numpy())),
        rtol=1e-5,
    )
    compiled = tk.compile(lambda t: cube(t) + 1)
    for _ in range(2):
        np.testing.assert_allclose(compiled(tk.ones(3)).numpy(), [2.0, 2.0, 2.0])


def test_tk_jit_save_records_its_name_and_load_needs_it_registered(tmp_path) -> None:
    cube = _cube()
    path = tmp_path / "cube.tkjit"
    jit.save(jit.trace(lambda t: cube(t + 1, shift=0.5), (tk.ones(2),)), path)
    loaded = jit.load(path)
    assert [n.op for n in loaded.graph.nodes] == ["add", "integ::cube"]
    np.testing.assert_allclose(loaded(tk.zeros(2)).numpy(), [1.5, 1.5])
    unregister(cube)
    message = (
        f"{re.escape(str(path))}: nodes\\[1\\].op: custom op 'integ::cube' is not registered "
        "in this process; define it \\(tk.library\\) before loading this file"
    )
    with pytest.raises(jit.LoadError, match=message):
        jit.load(path)


def test_onnx_export_writes_it_in_its_domain(tmp_path) -> None:
    onnx = pytest.importorskip("onnx")
    cube = _cube()
    path = tmp_path / "cube.onnx"
    tk.onnx.export(lambda t: cube(t.relu(), shift=1.5), (tk.randn(2, 3),), path)
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto)
    nodes = [(n.domain, n.op_type) for n in proto.graph.node if n.op_type != "Identity"]
    assert nodes == [("", "Relu"), ("integ", "cube")]
    (attribute,) = proto.graph.node[1].attribute
    assert attribute.name == "shift"
    assert onnx.helper.get_attribute_value(attribute) == pytest.approx(1.5)
    assert {(o.domain, o.version) for o in proto.opset_import} == {("", 17), ("integ", 1)}
    buffer = io.BytesIO(proto.SerializeToString())
    assert onnx.load(buffer).graph.node[1].domain == "integ"
