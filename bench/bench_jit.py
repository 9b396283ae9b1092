"""tk.jit benchmark: compiled against eager tensorkit, torch and the hand-written NumPy floor.

    python bench/bench_jit.py                  # full run (a few minutes on 2 cores)
    python bench/bench_jit.py --quick          # smoke run, few repeats
    python bench/bench_jit.py --markdown --profile

As ``bench_nn.py``: child processes (``--child LIB --group GROUP``) print one JSON line each,
children alternate over rounds and each number is the median of the round medians. Each
library runs two children per round: "steps" (compile times, the chain, the models, the NumPy
floor) and "gelu" (the 10M-element rows), whose large arrays leave a process's memory slower
for whatever runs after them (measured: the NumPy MLP step 1.0 ms before them, 1.5 ms after;
gelu itself 10 ms first in a child, 21 ms after the models). The
tensorkit child times each workload eagerly and through ``tk.compile`` (the whole training
step as one compiled function: forward, backward and the SGD update), and the NumPy floor;
the torch child times torch eagerly. Models are built as users write them (nn modules,
``F.cross_entropy``, ``optim.SGD``) from the same NumPy-made weights.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from _harness import core_build, format_grid, machine_info, median, run_child, time_calls
from bench_core import CHAIN_OPS, MLP_SIZES, chain, chain_arrays, mlp_arrays, numpy_mlp_step_fn
from bench_nn import CNN_BATCH, TF_BATCH, TF_DMODEL, TF_FF, TF_HEADS, TF_SEQ, init_from_numpy

SCRIPT = str(Path(__file__).resolve())
LIBRARIES = ("tensorkit", "torch")
SEED = 1234
LR = 0.01


@dataclass(frozen=True)
class Settings:
    """Repeat counts for one run."""

    chain_repeats: int
    steps: int
    big_steps: int
    warmup: int
    rounds: int


FULL = Settings(300, 60, 12, 3, 3)
QUICK = Settings(20, 4, 2, 1, 1)


def load(name: str) -> Any:
    if name == "tensorkit":
        import tensorkit

        return tensorkit
    import torch

    return torch


# ------------------------------------------------------------------------------ workloads
def chain_step_fn(lib: Any, seed: int, compiled: bool) -> Callable[[], object]:
    """bench_core's chain of CHAIN_OPS elementwise ops on (16,), forward and backward."""
    xa, wa = chain_arrays(seed)
    x = lib.tensor(xa, requires_grad=True)
    w = lib.tensor(wa)

    def loss(x: Any, w: Any) -> Any:
        return chain(lib, x, w).sum()

    run = lib.compile(loss) if compiled else loss

    def step() -> None:
        run(x, w).backward()
        x.grad = None

    return step


GELU_ELEMENTS = 10_000_000


def gelu_fn(lib: Any, seed: int, compiled: bool) -> Callable[[], object]:
    """``F.gelu(x, approximate="tanh")`` over 10M float32 elements, forward under no_grad;
    ``compiled``: tk.compile, or torch.compile for torch."""
    x = lib.tensor(np.random.default_rng(seed).standard_normal(GELU_ELEMENTS, dtype=np.float32))

    def gelu(x: Any) -> Any:
        return lib.nn.functional.gelu(x, approximate="tanh")

    run = lib.compile(gelu) if compiled else gelu

    def call() -> None:
        with lib.no_grad():
            run(x)

    return call


