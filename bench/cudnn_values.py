"""cuDNN values check (a GPU run of scripts/gpu_check.sh): tensorkit's cuDNN path against its
im2col / table path on the same GPU and against PyTorch (CUDA when it has it, else CPU), for
convolution (forward, input and weight gradients; 1-D and 2-D, stride, padding, dilation,
groups) and transposed convolution, max and average pooling (forward and gradient) and
training-mode batch norm (output, input and weight gradients, running variance), in float64
and float32.

    python bench/cudnn_values.py      # a markdown table; exit 1 if a row is off

Each cell is ``max |a - b| / max |b|``. float32 convolutions may use TF32 in cuDNN (the
default of ``tk.backends.cudnn.allow_tf32`` and of PyTorch), so their bound is 1e-2 there;
the others must agree to 1e-5 (float32) or 1e-10 (float64).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

import tensorkit as tk

F = tk.nn.functional
rng = np.random.default_rng(0)

# name: (inputs' shapes, tensorkit/torch function of (functional module, *tensors), is a conv)
CASES: dict[str, tuple[tuple, Callable, bool]] = {
    "conv2d s2 p1 d2 g2": (
        ((8, 4, 17, 15), (6, 2, 3, 3), (6,)),
        lambda f, x, w, b: f.conv2d(x, w, b, stride=2, padding=1, dilation=2, groups=2),
        True,
    ),
    "conv2d 3x3 p1 (the CNN's)": (
        ((16, 32, 26, 26), (64, 32, 3, 3), (64,)),
        lambda f, x, w, b: f.conv2d(x, w, b, padding=1),
        True,
    ),
    "conv1d s2 p1": (
        ((4, 3, 31), (5, 3, 4), (5,)),
        lambda f, x, w, b: f.conv1d(x, w, b, stride=2, padding=1),
        True,
    ),
    "conv_transpose2d s2 p1 op1 g2": (
        ((4, 4, 9, 8), (4, 3, 3, 3), (6,)),
        lambda f, x, w, b: f.conv_transpose2d(
            x, w, b, stride=2, padding=1, output_padding=1, groups=2
        ),
        True,
    ),
    "max_pool2d k3 s2 p1": (((4, 6, 15, 14),), lambda f, x: f.max_pool2d(x, 3, 2, 1), False),
    "avg_pool2d k3 s2 p1": (((4, 6, 15, 14),), lambda f, x: f.avg_pool2d(x, 3, 2, 1), False),
    "avg_pool2d k2 p1 exclude pad": (
        ((4, 6, 15, 14),),
        lambda f, x: f.avg_pool2d(x, 2, padding=1, count_include_pad=False),
        False,
    ),
}


def _torch() -> tuple[Any, str]:
    try:
        import torch
    except ImportError:
        return None, "-"
    return torch, "cuda" if torch.cuda.is_available() else "cpu"


def _run_tk(fn: Callable, arrays: list, dtype: Any, weights: np.ndarray | None) -> list:
    leaves = [tk.tensor(a.astype(dtype), device="cuda", requires_grad=True) for a in arrays]
    out = fn(F, *leaves)
    if weights is None:
        return [out]
    (out * tk.tensor(weights.astype(dtype), device="cuda")).sum().backward()
    return [out, *(t.grad for t in leaves)]


def _run_torch(
    torch: Any, device: str, fn: Callable, arrays: list, dtype: Any, weights: np.ndarray
) -> list:
    leaves = [torch.tensor(a.astype(dtype), device=device, requires_grad=True) for a in arrays]
    out = fn(torch.nn.functional, *leaves)
    (out * torch.tensor(weights.astype(dtype), device=device)).sum().backward()
    return [out, *(t.grad for t in leaves)]


def _numpy(value: Any) -> np.ndarray:
    if hasattr(value, "cpu"):
        value = value.detach().cpu()
    return np.asarray(value.numpy() if hasattr(value, "numpy") else value, dtype=np.float64)


def _error(a: Any, b: Any) -> float:
    a, b = _numpy(a), _numpy(b)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


def _batch_norm(lib: Any, x: Any, w: Any, b: Any, running: list) -> Any:
    return lib.nn.functional.batch_norm(x, *running, w, b, training=True, momentum=0.2)


def rows() -> list[tuple[str, str, float, float | None, float]]:
    """(case, dtype, cuDNN vs im2col, cuDNN vs torch, bound) for every case and output."""
    torch, torch_device = _torch()
    found = []
    for dtype, label in ((np.float64, "float64"), (np.float32, "float32")):
        for name, (shapes, fn, is_conv) in CASES.items():
            arrays = [rng.standard_normal(s) for s in shapes]
            probe = fn(F, *(tk.tensor(a.astype(dtype)) for a in arrays))
            weights = rng.standard_normal(tuple(probe.shape))
            cudnn = _run_tk(fn, arrays, dtype, weights)
            with tk.backends.cudnn.flags(enabled=False):
                im2col = _run_tk(fn, arrays, dtype, weights)
            theirs = _run_torch(torch, torch_device, fn, arrays, dtype, weights) if torch else None
            bound = 1e-10 if dtype is np.float64 else (1e-2 if is_conv else 1e-5)
            parts = ["forward"] + [f"grad {i}" for i in range(len(arrays))]
            for i, part in enumerate(parts):
                vs_torch = None if theirs is None else _error(cudnn[i], theirs[i])
                found.append(
                    (f"{name}: {part}", label, _error(cudnn[i], im2col[i]), vs_torch, bound)
                )
        found += _batch_norm_rows(torch, torch_device, dtype, label)
    return found


def _batch_norm_rows(torch: Any, device: str, dtype: Any, label: str) -> list:
    shapes = ((16, 8, 9, 7), (8,), (8,))
    arrays = [rng.standard_normal(s) for s in shapes]
    weights = rng.standard_normal(shapes[0])
    bound = 1e-10 if dtype is np.float64 else 1e-5

    def tk_run(enabled: bool) -> list:
        running = [
            tk.zeros(8, dtype=tk.float64 if dtype is np.float64 else tk.float32, device="cuda")
            for _ in range(2)
        ]
        running[1] += 1
        with tk.backends.cudnn.flags(enabled=enabled):
            out = _run_tk(
                lambda f, x, w, b: _batch_norm(tk, x, w, b, running), arrays, dtype, weights
            )
        return [*out, running[1]]

    cudnn, im2col = tk_run(True), tk_run(False)
    theirs = None
    if torch is not None:
        running = [torch.zeros(8, dtype=getattr(torch, label), device=device) for _ in range(2)]
        running[1] += 1
        theirs = _run_torch(
            torch,
            device,
            lambda f, x, w, b: f.batch_norm(x, *running, w, b, training=True, momentum=0.2),
            arrays,
            dtype,
            weights,
        )
        theirs.append(running[1])
    names = ("forward", "grad x", "grad weight", "grad bias", "running_var")
    return [
        (
            f"batch_norm training: {part}",
            label,
            _error(cudnn[i], im2col[i]),
            None if theirs is None else _error(cudnn[i], theirs[i]),
            bound,
        )
        for i, part in enumerate(names)
    ]


def main() -> int:
    if not tk.cuda.is_available():
        print("cudnn_values.py: no CUDA GPU here")
        return 2
    if not tk.backends.cudnn.is_available():
        print(
            "cudnn_values.py: tk.backends.cudnn.is_available() is False (CuPy "
            f"{__import__('cupy').__version__}: cuDNN bindings need CuPy <= 13 with a cuDNN "
            "library); every op runs on the im2col path, nothing to compare"
        )
        return 0
    _, device = _torch()
    print(f"cuDNN {tk.backends.cudnn.version()}, torch on {device}; max|a-b|/max|b|")
    print("| case | dtype | cuDNN vs im2col | cuDNN vs torch | bound |")
    print("|---|---|---|---|---|")
    bad = 0
    for case, dtype, vs_im2col, vs_torch, bound in rows():
        worst = max(vs_im2col, vs_torch or 0.0)
        bad += worst > bound
        shown = "-" if vs_torch is None else f"{vs_torch:.1e}"
        flag = "" if worst <= bound else " **off**"
        print(f"| {case} | {dtype} | {vs_im2col:.1e} | {shown} | {bound:.0e}{flag} |")
    print(f"{bad} rows off")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
