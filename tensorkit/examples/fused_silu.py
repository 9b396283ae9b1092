"""A fused SiLU, ``x * sigmoid(x)``, written in C (and in CUDA) and registered as a tk.library
op with its backward, also in C: the worked example of docs/guide/extensions.md.

``examples::silu`` runs one C loop per call where tensorkit's ops run three (sigmoid,
multiply, and their temporaries); ``examples::silu_backward`` is its gradient, one more loop,
itself differentiable (its rule is written with tensorkit ops) so that double backward works.
The kernels are compiled on first use (``tk.utils.cpp_extension.load_inline``; CUDA tensors
use ``CUDA_SOURCE`` through CuPy). Run ``python -m tensorkit.examples.fused_silu`` to train a
small MLP with it and with ``tk.nn.functional.silu`` side by side.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import tensorkit as tk
from tensorkit import Tensor
from tensorkit.utils import cpp_extension

C_SOURCE = r"""
#include <math.h>
#include <stdint.h>

/* The sigmoid from exp(-|x|), which never overflows (so -ffast-math's assumption that no
   infinity appears holds for every finite x). */
static inline float sigmoid_f32(float x) {
    float e = expf(-fabsf(x));
    return x >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
}

static inline double sigmoid_f64(double x) {
    double e = exp(-fabs(x));
    return x >= 0.0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
}

void silu_forward_f32(int64_t n, const float x[n], float out[n]) {
    for (int64_t i = 0; i < n; i++) out[i] = x[i] * sigmoid_f32(x[i]);
}

void silu_forward_f64(int64_t n, const double x[n], double out[n]) {
    for (int64_t i = 0; i < n; i++) out[i] = x[i] * sigmoid_f64(x[i]);
}

void silu_backward_f32(int64_t n, const float grad[n], const float x[n], float out[n]) {
    for (int64_t i = 0; i < n; i++) {
        float s = sigmoid_f32(x[i]);
        out[i] = grad[i] * s * (1.0f + x[i] * (1.0f - s));
    }
}

void silu_backward_f64(int64_t n, const double grad[n], const double x[n], double out[n]) {
    for (int64_t i = 0; i < n; i++) {
        double s = sigmoid_f64(x[i]);
        out[i] = grad[i] * s * (1.0 + x[i] * (1.0 - s));
    }
}
"""

# The same four functions as CUDA kernels, one thread per element.
CUDA_SOURCE = r"""
template <typename T> __device__ T sigmoid(T x) {
    T e = exp(-fabs(x));
    return x >= T(0) ? T(1) / (T(1) + e) : e / (T(1) + e);
}

extern "C" __global__ void silu_forward_f32(long long n, const float* x, float* out) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] * sigmoid(x[i]);
}

extern "C" __global__ void silu_forward_f64(long long n, const double* x, double* out) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] * sigmoid(x[i]);
}

extern "C" __global__ void silu_backward_f32(
        long long n, const float* grad, const float* x, float* out) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float s = sigmoid(x[i]);
        out[i] = grad[i] * s * (1.0f + x[i] * (1.0f - s));
    }
}