def gelu_on_gpu(repeats: int) -> int:
    """The gelu row on CUDA, both libraries in this process (scripts/gpu_check.sh): tk.compile
    (a fused CuPy ElementwiseKernel) against torch.compile, medians of synchronized calls."""
    import torch

    import tensorkit

    rows = []
    for lib, sync in (
        (tensorkit, lambda: tensorkit.cuda.synchronize()),
        (torch, lambda: torch.cuda.synchronize()),
    ):
        x = lib.tensor(np.random.default_rng(SEED).standard_normal(GELU_ELEMENTS, np.float32))
        x = x.to("cuda")
        gelu = lambda x, lib=lib: lib.nn.functional.gelu(x, approximate="tanh")  # noqa: E731
        times = {}
        for label, fn in (("eager", gelu), ("compiled", lib.compile(gelu))):
            try:
                with lib.no_grad():
                    for _ in range(3):
                        fn(x)
                    sync()

                    def call(fn: Callable = fn, x: Any = x, sync: Callable = sync) -> None:
                        fn(x)
                        sync()

                    times[label] = median(time_calls(call, repeats, 2)) * 1e3
            except Exception as error:  # torch.compile without triton, say
                times[label] = float("nan")
                print(f"{lib.__name__} {label}: {type(error).__name__}: {error}", file=sys.stderr)
        rows.append((lib.__name__, times["eager"], times["compiled"]))
    (_, tk_eager, tk_compiled), (_, torch_eager, torch_compiled) = rows
    ratio = tk_compiled / torch_compiled
    verdict = "pass" if ratio <= 1.2 else "FAIL"
    columns = "torch eager | torch.compile | tk eager | tk compiled | tk/torch.compile | target"
    print(f"| workload (CUDA) | {columns} |")
    print("|---|---:|---:|---:|---:|---:|---|")
    print(
        f"| gelu (tanh) over 10M float32, forward (ms) | {torch_eager:.3f} | "
        f"{torch_compiled:.3f} | {tk_eager:.3f} | {tk_compiled:.3f} | {ratio:.2f}x | "
        f"<= 1.2x: {verdict} |"
    )
    return 0 if verdict == "pass" else 1


def mlp_model(lib: Any, seed: int) -> Any:
    """bench_core's MLP as nn.Linear/nn.ReLU layers, with bench_core's weights."""
    nn = lib.nn
    layers: list[Any] = []
    for fan_in, fan_out in itertools.pairwise(MLP_SIZES):
        layers += [nn.Linear(fan_in, fan_out), nn.ReLU()]
    model = nn.Sequential(*layers[:-1])
    arrays, x, labels = mlp_arrays(seed)
    with lib.no_grad():
        for linear, (w, b) in zip(
            model[::2], zip(arrays[::2], arrays[1::2], strict=True), strict=True
        ):
            linear.weight.copy_(lib.tensor(w.T.copy()))
            linear.bias.copy_(lib.tensor(b))
    return model, lib.tensor(x), lib.tensor(labels[:, 0])


def cnn_model(lib: Any, seed: int) -> Any:
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
    return model, x, y


def transformer_model(lib: Any, seed: int) -> Any:
    layer = lib.nn.TransformerEncoderLayer(
        TF_DMODEL, TF_HEADS, TF_FF, dropout=0.0, batch_first=True
    )
    init_from_numpy(lib, layer, seed)
    rng = np.random.default_rng(seed + 1)
    x = lib.tensor(rng.standard_normal((TF_BATCH, TF_SEQ, TF_DMODEL)).astype(np.float32))
    return layer, x, None


MODELS = {"mlp": mlp_model, "cnn": cnn_model, "tf": transformer_model}


def train_step_fn(lib: Any, name: str, seed: int, compiled: bool) -> Callable[[], float]:
    """One training step of model ``name``: plain SGD for the MLP (the NumPy floor's update),
    Adam for the CNN and the Transformer layer (as bench_nn.py); the loss as a float."""
    model, x, y = MODELS[name](lib, seed)
    if name == "mlp":
        opt = lib.optim.SGD(model.parameters(), lr=LR)
    else:
        opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    cross_entropy = lib.nn.functional.cross_entropy

    def step(x: Any, y: Any) -> Any:
        opt.zero_grad()
        out = model(x)
        loss = out.pow(2).mean() if y is None else cross_entropy(out, y)
        loss.backward()
        opt.step()
        return loss.detach()

    run = lib.compile(step) if compiled else step
    return lambda: float(run(x, y))


