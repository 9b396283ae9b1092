"""tk.array_api under real third-party code: SciPy's array API mode on tensorkit tensors.

SciPy reads ``SCIPY_ARRAY_API`` once, when it is first imported, so the tensorkit side runs in
a fresh interpreter with the variable set (whatever this process imported before); the NumPy
references are computed here, with the same SciPy calls on NumPy arrays.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("scipy", minversion="1.15")

from scipy import integrate, signal, special, stats
from scipy.cluster import vq

# name -> a SciPy call on ``x`` (a (4, 5) array), evaluated on NumPy here and on tensorkit there.
CALLS = {
    "logsumexp": "special.logsumexp(x, axis=1)",
    "logsumexp_weighted": "special.logsumexp(x, axis=0, b=x * 0 + 2.0)",
    "softmax": "special.softmax(x, axis=1)",
    "log_softmax": "special.log_softmax(x, axis=0)",
    "rel_entr": "special.rel_entr(x * x, x * x + 1.0)",
    "moment": "stats.moment(x, order=3, axis=0)",
    "zscore": "stats.zscore(x, axis=1)",
    "skew": "stats.skew(x, axis=1)",
    "kurtosis": "stats.kurtosis(x, axis=1)",
    "variation": "stats.variation(x * x + 1.0, axis=1)",
    "gmean": "stats.gmean(x * x + 1.0, axis=1)",
    "pmean": "stats.pmean(x * x + 1.0, 2.5, axis=1)",
    "sem": "stats.sem(x, axis=1)",
    "entropy": "stats.entropy(x * x, axis=1)",
    "whiten": "vq.whiten(x)",
    "trapezoid": "integrate.trapezoid(x, axis=1)",
    "cumulative_trapezoid": "integrate.cumulative_trapezoid(x, axis=1)",
    "detrend": "signal.detrend(x, axis=1)",
}

DATA = np.random.default_rng(0).normal(size=(4, 5))
WEIGHTS = np.random.default_rng(1).normal(size=(4, 5))

SCRIPT = """
import json, sys
import numpy as np
import tensorkit as tk
from scipy import integrate, signal, special, stats
from scipy._lib._array_api import array_namespace
from scipy.cluster import vq

calls, data, weights = json.loads(sys.stdin.read())
xp = tk.array_api
results = {"namespace": array_namespace(xp.asarray(data)) is xp}
for name, call in calls.items():
    for dtype in ("float64", "float32"):
        x = xp.asarray(np.asarray(data, dtype=dtype))
        out = eval(call)
        results[f"{name}-{dtype}"] = {
            "type": type(out).__name__,
            "tensor": isinstance(out, tk.Tensor),
            "dtype": str(out.dtype),
            "value": np.asarray(out).tolist(),
        }

# Gradients: backward() through SciPy's own code.
w = xp.asarray(np.asarray(weights))
for name, call in (("logsumexp", "special.logsumexp(x, axis=1)"),
                   ("softmax", "special.softmax(x, axis=1)")):
    x = tk.tensor(np.asarray(data), requires_grad=True)
    out = eval(call)
    loss = xp.sum(out * (w[:, 0] if out.ndim == 1 else w))
    loss.backward()
    results[f"grad-{name}"] = x.grad.numpy().tolist()
    results[f"type-{name}"] = type(out).__name__
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def tensorkit_results() -> dict:
    """The SciPy calls run on tensorkit tensors in a subprocess with SCIPY_ARRAY_API=1."""
    env = dict(os.environ, SCIPY_ARRAY_API="1")
    payload = json.dumps([CALLS, DATA.tolist(), WEIGHTS.tolist()])
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        input=payload,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_scipy_picks_the_tensorkit_namespace(tensorkit_results):
    assert tensorkit_results["namespace"] is True


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(CALLS))
def test_scipy_function_on_tensors(tensorkit_results, name, dtype):
    got = tensorkit_results[f"{name}-{dtype}"]
    # An array of the namespace in, one out: a tensor whose operators follow the standard.
    assert got["type"] == "Array", f"{name} returned a {got['type']}, not an Array"
    assert got["tensor"]
    assert got["dtype"] == f"tensorkit.{dtype}"
    namespace = {"special": special, "stats": stats, "vq": vq}
    namespace |= {"integrate": integrate, "signal": signal}
    x = DATA.astype(dtype)
    expected = np.asarray(eval(CALLS[name], namespace, {"x": x}))
    tolerance = 1e-12 if dtype == "float64" else 2e-5
    np.testing.assert_allclose(got["value"], expected, rtol=tolerance, atol=tolerance)


def test_scipy_on_plain_tensors_returns_plain_tensors(tensorkit_results):
    assert tensorkit_results["type-logsumexp"] == tensorkit_results["type-softmax"] == "Tensor"


def test_gradient_flows_through_scipy_logsumexp(tensorkit_results):
    """d/dx sum_i w_i logsumexp(x_i) = w_i softmax(x_i)."""
    expected = WEIGHTS[:, :1] * special.softmax(DATA, axis=1)
    np.testing.assert_allclose(tensorkit_results["grad-logsumexp"], expected, rtol=1e-12)


def test_gradient_flows_through_scipy_softmax(tensorkit_results):
    """d/dx sum_ij w_ij softmax(x)_ij = s_ij (w_ij - sum_k w_ik s_ik)."""
    s = special.softmax(DATA, axis=1)
    expected = s * (WEIGHTS - np.sum(WEIGHTS * s, axis=1, keepdims=True))
    np.testing.assert_allclose(tensorkit_results["grad-softmax"], expected, atol=1e-12)
