"""Chrome Trace Event export (load in chrome://tracing or https://ui.perfetto.dev).

Ops are complete events (``ph: "X"``) with ``ts``/``dur`` in microseconds: forward (and
optimizer) ops on thread 1, backward ops on thread 2, each under the composite function
(``conv2d``, ...) that ran it, if any (category "composite", on the same thread, so it nests
above them); ``record_function`` ranges on thread 0 (ranges nest; ops never overlap).
Memory is a counter event (``ph: "C"``) after each op. The GPU work of CUDA ops (CUDA
events) is on a track of its own per device (thread 100 + the device index), placed by
``gpu_start_ns``; the op's args carry ``gpu_time_us`` too. The timing mode is in
``otherData``, with the host clock at time 0 (``start_ns``) and, under tk.distributed, the
rank and world size, which ``merge_traces`` reads; a collective's range carries its bytes
and group in its args.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

PID = os.getpid()
RANGE_TID, FORWARD_TID, BACKWARD_TID, GPU_TID = 0, 1, 2, 100
_THREAD_NAMES = {RANGE_TID: "record_function", FORWARD_TID: "forward", BACKWARD_TID: "backward"}


def _op_thread(phase: str) -> int:
    """The track of ops (and composite ranges) run in ``phase``."""
    return BACKWARD_TID if phase == "backward" else FORWARD_TID


def trace_events(prof: Any) -> list[dict]:
    """The trace's events, with times relative to the start of profiling."""
    origin = prof.start_ns

    def us(ns: int) -> float:
        return (ns - origin) / 1e3

    events: list[dict] = [
        {"ph": "M", "name": "thread_name", "pid": PID, "tid": tid, "args": {"name": name}}
        for tid, name in _THREAD_NAMES.items()
    ]
    gpu_tids: set[int] = set()
    collectives = {  # tk.distributed's ops, by their range: bytes and group in the args
        (f"distributed.{op['name']}", op["start_ns"]): {"bytes": op["bytes"], "group": op["group"]}
        for op in getattr(prof, "distributed_ops", [])
    }
    for rng in sorted(prof._ranges, key=lambda r: (r.start_ns, -r.end_ns)):
        composite = rng.composite
        events.append(
            {
                "ph": "X",
                "name": rng.name,
                "cat": "composite" if composite else "user_annotation",
                "ts": us(rng.start_ns),
                "dur": rng.duration_ns / 1e3,
                "pid": PID,
                "tid": _op_thread(rng.phase) if composite else RANGE_TID,
                "args": collectives.get((rng.name, rng.start_ns), {}),
            }
        )
    for r in prof.records:
        args: dict[str, Any] = {"index": r.index, "device": r.device, "module": r.module_path}
        if r.forward_index is not None:
            args["forward_op"] = r.forward_index
        if r.input_shapes is not None:
            args["input_shapes"] = r.input_shapes
            args["input_dtypes"] = r.input_dtypes
            args["output_shapes"] = r.output_shapes
        if r.call_site is not None:
            args["call_site"] = r.call_site
        if r.scopes:
            args["scopes"] = list(r.scopes)
        if r.gpu_time_ns is not None:
            args["gpu_time_us"] = r.gpu_time_ns / 1e3
        events.append(
            {
                "ph": "X",
                "name": r.name,
                "cat": r.phase,
                "ts": us(r.start_ns),
                "dur": r.duration_ns / 1e3,
                "pid": PID,
                "tid": _op_thread(r.phase),
                "args": args,
            }
        )
        if r.gpu_time_ns is not None:
            tid = GPU_TID + int(r.device.partition(":")[2] or 0)
            gpu_tids.add(tid)
            events.append(
                {
                    "ph": "X",
                    "name": r.name,
                    "cat": "gpu",
                    "ts": us(r.gpu_start_ns),
                    "dur": r.gpu_time_ns / 1e3,
                    "pid": PID,
                    "tid": tid,
                    "args": {"index": r.index, "phase": r.phase, "device": r.device},
                }
            )
        if r.live_bytes is not None:
            events.append(
                {
                    "ph": "C",
                    "name": "Memory",
                    "ts": us(r.end_ns),
                    "pid": PID,
                    "args": {"allocated": r.live_bytes},
                }
            )
    events += [
        {
            "ph": "M",
            "name": "thread_name",
            "pid": PID,
            "tid": tid,
            "args": {"name": f"GPU cuda:{tid - GPU_TID} (CUDA events)"},
        }
        for tid in sorted(gpu_tids)
    ]
    return events


def _rank() -> dict[str, int]:
    """This process's rank and world size when tk.distributed is initialized, else nothing."""
    distributed = sys.modules.get("tensorkit.distributed")
    if distributed is None or not distributed.is_initialized():
        return {}
    return {"rank": distributed.get_rank(), "world_size": distributed.get_world_size()}


def export_chrome_trace(prof: Any, path: str) -> None:
    """Write ``{"traceEvents": [...]}`` to ``path``."""
    other: dict[str, Any] = {"timing": prof.timing_mode, "cuda_timing": prof.cuda_timing}
    other["start_ns"] = prof.start_ns  # the host clock at ts 0, for merge_traces
    other.update(_rank())
    document = {"traceEvents": trace_events(prof), "displayTimeUnit": "ms", "otherData": other}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(document, f)