extern "C" __global__ void silu_backward_f64(
        long long n, const double* grad, const double* x, double* out) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        double s = sigmoid(x[i]);
        out[i] = grad[i] * s * (1.0 + x[i] * (1.0 - s));
    }
}
"""

# Vectorized exp (glibc's vector math) for this machine's CPU: about 4x the plain -O3 loop.
# -ffast-math assumes no NaN or infinity appears: the sigmoid above never makes one, and the
# tests check NaN and infinite inputs against F.silu.
C_FLAGS = ["-ffast-math", "-march=native"]
_SUFFIX = {"float32": "f32", "float64": "f64"}
FUNCTIONS = [f"silu_{way}_{s}" for way in ("forward", "backward") for s in _SUFFIX.values()]


@functools.cache
def kernels(device_type: str) -> Any:
    """The compiled kernels for CPU tensors ("cpu") or CUDA tensors ("cuda")."""
    if device_type == "cuda":
        return cpp_extension.load_inline(
            "fused_silu_cuda", cuda_sources=CUDA_SOURCE, functions=FUNCTIONS
        )
    return cpp_extension.load_inline(
        "fused_silu", C_SOURCE, functions=FUNCTIONS, extra_cflags=C_FLAGS
    )


def _kernel(way: str, x: Tensor) -> Any:
    suffix = _SUFFIX.get(x.dtype.np.name) if x.is_floating_point() else None
    if suffix is None:
        raise TypeError(f"examples::silu: expected a float32 or float64 tensor, got {x.dtype}")
    return getattr(kernels(x.device.type), f"silu_{way}_{suffix}")


def _flat(t: Tensor) -> Tensor:
    return t.contiguous().reshape(-1)


@tk.library.custom_op("examples::silu", mutates_args=())
def silu(x: Tensor) -> Tensor:
    """``x * sigmoid(x)`` in one C (or CUDA) loop."""
    out = tk.empty(x.shape, dtype=x.dtype, device=x.device)
    _kernel("forward", x)(x.numel(), _flat(x), out.view(-1))
    return out


@tk.library.custom_op("examples::silu_backward", mutates_args=())
def silu_backward(grad: Tensor, x: Tensor) -> Tensor:
    """The gradient of :func:`silu` at ``x`` times ``grad``, in one loop."""
    out = tk.empty(x.shape, dtype=x.dtype, device=x.device)
    _kernel("backward", x)(x.numel(), _flat(grad), _flat(x), out.view(-1))
    return out


@silu.register_fake
def _(x: Tensor) -> Tensor:
    return tk.empty_like(x)


@silu_backward.register_fake
def _(grad: Tensor, x: Tensor) -> Tensor:
    return tk.empty_like(x)


def _save_x(ctx: Any, inputs: tuple, output: Any) -> None:
    ctx.save_for_backward(inputs[-1])


def _silu_grad(ctx: Any, grad: Tensor) -> tuple:
    (x,) = ctx.saved_tensors
    return (silu_backward(grad, x),)


def _silu_backward_grad(ctx: Any, grad_grad: Tensor) -> tuple:
    """Gradients of ``g * silu'(x)``: ``silu'(x)`` for g and ``g * silu''(x)`` for x, with
    ``silu''(x) = s (1 - s) (2 + x (1 - 2 s))``, s the sigmoid (tensorkit ops, so that they
    are differentiable again)."""
    grad, x = ctx.saved_tensors
    s = tk.sigmoid(x)
    first = s * (1 + x * (1 - s))
    second = s * (1 - s) * (2 + x * (1 - 2 * s))
    return grad_grad * first, grad_grad * grad * second


def _save_both(ctx: Any, inputs: tuple, output: Any) -> None:
    ctx.save_for_backward(*inputs)


silu.register_autograd(_silu_grad, setup_context=_save_x)
silu_backward.register_autograd(_silu_backward_grad, setup_context=_save_both)


# ---------------------------------------------------------------------- a training loop
def train(activation: Any, steps: int = 200, seed: int = 0) -> tuple[list[float], list[Tensor]]:
    """Fit an MLP with ``activation`` to a sine curve; returns the losses and parameters."""
    generator = tk.Generator().manual_seed(seed)
    x = tk.rand(256, 1, generator=generator) * 2 * math.pi - math.pi
    y = tk.sin(x)
    w1 = (tk.randn(1, 32, generator=generator)).requires_grad_()
    b1 = tk.zeros(32, requires_grad=True)
    w2 = (tk.randn(32, 1, generator=generator) / math.sqrt(32)).requires_grad_()
    b2 = tk.zeros(1, requires_grad=True)
    params = [w1, b1, w2, b2]
    optimizer = tk.optim.Adam(params, lr=1e-2)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = ((activation(x @ w1 + b1) @ w2 + b2 - y) ** 2).mean()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, params


def main() -> None:
    fused, _ = train(silu)
    reference, _ = train(tk.nn.functional.silu)
    for step in (0, 50, 100, 199):
        print(
            f"step {step:3d}: loss {fused[step]:.5f} (examples::silu), "
            f"{reference[step]:.5f} (F.silu)"
        )


if __name__ == "__main__":
    main()
