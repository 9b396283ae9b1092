"""Core benchmark: the same workloads on tensorkit and on PyTorch (CPU), side by side.

    python bench/bench_core.py               # full run (about a minute)
    python bench/bench_core.py --quick       # smoke run, few repeats
    python bench/bench_core.py --only tensorkit --markdown --profile

Each library runs in its own child process (this script with ``--child LIB``), which prints
its results as one JSON line; the parent prints the table. The children run without the
OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE overrides and report the BLAS they loaded. Workload code
is written once against the PyTorch-style API both libraries share (``lib`` below).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import importlib.util
import io
import itertools
import json
import math
import os
import pstats
import sys
import time
import traceback
from collections.abc import Callable, Iterator
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
    peak_rss_bytes,
    print_report,
    reset_peak_rss,
    rss_bytes,
    run_child,
    time_calls,
    time_import,
)

SCRIPT = str(Path(__file__).resolve())
LIBRARIES = ("tensorkit", "torch")
SEED = 1234
CHAIN_LEN = 16  # elements in the tiny tensors
CYCLES = 10  # the chain is CYCLES rounds of OPS_PER_CYCLE ops
OPS_PER_CYCLE = 10
CHAIN_OPS = CYCLES * OPS_PER_CYCLE
MLP_SIZES = (784, 512, 256, 10)
MLP_BATCH = 128
LR = 0.01
POW_N = 1_000_000
NOISY = 1.3  # round-to-round spread that gets a row flagged in the report


@dataclass(frozen=True)
class Settings:
    """Repeat counts for one run."""

    chain_repeats: int
    chain_warmup: int
    mlp_steps: int
    mlp_warmup: int
    mem_steps: int
    import_runs: int
    pow_repeats: int
    pow_warmup: int
    rounds: int
    profiler_repeats: int  # chains per median in the profiling-on rows
    profiler_rounds: int  # on/off pairs per variant in one child
    off_pairs: int  # child pairs (profiler used before / never imported) for row 6a


FULL = Settings(200, 20, 50, 5, 50, 7, 50, 5, 5, 30, 3, 8)
QUICK = Settings(10, 2, 3, 1, 5, 1, 5, 1, 1, 3, 1, 1)

# Profiling-on variants: tensorkit's profile() options (torch spells record_memory
# profile_memory); each row is the chain's time inside the profile over its time outside.
PROFILE_VARIANTS = {
    "prof_default": {},
    "prof_shapes": {"record_shapes": True},
    "prof_memory": {"record_memory": True},
    "prof_stack": {"with_stack": True},
}


# ------------------------------------------------------------------------------ workloads
class NumpyLib:
    """The few functions the tiny-op chain needs, on plain NumPy arrays (the floor)."""

    sin = staticmethod(np.sin)
    exp = staticmethod(np.exp)
    tanh = staticmethod(np.tanh)

    @staticmethod
    def relu(a: np.ndarray) -> np.ndarray:
        return np.maximum(a, 0)


def load(name: str) -> Any:
    """The library module: tensorkit or torch."""
    if name == "tensorkit":
        import tensorkit

        return tensorkit
    import torch

    return torch


def chain(lib: Any, x: Any, w: Any) -> Any:
    """CHAIN_OPS elementwise ops on tiny tensors: ten rounds of a fixed mix of ten ops."""
    y = x
    for _ in range(CYCLES):
        y = y * w
        y = y + x
        y = lib.sin(y)
        y = lib.exp(y)
        y = y - x
        y = lib.tanh(y)
        y = y * 0.5
        y = lib.relu(y)
        y = y + 0.1
        y = y * x
    return y


def chain_arrays(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The chain's input ``x`` and constant ``w`` (float32, in [0.5, 1.5))."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.5, 1.5, CHAIN_LEN).astype(np.float32)
    w = rng.uniform(0.5, 1.5, CHAIN_LEN).astype(np.float32)
    return x, w


def chain_calls(lib: Any, seed: int) -> dict[str, Callable[[], object]]:
    """The timed chain calls: forward (timed under no_grad and recording) and forward+backward;
    each call also frees the graph it built."""
    xa, wa = chain_arrays(seed)
    x = lib.tensor(xa, requires_grad=True)
    w = lib.tensor(wa)

    def forward() -> None:
        chain(lib, x, w)

    def forward_backward() -> None:
        chain(lib, x, w).sum().backward()
        x.grad = None

    return {"forward": forward, "forward_backward": forward_backward}


def us_per_op(samples: list[float]) -> float:
    """Median seconds per chain as microseconds per op."""
    return median(samples) / CHAIN_OPS * 1e6


def bench_chain(lib: Any, s: Settings, seed: int) -> dict[str, float]:
    """Workloads 1a-1c: the chain under no_grad, recording, and with backward."""
    calls = chain_calls(lib, seed)
    with lib.no_grad():
        nograd = time_calls(calls["forward"], s.chain_repeats, s.chain_warmup)
    record = time_calls(calls["forward"], s.chain_repeats, s.chain_warmup)
    both = time_calls(calls["forward_backward"], s.chain_repeats, s.chain_warmup)
    return {
        "chain_nograd": us_per_op(nograd),
        "chain_record": us_per_op(record),
        "chain_backward": us_per_op(both),
    }


def bench_numpy_floor(s: Settings, seed: int) -> dict[str, float]:
    """Workload 1n: the same chain on NumPy arrays."""
    x, w = chain_arrays(seed)
    samples = time_calls(lambda: chain(NumpyLib, x, w), s.chain_repeats, s.chain_warmup)
    return {"chain_numpy": us_per_op(samples)}


def mlp_arrays(seed: int) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Initial weights and biases (uniform +-1/sqrt(fan_in)), one input batch and labels."""
    rng = np.random.default_rng(seed)
    params = []
    for fan_in, fan_out in itertools.pairwise(MLP_SIZES):
        bound = 1.0 / math.sqrt(fan_in)
        params.append(rng.uniform(-bound, bound, (fan_in, fan_out)).astype(np.float32))
        params.append(rng.uniform(-bound, bound, fan_out).astype(np.float32))
    x = rng.standard_normal((MLP_BATCH, MLP_SIZES[0])).astype(np.float32)
    labels = rng.integers(0, MLP_SIZES[-1], (MLP_BATCH, 1)).astype(np.int64)
    return params, x, labels


