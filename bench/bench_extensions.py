"""Custom-op benchmark: the fused C SiLU of tensorkit/examples/fused_silu.py (a tk.library op
compiled with tk.utils.cpp_extension) beside the same computation in tensorkit ops, tensorkit's
F.silu, torch's F.silu and a hand-written NumPy floor.

    python bench/bench_extensions.py            # full run
    python bench/bench_extensions.py --quick    # smoke run, few repeats
    python bench/bench_extensions.py --markdown

As ``bench_jit.py``: one child process per library (``--child LIB``) prints one JSON line,
children alternate over rounds and each number is the median of the round medians. Each
workload is a float32 SiLU forward, or forward and backward (``silu(x).backward(g)``), on
a 1-d tensor of 4,096 elements (per-call overhead) or 1,048,576 (memory bandwidth). The NumPy
floor computes the same values with the fewest NumPy calls (forward ``x / (1 + exp(-x))``;
backward from the saved sigmoid), with no autograd.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from _harness import format_grid, machine_info, median, run_child, time_calls

SCRIPT = str(Path(__file__).resolve())
LIBRARIES = ("tensorkit", "torch")
SIZES = {"4k": 4096, "1M": 1 << 20}
SEED = 1234


@dataclass(frozen=True)
class Settings:
    repeats: int
    warmup: int
    rounds: int


FULL = Settings(200, 10, 3)
QUICK = Settings(5, 1, 1)


def arrays(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * 3).astype(np.float32)
    g = rng.standard_normal(n).astype(np.float32)
    return x, g


def numpy_fn(x: np.ndarray, g: np.ndarray, backward: bool) -> Callable[[], object]:
    def forward() -> np.ndarray:
        return x / (1 + np.exp(-x))

    def both() -> np.ndarray:
        s = 1 / (1 + np.exp(-x))
        out = x * s
        grad = g * s * (1 + x * (1 - s))
        return out, grad

    return both if backward else forward


def tensor_fn(lib: Any, silu: Callable, x: np.ndarray, g: np.ndarray, backward: bool) -> Any:
    """``silu`` on a tensor of ``x``: forward only (under no_grad), or forward and backward."""
    if not backward:
        t = lib.tensor(x)

        def forward() -> object:
            with lib.no_grad():
                return silu(t)

        return forward
    t = lib.tensor(x, requires_grad=True)
    grad = lib.tensor(g)

    def both() -> object:
        silu(t).backward(grad)
        t.grad = None

    return both


def variants(name: str) -> dict[str, Callable]:
    """The SiLU forms a child times, by column."""
    if name == "torch":
        import torch

        return {"torch": torch.nn.functional.silu}
    import tensorkit as tk
    from tensorkit.examples import fused_silu

    return {
        "tk_ops": lambda x: x * tk.sigmoid(x),
        "tk_silu": tk.nn.functional.silu,
        "tk_c_op": fused_silu.silu,
    }


def child_main(name: str, s: Settings, seed: int) -> None:
    lib = __import__("tensorkit" if name == "tensorkit" else "torch")
    out: dict[str, Any] = {"library": {"version": lib.__version__}, "errors": {}}
    jobs: dict[str, Callable[[], float]] = {}
    for size, n in SIZES.items():
        x, g = arrays(n, seed)
        for backward in (False, True):
            phase = "fwdbwd" if backward else "fwd"
            for column, silu in variants(name).items():
                jobs[f"{column}_{phase}_{size}"] = lambda silu=silu, x=x, g=g, backward=backward: (
                    median(time_calls(tensor_fn(lib, silu, x, g, backward), s.repeats, s.warmup))
                )
            if name == "tensorkit":
                jobs[f"numpy_{phase}_{size}"] = lambda x=x, g=g, backward=backward: median(
                    time_calls(numpy_fn(x, g, backward), s.repeats, s.warmup)
                )
    for job, run in jobs.items():
        try:
            out[job] = run() * 1e6
        except Exception:
            out["errors"][job] = traceback.format_exc(limit=8)
    sys.stdout.write(json.dumps(out) + "\n")


# ---------------------------------------------------------------------------------- parent
COLUMNS = ("torch", "numpy", "tk_ops", "tk_silu", "tk_c_op")
HEADER = (
    "workload (us)",
    "torch F.silu",
    "numpy floor",
    "tk ops x*sigmoid(x)",
    "tk F.silu",
    "tk C op",
    "C op/tk ops",
    "C op/torch",
    "C op/numpy",
)


def collect(names: list[str], s: Settings, args: argparse.Namespace) -> dict[str, Any]:
    merged: dict[str, Any] = {"errors": {}, "per_round": {}}
    for r in range(s.rounds):
        for name in names:
            print(f"  {name} (round {r + 1}/{s.rounds}) ...", file=sys.stderr, flush=True)
            flags = ["--child", name, "--seed", str(args.seed)] + (
                ["--quick"] if args.quick else []
            )
            try:
                part = run_child([SCRIPT, *flags])
            except Exception as exc:
                merged["errors"][f"{name} round {r + 1}"] = str(exc)
                continue
            merged["errors"].update({f"{name} {k}": v for k, v in part.pop("errors").items()})
            for key, value in part.items():
                if isinstance(value, float):
                    merged["per_round"].setdefault(key, []).append(value)
    return merged


def _row(label: str, key: str, values: dict[str, float]) -> list[str]:
    cells = [values.get(f"{column}_{key}") for column in COLUMNS]

    def ratio(a: float | None, b: float | None) -> str:
        return "-" if a is None or not b else f"{a / b:.2f}x"

    c_op = cells[4]
    return [
        label,
        *("-" if v is None else f"{v:.1f}" for v in cells),
        ratio(c_op, cells[2]),
        ratio(c_op, cells[0]),
        ratio(c_op, cells[1]),
    ]


def parent_main(args: argparse.Namespace) -> int:
    s = QUICK if args.quick else FULL
    names = [args.only] if args.only else list(LIBRARIES)
    notes = []
    if "torch" in names and importlib.util.find_spec("torch") is None:
        names.remove("torch")
        notes.append("torch is not installed: its column is empty")
    machine = machine_info()
    load_start = os.getloadavg()[0]
    merged = collect(names, s, args)
    values = {key: median(v) for key, v in merged["per_round"].items()}
    body = [
        _row(f"SiLU {phase_label}, {size} float32", f"{phase}_{size}", values)
        for size in SIZES
        for phase, phase_label in (("fwd", "forward"), ("fwdbwd", "forward+backward"))
    ]
    lines = [
        f"date: {machine['date']}",
        f"machine: {machine['cpu']}, {machine['cores']} cores, {machine['os']}",
        f"python {machine['python']}, numpy {machine['numpy']}",
        f"load average (1 min) at start {load_start:.2f}, at end {os.getloadavg()[0]:.2f}",
        f"{s.rounds} alternating rounds per library, median of the round medians",
        *notes,
    ]
    right = set(range(1, len(HEADER)))
    print(format_grid(HEADER, body, right, False))
    print()
    print("\n".join(lines))
    for job, text in merged["errors"].items():
        print(f"\nERROR in {job}:\n{text.rstrip()}")
    if args.markdown:
        print("\n" + format_grid(HEADER, body, right, True) + "\n")
        print("\n".join(f"- {line}" for line in lines))
    if args.json:
        payload = {"machine": machine, "settings": asdict(s), "results": merged}
        Path(args.json).write_text(json.dumps(payload, indent=1))
    return 1 if merged["errors"] else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="few repeats: a smoke run")
    parser.add_argument("--only", choices=LIBRARIES, help="run one library only")
    parser.add_argument("--markdown", action="store_true", help="also print a markdown table")
    parser.add_argument("--json", metavar="PATH", help="write the raw results to PATH")
    parser.add_argument("--seed", type=int, default=SEED, help="seed of the inputs")
    parser.add_argument("--child", choices=LIBRARIES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child_main(args.child, QUICK if args.quick else FULL, args.seed)
        return 0
    return parent_main(args)


if __name__ == "__main__":
    sys.exit(main())
