"""tk.backends.cudnn / tk.backends.cuda.matmul and the cuDNN dispatch of convolution, pooling
and batch norm, on a stand-in CUDA device whose cuDNN (tests/cudnn_standin.py) records the
calls it receives and computes them in NumPy. Values are checked against PyTorch and the
im2col path; the real cuDNN is checked by scripts/gpu_check.sh on a GPU."""

from __future__ import annotations

import sys
import types
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from cudnn_standin import StandInCudnn, install
from harness import check_grads

import tensorkit as tk
import tensorkit.nn.functional as F  # noqa: N812
from tensorkit._backend import cudnn as cudnn_backend
from tensorkit._backend import precision

rng = np.random.default_rng(0)


def randn(*shape: int) -> np.ndarray:
    return rng.standard_normal(shape)


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> StandInCudnn:
    return install(monkeypatch)


def cuda(a: np.ndarray, requires_grad: bool = True) -> tk.Tensor:
    return tk.tensor(a, device="cuda", requires_grad=requires_grad)


# --------------------------------------------------------------------------- flags
def test_flags_have_pytorchs_defaults_and_types(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cudnn_backend, "FLAGS", dict(cudnn_backend.FLAGS))
    monkeypatch.delenv("CUPY_TF32", raising=False)
    monkeypatch.setattr(precision, "_precision", precision.initial_precision())
    flags = tk.backends.cudnn
    assert (flags.enabled, flags.benchmark, flags.deterministic, flags.allow_tf32) == (
        True,
        False,
        False,
        True,
    )
    assert tk.backends.cuda.matmul.allow_tf32 is False
    assert tk.get_float32_matmul_precision() == "highest"
    for name, setter in (
        ("enabled", "set_enabled_cudnn"),
        ("benchmark", "set_benchmark_cudnn"),
        ("deterministic", "set_deterministic_cudnn"),
        ("allow_tf32", "set_allow_tf32_cudnn"),
    ):
        with pytest.raises(RuntimeError, match=f"^{setter} expects a bool, but got str$"):
            setattr(flags, name, "yes")
        setattr(flags, name, False)
        assert getattr(flags, name) is False
    with pytest.raises(AttributeError, match=r"^Unknown attribute enable$"):
        flags.enable = True
    with pytest.raises(RuntimeError, match=r"^set_allow_tf32_cublas expects a bool, but got int$"):
        tk.backends.cuda.matmul.allow_tf32 = 1
    with pytest.raises(AttributeError, match=r"^Unknown attribute allow_fp16$"):
        tk.backends.cuda.matmul.allow_fp16 = True


def test_flags_context_sets_all_four_and_restores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cudnn_backend, "FLAGS", dict(cudnn_backend.FLAGS))
    flags = tk.backends.cudnn
    flags.benchmark = True
    with pytest.raises(ValueError, match="boom"), flags.flags(enabled=True, deterministic=True):
        assert (flags.enabled, flags.benchmark, flags.deterministic) == (True, False, True)
        raise ValueError("boom")
    assert (flags.enabled, flags.benchmark, flags.deterministic) == (True, True, False)
    with (
        pytest.raises(RuntimeError, match="set_enabled_cudnn expects a bool, but got int"),
        flags.flags(enabled=1),
    ):
        pass
    assert flags.enabled is True


