"""cuda_sources on the stand-in CUDA device: the kernel prototypes, the launch (grid, block,
argument types) and the checks, with a stand-in RawModule that runs NumPy code for each
kernel. The kernels themselves compile and run on a GPU in scripts/gpu_check.sh."""

from __future__ import annotations

import re
import types
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

import tensorkit as tk
from tensorkit.examples import fused_silu
from tensorkit.utils import cpp_extension
from tensorkit.utils.cpp_extension import BuildError, PrototypeError, _cuda

SCALE = r"""
extern "C" __global__ void scale(long long n, float k, const float* x, float* out) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = k * x[i];
}
"""


class CompileException(Exception):  # noqa: N818 - CuPy's name
    pass


class StandInRawModule:
    """``cupy.RawModule``: ``compile`` fails on sources containing "#error"; each kernel
    runs ``KERNELS[name]`` on the arrays and records its launch."""

    KERNELS: ClassVar[dict] = {}
    made: ClassVar[list] = []

    def __init__(self, code: str, options: tuple = ()) -> None:
        self.code = code
        self.options = options
        self.launches: list = []
        StandInRawModule.made.append(self)

    def compile(self) -> None:
        if "#error" in self.code:
            line = self.code[: self.code.index("#error")].count("\n") + 1
            raise CompileException(f"/tmp/x/kern.cu({line}): error: stop here")

    def get_function(self, name: str):
        def launch(grid, block, args, shared_mem=0):
            self.launches.append((name, grid, block, args, shared_mem))
            StandInRawModule.KERNELS[name](*args)

        return launch


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    from cuda_standin import install

    monkeypatch.setenv("TENSORKIT_EXTENSIONS_DIR", str(tmp_path / "extensions"))
    fake = install(monkeypatch, numpy_backed=True)
    fake.RawModule = StandInRawModule
    fake.cuda.compiler = types.SimpleNamespace(CompileException=CompileException)
    monkeypatch.setattr(_cuda, "_MODULES", {})
    monkeypatch.setattr(StandInRawModule, "made", [])
    fused_silu.kernels.cache_clear()
    yield fake
    fused_silu.kernels.cache_clear()


def _scale(n, k, x, out):
    out[:n] = k * x[:n]


