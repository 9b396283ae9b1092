"""GEMM provider benchmark: NumPy's OpenBLAS (``np.matmul``) against Intel MKL (``cblas_sgemm``
from the ``mkl`` wheel's ``libmkl_rt``, called through ctypes on the same NumPy buffers), on
the float32 matrix shapes of the nn-level workloads of docs/benchmarks.md:

- the MLP 784-512-256-10 step at batch 128: each layer's forward ``x @ W.T``, the input
  gradient ``g @ W`` (not for the first layer, whose input needs none) and the weight gradient
  ``g.T @ x``; their sum is one step's GEMM time, the number the 15% rule reads;
- the CNN step (64x1x28x28, conv32-conv64 3x3, linear 9216-10): the im2col GEMMs
  ``W @ cols``, ``g @ cols.T`` and ``W.T @ g`` and the classifier's three;
- the Transformer layer (B16 T128 D128, 4 heads, MLP 512): the in/out projections and the
  MLP's forward and weight-gradient GEMMs, and the per-head attention batches (64 of them,
  ``cblas_sgemm_batch_strided`` for MKL, one batched ``np.matmul`` for OpenBLAS).

Each thread count runs in its own child process (the BLAS pools read their sizes at load
time). Run it with the path of ``libmkl_rt`` (a venv with ``pip install mkl``; never the
project's venv)::

    flock /tmp/bench.lock python bench/bench_gemm.py --mkl /tmp/mklvenv/lib/libmkl_rt.so.3
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

import numpy as np

ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112

# (workload, label, m, n, k, a transposed, b transposed, batch): C (m, n) = op(A) @ op(B).
# A transposed means A is stored (k, m) and read as its transpose, as NumPy's ``a.T`` does.
SHAPES = (
    ("mlp", "fc1 fwd x@W1.T", 128, 512, 784, False, True, 1),
    ("mlp", "fc1 dW g.T@x", 512, 784, 128, True, False, 1),
    ("mlp", "fc2 fwd", 128, 256, 512, False, True, 1),
    ("mlp", "fc2 dx g@W2", 128, 512, 256, False, False, 1),
    ("mlp", "fc2 dW", 256, 512, 128, True, False, 1),
    ("mlp", "fc3 fwd", 128, 10, 256, False, True, 1),
    ("mlp", "fc3 dx", 128, 256, 10, False, False, 1),
    ("mlp", "fc3 dW", 10, 256, 128, True, False, 1),
    ("cnn", "conv1 fwd W@cols", 32, 43264, 9, False, False, 1),
    ("cnn", "conv1 dW g@cols.T", 32, 9, 43264, False, True, 1),
    ("cnn", "conv2 fwd W@cols", 64, 36864, 288, False, False, 1),
    ("cnn", "conv2 dW g@cols.T", 64, 288, 36864, False, True, 1),
    ("cnn", "conv2 dcols W.T@g", 288, 36864, 64, True, False, 1),
    ("cnn", "fc fwd", 64, 10, 9216, False, True, 1),
    ("cnn", "fc dx", 64, 9216, 10, False, False, 1),
    ("cnn", "fc dW", 10, 9216, 64, True, False, 1),
    ("tf", "qkv fwd", 2048, 384, 128, False, True, 1),
    ("tf", "qkv dW", 384, 128, 2048, True, False, 1),
    ("tf", "out/qkv dx", 2048, 128, 384, False, False, 1),
    ("tf", "out fwd", 2048, 128, 128, False, True, 1),
    ("tf", "scores q@k.T x64", 128, 128, 32, False, True, 64),
    ("tf", "attn@v x64", 128, 32, 128, False, False, 64),
    ("tf", "mlp1 fwd", 2048, 512, 128, False, True, 1),
    ("tf", "mlp1 dW", 512, 128, 2048, True, False, 1),
    ("tf", "mlp2 fwd", 2048, 128, 512, False, True, 1),
    ("tf", "mlp2 dW", 128, 512, 2048, True, False, 1),
)


def load_mkl(path: str) -> Any:
    lib = ctypes.CDLL(path)
    i, f, p = ctypes.c_int, ctypes.c_float, ctypes.c_void_p
    lib.cblas_sgemm.argtypes = [i, i, i, i, i, i, f, p, i, p, i, f, p, i]
    lib.cblas_sgemm.restype = None
    lib.cblas_sgemm_batch_strided.argtypes = [i, i, i, i, i, i, f, p, i, i, p, i, i, f, p, i, i, i]
    lib.cblas_sgemm_batch_strided.restype = None
    return lib


def operands(rng: Any, m: int, n: int, k: int, ta: bool, tb: bool, batch: int) -> tuple:
    """A and B stored as the workload stores them, and their NumPy views op(A), op(B)."""
    lead = (batch,) if batch > 1 else ()
    a = rng.standard_normal(lead + ((k, m) if ta else (m, k)), dtype=np.float32)
    b = rng.standard_normal(lead + ((n, k) if tb else (k, n)), dtype=np.float32)
    return a, b, np.swapaxes(a, -1, -2) if ta else a, np.swapaxes(b, -1, -2) if tb else b


def mkl_call(lib: Any, a: Any, b: Any, c: Any, shape: tuple) -> Any:
    """A zero-argument function running MKL's sgemm for one shape into ``c``."""
    m, n, k, ta, tb, batch = shape
    lda, ldb = a.shape[-1], b.shape[-1]
    flags = (TRANS if ta else NO_TRANS, TRANS if tb else NO_TRANS)
    pa, pb, pc = a.ctypes.data, b.ctypes.data, c.ctypes.data
    if batch == 1:
        return lambda: lib.cblas_sgemm(
            ROW_MAJOR, *flags, m, n, k, 1.0, pa, lda, pb, ldb, 0.0, pc, n
        )
    sa, sb, sc = a[0].size, b[0].size, c[0].size
    return lambda: lib.cblas_sgemm_batch_strided(
        ROW_MAJOR, *flags, m, n, k, 1.0, pa, lda, sa, pb, ldb, sb, 0.0, pc, n, sc, batch
    )


