"""tk.distributed benchmark: all_reduce bandwidth against mpi4py's own Allreduce, and a DDP
training step of an MLP on 2 ranks against one process with the same per-rank batch.

    python bench/bench_distributed.py            # about half a minute on 2 cores
    python bench/bench_distributed.py --quick    # smoke run, few repeats

The parent starts the ranks through ``python -m tensorkit.distributed.run`` (this script
with ``--child WORKLOAD``); rank 0 prints its results as one JSON line. all_reduce: the same
16 MB float32 buffer, a tensor's for tk and its NumPy array for mpi4py, alternating over
rounds; each number is the median of the round medians. DDP: the median step time (forward,
backward with its bucketed all-reduces, SGD step), the all-reduces' own time (the same
buckets reduced back to back, nothing to overlap) and the wait after backward for those
still in flight; the hidden share is 1 - wait / own time; the floor adds to one process
beside another the all-reduces' own time and the hooks' copies into the buckets (timed
alone). Then a few steps are profiled on
each rank and their traces read by tensorkit.notebook.build_ranks (the notebook's per-rank
view): the share of the collectives' time in flight that overlapped backward compute.
The single-process step is timed alone and beside a second process running the same steps
(2 ranks' compute on 2 cores without communication: what one rank's compute costs when the
other is busy).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = str(Path(__file__).resolve())
NUMEL = 4 * 1024 * 1024  # 16 MB of float32
MLP = (512, 1024, 1024, 10)
BATCH = 64  # per rank
ROUNDS = 3  # launches of each step workload


def _all_reduce_child(rounds: int, repeats: int) -> dict:
    import numpy as np
    from mpi4py import MPI

    import tensorkit as tk
    import tensorkit.distributed as dist

    dist.init_process_group("mpi")
    tensor = tk.ones(NUMEL)
    array = tensor.numpy()  # the same buffer
    comm = MPI.COMM_WORLD

    def tk_call() -> None:
        dist.all_reduce(tensor)

    def mpi_call() -> None:
        comm.Allreduce(MPI.IN_PLACE, array, MPI.SUM)

    medians: dict[str, list[float]] = {"tk": [], "mpi4py": []}
    for call in (tk_call, mpi_call):
        call()  # warm up
    for _ in range(rounds):
        for name, call in (("tk", tk_call), ("mpi4py", mpi_call)):
            times = []
            for _ in range(repeats):
                comm.Barrier()
                start = time.perf_counter()
                call()
                times.append(time.perf_counter() - start)
                array[...] = 1.0
            medians[name].append(statistics.median(times))
    tk_s = statistics.median(medians["tk"])
    mpi_s = statistics.median(medians["mpi4py"])
    result = {
        "tk_ms": tk_s * 1e3,
        "mpi4py_ms": mpi_s * 1e3,
        "tk_GBps": NUMEL * 4 / tk_s / 1e9,
        "mpi4py_GBps": NUMEL * 4 / mpi_s / 1e9,
        "bandwidth_ratio": mpi_s / tk_s,
        "world_size": dist.get_world_size(),
    }
    assert np.all(array == 1.0)
    dist.destroy_process_group()
    return result


def _mlp(nn: object) -> object:
    layers = []
    for fan_in, fan_out in itertools.pairwise(MLP):
        layers += [nn.Linear(fan_in, fan_out), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


def _step_child(steps: int, distributed: bool, trace_dir: str | None = None) -> dict:
    import numpy as np

    import tensorkit as tk
    import tensorkit.distributed as dist
    import tensorkit.nn as nn
    from tensorkit.nn.parallel import DistributedDataParallel

    tk.manual_seed(0)
    model = _mlp(nn)
    waited: list[float] = []
    if distributed:
        dist.init_process_group("mpi")
        model = DistributedDataParallel(model)
        finish = model._finish_reduction

        def timed_finish() -> None:
            start = time.perf_counter()
            finish()
            waited.append(time.perf_counter() - start)

        model._finish_reduction = timed_finish
    optimizer = tk.optim.SGD(model.parameters(), lr=0.01)
    gen = np.random.default_rng(0)
    x = tk.tensor(gen.standard_normal((BATCH, MLP[0])), dtype=tk.float32)
    y = tk.tensor(gen.integers(0, MLP[-1], BATCH))
    times = []
    for step in range(steps + 3):
        start = time.perf_counter()
        optimizer.zero_grad()
        loss = tk.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        if step >= 3:
            times.append(time.perf_counter() - start)
    result = {"step_ms": statistics.median(times) * 1e3}
    if distributed:
        exposed = statistics.median(waited[3:])
        alone = []  # the same all-reduces with nothing to overlap: the communication's cost
        for _ in range(steps):
            dist.barrier()
            start = time.perf_counter()
            for bucket in model._buckets:
                dist.all_reduce(bucket.buffer)
            alone.append(time.perf_counter() - start)
        communication = statistics.median(alone)
        copies = []  # the hooks' pass: each gradient divided by the world size into its bucket
        grads = [[p.grad._data.copy() for p in bucket.params] for bucket in model._buckets]
        for _ in range(steps):
            start = time.perf_counter()
            for bucket, arrays in zip(model._buckets, grads, strict=True):
                for index, array in enumerate(arrays):
                    np.divide(array, model.world_size, out=bucket.slot(index))
            copies.append(time.perf_counter() - start)
        result["bucket_copy_ms"] = statistics.median(copies) * 1e3
        result["exposed_wait_ms"] = exposed * 1e3
        result["communication_ms"] = communication * 1e3
        result["hidden_share"] = max(0.0, 1.0 - exposed / communication)
        result["buckets"] = len(model._buckets)
        if trace_dir:
            with tk.profiler.profile() as prof:
                for _ in range(3):
                    optimizer.zero_grad()
                    tk.nn.functional.cross_entropy(model(x), y).backward()
                    optimizer.step()
            prof.export_chrome_trace(str(Path(trace_dir) / f"rank_{dist.get_rank()}.json"))
        dist.destroy_process_group()
    return result


def _in_flight_share(trace_dir: str) -> dict:
    """The per-rank view's numbers (tensorkit.notebook.build_ranks) of the profiled steps."""
    from tensorkit.notebook import build_ranks

    model = build_ranks(sorted(str(p) for p in Path(trace_dir).glob("rank_*.json")))
    return {
        "in_flight_hidden_share": model["hidden_share"],
        "per_rank": [r["hidden_share"] for r in model["ranks"]],
    }


