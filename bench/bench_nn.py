"""nn benchmark: MLP, CNN and Transformer training steps and DataLoader throughput, tk vs torch.

    python bench/bench_nn.py                  # full run (about two minutes on 2 cores)
    python bench/bench_nn.py --quick          # smoke run, few repeats, a smaller dataset
    python bench/bench_nn.py --only tensorkit --markdown --profile

Like ``bench_core.py``: one child process per library (this script with ``--child LIB``)
prints its results as one JSON line, the timing children alternate over rounds, and each
number is the median of the round medians. Workload code is written once against the
PyTorch-style API both libraries share (``lib`` is ``tensorkit`` or ``torch``); both models
start from the same NumPy-made weights, loaded by parameter name. The MLP step (nn.Linear
784-512-256-10, F.cross_entropy, optim.SGD, batch 128) is also timed as a hand-written NumPy
step of the same arithmetic, in the tensorkit child (its target is that floor). Each step's
peak memory is measured with tracemalloc (NumPy's allocations; torch's allocator is not
traced, so its column is empty) in one step after the timed ones.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
import traceback
import zlib
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from _harness import (
    Row,
    blas_info,
    core_build,
    describe_pools,
    machine_info,
    median,
    print_report,
    run_child,
    time_calls,
)

SCRIPT = str(Path(__file__).resolve())
LIBRARIES = ("tensorkit", "torch")
SEED = 1234
NOISY = 1.3  # round-to-round spread that gets a row flagged in the report
CNN_BATCH = 64
TF_BATCH, TF_SEQ, TF_DMODEL, TF_HEADS, TF_FF = 16, 128, 128, 4, 512
LR = 1e-3
MLP_SIZES, MLP_BATCH, MLP_LR = (784, 512, 256, 10), 128, 0.01
LOADER_BATCH = 64
LOADER_WORKERS = 2


@dataclass(frozen=True)
class Settings:
    """Repeat counts and sizes for one run."""

    mlp_steps: int
    mlp_warmup: int
    cnn_steps: int
    cnn_warmup: int
    tf_steps: int
    tf_warmup: int
    loader_items: int
    loader_epochs: int
    rounds: int


FULL = Settings(100, 10, 30, 3, 30, 3, 20_000, 2, 3)
QUICK = Settings(3, 1, 3, 1, 3, 1, 2_000, 1, 1)


# ------------------------------------------------------------------------------ workloads
def load(name: str) -> Any:
    """The library module: tensorkit or torch."""
    if name == "tensorkit":
        import tensorkit

        return tensorkit
    import torch

    return torch


def init_from_numpy(lib: Any, model: Any, seed: int) -> None:
    """Give ``model`` weights made by NumPy from ``seed`` and each parameter's name.

    Matrices and kernels: uniform in +-1/sqrt(fan_in); norm weights 1; biases small uniform.
    The same names and shapes in both libraries give both the same starting point.
    """
    state = {
        name: lib.tensor(numpy_weight(name, tuple(value.shape), seed))
        for name, value in model.state_dict().items()
    }
    model.load_state_dict(state)


def numpy_weight(name: str, shape: tuple, seed: int) -> np.ndarray:
    """The starting value of parameter ``name`` (see ``init_from_numpy``)."""
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    if "norm" in name and name.endswith("weight"):
        return np.ones(shape, np.float32)
    if len(shape) >= 2:
        bound = 1.0 / np.sqrt(np.prod(shape[1:]))
        return rng.uniform(-bound, bound, shape).astype(np.float32)
    return rng.uniform(-0.05, 0.05, shape).astype(np.float32)


def mlp_batch(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed + 2)
    x = rng.standard_normal((MLP_BATCH, MLP_SIZES[0])).astype(np.float32)
    return x, rng.integers(0, MLP_SIZES[-1], MLP_BATCH).astype(np.int64)


def mlp_step_fn(lib: Any, seed: int) -> Callable[[], float]:
    """One SGD step of nn.Linear 784-512-256-10 with ReLUs and F.cross_entropy."""
    nn = lib.nn
    model = nn.Sequential(
        nn.Linear(MLP_SIZES[0], MLP_SIZES[1]),
        nn.ReLU(),
        nn.Linear(MLP_SIZES[1], MLP_SIZES[2]),
        nn.ReLU(),
        nn.Linear(MLP_SIZES[2], MLP_SIZES[3]),
    )
    init_from_numpy(lib, model, seed)
    xa, ya = mlp_batch(seed)
    x, y = lib.tensor(xa), lib.tensor(ya)
    opt = lib.optim.SGD(model.parameters(), lr=MLP_LR)

    def step() -> float:
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return float(loss.item())

    return step


def numpy_mlp_step_fn(seed: int) -> Callable[[], float]:
    """The MLP step's arithmetic in NumPy, backward by hand: the floor of the MLP row."""
    names = [(f"{2 * i}.weight", f"{2 * i}.bias") for i in range(3)]
    params = []
    for (wname, bname), fan_in, fan_out in zip(names, MLP_SIZES[:-1], MLP_SIZES[1:], strict=True):
        params += [
            numpy_weight(wname, (fan_out, fan_in), seed),
            numpy_weight(bname, (fan_out,), seed),
        ]
    x, labels = mlp_batch(seed)
    rows = np.arange(MLP_BATCH)

    def step() -> float:
        w1, b1, w2, b2, w3, b3 = params
        h1 = x @ w1.T + b1
        a1 = np.maximum(h1, 0)
        h2 = a1 @ w2.T + b2
        a2 = np.maximum(h2, 0)
        logits = a2 @ w3.T + b3
        top = logits.max(axis=1, keepdims=True)
        e = np.exp(logits - top)
        total = e.sum(axis=1, keepdims=True)
        loss = float(np.mean(np.log(total[:, 0]) + top[:, 0] - logits[rows, labels]))
        d3 = e / total
        d3[rows, labels] -= 1
        d3 /= MLP_BATCH
        d2 = (d3 @ w3) * (h2 > 0)
        d1 = (d2 @ w2) * (h1 > 0)
        grads = (d1.T @ x, d1.sum(0), d2.T @ a1, d2.sum(0), d3.T @ a2, d3.sum(0))
        for p, g in zip(params, grads, strict=True):
            p -= MLP_LR * g
        return loss

    return step


