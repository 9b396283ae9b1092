"""GPU benchmark: tensorkit on CUDA (CuPy) against PyTorch on CUDA, side by side.

    python bench/bench_gpu.py              # needs an NVIDIA GPU; about a minute
    python bench/bench_gpu.py --markdown   # also the table as markdown, for docs/benchmarks.md
    python bench/bench_gpu.py --smoke      # tiny sizes on the CPU, both libraries: a run check

Workloads: an MLP training step (SGD) and a small CNN training step (Adam) at batch sizes
that keep an H200 busy, each library from the same NumPy-made weights and data, float32, with
each library's default TF32 policy (PyTorch's, which tensorkit follows: no TF32 in matmuls,
TF32 allowed in cuDNN convolutions; the facts line says what each ran with); the CNN step again
in tensorkit with cuDNN off (the im2col path); then each step inside the library's profiler
over the same step outside it. Every step is timed between two device synchronizes; numbers
are medians. Each library runs in its own child process (this script with ``--child LIB``), so
the two CUDA memory pools never share a GPU at once.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import itertools
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from _harness import Row, median, print_report, run_child
from bench_nn import init_from_numpy, load

SCRIPT = str(Path(__file__).resolve())
LIBRARIES = ("tensorkit", "torch")
SEED = 1234


@dataclass(frozen=True)
class Sizes:
    """Workload sizes and repeat counts for one run."""

    device: str
    mlp_batch: int
    mlp_widths: tuple[int, ...]
    cnn_batch: int
    cnn_image: int  # square RGB images
    cnn_channels: tuple[int, int]
    steps: int
    warmup: int
    profiled_steps: int


GPU = Sizes("cuda", 8192, (4096, 4096, 4096, 1000), 512, 32, (64, 128), 20, 3, 8)
SMOKE = Sizes("cpu", 16, (32, 32, 32, 10), 4, 8, (4, 8), 2, 1, 2)


# ------------------------------------------------------------------------------ workloads
def synchronizer(lib: Any, device: str) -> Callable[[], None]:
    """Wait for the device's queued work (nothing to wait for on the CPU)."""
    if device == "cpu":
        return lambda: None
    return lib.cuda.synchronize


def training_step(lib: Any, model: Any, x: Any, y: Any, opt: Any) -> Callable[[], Any]:
    """A call that runs one cross-entropy training step of ``model`` and returns the loss."""

    def step() -> Any:
        opt.zero_grad()
        loss = lib.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step


def mlp_step_fn(lib: Any, z: Sizes, seed: int) -> Callable[[], Any]:
    """One SGD step of a ReLU MLP with cross-entropy; returns the loss tensor."""
    nn = lib.nn
    widths = z.mlp_widths
    layers: list[Any] = []
    for fan_in, fan_out in itertools.pairwise(widths):
        layers += [nn.Linear(fan_in, fan_out), nn.ReLU()]
    model = nn.Sequential(*layers[:-1])
    init_from_numpy(lib, model, seed)
    model.to(z.device)
    rng = np.random.default_rng(seed)
    x = lib.tensor(rng.standard_normal((z.mlp_batch, widths[0])).astype(np.float32))
    y = lib.tensor(rng.integers(0, widths[-1], z.mlp_batch).astype(np.int64))
    x, y = x.to(z.device), y.to(z.device)
    return training_step(lib, model, x, y, lib.optim.SGD(model.parameters(), lr=0.01))