def median_us(fn: Any, budget_s: float) -> float:
    """Median per-call time (us) over 7 rounds, each of enough calls to last ~budget/7."""
    fn()
    start = time.perf_counter()
    fn()
    once = max(time.perf_counter() - start, 1e-7)
    calls = max(1, int(budget_s / 7 / once))
    rounds = []
    for _ in range(7):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        rounds.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(rounds)


def child(mkl_path: str, budget_s: float) -> None:
    lib = load_mkl(mkl_path)
    rng = np.random.default_rng(0)
    rows = []
    for workload, label, *shape in SHAPES:
        a, b, op_a, op_b = operands(rng, *shape)
        c_np = np.matmul(op_a, op_b)
        c_mkl = np.empty_like(c_np)
        call = mkl_call(lib, a, b, c_mkl, tuple(shape))
        call()
        err = float(np.abs(c_mkl - c_np).max() / max(np.abs(c_np).max(), 1e-30))
        openblas = median_us(
            lambda op_a=op_a, op_b=op_b, c=c_np: np.matmul(op_a, op_b, out=c), budget_s
        )
        mkl = median_us(call, budget_s)
        rows.append(
            {
                "workload": workload,
                "label": label,
                "shape": shape,
                "openblas_us": openblas,
                "mkl_us": mkl,
                "max_rel_err": err,
            }
        )
    print(json.dumps(rows))


def table(results: dict[int, list[dict]]) -> list[str]:
    threads = sorted(results)
    head = (
        "| workload | GEMM (m x n x k) | "
        + " | ".join(f"OpenBLAS {t}T us | MKL {t}T us | OB/MKL {t}T" for t in threads)
        + " |"
    )
    lines = [head, "|" + "---|" * (2 + 3 * len(threads))]
    for i, (workload, label, m, n, k, _, _, batch) in enumerate(SHAPES):
        dims = f"{m}x{n}x{k}" + (f" x{batch}" if batch > 1 else "")
        cells = []
        for t in threads:
            row = results[t][i]
            cells += [
                f"{row['openblas_us']:.1f}",
                f"{row['mkl_us']:.1f}",
                f"{row['openblas_us'] / row['mkl_us']:.2f}",
            ]
        lines.append(f"| {workload} | {label} {dims} | " + " | ".join(cells) + " |")
    for workload in ("mlp", "cnn", "tf"):
        cells = []
        for t in threads:
            rows = [r for r in results[t] if r["workload"] == workload]
            ob, mk = sum(r["openblas_us"] for r in rows), sum(r["mkl_us"] for r in rows)
            cells += [f"**{ob:.0f}**", f"**{mk:.0f}**", f"**{ob / mk:.2f}**"]
        lines.append(f"| {workload} | sum of one step's GEMMs | " + " | ".join(cells) + " |")
    err = max(r["max_rel_err"] for rows in results.values() for r in rows)
    lines.append("")
    lines.append(f"largest |MKL - OpenBLAS| / max|OpenBLAS| over all shapes: {err:.1e}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mkl", required=True, help="path of libmkl_rt.so")
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    parser.add_argument("--budget", type=float, default=0.35, help="seconds per shape and side")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.mkl, args.budget)
        return 0
    results = {}
    for t in (int(v) for v in args.threads.split(",")):
        env = {
            **os.environ,
            "OPENBLAS_NUM_THREADS": str(t),
            "MKL_NUM_THREADS": str(t),
            "OMP_NUM_THREADS": str(t),
        }
        out = subprocess.run(
            [sys.executable, __file__, "--child", "--mkl", args.mkl, "--budget", str(args.budget)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=900,
        )
        results[t] = json.loads(out.stdout.strip().splitlines()[-1])
    blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    print(f"numpy {np.__version__}, {blas['name']} {blas['version']}; MKL from {args.mkl}")
    print("\n".join(table(results)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