def step_peak_mb(step: Callable[[], object]) -> float:
    """Peak traced memory above the start of one call of ``step`` (MB, tracemalloc)."""
    import tracemalloc

    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        step()
        return (tracemalloc.get_traced_memory()[1] - before) / 2**20
    finally:
        tracemalloc.stop()


def cnn_step_fn(lib: Any, seed: int) -> Callable[[], float]:
    """One Adam step of the small CNN on a fixed 64x1x28x28 batch; returns the loss."""
    nn = lib.nn
    model = nn.Sequential(
        nn.Conv2d(1, 32, 3),
        nn.ReLU(),
        nn.Conv2d(32, 64, 3),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(64 * 12 * 12, 10),
    )
    init_from_numpy(lib, model, seed)
    rng = np.random.default_rng(seed)
    x = lib.tensor(rng.standard_normal((CNN_BATCH, 1, 28, 28)).astype(np.float32))
    y = lib.tensor(rng.integers(0, 10, CNN_BATCH).astype(np.int64))
    opt = lib.optim.Adam(model.parameters(), lr=LR)

    def step() -> float:
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return float(loss.item())

    return step


def transformer_step_fn(lib: Any, seed: int) -> Callable[[], float]:
    """One Adam step of a Transformer encoder layer, loss ``out.pow(2).mean()``."""
    layer = lib.nn.TransformerEncoderLayer(
        TF_DMODEL, TF_HEADS, TF_FF, dropout=0.0, batch_first=True
    )
    init_from_numpy(lib, layer, seed)
    rng = np.random.default_rng(seed + 1)
    x = lib.tensor(rng.standard_normal((TF_BATCH, TF_SEQ, TF_DMODEL)).astype(np.float32))
    opt = lib.optim.Adam(layer.parameters(), lr=LR)

    def step() -> float:
        opt.zero_grad()
        loss = layer(x).pow(2).mean()
        loss.backward()
        opt.step()
        return float(loss.item())

    return step


class SyntheticImages:
    """Map-style dataset: item i is a (3, 32, 32) float32 array made from i, and a label."""

    def __init__(self, n: int, seed: int) -> None:
        self.n = n
        self.base = np.random.default_rng(seed).standard_normal((3, 32, 32)).astype(np.float32)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> tuple[np.ndarray, int]:
        image = self.base * np.float32(1.0 + (i % 97) * 0.01) + np.float32(i % 13)
        return image, i % 10