def compile_times(lib: Any, seed: int) -> dict[str, float]:
    """Seconds from a fresh tk.compile of the MLP step to its first replay (two recorded
    calls and the lowering), the lowering alone, and a cache hit's overhead (guards,
    dispatch, wrapping: a compiled ``x + 1`` on one element, minus the plan's own time)."""
    model, x, y = mlp_model(lib, seed)
    opt = lib.optim.SGD(model.parameters(), lr=LR)

    def step(x: Any, y: Any) -> Any:
        opt.zero_grad()
        loss = lib.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()

    compiled = lib.compile(step)
    start = time.perf_counter()
    compiled(x, y)
    compiled(x, y)
    total = time.perf_counter() - start
    from tensorkit.jit import fusion

    fusion._kernels.clear()  # again, its kernels on disk from the first compile (warm)
    again = lib.compile(step)
    start = time.perf_counter()
    again(x, y)
    again(x, y)
    warm = time.perf_counter() - start
    (entry,) = compiled.entries.values()
    assert entry.compiled is not None, entry.unstable or entry.breaks
    start = time.perf_counter()
    from tensorkit.jit.passes import optimize
    from tensorkit.jit.runtime import CompiledGraph

    recorded = lib.jit.capture.capture(step, (x, y), {})
    lowered_start = time.perf_counter()
    CompiledGraph(optimize(recorded.graph))
    lowering = time.perf_counter() - lowered_start
    tiny = lib.compile(lambda t: t + 1)
    one = lib.ones(1)
    for _ in range(3):
        tiny(one)
    (tiny_entry,) = tiny.entries.values()
    plan = tiny_entry.compiled.forward_plan.function
    array = one._data
    hit = median(time_calls(lambda: tiny(one), 2000, 100))
    plan_only = median(time_calls(lambda: plan(array), 2000, 100))
    return {
        "compile_s": total,
        "compile_warm_s": warm,
        "lowering_s": lowering,
        "cache_hit_us": (hit - plan_only) * 1e6,
    }


GROUPS = ("steps", "gelu")  # workloads run in a child process of their own, per round


def child_main(name: str, group: str, s: Settings, seed: int, profile: bool) -> None:
    lib = load(name)
    out: dict[str, Any] = {"library": {"version": lib.__version__}, "errors": {}}
    out["threads"] = lib.get_num_threads()
    out["core"] = core_build(name)
    jobs = step_jobs(lib, name, s, seed) if group == "steps" else gelu_jobs(lib, s, seed)
    for job, run in jobs.items():
        try:
            out.update(run())
        except Exception:
            out["errors"][job] = traceback.format_exc(limit=8)
    if profile and name == "tensorkit" and group == "steps":
        out["profile_mlp"] = _profile(train_step_fn(lib, "mlp", seed, True), 50)
    sys.stdout.write(json.dumps(out) + "\n")


def step_jobs(lib: Any, name: str, s: Settings, seed: int) -> dict[str, Callable[[], dict]]:
    """The "steps" group: compile times, the chain, the models and the NumPy floor."""
    variants = (False, True) if name == "tensorkit" else (False,)
    jobs: dict[str, Callable[[], dict[str, float]]] = {}
    if name == "tensorkit":  # first, so its kernels compile from an empty cache (cold)
        os.environ["TENSORKIT_CACHE_DIR"] = tempfile.mkdtemp(prefix="bench-jit-")
        jobs["compile"] = lambda: compile_times(lib, seed)
    for compiled in variants:
        suffix = "compiled" if compiled else "eager"

        def chain_job(compiled: bool = compiled, suffix: str = suffix) -> dict[str, float]:
            samples = time_calls(chain_step_fn(lib, seed, compiled), s.chain_repeats, 5)
            return {f"chain_{suffix}": median(samples) / CHAIN_OPS * 1e6}

        jobs[f"chain_{suffix}"] = chain_job
        for model in MODELS:
            steps = s.steps if model == "mlp" else s.big_steps

            def model_job(
                model: str = model,
                compiled: bool = compiled,
                suffix: str = suffix,
                steps: int = steps,
            ) -> dict[str, float]:
                step = train_step_fn(lib, model, seed, compiled)
                first = step()
                samples = time_calls(step, steps, s.warmup + 2)
                return {f"{model}_{suffix}": median(samples) * 1e3, f"{model}_{suffix}_loss": first}

            jobs[f"{model}_{suffix}"] = model_job
    if name == "tensorkit":
        jobs["mlp_numpy"] = lambda: {
            "mlp_numpy": median(time_calls(numpy_mlp_step_fn(seed), s.steps, s.warmup)) * 1e3
        }
    return jobs