def test_a_kernel_is_launched_on_cuda_tensors(gpu, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(StandInRawModule.KERNELS, "scale", _scale)
    module = cpp_extension.load_inline(
        "scale_ext", cuda_sources=SCALE, functions=["scale"], extra_cuda_cflags=["-use_fast_math"]
    )
    x = tk.arange(600, dtype=tk.float32, device="cuda")
    out = tk.empty(600, device="cuda")
    module.scale(600, 2.0, x, out)
    np.testing.assert_allclose(out.cpu().numpy(), 2 * np.arange(600))
    (raw,) = StandInRawModule.made
    assert raw.options == ("-use_fast_math",) and raw.code == SCALE
    name, grid, block, args, shared = raw.launches[0]
    assert (name, grid, block, shared) == ("scale", (3,), (256,), 0)
    assert type(args[0]) is np.int64 and type(args[1]) is np.float32
    module.scale(600, 1.0, x, out, grid=5, block=(128,))
    assert raw.launches[1][1:3] == ((5,), (128,))
    again = cpp_extension.load_inline(
        "scale_ext", cuda_sources=SCALE, functions=["scale"], extra_cuda_cflags=["-use_fast_math"]
    )
    assert (
        len(StandInRawModule.made) == 1 and again.scale is not module.scale
    )  # one module per hash
    (folder,) = (Path(tk.utils.cpp_extension.build_root())).iterdir()
    assert (folder / "kernels.cu").read_text() == SCALE


def test_kernel_arguments_are_checked(gpu, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(StandInRawModule.KERNELS, "scale", _scale)
    module = cpp_extension.load_inline("scale_ext", cuda_sources=SCALE, functions="scale")
    with pytest.raises(
        RuntimeError,
        match=re.escape(
            "scale(): argument 'x' (position 3) must be a cuda tensor, got a tensor on cpu "
            "(kernels from cuda_sources take CUDA tensors"
        ),
    ):
        module.scale(2, 1.0, tk.ones(2), tk.empty(2, device="cuda"))
    with pytest.raises(
        TypeError,
        match=re.escape(
            "scale(): argument 'out' (position 4) must have dtype float32 (C type float), got "
            "float64"
        ),
    ):
        module.scale(
            2, 1.0, tk.ones(2, device="cuda"), tk.empty(2, dtype=tk.float64, device="cuda")
        )


def test_kernels_must_be_extern_c_and_compile_errors_name_the_file(gpu) -> None:
    with pytest.raises(
        PrototypeError, match=re.escape("CUDA kernel 'k' must be declared extern \"C\" __global__")
    ):
        cpp_extension.load_inline(
            "plain", cuda_sources="__global__ void k(float *x) {}", functions=["k"]
        )
    broken = 'extern "C" __global__ void k(float *x) {}\n#error\n'
    with pytest.raises(
        BuildError,
        match=(
            r"Error building extension 'broken' \(cuda_sources "
            r".*broken_[0-9a-f]{16}/kernels\.cu\):\n.*broken_[0-9a-f]{16}/kernels\.cu\(2\): "
            r"error: stop here"
        ),
    ):
        cpp_extension.load_inline("broken", cuda_sources=broken, functions=["k"])


def _numpy_silu_kernels() -> dict:
    def forward(n, x, out):
        out[:n] = x[:n] / (1 + np.exp(-x[:n]))

    def backward(n, grad, x, out):
        s = 1 / (1 + np.exp(-x[:n]))
        out[:n] = grad[:n] * s * (1 + x[:n] * (1 - s))

    return {
        f"silu_{way}_{s}": f
        for way, f in (("forward", forward), ("backward", backward))
        for s in ("f32", "f64")
    }


def test_the_example_op_runs_its_cuda_kernels_on_cuda_tensors(
    gpu, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, kernel in _numpy_silu_kernels().items():
        monkeypatch.setitem(StandInRawModule.KERNELS, name, kernel)
    x = tk.randn(4, 5, dtype=tk.float64)
    x_gpu = x.to("cuda").requires_grad_()
    y = fused_silu.silu(x_gpu)
    assert y.device.type == "cuda"
    y.sum().backward()
    (raw,) = StandInRawModule.made
    assert raw.code == fused_silu.CUDA_SOURCE
    assert [launch[0] for launch in raw.launches] == ["silu_forward_f64", "silu_backward_f64"]
    reference = x.clone().requires_grad_()
    tk.nn.functional.silu(reference).sum().backward()
    np.testing.assert_allclose(x_gpu.grad.cpu().numpy(), reference.grad.numpy(), rtol=1e-12)


def test_a_kernel_runs_on_its_tensors_gpu(gpu, monkeypatch: pytest.MonkeyPatch) -> None:
    gpu.cuda.runtime.count = 2
    current = []

    def scale(n, k, x, out):
        current.append(gpu.cuda.runtime.current)
        _scale(n, k, x, out)

    monkeypatch.setitem(StandInRawModule.KERNELS, "scale", scale)
    module = cpp_extension.load_inline("scale_ext", cuda_sources=SCALE, functions="scale")
    x = tk.ones(4, device="cuda:1")
    module.scale(4, 3.0, x, tk.empty(4, device="cuda:1"))
    assert current == [1] and gpu.cuda.runtime.current == 0
    with pytest.raises(
        RuntimeError,
        match=r"scale\(\): expected all tensors to be on the same device, but found cuda:0, cuda:1",
    ):
        module.scale(4, 3.0, x, tk.empty(4, device="cuda:0"))