def bench_loader(lib: Any, s: Settings, seed: int) -> dict[str, float]:
    """Batches per second over one epoch with 2 workers (median over epochs)."""
    loader = lib.utils.data.DataLoader(
        SyntheticImages(s.loader_items, seed),
        batch_size=LOADER_BATCH,
        num_workers=LOADER_WORKERS,
    )
    rates = []
    for _ in range(s.loader_epochs):
        start = time.perf_counter()
        batches = 0
        for batch in loader:
            batches += 1
            images, labels = batch
        rates.append(batches / (time.perf_counter() - start))
    assert tuple(images.shape[1:]) == (3, 32, 32) and labels.shape[0] == images.shape[0]
    return {"loader_bps": median(rates), "loader_batches": float(batches)}


def bench_step(
    key: str, make: Callable[[int], Callable[[], float]], steps: int, warmup: int, memory: bool
) -> Callable[[int], dict[str, float]]:
    """A job timing ``steps`` training steps (ms median), keeping the first/last loss and,
    with ``memory``, one more step's peak memory."""

    def run(seed: int) -> dict[str, float]:
        step = make(seed)
        first = step()
        samples = time_calls(step, steps, max(warmup - 1, 0))
        last = step()
        out = {
            f"{key}_ms": median(samples) * 1e3,
            f"{key}_loss_first": first,
            f"{key}_loss_last": last,
        }
        if memory:
            out[f"{key}_peak_mb"] = step_peak_mb(step)
        return out

    return run


def profile_text(fn: Callable[[], object], calls: int, top: int = 20) -> str:
    """cProfile of ``calls`` calls of ``fn``: the top functions by own time."""
    import cProfile
    import io
    import pstats

    fn()
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        fn()
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(top)
    text = out.getvalue()
    return text[text.find("   ncalls") :] if "   ncalls" in text else text


def child_main(name: str, s: Settings, seed: int, profile: bool) -> None:
    """Child entry point: run every workload and print the results as one JSON line."""
    lib = load(name)
    out: dict[str, Any] = {"library": {"version": lib.__version__}, "errors": {}}
    out["library"]["threads"] = lib.get_num_threads()
    out["library"]["core"] = core_build(name)
    traced = name == "tensorkit"  # tracemalloc sees NumPy's allocations, not torch's
    jobs = {
        "mlp": bench_step(
            "mlp", lambda sd: mlp_step_fn(lib, sd), s.mlp_steps, s.mlp_warmup, traced
        ),
        "cnn": bench_step(
            "cnn", lambda sd: cnn_step_fn(lib, sd), s.cnn_steps, s.cnn_warmup, traced
        ),
        "tf": bench_step(
            "tf", lambda sd: transformer_step_fn(lib, sd), s.tf_steps, s.tf_warmup, traced
        ),
        "loader": lambda sd: bench_loader(lib, s, sd),
    }
    if name == "tensorkit":  # the floor, in the same process and round
        jobs["mlp_numpy"] = bench_step(
            "mlp_numpy", numpy_mlp_step_fn, s.mlp_steps, s.mlp_warmup, True
        )
    for job, run in jobs.items():
        try:
            out.update(run(seed))
        except Exception:
            out["errors"][job] = traceback.format_exc(limit=8)
    if profile and name == "tensorkit":
        try:
            out["profile_mlp"] = profile_text(mlp_step_fn(lib, seed), 50)
            out["profile_cnn"] = profile_text(cnn_step_fn(lib, seed), 10)
            out["profile_tf"] = profile_text(transformer_step_fn(lib, seed), 10)
        except Exception:
            out["errors"]["profile"] = traceback.format_exc(limit=8)
    out["blas"] = blas_info()
    sys.stdout.write(json.dumps(out) + "\n")