def cnn_step_fn(lib: Any, z: Sizes, seed: int) -> Callable[[], Any]:
    """One Adam step of conv-ReLU-conv-ReLU-maxpool-linear on RGB images."""
    nn = lib.nn
    c1, c2 = z.cnn_channels
    side = z.cnn_image
    model = nn.Sequential(
        nn.Conv2d(3, c1, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(c1, c2, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(c2 * (side // 2) ** 2, 10),
    )
    init_from_numpy(lib, model, seed)
    model.to(z.device)
    rng = np.random.default_rng(seed)
    x = lib.tensor(rng.standard_normal((z.cnn_batch, 3, side, side)).astype(np.float32))
    y = lib.tensor(rng.integers(0, 10, z.cnn_batch).astype(np.int64))
    x, y = x.to(z.device), y.to(z.device)
    return training_step(lib, model, x, y, lib.optim.Adam(model.parameters(), lr=1e-3))


def timed_steps(step: Callable[[], Any], sync: Callable[[], None], count: int) -> list[float]:
    """Milliseconds of each of ``count`` steps, each between two synchronizes."""
    times = []
    for _ in range(count):
        sync()
        start = time.perf_counter_ns()
        step()
        sync()
        times.append((time.perf_counter_ns() - start) / 1e6)
    return times


def profiler_for(lib: Any, name: str, mode: str, device: str) -> Any:
    """The library's profiler recording host and (on a GPU) device activity."""
    if name == "tensorkit":
        import tensorkit.profiler

        return tensorkit.profiler.profile(cuda_timing=mode)
    import torch.profiler

    activities = [torch.profiler.ProfilerActivity.CPU]
    if device != "cpu":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    return torch.profiler.profile(activities=activities)


def bench_workload(
    lib: Any, name: str, z: Sizes, make: Callable[[Any, Sizes, int], Callable[[], Any]]
) -> dict[str, Any]:
    """Median step time, losses, and the step inside the profiler over the step outside."""
    sync = synchronizer(lib, z.device)
    step = make(lib, z, SEED)
    first = float(step().item())
    timed_steps(step, sync, z.warmup)
    plain = median(timed_steps(step, sync, z.steps))
    out: dict[str, Any] = {"ms": plain, "loss_first": first}
    for mode in ("events", "synchronized"):
        # torch has no synchronized mode: it runs the same steps unprofiled, so that both
        # libraries take as many steps and their last losses can be compared
        measured = name == "tensorkit" or mode == "events"
        off = median(timed_steps(step, sync, z.profiled_steps))
        context = profiler_for(lib, name, mode, z.device) if measured else contextlib.nullcontext()
        with context as prof:
            on = median(timed_steps(step, sync, z.profiled_steps))
        if measured:
            out[f"prof_{mode}"] = on / off
        if name == "tensorkit" and mode == "events":
            records = prof.records  # reads the CUDA events (one synchronize)
            gpu = sum(r.gpu_time_ns or 0 for r in records) / 1e6
            out["gpu_share"] = gpu / (on * z.profiled_steps)
    out["loss_last"] = float(step().item())
    return out


def peak_memory_gb(lib: Any, name: str, device: str) -> float | None:
    """The most GPU memory the library's caching allocator reserved, in GB. CuPy's pool
    keeps what it reserved until ``empty_cache``, so for tensorkit what it holds at the end
    is its peak; reading tk.cuda's peaks instead would need its allocation hook installed
    during the run, a Python call on every allocation."""
    if device == "cpu":
        return None
    if name == "tensorkit":
        return lib.cuda.memory_reserved() / 1e9
    return lib.cuda.max_memory_reserved() / 1e9


def library_facts(lib: Any, name: str, device: str) -> dict[str, Any]:
    facts: dict[str, Any] = {"version": lib.__version__}
    if device == "cpu":
        return facts
    if name == "tensorkit":
        import cupy

        facts["cupy"] = cupy.__version__
        facts["cuda_runtime"] = cupy.cuda.runtime.runtimeGetVersion()
        facts["CUPY_TF32"] = os.environ.get("CUPY_TF32", "unset")
        facts["float32_matmul"] = float32_compute_type()
        facts["matmul_tf32"] = lib.backends.cuda.matmul.allow_tf32
        facts["cudnn"] = lib.backends.cudnn.version()
        facts["cudnn_tf32"] = lib.backends.cudnn.allow_tf32
        facts["gpu"] = lib.cuda.get_device_name()
    else:
        facts["cuda"] = lib.version.cuda
        facts["gpu"] = lib.cuda.get_device_name()
        facts["matmul_tf32"] = bool(lib.backends.cuda.matmul.allow_tf32)
        facts["cudnn"] = lib.backends.cudnn.version()
        facts["cudnn_tf32"] = bool(lib.backends.cudnn.allow_tf32)
    return facts


def float32_compute_type() -> str:
    """The compute type CuPy's float32 matmul uses ("COMPUTE_TYPE_DEFAULT" is FP32 unless
    TF32 was asked for), read from a CuPy internal; "unknown" where it has moved."""
    try:
        from cupy._core import _routines_linalg as linalg

        return str(linalg.compute_type_to_str(linalg.get_compute_type(np.dtype(np.float32))))
    except (ImportError, AttributeError):
        return "unknown"


def child_main(name: str, z: Sizes) -> dict[str, Any]:
    """Everything for one library, in this (child) process."""
    lib = load(name)
    out: dict[str, Any] = {"library": library_facts(lib, name, z.device), "errors": {}}
    for key, make in (("mlp", mlp_step_fn), ("cnn", cnn_step_fn)):
        try:
            out[key] = bench_workload(lib, name, z, make)
        except Exception as exc:  # keep going: the other workload may still run
            out["errors"][key] = f"{type(exc).__name__}: {exc}"
    if name == "tensorkit" and z.device == "cuda" and lib.backends.cudnn.is_available():
        lib.backends.cudnn.enabled = False  # the same CNN step on the im2col path
        try:
            out["cnn_im2col"] = bench_workload(lib, name, z, cnn_step_fn)
        except Exception as exc:
            out["errors"]["cnn_im2col"] = f"{type(exc).__name__}: {exc}"
        lib.backends.cudnn.enabled = True
    out["peak_gb"] = peak_memory_gb(lib, name, z.device)
    return out


def probe() -> dict[str, Any]:
    """Whether each library sees a GPU (run in a child: the parent imports neither)."""
    import tensorkit

    found: dict[str, Any] = {"tensorkit": tensorkit.cuda.is_available()}
    if importlib.util.find_spec("torch") is not None:
        import torch

        found["torch"] = torch.cuda.is_available()
    return found


# ---------------------------------------------------------------------------------- parent
ROWS = (
    ("mlp", "ms", "g1 MLP train step (ms)"),
    ("cnn", "ms", "g2 CNN train step (ms)"),
    ("cnn_im2col", "ms", "g2b CNN train step, tensorkit with cuDNN off: im2col (ms)"),
    ("mlp", "prof_events", "g3 MLP step in profiler, events (x off)"),
    ("mlp", "prof_synchronized", "g4 MLP step in profiler, synchronized (x off)"),
    ("cnn", "prof_events", "g5 CNN step in profiler, events (x off)"),
    ("cnn", "prof_synchronized", "g6 CNN step in profiler, synchronized (x off)"),
    ("cnn", "gpu_share", "g7 CNN step: op GPU time / step wall time"),
    (None, "peak_gb", "g8 peak GPU memory reserved, whole child (GB)"),
)


def build_rows(results: dict[str, dict[str, Any]]) -> list[Row]:
    rows = []
    for workload, key, label in ROWS:
        values = []
        for name in LIBRARIES:
            res = results.get(name, {})
            part = res if workload is None else res.get(workload, {})
            values.append(part.get(key))
        rows.append(Row(label, values[0], values[1], "-", "info"))
    return rows


def report_lines(z: Sizes, results: dict[str, dict[str, Any]]) -> list[str]:
    mlp = "-".join(map(str, z.mlp_widths))
    lines = [
        f"device: {z.device}"
        + "".join(
            f"; {n}: {json.dumps(r['library'], sort_keys=True)}"
            for n, r in results.items()
            if "library" in r
        ),
        f"g1: MLP {mlp}, batch {z.mlp_batch}, ReLU, cross_entropy, SGD(lr=0.01)",
        f"g2: CNN conv3x3(3->{z.cnn_channels[0]})-ReLU-conv3x3(->{z.cnn_channels[1]})-ReLU-"
        f"maxpool2-linear(->10), batch {z.cnn_batch}x3x{z.cnn_image}x{z.cnn_image}, Adam(1e-3)",
        f"timing: medians of {z.steps} steps after {z.warmup} warm-up, each step between two "
        f"synchronizes; profiler rows: {z.profiled_steps} steps inside the profiler over "
        f"{z.profiled_steps} just before outside it (torch: torch.profiler with CPU and CUDA "
        "activities; tensorkit: profile(cuda_timing=...))",
    ]
    for workload in ("mlp", "cnn"):
        losses = [
            f"{n} {r[workload]['loss_first']:.4f} -> {r[workload]['loss_last']:.4f}"
            for n, r in results.items()
            if workload in r
        ]
        if losses:
            lines.append(f"{workload} loss, first -> last step: " + "; ".join(losses))
    return lines


def parent_main(args: argparse.Namespace) -> int:
    z = SMOKE if args.smoke else GPU
    names = [n for n in LIBRARIES if n == "tensorkit" or importlib.util.find_spec(n)]
    notes = [] if "torch" in names else ["torch is not installed: its column is empty"]
    if not args.smoke:
        found = run_child([SCRIPT, "--probe"])
        if not found["tensorkit"]:
            print(
                "bench_gpu.py: no CUDA GPU (tensorkit.cuda.is_available() is False: no GPU, "
                "no driver, or CuPy not installed). Run it on a GPU machine, or use --smoke "
                "for the tiny CPU run.",
                file=sys.stderr,
            )
            return 2
        if "torch" in names and not found.get("torch"):
            names.remove("torch")
            notes.append("torch sees no GPU (torch.cuda.is_available() is False): column empty")
    results: dict[str, dict[str, Any]] = {}
    for name in names:
        print(f"  {name} ...", file=sys.stderr, flush=True)
        flags = ["--child", name] + (["--smoke"] if args.smoke else [])
        try:
            results[name] = run_child([SCRIPT, *flags], timeout=240)
        except Exception as exc:
            results[name] = {"errors": {"child": str(exc)}}
    return print_report(
        build_rows(results),
        report_lines(z, results) + notes,
        results,
        (),
        markdown=args.markdown,
        json_path=args.json,
        payload={"sizes": asdict(z), "results": results},
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes on the CPU")
    parser.add_argument("--markdown", action="store_true", help="also print a markdown table")
    parser.add_argument("--json", metavar="PATH", help="write the raw results to PATH")
    parser.add_argument("--child", choices=LIBRARIES, help=argparse.SUPPRESS)
    parser.add_argument("--probe", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.probe:
        sys.stdout.write(json.dumps(probe()) + "\n")
        return 0
    if args.child:
        result = child_main(args.child, SMOKE if args.smoke else GPU)
        sys.stdout.write(json.dumps(result) + "\n")
        return 0
    return parent_main(args)


if __name__ == "__main__":
    sys.exit(main())
