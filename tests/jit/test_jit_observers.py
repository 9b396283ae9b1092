"""Compiled and traced calls under the profiler, a Tape and anomaly mode."""

from __future__ import annotations

import numpy as np

import tensorkit as tk
import tensorkit.nn as nn
from tensorkit import jit


def _warm(compiled, *args) -> None:
    for _ in range(3):
        compiled(*args).sum().backward()


def test_profiler_sees_each_step_of_a_replay_and_the_backward_node() -> None:
    model = nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 2))
    compiled = tk.compile(model)
    x = tk.randn(3, 6)
    _warm(compiled, x)
    with tk.profiler.profile() as prof:
        compiled(x).sum().backward()
    names = [r.name for r in prof.records]
    assert names.count("matmul") == 1 and "fused[add+relu]" in names  # one kernel, one op
    # Linear 0's addmm is decomposed so its bias add fuses with the ReLU; Linear 2's, read by
    # the loss, stays one op.
    assert names.count("addmm") == 1
    assert "CompiledFunctionBackward" in names
    matmul = next(r for r in prof.records if r.name == "matmul")
    assert matmul.module_path == "Sequential.0" and matmul.phase == "forward"
    fused = next(r for r in prof.records if r.name == "fused[add+relu]")
    assert fused.module_path == "Sequential"  # Linear 0's bias add and the ReLU after it


def test_tape_records_the_ops_of_a_compiled_call_as_eager_code_would() -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.Tanh())
    compiled = tk.compile(model)
    x = tk.randn(2, 4)
    _warm(compiled, x)
    with tk.autograd.Tape() as tape:
        out = compiled(x)
    with tk.autograd.Tape() as eager:
        expected = model(x)

    def seen(t: tk.autograd.Tape) -> list[tuple]:
        return [(e.name, e.module_path, e.grad_fn, e.scopes) for e in t.entries]

    # Eager code runs the linear layer as one op (its decomposition is the compiler's own).
    assert [e.name for e in tape.entries] == ["addmm", "tanh"]
    assert seen(tape) == seen(eager)
    assert seen(tape)[0] == ("addmm", "Sequential.0", "AddmmBackward0", ("linear",))
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy())


def test_a_traced_function_is_interpreted_under_a_tape() -> None:
    traced = jit.trace(lambda x: (x * 2).exp(), (tk.ones(3),))
    with tk.autograd.Tape() as tape:
        out = traced(tk.zeros(3))
    assert [e.name for e in tape.entries] == ["mul", "exp"]
    np.testing.assert_array_equal(out.numpy(), [1.0, 1.0, 1.0])


def test_anomaly_mode_sees_the_nan_in_compiled_code() -> None:
    compiled = tk.compile(lambda x: x.sqrt().sum())
    x = tk.ones(3, requires_grad=True)
    for _ in range(3):
        compiled(x).backward()
    with tk.autograd.detect_anomaly():
        loss = compiled(-tk.ones(3, requires_grad=True))
        try:
            loss.backward()
        except RuntimeError as error:
            assert "nan" in str(error).lower()
        else:
            raise AssertionError("anomaly mode let a NaN gradient through")