def gelu_jobs(lib: Any, s: Settings, seed: int) -> dict[str, Callable[[], dict]]:
    """The "gelu" group: eager and compiled (torch.compile for torch, the row's reference)."""
    jobs: dict[str, Callable[[], dict[str, float]]] = {}
    for compiled in (False, True):
        suffix = "compiled" if compiled else "eager"

        def gelu_job(compiled: bool = compiled, suffix: str = suffix) -> dict[str, float]:
            samples = time_calls(gelu_fn(lib, seed, compiled), s.big_steps, s.warmup + 2)
            return {f"gelu_{suffix}": median(samples) * 1e3}

        jobs[f"gelu_{suffix}"] = gelu_job
    return jobs


def _profile(fn: Callable[[], object], calls: int) -> str:
    import cProfile
    import io
    import pstats

    for _ in range(3):
        fn()
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        fn()
    profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(18)
    return text.getvalue()


# ---------------------------------------------------------------------------------- parent
@dataclass(frozen=True)
class Workload:
    """A row: result key prefix, label, unit digits, and the target as (reference, limit):
    compiled <= limit x the reference column ("torch", "numpy" or "eager")."""

    key: str
    label: str
    digits: int
    reference: str
    limit: float


WORKLOADS = (
    Workload("chain", "1  100 elementwise ops on (16,), fwd+bwd (us/op)", 3, "absolute", 0.5),
    Workload("mlp", "2  MLP 784-512-256-10 step, batch 128, SGD (ms)", 2, "numpy", 1.05),
    Workload("cnn", "3  CNN step, 64x1x28x28, Adam (ms)", 1, "eager", 1 / 1.3),
    Workload("tf", "4  Transformer layer step, 16x128x128, Adam (ms)", 1, "eager", 1 / 1.3),
    Workload("gelu", "5a gelu (tanh) over 10M float32, forward (ms)", 1, "torch.compile", 0.8),
    Workload("gelu", "5b the same against tensorkit eager (ms)", 1, "eager", 0.5),
)
HEADER = (
    "workload",
    "torch",
    "numpy",
    "tk eager",
    "tk compiled",
    "torch.compile",
    "compiled/eager",
    "compiled/torch",
    "target",
    "verdict",
)


def _row(w: Workload, tk: dict[str, Any], th: dict[str, Any]) -> list[str]:
    def num(value: float | None) -> str:
        return "-" if value is None else f"{value:.{w.digits}f}"

    def ratio(a: float | None, b: float | None) -> str:
        return "-" if a is None or not b else f"{a / b:.2f}x"

    eager, compiled = tk.get(f"{w.key}_eager"), tk.get(f"{w.key}_compiled")
    torch, floor = th.get(f"{w.key}_eager"), tk.get(f"{w.key}_numpy")
    torch_compiled = th.get(f"{w.key}_compiled")
    reference = None
    if w.reference == "absolute":
        target, value = f"<= {w.limit} us/op", compiled
        ok = value is not None and value <= w.limit
    else:
        references = {"numpy": floor, "eager": eager, "torch": torch}
        reference = {**references, "torch.compile": torch_compiled}[w.reference]
        shown = f"{w.limit:.2f}" if w.limit < 1 else f"{w.limit}"
        target = f"<= {shown}x {w.reference}"
        ok = compiled is not None and bool(reference) and compiled / reference <= w.limit
    missing = compiled is None or (w.reference != "absolute" and not reference)
    verdict = "n/a" if missing else ("pass" if ok else "FAIL")
    return [
        w.label,
        num(torch),
        num(floor),
        num(eager),
        num(compiled),
        num(torch_compiled),
        ratio(compiled, eager),
        ratio(compiled, torch),
        target,
        verdict,
    ]


