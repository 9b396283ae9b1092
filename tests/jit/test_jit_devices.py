"""tk.jit on a "cuda" device: the NumPy-backed CuPy stand-in (tests/cuda_standin.py) checks
that plans run each op on its value's device; scripts/gpu_check.sh runs them on a GPU."""

from __future__ import annotations

import numpy as np
import pytest
from cuda_standin import install

import tensorkit as tk
import tensorkit.nn as nn
from tensorkit import jit


@pytest.fixture
def cuda(monkeypatch: pytest.MonkeyPatch) -> tk.device:
    """The stand-in runs NumPy, not CUDA C, so fusion is off here: the kernels' C is compiled
    and checked on the host in test_jit_fusion.py, and on a GPU by scripts/gpu_check.sh."""
    install(monkeypatch, numpy_backed=True)
    monkeypatch.setattr(jit.config, "fuse_elementwise", False)
    return tk.device("cuda")


def test_a_graph_captured_on_cuda_runs_there_and_trains(cuda: tk.device) -> None:
    model = nn.Sequential(nn.Linear(4, 3), nn.Tanh()).to(cuda)
    compiled = tk.compile(model)
    x = tk.randn(2, 4).to(cuda)
    for _ in range(3):
        model.zero_grad()
        out = compiled(x)
        out.sum().backward()
    assert out.device == cuda and out.grad_fn.name() == "CompiledFunctionBackward"
    (entry,) = compiled.entries.values()
    assert {v.device for n in entry.compiled.graph.nodes for v in n.outputs} == {"cuda:0"}
    got = [p.grad.cpu().numpy().copy() for p in model.parameters()]
    model.zero_grad()
    model(x).sum().backward()
    for a, p in zip(got, model.parameters(), strict=True):
        np.testing.assert_allclose(a, p.grad.cpu().numpy(), rtol=1e-6)


def test_cpu_and_cuda_calls_are_separate_guard_sets(cuda: tk.device) -> None:
    compiled = tk.compile(lambda x: x * 2 + 1)
    for _ in range(3):
        a = compiled(tk.ones(2))
        b = compiled(tk.ones(2).to(cuda))
    assert a.device == tk.device("cpu") and b.device == cuda
    assert len(compiled.entries) == 2


def test_a_traced_graph_refuses_inputs_on_another_device(cuda: tk.device) -> None:
    traced = jit.trace(lambda x: x + 1, (tk.ones(2),))
    with pytest.raises(ValueError, match=r"as float32\[2\] on cpu, got float32\[2\] on cuda:0"):
        traced(tk.ones(2).to(cuda))


@pytest.mark.cuda
def test_compiled_training_step_on_a_gpu_matches_eager() -> None:
    """Runs in scripts/gpu_check.sh: the same graph machinery on CuPy arrays."""
    gpu = tk.device("cuda")
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10)).to(gpu)
    compiled = tk.compile(model)
    x, y = tk.randn(16, 32, device=gpu), tk.randint(0, 10, (16,), device=gpu)
    for _ in range(3):
        model.zero_grad()
        loss = nn.functional.cross_entropy(compiled(x), y)
        loss.backward()
    got = [p.grad.cpu().numpy().copy() for p in model.parameters()]
    model.zero_grad()
    expected_loss = nn.functional.cross_entropy(model(x), y)
    expected_loss.backward()
    assert float(loss) == pytest.approx(float(expected_loss), rel=1e-5)
    for a, p in zip(got, model.parameters(), strict=True):
        np.testing.assert_allclose(a, p.grad.cpu().numpy(), rtol=1e-4, atol=1e-6)