def mlp_step_fn(lib: Any, seed: int) -> Callable[[], Any]:
    """One SGD step of the MLP with core ops only; returns the step's loss tensor."""
    arrays, xa, la = mlp_arrays(seed)
    params = [lib.tensor(a, requires_grad=True) for a in arrays]
    x = lib.tensor(xa)
    labels = lib.tensor(la)

    def step() -> Any:
        w1, b1, w2, b2, w3, b3 = params
        h = lib.relu(x @ w1 + b1)
        h = lib.relu(h @ w2 + b2)
        logits = h @ w3 + b3
        picked = logits.gather(1, labels).squeeze(1)
        loss = (lib.logsumexp(logits, dim=1) - picked).mean()
        loss.backward()
        with lib.no_grad():
            for p in params:
                p -= LR * p.grad
                p.grad = None
        return loss

    return step


def numpy_mlp_step_fn(seed: int) -> Callable[[], float]:
    """The same SGD step in plain NumPy with a hand-written backward (the floor)."""
    params, x, la = mlp_arrays(seed)
    rows = np.arange(MLP_BATCH)
    labels = la[:, 0]

    def step() -> float:
        w1, b1, w2, b2, w3, b3 = params
        h1 = x @ w1 + b1
        a1 = np.maximum(h1, 0)
        h2 = a1 @ w2 + b2
        a2 = np.maximum(h2, 0)
        logits = a2 @ w3 + b3
        top = logits.max(axis=1, keepdims=True)
        e = np.exp(logits - top)
        total = e.sum(axis=1, keepdims=True)
        loss = float(np.mean(np.log(total[:, 0]) + top[:, 0] - logits[rows, labels]))
        d3 = e / total
        d3[rows, labels] -= 1
        d3 /= MLP_BATCH
        d2 = (d3 @ w3.T) * (h2 > 0)
        d1 = (d2 @ w2.T) * (h1 > 0)
        grads = (x.T @ d1, d1.sum(0), a1.T @ d2, d2.sum(0), a2.T @ d3, d3.sum(0))
        for p, g in zip(params, grads, strict=True):
            p -= LR * g
        return loss

    return step