def collect(names: list[str], s: Settings, args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    results: dict[str, dict[str, Any]] = {n: {"errors": {}, "per_round": {}} for n in names}
    for r in range(s.rounds):
        for name, group in itertools.product(names, GROUPS):
            print(f"  {name} {group} (round {r + 1}/{s.rounds}) ...", file=sys.stderr, flush=True)
            flags = ["--child", name, "--group", group, "--seed", str(args.seed)]
            flags += ["--quick"] if args.quick else []
            flags += ["--profile"] if args.profile and r == 0 else []
            res = results[name]
            try:
                part = run_child([SCRIPT, *flags])
            except Exception as exc:
                res["errors"][f"round {r + 1} {group}"] = str(exc)
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


def parent_main(args: argparse.Namespace) -> int:
    s = QUICK if args.quick else FULL
    names = [args.only] if args.only else list(LIBRARIES)
    machine = machine_info()
    load_start = os.getloadavg()[0]
    notes = []
    if "torch" in names and importlib.util.find_spec("torch") is None:
        names.remove("torch")
        notes.append("torch is not installed: its column is empty")
    results = collect(names, s, args)
    tk, th = results.get("tensorkit", {}), results.get("torch", {})
    body = [_row(w, tk, th) for w in WORKLOADS]
    lines = [
        f"date: {machine['date']}",
        f"machine: {machine['cpu']}, {machine['cores']} cores, {machine['os']}",
        f"python {machine['python']}, numpy {machine['numpy']}",
        f"load average (1 min) at start {load_start:.2f}, at end {os.getloadavg()[0]:.2f}",
        f"{s.rounds} alternating rounds per library, median of the round medians",
        f"intra-op threads at each library's default: tensorkit {tk.get('threads')}, "
        f"torch {th.get('threads')}",
        f"tensorkit's core: {tk.get('core')}",
    ]
    if "compile_s" in tk:
        lines.append(
            f"MLP step: tk.compile to the first replay {tk['compile_s']:.3f} s with an empty "
            f"kernel cache (two recorded calls, the passes, the lowering, numba's import and "
            f"compiles; target < 2 s), {tk['compile_warm_s']:.3f} s with its kernels on disk; "
            f"lowering alone {tk['lowering_s'] * 1e3:.1f} ms; a cache hit's overhead "
            f"{tk['cache_hit_us']:.1f} us (target < 50 us)"
        )
    for model in MODELS:
        losses = [
            f"{k}: {v:.5f}"
            for k, v in (*tk.items(), *th.items())
            if k.startswith(f"{model}_") and k.endswith("_loss") and isinstance(v, float)
        ]
        if losses:
            lines.append(f"{model} first-step loss (same weights): " + ", ".join(losses))
    print(format_grid(HEADER, body, {1, 2, 3, 4, 5, 6, 7}, False))
    print()
    print("\n".join(lines + notes))
    errors = [(n, job, text) for n, r in results.items() for job, text in r["errors"].items()]
    for name, job, text in errors:
        print(f"\nERROR in {name} {job}:\n{text.rstrip()}")
    if "profile_mlp" in tk:
        print("\ncProfile, compiled MLP step x50:\n" + tk["profile_mlp"])
    if args.markdown:
        print("\n" + format_grid(HEADER, body, {1, 2, 3, 4, 5, 6, 7}, True) + "\n")
        print("\n".join(f"- {line}" for line in lines + notes))
    if args.json:
        payload = {"machine": machine, "settings": asdict(s), "results": results}
        Path(args.json).write_text(json.dumps(payload, indent=1))
    return 1 if errors else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="few repeats: a smoke run")
    parser.add_argument("--only", choices=LIBRARIES, help="run one library only")
    parser.add_argument("--markdown", action="store_true", help="also print a markdown table")
    parser.add_argument("--profile", action="store_true", help="cProfile the compiled MLP step")
    parser.add_argument("--json", metavar="PATH", help="write the raw results to PATH")
    parser.add_argument("--seed", type=int, default=SEED, help="seed for weights and inputs")
    parser.add_argument("--child", choices=LIBRARIES, help=argparse.SUPPRESS)
    parser.add_argument("--group", choices=GROUPS, default="steps", help=argparse.SUPPRESS)
    parser.add_argument("--gelu-gpu", action="store_true", help="the gelu row on CUDA only")
    args = parser.parse_args(argv)
    if args.gelu_gpu:
        return gelu_on_gpu(5 if args.quick else 30)
    if args.child:
        child_main(args.child, args.group, QUICK if args.quick else FULL, args.seed, args.profile)
        return 0
    return parent_main(args)


if __name__ == "__main__":
    sys.exit(main())