# ---------------------------------------------------------------------------------- parent
@dataclass(frozen=True)
class Workload:
    """A table row: result key, label, decimals, target ratio, and whether lower is better."""

    key: str
    label: str
    digits: int
    limit: float
    lower_is_better: bool = True
    floor: str | None = None  # the tensorkit-child key to compare with instead of torch

    def verdict(self, tk: float | None, other: float | None) -> str:
        """pass/FAIL against torch (or the floor), n/a without both numbers."""
        if tk is None or not other or not tk:
            return "n/a"
        ratio = tk / other if self.lower_is_better else other / tk
        return "pass" if ratio <= self.limit else "FAIL"

    @property
    def target(self) -> str:
        against = "torch" if self.floor is None else "NumPy step"
        if self.lower_is_better:
            return f"<= {self.limit}x {against}"
        return f">= 1/{self.limit}x {against}"


WORKLOADS = (
    Workload(
        "mlp_ms",
        "m  MLP step, nn.Linear 784-512-256-10, CE, SGD, b128 (ms)",
        2,
        1.15,
        floor="mlp_numpy_ms",
    ),
    Workload("cnn_ms", "a  CNN train step, 64x1x28x28, Adam (ms)", 2, 1.5),
    Workload("tf_ms", "b  Transformer layer step, 16x128x128, Adam (ms)", 2, 1.3),
    Workload("loader_bps", "c  DataLoader, 2 workers, batch 64 (batches/s)", 1, 1.2, False),
)


