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


def _sgd_step_with_a_guard(device: tk.device) -> None:
    """A compiled SGD step whose loss picks a branch (a guard), on ``device``: the updates go
    straight into the parameters' arrays, both branches give eager's parameters."""
    tk.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 4), nn.Tanh(), nn.Linear(4, 1)).to(device)
    reference = nn.Sequential(nn.Linear(8, 4), nn.Tanh(), nn.Linear(4, 1)).to(device)
    reference.load_state_dict(model.state_dict())

    def step_of(net: nn.Module, opt: tk.optim.Optimizer):
        def step(x):
            opt.zero_grad()
            out = net(x).sum()
            loss = out * out if out > 0 else -out  # a guard on the output's sign
            loss.backward()
            opt.step()
            return loss.detach()

        return step

    compiled = tk.compile(step_of(model, tk.optim.SGD(model.parameters(), lr=0.05)))
    eager = step_of(reference, tk.optim.SGD(reference.parameters(), lr=0.05))
    arrays = [p._data for p in model.parameters()]
    for sign in (1, 1, 1, -1, -1, -1, 1):
        x = sign * tk.rand(3, 8).to(device)
        np.testing.assert_allclose(
            compiled(x).cpu().numpy(), eager(x).cpu().numpy(), rtol=1e-5, atol=1e-6
        )
    (entry,) = compiled.entries.values()
    assert len(entry.paths) == 2  # one per sign; each writes the 4 parameters in place
    assert all(len(path.compiled.writes) == 4 for path in entry.paths)
    assert all(p._data is a for p, a in zip(model.parameters(), arrays, strict=True))
    for p, q in zip(model.parameters(), reference.parameters(), strict=True):
        np.testing.assert_allclose(p.detach().cpu().numpy(), q.detach().cpu().numpy(), rtol=1e-5)


def test_a_guarded_sgd_step_runs_on_cuda(cuda: tk.device) -> None:
    _sgd_step_with_a_guard(cuda)


@pytest.mark.cuda
def test_a_guarded_sgd_step_runs_on_a_gpu() -> None:
    """Runs in scripts/gpu_check.sh: guards read CuPy arrays; updates write them in place."""
    _sgd_step_with_a_guard(tk.device("cuda"))


def _cnn_grads_compiled_and_eager(device: tk.device) -> tuple[list, list]:
    tk.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(2, 4, 3), nn.ReLU(), nn.Conv2d(4, 4, 3), nn.ReLU(), nn.MaxPool2d(2)
    ).to(device)
    x = tk.randn(3, 2, 10, 10).to(device).requires_grad_()
    compiled = tk.compile(lambda x: model(x).pow(2).sum())
    for _ in range(3):
        model.zero_grad()
        x.grad = None
        compiled(x).backward()
    got = [t.grad.cpu().numpy().copy() for t in (x, *model.parameters())]
    model.zero_grad()
    x.grad = None
    model(x).pow(2).sum().backward()
    return got, [t.grad.cpu().numpy() for t in (x, *model.parameters())]


def test_channels_last_convolutions_run_on_cuda_arrays(cuda: tk.device) -> None:
    """The layout pass's im2col and col2im rows and max pooling in channels-last memory, on
    the stand-in's arrays (the im2col path: the stand-in has no cuDNN)."""
    got, expected = _cnn_grads_compiled_and_eager(cuda)
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


@pytest.mark.cuda
@pytest.mark.parametrize("cudnn", [False, True], ids=["im2col, channels last", "cuDNN"])
def test_a_compiled_cnn_step_on_a_gpu_matches_eager(cudnn: bool) -> None:
    """Runs in scripts/gpu_check.sh: without cuDNN the layout pass rewrites the convolutions
    (CuPy im2col and col2im rows, max pooling in channels-last memory); with it, cuDNN's
    convolutions are left as they are."""
    with tk.backends.cudnn.flags(enabled=cudnn):
        got, expected = _cnn_grads_compiled_and_eager(tk.device("cuda"))
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)
