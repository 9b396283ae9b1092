"""The worked example (tensorkit/examples/fused_silu.py): a C SiLU registered as a custom op
with a C backward gives tensorkit's and torch's values and gradients, trains the same, and
passes opcheck."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tensorkit as tk
from tensorkit.examples import fused_silu
from tensorkit.library import opcheck


@pytest.fixture(autouse=True)
def build_root(tmp_path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TENSORKIT_EXTENSIONS_DIR", str(tmp_path / "extensions"))
    fused_silu.kernels.cache_clear()
    yield
    fused_silu.kernels.cache_clear()


@pytest.mark.parametrize("dtype", [tk.float32, tk.float64])
def test_values_and_gradients_match_tensorkit_ops(dtype) -> None:
    x = tk.randn(8, 16, dtype=dtype) * 4
    fused_x = x.clone().requires_grad_()
    plain_x = x.clone().requires_grad_()
    fused = fused_silu.silu(fused_x)
    plain = plain_x * tk.sigmoid(plain_x)
    tolerance = 1e-6 if dtype == tk.float32 else 1e-13
    np.testing.assert_allclose(
        fused.detach().numpy(), plain.detach().numpy(), rtol=tolerance, atol=tolerance
    )
    weights = tk.randn(8, 16, dtype=dtype)
    (fused * weights).sum().backward()
    (plain * weights).sum().backward()
    np.testing.assert_allclose(
        fused_x.grad.numpy(), plain_x.grad.numpy(), rtol=10 * tolerance, atol=tolerance
    )


@pytest.mark.torch
def test_values_and_gradients_match_torch() -> None:
    torch = pytest.importorskip("torch")
    data = np.random.default_rng(0).standard_normal((5, 7)) * 3
    x = tk.tensor(data, requires_grad=True)
    t = torch.tensor(data, requires_grad=True)
    y, ty = fused_silu.silu(x), torch.nn.functional.silu(t)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-13)
    (g,) = tk.autograd.grad(y.sum(), x, create_graph=True)
    (tg,) = torch.autograd.grad(ty.sum(), t, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy(), rtol=1e-12)
    (gg,) = tk.autograd.grad(g.sum(), x)
    (tgg,) = torch.autograd.grad(tg.sum(), t)
    np.testing.assert_allclose(gg.numpy(), tgg.numpy(), rtol=1e-10, atol=1e-14)


def test_gradcheck_gradgradcheck_and_opcheck() -> None:
    x = tk.randn(3, 4, dtype=tk.float64, requires_grad=True)
    assert tk.autograd.gradcheck(fused_silu.silu, (x,))
    assert tk.autograd.gradgradcheck(fused_silu.silu, (x,))
    grad = tk.randn(3, 4, dtype=tk.float64, requires_grad=True)
    assert tk.autograd.gradcheck(fused_silu.silu_backward, (grad, x))
    assert set(opcheck(fused_silu.silu, (x,)).values()) == {"SUCCESS"}
    assert set(opcheck(fused_silu.silu_backward, (grad, x)).values()) == {"SUCCESS"}


def test_a_training_loop_follows_the_tensorkit_ops_one() -> None:
    fused_losses, fused_params = fused_silu.train(fused_silu.silu, steps=60)
    plain_losses, plain_params = fused_silu.train(tk.nn.functional.silu, steps=60)
    assert fused_losses[-1] < fused_losses[0] / 10
    np.testing.assert_allclose(fused_losses, plain_losses, rtol=1e-4)
    for a, b in zip(fused_params, plain_params, strict=True):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", [tk.float32, tk.float64])
def test_extreme_inputs_give_f_silu_values_and_gradients(dtype) -> None:
    values = [float("nan"), float("inf"), -float("inf"), 100.0, -100.0, 1e3, -1e3, 0.0, -1e-40]
    x = tk.tensor(values, dtype=dtype, requires_grad=True)
    reference = tk.tensor(values, dtype=dtype, requires_grad=True)
    y, expected = fused_silu.silu(x), tk.nn.functional.silu(reference)
    np.testing.assert_allclose(y.detach().numpy(), expected.detach().numpy(), rtol=1e-6)
    y.sum().backward()
    expected.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), reference.grad.numpy(), rtol=1e-6)


def test_strided_inputs_work_and_other_dtypes_are_refused() -> None:
    x = tk.randn(6, 4).t()
    np.testing.assert_allclose(
        fused_silu.silu(x).numpy(), tk.nn.functional.silu(x).numpy(), rtol=1e-6
    )
    with pytest.raises(
        TypeError,
        match=re.escape(
            "examples::silu: expected a float32 or float64 tensor, got tensorkit.int64"
        ),
    ):
        fused_silu.silu(tk.arange(3))


def test_the_example_runs_as_a_script(tmp_path) -> None:
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "TENSORKIT_EXTENSIONS_DIR": str(tmp_path / "ext"), "PYTHONPATH": root}
    result = subprocess.run(
        [sys.executable, "-m", "tensorkit.examples.fused_silu"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        timeout=120,
    )
    lines = result.stdout.splitlines()
    assert len(lines) == 4 and lines[-1].startswith("step 199: loss ")
    fused, plain = re.findall(r"\d+\.\d{5}", lines[-1])
    assert fused == plain


LOAD = """
import sys
import numpy as np
import tensorkit as tk
if sys.argv[2] == "define":
    import tensorkit.examples.fused_silu  # noqa: F401  (registers examples::silu)
try:
    loaded = tk.jit.load(sys.argv[1])
except tk.jit.LoadError as error:
    print("LoadError:", error)
else:
    print(loaded(tk.tensor([-1.0, 0.0, 2.0])).tolist())
"""


def test_a_saved_graph_with_the_c_op_loads_where_the_op_is_defined(tmp_path) -> None:
    path = tmp_path / "silu.tkjit"
    tk.jit.save(tk.jit.trace(lambda t: fused_silu.silu(t) * 2, (tk.ones(3),)), path)
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "TENSORKIT_EXTENSIONS_DIR": str(tmp_path / "ext"), "PYTHONPATH": root}
    outputs = {}
    for mode in ("define", "bare"):
        outputs[mode] = subprocess.run(
            [sys.executable, "-c", LOAD, str(path), mode],
            capture_output=True,
            text=True,
            check=True,
            env=env,
            timeout=120,
        ).stdout.strip()
    expected = (tk.nn.functional.silu(tk.tensor([-1.0, 0.0, 2.0])) * 2).tolist()
    np.testing.assert_allclose(json.loads(outputs["define"]), expected, rtol=1e-6)
    assert outputs["bare"] == (
        f"LoadError: {path}: nodes[0].op: custom op 'examples::silu' is not registered in this "
        "process; define it (tk.library) before loading this file"
    )