def test_is_available_is_false_when_the_bindings_do_not_import(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def missing(name: str) -> None:
        raise ImportError(f"No module named {name!r}")

    # Resolved before importlib is patched: tk.backends is a lazy submodule, imported on first
    # use, which a worker running this test first would otherwise fail to import.
    cudnn = tk.backends.cudnn
    monkeypatch.setattr(cudnn_backend, "_probed", {})
    monkeypatch.setattr(cudnn_backend.importlib, "import_module", missing)
    assert cudnn.is_available() is False
    assert cudnn.version() is None
    loaded = types.SimpleNamespace(getVersion=lambda: 8907)
    assert cudnn.is_available() is False  # probed once per CuPy module
    monkeypatch.setitem(sys.modules, "cupy", types.ModuleType("cupy"))  # another CuPy
    monkeypatch.setattr(cudnn_backend.importlib, "import_module", lambda name: loaded)
    assert cudnn.is_available() is True
    assert cudnn.version() == 8907


def test_matmul_precision_and_allow_tf32_are_one_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(precision, "_precision", "highest")
    tk.set_float32_matmul_precision("medium")
    assert tk.backends.cuda.matmul.allow_tf32 is True
    tk.backends.cuda.matmul.allow_tf32 = False
    assert tk.get_float32_matmul_precision() == "highest"
    tk.backends.cuda.matmul.allow_tf32 = True
    assert tk.get_float32_matmul_precision() == "high"
    with pytest.warns(UserWarning, match="^low is not one of 'highest', 'high', or 'medium'"):
        tk.set_float32_matmul_precision("low")
    assert tk.get_float32_matmul_precision() == "high"
    with pytest.raises(
        RuntimeError, match=r"^set_float32_matmul_precision expects a str, but got NoneType$"
    ):
        tk.set_float32_matmul_precision(None)


def test_cupy_tf32_in_the_environment_starts_the_policy_at_high(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CUPY_TF32", "1")
    assert precision.initial_precision() == "high"
    monkeypatch.setenv("CUPY_TF32", "0")
    assert precision.initial_precision() == "highest"
    monkeypatch.delenv("CUPY_TF32")
    assert precision.initial_precision() == "highest"


def test_cupy_gets_the_tf32_policy_on_the_first_cuda_device_and_on_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(precision, "_precision", "highest")
    install(monkeypatch)
    cupy = sys.modules["cupy"]
    calls = []
    cupy._core = types.SimpleNamespace(
        set_compute_type=lambda dtype, kind: calls.append((np.dtype(dtype).name, kind)),
        _routines_linalg=types.SimpleNamespace(COMPUTE_TYPE_FP32=4, COMPUTE_TYPE_TF32=7),
    )
    tk.set_float32_matmul_precision("high")  # no CUDA device yet: nothing to tell CuPy
    assert calls == []
    tk.zeros(2, device="cuda")
    assert calls == [("float32", 7)]
    tk.backends.cuda.matmul.allow_tf32 = False
    assert calls == [("float32", 7), ("float32", 4)]


# ----------------------------------------------------------------------- convolution
def test_conv_goes_to_cudnn_with_translated_arguments(fake: StandInCudnn) -> None:
    x, w, b = randn(2, 4, 7, 6), randn(6, 2, 3, 2), randn(6)
    y = F.conv2d(cuda(x), cuda(w), cuda(b), stride=2, padding=1, dilation=(2, 1), groups=2)
    assert fake.calls == [
        (
            "convolution_forward",
            ((2, 4, 7, 6), (6, 2, 3, 2), None, (2, 6, 3, 4), (1, 1), (2, 2), (2, 1), 2),
            {"auto_tune": False, "tensor_core": "auto"},
        ),
    ]
    expected = F.conv2d(tk.tensor(x), tk.tensor(w), tk.tensor(b), 2, 1, (2, 1), 2)
    np.testing.assert_allclose(np.asarray(y.detach()._data), expected.detach().numpy(), atol=1e-12)
    y.sum().backward()
    assert fake.names()[1:] == ["convolution_backward_data", "convolution_backward_filter"]
    _, args, kwargs = fake.calls[1]
    assert args == ((6, 2, 3, 2), (2, 6, 3, 4), None, (2, 4, 7, 6), (1, 1), (2, 2), (2, 1), 2)
    assert kwargs == {"deterministic": False, "auto_tune": False, "tensor_core": "auto"}


def test_conv1d_is_a_2d_call_with_a_unit_height_and_the_flags_pass_through(
    fake: StandInCudnn,
) -> None:
    tk.backends.cudnn.benchmark = True
    tk.backends.cudnn.deterministic = True
    x, w = cuda(randn(2, 3, 9)), cuda(randn(4, 3, 3))
    F.conv1d(x, w, stride=2, padding=1, dilation=2).sum().backward()
    forward, data, filt = fake.calls
    assert forward[1] == ((2, 3, 1, 9), (4, 3, 1, 3), None, (2, 4, 1, 4), (0, 1), (1, 2), (1, 2), 1)
    assert forward[2] == {"auto_tune": True, "tensor_core": "auto"}
    assert data[2] == filt[2] == {"deterministic": True, "auto_tune": True, "tensor_core": "auto"}


@pytest.mark.parametrize(
    "case",
    ["disabled", "unavailable", "cpu", "asymmetric padding", "float32 without tf32"],
)
def test_conv_falls_back_to_im2col(
    fake: StandInCudnn, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    x, w = randn(1, 2, 6, 6).astype(np.float32), randn(3, 2, 2, 2).astype(np.float32)
    device, padding = "cuda", 0
    if case == "disabled":
        tk.backends.cudnn.enabled = False
    elif case == "unavailable":
        monkeypatch.setattr(cudnn_backend, "_probed", {id(sys.modules["cupy"]): None})
    elif case == "cpu":
        device = "cpu"
    elif case == "asymmetric padding":
        padding = "same"  # a 2-wide kernel: one more on the right
    else:
        tk.backends.cudnn.allow_tf32 = False
    y = F.conv2d(tk.tensor(x, device=device), tk.tensor(w, device=device), padding=padding)
    assert fake.calls == []
    assert y.grad_fn is None or "Cudnn" not in type(y.grad_fn).__name__
    expected = F.conv2d(tk.tensor(x), tk.tensor(w), padding=padding)
    np.testing.assert_allclose(np.asarray(y._data), expected.numpy(), rtol=1e-6)


def test_float64_conv_keeps_cudnn_without_tf32(fake: StandInCudnn) -> None:
    tk.backends.cudnn.allow_tf32 = False
    F.conv2d(cuda(randn(1, 1, 4, 4)), cuda(randn(1, 1, 2, 2)))
    assert fake.names() == ["convolution_forward"]


def test_cudnn_conv_values_and_gradients_match_torch(fake: StandInCudnn) -> None:
    torch = pytest.importorskip("torch")
    x, w, b = randn(2, 4, 6, 5), randn(4, 2, 3, 3), randn(4)
    options = {"stride": (2, 1), "padding": 1, "dilation": (1, 2), "groups": 2}
    leaves = [cuda(a) for a in (x, w, b)]
    y = F.conv2d(*leaves, **options)
    theirs = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    expected = torch.nn.functional.conv2d(*theirs, **options)
    np.testing.assert_allclose(np.asarray(y.detach()._data), expected.detach().numpy(), atol=1e-12)
    weights = randn(*expected.shape)
    (y * cuda(weights, False)).sum().backward()
    (expected * torch.tensor(weights)).sum().backward()
    for mine, other in zip(leaves, theirs, strict=True):
        np.testing.assert_allclose(np.asarray(mine.grad._data), other.grad.numpy(), atol=1e-12)


def test_cudnn_conv_gradgradcheck(fake: StandInCudnn) -> None:
    conv = partial(F.conv2d, stride=2, padding=1, dilation=2, groups=2)
    check_grads(conv, randn(2, 2, 5, 5), randn(4, 1, 3, 3), randn(4), device="cuda")
    check_grads(partial(F.conv1d, padding=1), randn(1, 2, 5), randn(2, 2, 3), device="cuda")
    assert {
        "convolution_forward",
        "convolution_backward_data",
        "convolution_backward_filter",
    } <= set(fake.names())


# --------------------------------------------------------------------------- pooling
@pytest.mark.parametrize(
    ("call", "mode"),
    [
        (partial(F.max_pool2d, kernel_size=3, stride=2, padding=1), 0),
        (partial(F.avg_pool2d, kernel_size=3, stride=2, padding=1), 1),
        (partial(F.avg_pool2d, kernel_size=3, stride=2, padding=1, count_include_pad=False), 2),
    ],
)
def test_pooling_goes_to_cudnn_and_matches_torch(fake: StandInCudnn, call, mode: int) -> None:
    torch = pytest.importorskip("torch")
    x = randn(2, 3, 7, 6)
    y = call(cuda(x))
    assert fake.calls == [
        ("pooling_forward", ((2, 3, 7, 6), (2, 3, 4, 3), (3, 3), (2, 2), (1, 1), mode), {})
    ]
    theirs = torch.tensor(x, requires_grad=True)
    torch_call = getattr(torch.nn.functional, call.func.__name__)
    expected = torch_call(theirs, **call.keywords)
    np.testing.assert_allclose(np.asarray(y.detach()._data), expected.detach().numpy(), atol=1e-12)
    weights = randn(*expected.shape)
    mine = cuda(x)
    (call(mine) * cuda(weights, False)).sum().backward()
    (expected * torch.tensor(weights)).sum().backward()
    assert fake.names()[-1] == "pooling_backward"
    np.testing.assert_allclose(np.asarray(mine.grad._data), theirs.grad.numpy(), atol=1e-12)


def test_pooling_1d_and_deterministic_max(fake: StandInCudnn) -> None:
    tk.backends.cudnn.deterministic = True
    F.max_pool1d(cuda(randn(2, 3, 8)), 2)
    assert fake.calls == [
        ("pooling_forward", ((2, 3, 1, 8), (2, 3, 1, 4), (1, 2), (1, 2), (0, 0), 3), {})
    ]


@pytest.mark.parametrize(
    "call",
    [
        partial(F.max_pool2d, kernel_size=2, ceil_mode=True),
        partial(F.max_pool2d, kernel_size=2, dilation=2),
        partial(F.max_pool2d, kernel_size=2, return_indices=True),
        partial(F.avg_pool2d, kernel_size=2, divisor_override=3),
    ],
)
def test_pooling_falls_back_where_cudnn_differs(fake: StandInCudnn, call) -> None:
    x = randn(1, 2, 7, 7)
    got, expected = call(cuda(x)), call(tk.tensor(x))
    assert fake.calls == []
    for a, b in zip(
        got if isinstance(got, tuple) else (got,),
        expected if isinstance(expected, tuple) else (expected,),
        strict=True,
    ):
        np.testing.assert_array_equal(np.asarray(a.detach()._data), b.detach().numpy())


def test_cudnn_pooling_gradgradcheck(fake: StandInCudnn) -> None:
    x = rng.permutation(2 * 2 * 5 * 5).reshape(2, 2, 5, 5) / 7.0  # no ties
    check_grads(partial(F.max_pool2d, kernel_size=2, stride=1, padding=1), x, device="cuda")
    check_grads(partial(F.avg_pool2d, kernel_size=3, stride=2, padding=1), x, device="cuda")
    check_grads(partial(F.max_pool1d, kernel_size=2), x[0], device="cuda")
    assert fake.names().count("pooling_backward") > 0


# ------------------------------------------------------------------------ batch norm
def test_batch_norm_training_goes_to_cudnn_and_matches_the_composite(fake: StandInCudnn) -> None:
    x, weight, bias = randn(4, 3, 5, 2), randn(3), randn(3)
    stats = [np.zeros(3), np.ones(3)]
    mine = [cuda(a) for a in (x, weight, bias)]
    running = [tk.tensor(s, device="cuda") for s in stats]
    y = F.batch_norm(mine[0], *running, mine[1], mine[2], training=True, momentum=0.3, eps=1e-4)
    name, args, _ = fake.calls[0]
    assert name == "batch_normalization_forward_training"
    assert args[0] == (4, 3, 10, 1) and args[7:] == (1e-4, pytest.approx(0.7), True, 1, False)
    cpu = [tk.tensor(a, requires_grad=True) for a in (x, weight, bias)]
    cpu_running = [tk.tensor(s) for s in stats]
    expected = F.batch_norm(
        cpu[0], *cpu_running, cpu[1], cpu[2], training=True, momentum=0.3, eps=1e-4
    )
    np.testing.assert_allclose(np.asarray(y.detach()._data), expected.detach().numpy(), atol=1e-12)
    for a, b in zip(running, cpu_running, strict=True):
        np.testing.assert_allclose(np.asarray(a._data), b.numpy(), atol=1e-12)
    weights = randn(*x.shape)
    (y * cuda(weights, False)).sum().backward()
    (expected * tk.tensor(weights)).sum().backward()
    assert fake.names() == ["batch_normalization_forward_training", "batch_normalization_backward"]
    for a, b in zip(mine, cpu, strict=True):
        np.testing.assert_allclose(np.asarray(a.grad._data), b.grad.numpy(), atol=1e-10)


def test_batch_norm_2d_input_without_running_stats_or_affine(fake: StandInCudnn) -> None:
    torch = pytest.importorskip("torch")
    x = randn(6, 4)
    y = F.batch_norm(cuda(x, False), None, None, training=True)
    assert fake.calls[0][1][0] == (6, 4, 1, 1)
    expected = torch.nn.functional.batch_norm(torch.tensor(x), None, None, training=True)
    np.testing.assert_allclose(np.asarray(y._data), expected.numpy(), atol=1e-12)


@pytest.mark.parametrize("case", ["eval", "tiny eps", "float32 stats for float64"])
def test_batch_norm_falls_back(fake: StandInCudnn, case: str) -> None:
    x = cuda(randn(4, 3, 2, 2))
    mean, var = (
        tk.zeros(3, dtype=tk.float64, device="cuda"),
        tk.ones(3, dtype=tk.float64, device="cuda"),
    )
    if case == "eval":
        F.batch_norm(x, mean, var, training=False)
    elif case == "tiny eps":
        F.batch_norm(x, mean, var, training=True, eps=1e-6)
    else:
        F.batch_norm(x, mean.float(), var.float(), training=True)
    assert fake.calls == []


def test_cudnn_batch_norm_gradgradcheck(fake: StandInCudnn) -> None:
    def norm(x: tk.Tensor, w: tk.Tensor, b: tk.Tensor) -> tk.Tensor:
        return F.batch_norm(x, None, None, w, b, training=True)

    check_grads(norm, randn(3, 2, 2, 2), randn(2), randn(2), device="cuda")
    assert "batch_normalization_forward_training" in fake.names()


# ---------------------------------------------------------- the GPU check's values script
def test_the_gpu_values_script_runs_every_case_on_the_stand_in(
    fake: StandInCudnn, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bench/cudnn_values.py (run by scripts/gpu_check.sh) on the stand-in: every case takes
    the cuDNN path and agrees with im2col and torch within its bound."""
    pytest.importorskip("torch")
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "bench"))
    import cudnn_values

    rows = cudnn_values.rows()
    assert len(rows) == 2 * (4 * 4 + 3 * 2 + 5)
    assert all(
        vs_im2col <= bound and vs_torch <= bound for _, _, vs_im2col, vs_torch, bound in rows
    )
    assert {
        "convolution_backward_filter",
        "pooling_backward",
        "batch_normalization_backward",
    } <= set(fake.names())


def test_conv_transpose_is_cudnns_backward_data(fake: StandInCudnn) -> None:
    torch = pytest.importorskip("torch")
    x, w, b = randn(2, 4, 5, 4), randn(4, 3, 3, 2), randn(6)
    options = {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2, "dilation": (1, 2)}
    leaves = [cuda(a) for a in (x, w, b)]
    y = F.conv_transpose2d(*leaves, **options)
    assert fake.calls == [
        (
            "convolution_backward_data",
            ((4, 3, 3, 2), (2, 4, 5, 4), None, (2, 6, 10, 8), (1, 1), (2, 2), (1, 2), 2),
            {"deterministic": False, "auto_tune": False, "tensor_core": "auto"},
        )
    ]
    theirs = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    expected = torch.nn.functional.conv_transpose2d(*theirs, **options)
    np.testing.assert_allclose(np.asarray(y.detach()._data), expected.detach().numpy(), atol=1e-12)
    weights = randn(*expected.shape)
    (y * cuda(weights, False)).sum().backward()
    (expected * torch.tensor(weights)).sum().backward()
    assert fake.names()[1:] == ["convolution_forward", "convolution_backward_filter"]
    for mine, other in zip(leaves, theirs, strict=True):
        np.testing.assert_allclose(np.asarray(mine.grad._data), other.grad.numpy(), atol=1e-12)


def test_cudnn_conv_transpose_gradgradcheck(fake: StandInCudnn) -> None:
    conv = partial(F.conv_transpose1d, stride=2, padding=1, output_padding=1)
    check_grads(conv, randn(2, 2, 4), randn(2, 3, 3), randn(3), device="cuda")
    assert fake.names()[0] == "convolution_backward_data"