def bench_numpy_mlp(s: Settings, seed: int) -> dict[str, float]:
    """Workload 2n: the MLP step in NumPy, plus its losses as a cross-check."""
    step = numpy_mlp_step_fn(seed)
    first = step()
    samples = time_calls(step, s.mlp_steps, max(s.mlp_warmup - 1, 0))
    return {
        "mlp_numpy": median(samples) * 1e3,
        "mlp_numpy_loss_first": first,
        "mlp_numpy_loss_last": step(),
    }


def bench_mlp(lib: Any, s: Settings, seed: int) -> dict[str, Any]:
    """Workload 2: median ms per MLP step, plus the loss before and after training."""
    step = mlp_step_fn(lib, seed)
    first = float(step())
    samples = time_calls(step, s.mlp_steps, max(s.mlp_warmup - 1, 0))
    last = float(step())
    return {
        "mlp_step": median(samples) * 1e3,
        "mlp_loss_first": first,
        "mlp_loss_last": last,
        "mlp_total_steps": s.mlp_steps + max(s.mlp_warmup - 1, 0) + 2,
    }


def bench_pow(lib: Any, s: Settings, seed: int) -> dict[str, float]:
    """Workload 5: ``x**2``, ``x**3``, ``x*x``, a select on an unpredictable mask and sigmoid
    on 1M float32 elements, in ms."""
    x = lib.tensor(np.random.default_rng(seed).random(POW_N, dtype=np.float32))
    calls = {
        "pow2": lambda: x**2,
        "pow3": lambda: x**3,
        "mul": lambda: x * x,
        "where": lambda: lib.where(x > 0.5, x, 0.0),
        "sigmoid": lambda: lib.sigmoid(x),
    }
    return {
        key: median(time_calls(fn, s.pow_repeats, s.pow_warmup)) * 1e3 for key, fn in calls.items()
    }


def profiler_context(lib: Any, name: str, options: dict[str, bool]) -> Any:
    """A profiler of ``lib`` recording host (CPU) activity with ``options``."""
    if name == "tensorkit":
        import tensorkit.profiler

        return tensorkit.profiler.profile(**options)
    import torch.profiler

    renamed = {"profile_memory" if k == "record_memory" else k: v for k, v in options.items()}
    return torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], **renamed)


class NoopObserver:
    """An op observer that does nothing and, like the profiler by default, takes backward per
    node: what tensorkit's observed path costs by itself, the floor of rows 6b-6e."""

    backward_detail = "nodes"

    def op_started(self, event: Any) -> None:
        return None

    def op_finished(self, event: Any) -> None:
        return None


def cpu_time_calls(fn: Callable[[], object], repeats: int, warmup: int) -> list[float]:
    """CPU seconds of this process for each call (see ``time_calls``)."""
    return time_calls(fn, repeats, warmup, clock=time.process_time_ns)