def collect(names: list[str], s: Settings, args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Run ``s.rounds`` alternating rounds of every library's child; errors are kept."""
    results: dict[str, dict[str, Any]] = {name: {"errors": {}, "per_round": {}} for name in names}
    for r in range(s.rounds):
        for name in names:
            print(f"  {name} (round {r + 1}/{s.rounds}) ...", file=sys.stderr, flush=True)
            flags = ["--child", name, "--seed", str(args.seed)]
            flags += ["--quick"] if args.quick else []
            flags += ["--profile"] if args.profile and r == 0 else []
            res = results[name]
            try:
                part = run_child([SCRIPT, *flags], args.threads, blas_spin=args.blas_spin)
            except Exception as exc:
                res["errors"][f"round {r + 1}"] = str(exc)
                continue
            res["errors"].update(part.pop("errors", {}))
            for key, value in part.items():
                if isinstance(value, float):
                    res["per_round"].setdefault(key, []).append(value)
                res[key] = value
    for res in results.values():
        for key, values in res["per_round"].items():
            res[key] = median(values)
    return results


def report_lines(s: Settings, machine: dict[str, Any], results: dict[str, Any]) -> list[str]:
    """Machine, versions, BLAS per child, loss checks, noise flags, as text lines."""
    versions = "".join(
        f", {n} {r['library']['version']}" for n, r in results.items() if "library" in r
    )
    lines = [
        f"date: {machine['date']}",
        f"machine: {machine['cpu']}, {machine['cores']} cores "
        f"({machine['usable_cores']} usable), {machine['os']}",
        f"python {machine['python']}, numpy {machine['numpy']}{versions}",
        "threads: "
        + (
            "each library's default"
            if machine["thread_cap"] is None
            else f"capped at {machine['thread_cap']} (OMP/OPENBLAS/MKL_NUM_THREADS)"
        ),
        f"load average (1 min) at start {machine['load_start']:.2f}, at end "
        f"{os.getloadavg()[0]:.2f}",
        "OPENBLAS_THREAD_TIMEOUT in the children: "
        + (
            os.environ.get("OPENBLAS_THREAD_TIMEOUT", "unset")
            if machine["blas_spin"] is None
            else str(machine["blas_spin"])
        ),
    ]
    for name, res in results.items():
        pools = describe_pools(res.get("blas", []))
        lines.append(f"BLAS in {name} child: " + ("; ".join(pools) or "none loaded"))
        if "threads" in res.get("library", {}):
            lines.append(f"  {name} intra-op threads: {res['library']['threads']}")
        if res.get("library", {}).get("core"):
            lines.append(f"  tensorkit's core: {res['library']['core']}")
    mlp_total = s.mlp_steps + max(s.mlp_warmup, 1) + 1
    cnn_total = s.cnn_steps + max(s.cnn_warmup, 1) + 1
    tf_total = s.tf_steps + max(s.tf_warmup, 1) + 1
    for key, title, total in (
        ("mlp", "MLP", mlp_total),
        ("mlp_numpy", "NumPy MLP", mlp_total),
        ("cnn", "CNN", cnn_total),
        ("tf", "Transformer", tf_total),
    ):
        losses = [
            f"{n} {r[f'{key}_loss_first']:.4f} -> {r[f'{key}_loss_last']:.4f}"
            for n, r in results.items()
            if f"{key}_loss_first" in r
        ]
        if losses:
            lines.append(
                f"{title} loss, step 1 -> step {total} (same initial weights): " + "; ".join(losses)
            )
    noisy = []
    for w in WORKLOADS:
        for name, res in results.items():
            values = res["per_round"].get(w.key, [])
            if len(values) > 1 and min(values) > 0 and max(values) / min(values) > NOISY:
                span = f"{min(values):.{w.digits}f}-{max(values):.{w.digits}f}"
                noisy.append(f"{w.label[:2].strip()} {name} {span}")
    if noisy:
        lines.append(f"NOISY (round medians differ by more than {NOISY}x): " + "; ".join(noisy))
    lines.append(
        f"timing: steps: median of {s.mlp_steps} (MLP) / {s.cnn_steps} (CNN) / {s.tf_steps} "
        "(Transformer) steps "
        f"after warm-up; loader: median of {s.loader_epochs} epochs of {s.loader_items} items; "
        f"{s.rounds} alternating rounds per library, median of the round medians"
    )
    return lines


def parent_main(args: argparse.Namespace) -> int:
    """Run the children, print the table and the report; 1 if anything failed."""
    s = QUICK if args.quick else FULL
    names = [args.only] if args.only else list(LIBRARIES)
    machine = machine_info()
    machine["load_start"] = os.getloadavg()[0]
    machine["thread_cap"] = args.threads
    machine["blas_spin"] = args.blas_spin
    notes = []
    if "torch" in names and importlib.util.find_spec("torch") is None:
        names.remove("torch")
        notes.append("torch is not installed: its column is empty")
    results = collect(names, s, args)
    tk, th = results.get("tensorkit", {}), results.get("torch", {})
    rows = []
    for w in WORKLOADS:
        a, b = tk.get(w.key), th.get(w.key)
        other = b if w.floor is None else tk.get(w.floor)
        rows.append(Row(w.label, a, b, w.target, w.verdict(a, other), w.digits))
        if w.floor is not None:
            rows.append(
                Row("mn hand-written NumPy step, same run (ms)", other, None, "floor", "info")
            )
    for key, label in (("mlp", "MLP"), ("cnn", "CNN"), ("tf", "Transformer")):
        peak = tk.get(f"{key}_peak_mb")
        rows.append(
            Row(f"p  peak memory in one {label} step (MB, traced)", peak, None, "-", "info")
        )
    peak = tk.get("mlp_numpy_peak_mb")
    rows.append(Row("pn peak memory in one NumPy MLP step (MB, traced)", peak, None, "-", "info"))
    info = report_lines(s, machine, results)
    payload = {"machine": machine, "settings": asdict(s), "results": results}
    return print_report(
        rows,
        info + notes,
        results,
        (
            ("profile_mlp", "MLP step x50"),
            ("profile_cnn", "CNN step x10"),
            ("profile_tf", "Transformer x10"),
        ),
        markdown=args.markdown,
        json_path=args.json,
        payload=payload,
    )


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and run as parent or as child."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="few repeats: a smoke run")
    parser.add_argument("--only", choices=LIBRARIES, help="run one library only")
    parser.add_argument("--markdown", action="store_true", help="also print a markdown table")
    parser.add_argument("--profile", action="store_true", help="cProfile tensorkit's steps")
    parser.add_argument("--json", metavar="PATH", help="write the raw results to PATH")
    parser.add_argument(
        "--threads", type=int, help="cap BLAS/OpenMP threads in the children (default: theirs)"
    )
    parser.add_argument(
        "--blas-spin",
        type=int,
        metavar="N",
        help="set OPENBLAS_THREAD_TIMEOUT=N in the children (OpenBLAS workers sleep after 2**N "
        "cycles instead of spinning; tensorkit then splits large kernels over every core)",
    )
    parser.add_argument("--seed", type=int, default=SEED, help="seed for weights and inputs")
    parser.add_argument("--child", choices=LIBRARIES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child_main(args.child, QUICK if args.quick else FULL, args.seed, args.profile)
        return 0
    return parent_main(args)


if __name__ == "__main__":
    sys.exit(main())