def _median_launch(results: list[dict]) -> dict:
    """The launch whose step time is the median one (its other numbers with it)."""
    ordered = sorted(results, key=lambda r: r["step_ms"])
    return ordered[(len(ordered) - 1) // 2]


def _launch(workload: str, nproc: int, quick: bool, trace_dir: str | None = None) -> dict:
    child = [SCRIPT, "--child", workload, *(["--quick"] if quick else [])]
    child += ["--trace-dir", trace_dir] if trace_dir else []
    if nproc:
        command = [
            sys.executable,
            "-m",
            "tensorkit.distributed.run",
            "--nproc-per-node",
            str(nproc),
        ]
    else:
        command = []
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    out = subprocess.run(
        [*command, *([] if nproc else [sys.executable]), *child],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="few repeats (a smoke run)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--trace-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    rounds, repeats, steps = (2, 3, 5) if args.quick else (5, 10, 30)
    if args.child:
        if args.child == "all_reduce":
            result = _all_reduce_child(rounds, repeats)
        else:
            result = _step_child(steps, args.child == "ddp", args.trace_dir)
        if os.environ.get("RANK", "0") == "0":
            print(json.dumps(result), flush=True)
        return
    load = os.getloadavg()[0]
    reduce = _launch("all_reduce", 2, args.quick)
    launches: dict[str, list[dict]] = {"ddp": [], "single": [], "beside": []}
    for _ in range(1 if args.quick else ROUNDS):  # interleaved, so that load drifts cancel
        with tempfile.TemporaryDirectory() as trace_dir:
            ddp = _launch("ddp", 2, args.quick, trace_dir)
            launches["ddp"].append({**ddp, **_in_flight_share(trace_dir)})
        launches["single"].append(_launch("single", 0, args.quick))
        # two independent processes, no communication: one rank's compute beside the other's
        launches["beside"].append(_launch("single", 2, args.quick))
    ddp, single, beside = (_median_launch(launches[k]) for k in ("ddp", "single", "beside"))
    print(
        f"load average before: {load:.2f}, after: {os.getloadavg()[0]:.2f}; "
        f"OMP_NUM_THREADS=1 in every process; step times: the median of {len(launches['ddp'])} "
        "interleaved launches' medians"
    )
    print("| workload | tensorkit | reference | ratio |")
    print("|---|---|---|---|")
    print(
        f"| all_reduce 16 MB float32, 2 ranks | {reduce['tk_ms']:.2f} ms "
        f"({reduce['tk_GBps']:.2f} GB/s) | mpi4py Allreduce {reduce['mpi4py_ms']:.2f} ms "
        f"({reduce['mpi4py_GBps']:.2f} GB/s) | {reduce['bandwidth_ratio']:.2f}x bandwidth |"
    )
    print(
        f"| DDP MLP {'-'.join(map(str, MLP))} step, batch {BATCH} per rank, 2 ranks | "
        f"{ddp['step_ms']:.2f} ms ({ddp['buckets']} buckets, all-reduces alone "
        f"{ddp['communication_ms']:.2f} ms, {ddp['exposed_wait_ms']:.2f} ms of it waited for "
        f"after backward: {ddp['hidden_share']:.0%} hidden) | "
        f"one process, same batch: {single['step_ms']:.2f} ms | "
        f"{ddp['step_ms'] / single['step_ms']:.2f}x time |"
    )
    print(
        f"| the same DDP step against one process beside a second one running the same steps "
        f"| {ddp['step_ms']:.2f} ms | one process beside another: {beside['step_ms']:.2f} ms | "
        f"{ddp['step_ms'] / beside['step_ms']:.2f}x time |"
    )
    floor = beside["step_ms"] + ddp["communication_ms"] + ddp["bucket_copy_ms"]
    print(
        f"floor on these cores (no core is free for communication to overlap): one process "
        f"beside another {beside['step_ms']:.2f} + all-reduces alone "
        f"{ddp['communication_ms']:.2f} + copies into the buckets {ddp['bucket_copy_ms']:.2f} "
        f"= {floor:.2f} ms, {floor / single['step_ms']:.2f}x one process"
    )
    shares = ", ".join(f"rank {n} {share:.0%}" for n, share in enumerate(ddp["per_rank"]))
    print(
        f"profiled DDP steps (tensorkit.notebook.build_ranks): "
        f"{ddp['in_flight_hidden_share']:.0%} of the collectives' time in flight overlapped "
        f"backward compute ({shares})"
    )


if __name__ == "__main__":
    main()
