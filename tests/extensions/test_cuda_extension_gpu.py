"""On a GPU (scripts/gpu_check.sh): the fused SiLU example's CUDA kernels, compiled by NVRTC
through CuPy's RawModule, give F.silu's values and gradients on the device; NVRTC's errors
name the source file and line."""

from __future__ import annotations

import numpy as np
import pytest

import tensorkit as tk
from tensorkit.examples import fused_silu
from tensorkit.library import opcheck
from tensorkit.utils import cpp_extension

pytestmark = pytest.mark.cuda


@pytest.fixture(autouse=True)
def build_root(tmp_path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TENSORKIT_EXTENSIONS_DIR", str(tmp_path / "extensions"))


@pytest.mark.parametrize("dtype", [tk.float32, tk.float64])
def test_the_cuda_kernels_match_f_silu_on_the_device(dtype) -> None:
    x = tk.randn(1000, 33, dtype=dtype, device="cuda") * 4
    fused_x = x.clone().requires_grad_()
    plain_x = x.clone().requires_grad_()
    fused = fused_silu.silu(fused_x)
    plain = tk.nn.functional.silu(plain_x)
    assert fused.device == x.device
    tolerance = 1e-5 if dtype == tk.float32 else 1e-12
    np.testing.assert_allclose(
        fused.detach().cpu().numpy(), plain.detach().cpu().numpy(), rtol=tolerance, atol=tolerance
    )
    weights = tk.randn(1000, 33, dtype=dtype, device="cuda")
    (fused * weights).sum().backward()
    (plain * weights).sum().backward()
    np.testing.assert_allclose(
        fused_x.grad.cpu().numpy(), plain_x.grad.cpu().numpy(), rtol=10 * tolerance, atol=tolerance
    )


def test_opcheck_passes_on_the_device() -> None:
    x = tk.randn(16, 8, dtype=tk.float64, device="cuda", requires_grad=True)
    assert set(opcheck(fused_silu.silu, (x,)).values()) == {"SUCCESS"}


def test_an_nvrtc_error_names_the_file_and_line() -> None:
    source = 'extern "C" __global__ void k(float *x) {\n    x[0] = undefined_name;\n}\n'
    with pytest.raises(
        cpp_extension.BuildError,
        match=r"kernels\.cu\(2\): error: identifier \"undefined_name\" is undefined",
    ):
        cpp_extension.load_inline("nvrtc_error", cuda_sources=source, functions=["k"])