def bench_profiler_on(lib: Any, name: str, s: Settings, seed: int) -> dict[str, float]:
    """Rows 6b-6f: the fwd+bwd chain inside a profiler over the same chain outside it, each
    on/off pair measured back to back in CPU time; the median of ``profiler_rounds`` pair
    ratios."""
    chain_fb = chain_calls(lib, seed)["forward_backward"]
    reps, warmup = s.profiler_repeats, max(s.chain_warmup // 10, 1)

    def off() -> float:
        return median(cpu_time_calls(chain_fb, reps, warmup))

    contexts: dict[str, Callable[[], Any]] = {
        key: lambda options=options: profiler_context(lib, name, options)
        for key, options in PROFILE_VARIANTS.items()
    }
    if name == "tensorkit":
        contexts["observer"] = lambda: observing(lib, NoopObserver())
    ratios: dict[str, list[float]] = {key: [] for key in contexts}
    for _ in range(s.profiler_rounds):
        for key, make in contexts.items():
            before = off()
            with make():
                on = median(cpu_time_calls(chain_fb, reps, warmup))
            ratios[key].append(on / before)
    return {key: median(values) for key, values in ratios.items()}


@contextlib.contextmanager
def observing(lib: Any, observer: Any) -> Iterator[None]:
    """Register ``observer`` with tensorkit inside the block."""
    lib._state.add_observer(observer)
    try:
        yield
    finally:
        lib._state.remove_observer(observer)


def child_profiler_off(variant: str, s: Settings, seed: int) -> dict[str, Any]:
    """Row 6a, one side: the fwd+bwd chain in a process where ``tensorkit.profiler`` was
    imported and a profile entered and exited ("used"), or never imported ("never")."""
    lib = load("tensorkit")
    if variant == "used":
        import tensorkit.profiler

        with tensorkit.profiler.profile(record_shapes=True):
            chain_calls(lib, seed)["forward_backward"]()
    samples = cpu_time_calls(
        chain_calls(lib, seed)["forward_backward"], s.chain_repeats, s.chain_warmup
    )
    imported = "tensorkit.profiler" in sys.modules
    if imported != (variant == "used"):
        raise RuntimeError(f"variant {variant!r}, but tensorkit.profiler imported: {imported}")
    return {"chain_us": us_per_op(samples), "errors": {}}


def profile_text(fn: Callable[[], object], calls: int, top: int = 18) -> str:
    """cProfile of ``calls`` calls of ``fn``: the top functions by own time."""
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


def library_facts(lib: Any, name: str) -> dict[str, Any]:
    """Version, and for torch its threads, CPU capability and built-in BLAS."""
    facts: dict[str, Any] = {"version": lib.__version__, "numpy": np.__version__}
    facts["core"] = core_build(name)
    if name == "torch":
        facts["threads"] = lib.get_num_threads()
        facts["cpu_capability"] = lib.backends.cpu.get_cpu_capability()
        facts["mkl"] = lib.backends.mkl.is_available()
        config = lib.__config__.show()
        blas = [p for p in config.replace(",", " ").split() if p.startswith("BLAS_INFO=")]
        facts["blas"] = blas[0].split("=", 1)[1] if blas else "?"
    return facts


def child_bench(name: str, s: Settings, seed: int, profile: bool) -> dict[str, Any]:
    """Everything but import time and memory, in this (child) process."""
    lib = load(name)
    out: dict[str, Any] = {"library": library_facts(lib, name), "errors": {}}
    jobs: list[tuple[str, Callable[[], dict[str, Any]]]] = [
        ("chain", lambda: bench_chain(lib, s, seed)),
        ("mlp", lambda: bench_mlp(lib, s, seed)),
        ("pow", lambda: bench_pow(lib, s, seed)),
        ("profiler", lambda: bench_profiler_on(lib, name, s, seed)),
    ]
    if name == "tensorkit":
        jobs.insert(1, ("chain_numpy", lambda: bench_numpy_floor(s, seed)))
        jobs.insert(3, ("mlp_numpy", lambda: bench_numpy_mlp(s, seed)))
    for job, run in jobs:
        try:
            out.update(run())
        except Exception:
            out["errors"][job] = traceback.format_exc(limit=6)
    if profile and name == "tensorkit":
        try:
            calls = chain_calls(lib, seed)
            out["profile_chain"] = profile_text(calls["forward_backward"], 100)
            out["profile_mlp"] = profile_text(mlp_step_fn(lib, seed), 20)
        except Exception:
            out["errors"]["profile"] = traceback.format_exc(limit=6)
    out["blas"] = blas_info()
    return out


def child_memory(name: str, s: Settings, seed: int) -> dict[str, Any]:
    """Peak RSS growth over ``mem_steps`` MLP steps, from the RSS after imports and setup."""
    lib = load(name)
    step = mlp_step_fn(lib, seed)
    method = "VmHWM reset via /proc/self/clear_refs, then ru_maxrss - RSS before training"
    if not reset_peak_rss():
        method = "ru_maxrss - RSS before training (peak could not be reset)"
    before = rss_bytes()
    for _ in range(s.mem_steps):
        step()
    peak = peak_rss_bytes()
    return {
        "memory": (peak - before) / 2**20,
        "rss_before_mb": before / 2**20,
        "peak_mb": peak / 2**20,
        "memory_method": method,
        "errors": {},
    }


def child_main(name: str, task: str, s: Settings, seed: int, profile: bool) -> None:
    """Child entry point: run one task and print its result as one JSON line."""
    if task == "memory":
        result = child_memory(name, s, seed)
    elif task.startswith("profiler-off-"):
        result = child_profiler_off(task.removeprefix("profiler-off-"), s, seed)
    else:
        result = child_bench(name, s, seed, profile)
    sys.stdout.write(json.dumps(result) + "\n")


# ---------------------------------------------------------------------------------- parent
def _at_most(limit: float) -> Callable[[float | None, float | None, dict], str]:
    """Verdict: tensorkit's value below ``limit``."""

    def verdict(tk: float | None, torch: float | None, res: dict) -> str:
        if tk is None:
            return "n/a"
        return "pass" if tk < limit else "FAIL"

    return verdict


def _vs_torch(limit: float) -> Callable[[float | None, float | None, dict], str]:
    """Verdict: tensorkit/torch at most ``limit``."""

    def verdict(tk: float | None, torch: float | None, res: dict) -> str:
        if tk is None or not torch:
            return "n/a"
        return "pass" if tk / torch <= limit else "FAIL"

    return verdict


def _vs_own_mul(limit: float) -> Callable[[float | None, float | None, dict], str]:
    """Verdict: tensorkit's value at most ``limit`` times its own ``x*x``."""

    def verdict(tk: float | None, torch: float | None, res: dict) -> str:
        mul = res.get("mul")
        if tk is None or not mul:
            return "n/a"
        return "pass" if tk / mul <= limit else "FAIL"

    return verdict


def _not_above(limit: float) -> Callable[[float | None, float | None, dict], str]:
    """Verdict: tensorkit's value (a ratio) at most ``limit``."""

    def verdict(tk: float | None, torch: float | None, res: dict) -> str:
        if tk is None:
            return "n/a"
        return "pass" if tk <= limit else "FAIL"

    return verdict


def _info(tk: float | None, torch: float | None, res: dict) -> str:
    """Verdict for rows without a target."""
    return "info"


@dataclass(frozen=True)
class Workload:
    """A table row: result key, label, decimals, target text, verdict rule, torch-measured."""

    key: str
    label: str
    digits: int
    target: str
    verdict: Callable[[float | None, float | None, dict], str]
    on_torch: bool = True


def workloads(s: Settings) -> list[Workload]:
    """The table rows, in order."""
    return [
        Workload("chain_nograd", "1a tiny-op chain, no_grad (us/op)", 2, "-", _info),
        Workload("chain_record", "1b tiny-op chain, recording (us/op)", 2, "-", _info),
        Workload(
            "chain_backward",
            "1c tiny-op chain, fwd+bwd (us/op)",
            2,
            "<= 1.5x torch",
            _vs_torch(1.5),
        ),
        Workload("chain_numpy", "1n NumPy floor, same chain (us/op)", 2, "floor", _info, False),
        Workload(
            "mlp_step", "2  MLP train step, 784-512-256-10 (ms)", 2, "<= 1.0x torch", _vs_torch(1)
        ),
        Workload("mlp_numpy", "2n NumPy floor, same step by hand (ms)", 2, "floor", _info, False),
        Workload("import", "3  import time (s)", 3, "< 0.2 s", _at_most(0.2)),
        Workload("import_numpy", "3n import numpy alone (s)", 3, "floor", _info, False),
        Workload(
            "memory",
            f"4  peak RSS growth, {s.mem_steps} MLP steps (MB)",
            1,
            "< 100 MB",
            _at_most(100.0),
        ),
        Workload("peak_mb", "4b whole-child peak RSS, same run (MB)", 1, "-", _info),
        Workload("pow2", "5a x**2, 1M float32 (ms)", 3, "<= 1.3x own x*x", _vs_own_mul(1.3)),
        Workload("pow3", "5b x**3, 1M float32 (ms)", 3, "<= 2.3x own x*x", _vs_own_mul(2.3)),
        Workload("mul", "5c x*x, 1M float32 (ms)", 3, "-", _info),
        Workload("where", "5d where(x > 0.5, x, 0.0), 1M float32 (ms)", 3, "-", _info),
        Workload("sigmoid", "5e sigmoid, 1M float32 (ms)", 3, "-", _info),
        Workload(
            "prof_off",
            "6a profiling off: chain fwd+bwd, profiler used / never imported (x)",
            3,
            "<= 1.03x",
            _not_above(1.03),
            False,
        ),
        Workload(
            "prof_default", "6b profiling on, default (x chain off)", 2, "<= 2x", _not_above(2)
        ),
        Workload(
            "prof_shapes", "6c profiling on, record_shapes (x chain off)", 2, "<= 2x", _not_above(2)
        ),
        Workload(
            "prof_memory",
            "6d profiling on, record_memory (x chain off)",
            2,
            "<= 2x",
            _not_above(2),
        ),
        Workload(
            "prof_stack", "6e profiling on, with_stack (x chain off)", 2, "<= 2x", _not_above(2)
        ),
        Workload(
            "observer",
            "6f no-op op observer alone (x chain off)",
            2,
            "floor of 6b-6e",
            _info,
            False,
        ),
    ]


def _guarded(result: dict[str, Any], step: str, run: Callable[[], dict[str, Any]]) -> None:
    """Run one child step, merging its numbers into ``result`` and keeping any error."""
    print(f"  {step} ...", file=sys.stderr, flush=True)
    try:
        part = run()
    except Exception as exc:
        result["errors"][step] = str(exc)
        return
    result["errors"].update(part.pop("errors", {}))
    for key, value in part.items():
        if isinstance(value, float):
            result.setdefault("per_round", {}).setdefault(key, []).append(value)
        result[key] = value


def collect(names: list[str], s: Settings, args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Run every library's children; errors are kept, not raised.

    The timing child runs ``s.rounds`` times, alternating libraries so that drift on a busy
    machine hits both alike; each number is the median over rounds of per-round medians.
    """
    results: dict[str, dict[str, Any]] = {name: {"errors": {}} for name in names}

    def flags(name: str) -> list[str]:
        return ["--child", name, "--seed", str(args.seed)] + (["--quick"] if args.quick else [])

    for r in range(s.rounds):
        for name in names:
            extra = ["--profile"] if args.profile and r == 0 else []
            _guarded(
                results[name],
                f"{name} bench (round {r + 1}/{s.rounds})",
                lambda name=name, extra=extra: run_child(
                    [SCRIPT, *flags(name), *extra], args.threads
                ),
            )
    for name in names:
        res = results[name]
        for key, values in res.get("per_round", {}).items():
            res[key] = median(values)
        _guarded(
            res,
            f"{name} memory",
            lambda name=name: run_child([SCRIPT, *flags(name), "--task", "memory"], args.threads),
        )
        _guarded(
            res,
            f"{name} import",
            lambda name=name: {"import": median(time_import(name, s.import_runs))},
        )
        if name == "tensorkit":
            _guarded(
                res,
                "numpy import",
                lambda: {"import_numpy": median(time_import("numpy", s.import_runs))},
            )
            _guarded(res, "profiling off", lambda: profiling_off(s, flags("tensorkit"), args))
    return results


def profiling_off(s: Settings, flags: list[str], args: argparse.Namespace) -> dict[str, Any]:
    """Row 6a: ``off_pairs`` pairs of children, one with the profiler used before timing and
    one that never imports it, in alternating order (ABBA) so that drift cancels; the row is
    the median of the pairs' ratios."""
    pairs = []
    for i in range(s.off_pairs):
        order = ("used", "never") if i % 2 == 0 else ("never", "used")
        us = {
            v: run_child([SCRIPT, *flags, "--task", f"profiler-off-{v}"], args.threads)["chain_us"]
            for v in order
        }
        pairs.append((us["used"], us["never"]))
    return {
        "prof_off": median([used / never for used, never in pairs]),
        "prof_off_pairs": pairs,
        "errors": {},
    }


def build_rows(s: Settings, results: dict[str, dict[str, Any]]) -> list[Row]:
    """Table rows from the collected results (None where not measured)."""
    tk = results.get("tensorkit", {})
    th = results.get("torch", {})
    rows = []
    for w in workloads(s):
        tk_value = tk.get(w.key)
        torch_value = th.get(w.key) if w.on_torch else None
        rows.append(
            Row(w.label, tk_value, torch_value, w.target, w.verdict(tk_value, torch_value, tk))
        )
    return rows


def report_lines(s: Settings, machine: dict[str, Any], results: dict[str, Any]) -> list[str]:
    """Machine, versions, BLAS per child, sanity checks and errors, as text lines."""
    overrides = {k: v for k, v in machine["blas_env_in_parent"].items() if v is not None}
    env_note = (
        ", ".join(f"{k}={v}" for k, v in overrides.items()) + " in the parent; unset in children"
        if overrides
        else "OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE not set (children run without them)"
    )
    lines = [
        f"date: {machine['date']}",
        f"machine: {machine['cpu']}, {machine['cores']} cores "
        f"({machine['usable_cores']} usable), {machine['os']}",
        f"python {machine['python']}, numpy {machine['numpy']}"
        + "".join(f", {n} {r['library']['version']}" for n, r in results.items() if "library" in r),
        f"BLAS env: {env_note}",
        "threads: "
        + (
            "each library's default"
            if machine["thread_cap"] is None
            else f"capped at {machine['thread_cap']} (OMP/OPENBLAS/MKL_NUM_THREADS)"
        ),
        f"load average (1 min) at start {machine['load_start']:.2f}, at end "
        f"{os.getloadavg()[0]:.2f}: other work on this machine skews the timings",
    ]
    for name, res in results.items():
        pools = describe_pools(res.get("blas", []))
        lines.append(f"BLAS in {name} child: " + ("; ".join(pools) or "none loaded"))
        lib = res.get("library", {})
        if lib.get("core"):
            lines.append(f"  tensorkit's core: {lib['core']}")
        if name == "torch" and lib:
            lines.append(
                f"  torch's own BLAS: {lib['blas']} (linked in, not visible to threadpoolctl), "
                f"mkl={lib['mkl']}, cpu capability {lib['cpu_capability']}, "
                f"{lib['threads']} intra-op threads (torch.get_num_threads)"
            )
    losses = [
        f"{n} {r['mlp_loss_first']:.4f} -> {r['mlp_loss_last']:.4f}"
        for n, r in results.items()
        if "mlp_loss_first" in r
    ]
    numpy_mlp = results.get("tensorkit", {})
    if "mlp_numpy_loss_first" in numpy_mlp:
        losses.append(
            f"numpy {numpy_mlp['mlp_numpy_loss_first']:.4f} -> "
            f"{numpy_mlp['mlp_numpy_loss_last']:.4f}"
        )
    if losses:
        steps = next(r["mlp_total_steps"] for r in results.values() if "mlp_total_steps" in r)
        lines.append(f"MLP loss, first -> after {steps} steps (same weights): " + "; ".join(losses))
    for name, res in results.items():
        if "memory_method" in res:
            lines.append(
                f"memory ({name}): {res['memory_method']}; RSS before {res['rss_before_mb']:.0f}"
                f" MB, peak {res['peak_mb']:.0f} MB"
            )
    noisy = []
    for w in workloads(s):
        spans = []
        for name, res in results.items():
            values = res.get("per_round", {}).get(w.key, [])
            if len(values) > 1 and min(values) > 0 and max(values) / min(values) > NOISY:
                spans.append(f"{name} {min(values):.{w.digits}f}-{max(values):.{w.digits}f}")
        if spans:
            noisy.append(f"{w.label.split('(')[0].strip()}: " + ", ".join(spans))
    if noisy:
        lines.append(
            f"NOISY (round medians differ by more than {NOISY}x; rerun on an idle machine or "
            "with --threads 1): " + "; ".join(noisy)
        )
    pairs = results.get("tensorkit", {}).get("prof_off_pairs")
    if pairs:
        lines.append(
            f"6a: {len(pairs)} child pairs (ABBA order), chain fwd+bwd us/op with the profiler "
            "used before / never imported: "
            + ", ".join(f"{used:.2f}/{never:.2f}" for used, never in pairs)
        )
    lines.append(
        "6a-6f in process CPU time (single-threaded host work; unaffected by other jobs); "
        f"6b-6f: chain fwd+bwd inside the profiler (one profile per {s.profiler_repeats} chains, "
        f"records accumulating) over the same chain just before outside it; median of "
        f"{s.profiler_rounds} such pairs per child; torch: torch.profiler.profile(activities="
        "[CPU]) with the same options (record_memory is its profile_memory); 6f: tensorkit "
        "with an observer that does nothing and takes backward per node, as the profiler does "
        "(a Tape or anomaly mode also observe every op inside the gradient rules)"
    )
    lines.append(
        f"timing: medians; chain {s.chain_repeats} repeats of {CHAIN_OPS} ops on ({CHAIN_LEN},) "
        f"float32; MLP {s.mlp_steps} steps; import {s.import_runs} fresh interpreters; "
        f"pow {s.pow_repeats} repeats; timing children: {s.rounds} alternating rounds per "
        "library, median of the round medians"
    )
    return lines


def parent_main(args: argparse.Namespace) -> int:
    """Run the children, print the table and the report; 1 if anything failed."""
    s = QUICK if args.quick else FULL
    names = [args.only] if args.only else list(LIBRARIES)
    machine = machine_info()
    machine["load_start"] = os.getloadavg()[0]
    machine["thread_cap"] = args.threads
    notes = []
    if "torch" in names and importlib.util.find_spec("torch") is None:
        names.remove("torch")
        notes.append("torch is not installed: its column is empty")
    results = collect(names, s, args)
    rows = build_rows(s, results)
    info = report_lines(s, machine, results)
    payload = {"machine": machine, "settings": asdict(s), "results": results}
    return print_report(
        rows,
        info + notes,
        results,
        (("profile_chain", "tiny-op chain fwd+bwd x100"), ("profile_mlp", "MLP")),
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
    parser.add_argument(
        "--profile", action="store_true", help="cProfile tensorkit's chain and MLP step"
    )
    parser.add_argument("--json", metavar="PATH", help="write the raw results to PATH")
    parser.add_argument(
        "--threads", type=int, help="cap BLAS/OpenMP threads in the children (default: theirs)"
    )
    parser.add_argument("--seed", type=int, default=SEED, help="seed for all input arrays")
    parser.add_argument("--child", choices=LIBRARIES, help=argparse.SUPPRESS)
    parser.add_argument(
        "--task",
        choices=("bench", "memory", "profiler-off-used", "profiler-off-never"),
        default="bench",
        help=argparse.SUPPRESS,
    )
    args = parser.parse_args(argv)
    if args.child:
        child_main(args.child, args.task, QUICK if args.quick else FULL, args.seed, args.profile)
        return 0
    return parent_main(args)


if __name__ == "__main__":
    sys.exit(main())
