"""The profile view's data model: per-op rows, time by module, the memory timeline and the
caching allocator's blocks, as plain JSON-serializable data.

:func:`build_profile` reads a :class:`~tensorkit.profiler.profile` or a
:class:`~tensorkit.autograd.Tape` recorded inside one (its entries' ``records`` carry the time,
memory and profiler index). The payload is bounded: at most ``max_rows`` rows (the most
expensive by host time; the rest are counted in ``omitted``) and ``max_points`` timeline points
(longer timelines keep each bucket's largest values). Module totals and peaks cover every op.
"""

from __future__ import annotations

import math
from typing import Any

from .._callsite import display_site
from .._ranges import outermost_composite
from ..autograd.tape import Tape, TensorInfo
from ..profiler.events import TIMING_MODE

__all__ = ["MAX_POINTS", "MAX_ROWS", "block_view", "build_profile"]

MAX_ROWS = 500
MAX_POINTS = 2000
MAX_BLOCKS = 500
NO_MODULE = "(no module)"
CPU_ALLOCATOR = (
    "the CPU has no caching allocator: reserved equals allocated "
    "(tensorkit.memory's count of live tensor buffers)"
)
GPU_ALLOCATOR = "CuPy's caching memory pool: reserved includes cached blocks"
NO_RESERVED = (
    "; reserved bytes were not recorded per op (the allocator blocks view, from "
    "tk.cuda.memory._snapshot(), shows the pool)"
)
_FREE_ACTIONS = ("free", "free_completed")
_RETURN_ACTIONS = ("segment_free", "segment_unmap")


def build_profile(
    source: Any,
    *,
    snapshot: dict | None = None,
    max_rows: int = MAX_ROWS,
    max_points: int = MAX_POINTS,
) -> dict:
    """The profile view model of a profiler ``profile`` or of a Tape recorded inside one.

    Keys: ``timing_mode`` (how times were taken; CUDA timing is named only when an op has a
    GPU time), ``total_ops``, ``has`` (which columns have data: ``gpu_time``,
    ``memory``, ``shapes``, ``call_sites``), ``rows`` (in op order), ``omitted`` (rows left
    out: count and host time), ``modules`` (time per module path and phase; backward ops count
    for the module of the forward op they differentiate), ``functions`` (the same per
    top-level function: the outermost composite function such as ``conv2d`` an op ran in, else
    the op itself; a backward op counts for its forward op's), ``memory`` (the timeline, or None
    when memory was not recorded) and ``blocks`` (:func:`block_view` of ``snapshot``, a
    ``tk.cuda.memory._snapshot()`` dict, or None).
    """
    for name, value in (("max_rows", max_rows), ("max_points", max_points)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    if isinstance(source, Tape):
        rows = _rows_from_tape(source)
        modes = {e.records["timing_mode"] for e in source.entries if "timing_mode" in e.records}
        timing_mode = modes.pop() if len(modes) == 1 else TIMING_MODE
    elif hasattr(source, "records") and hasattr(source, "timing_mode"):
        rows, timing_mode = _rows_from_profile(source), source.timing_mode
    else:
        raise TypeError(
            f"build_profile expects a tensorkit.profiler.profile or a Tape, "
            f"got {type(source).__name__}"
        )
    _join_backward(rows)
    has_gpu_time = any(r["gpu_time_ns"] is not None for r in rows)
    if not has_gpu_time:  # a CPU-only run: its timing has nothing to say about CUDA
        timing_mode = TIMING_MODE
    kept = sorted(rows, key=lambda r: r["host_time_ns"], reverse=True)[:max_rows]
    kept.sort(key=lambda r: r["index"])
    shown: dict[str, str | None] = {}
    for row in kept:  # call sites as the graph shows them ("cell [3], line 2")
        site = row["call_site"]
        if site is not None:
            if site not in shown:
                shown[site] = display_site(site)
            row["call_site"] = shown[site]
    return {
        "timing_mode": timing_mode,
        "total_ops": len(rows),
        "has": {
            "gpu_time": has_gpu_time,
            "memory": any(r["live_bytes"] is not None for r in rows),
            "shapes": any(r["output_shapes"] is not None for r in rows),
            "call_sites": any(r["call_site"] for r in rows),
        },
        "rows": kept,
        "max_rows": max_rows,
        "omitted": {
            "count": len(rows) - len(kept),
            "host_time_ns": sum(r["host_time_ns"] for r in rows)
            - sum(r["host_time_ns"] for r in kept),
        },
        "modules": _times_by(rows, "module", NO_MODULE),
        "functions": _times_by(rows, "function"),
        "memory": _timeline(rows, max_points),
        "blocks": None if snapshot is None else block_view(snapshot, max_points=max_points),
    }


# ---------------------------------------------------------------------------------- rows
ROW_KEYS = (
    "index", "name", "phase", "forward_index", "module", "input_shapes", "input_dtypes",
    "output_shapes", "output_dtypes", "device", "host_time_ns", "gpu_time_ns", "alloc_bytes",
    "free_bytes", "live_bytes", "peak_bytes", "reserved_bytes", "call_site", "function",
)  # fmt: skip


def _row(**fields: Any) -> dict:
    """One table row: every key of ``ROW_KEYS`` (None where not recorded)."""
    row = {key: fields.get(key) for key in ROW_KEYS}
    row["module"] = row["module"] or ""
    return row


def _rows_from_profile(prof: Any) -> list[dict]:
    return [
        _row(
            index=r.index,
            name=r.name,
            phase=r.phase,
            forward_index=r.forward_index,
            module=r.module_path,
            input_shapes=r.input_shapes,
            input_dtypes=r.input_dtypes,
            output_shapes=r.output_shapes,
            output_dtypes=r.output_dtypes,
            device=r.device,
            host_time_ns=r.duration_ns,
            gpu_time_ns=r.gpu_time_ns,
            alloc_bytes=r.alloc_bytes,
            free_bytes=r.free_bytes,
            live_bytes=r.live_bytes,
            peak_bytes=r.peak_bytes,
            reserved_bytes=r.reserved_bytes,
            call_site=r.call_site,
            function=outermost_composite(r.scopes),
        )
        for r in prof.records
    ]


def _rows_from_tape(tape: Tape) -> list[dict]:
    """Rows of the entries that a profiler recorded (their records hold a profiler index)."""
    rows = []
    for entry in tape.entries:
        records = entry.records
        index = records.get("profiler_index")
        if index is None:
            continue
        forward = None
        if entry.backward_of is not None:
            forward = tape.entries[entry.backward_of].records.get("profiler_index")
        tensors = entry.outputs or [i for i in entry.inputs if isinstance(i, TensorInfo)]
        rows.append(
            _row(
                index=index,
                name=entry.name,
                phase=records.get("phase", entry.phase),
                forward_index=forward,
                module=entry.module_path,
                input_shapes=[i.shape if isinstance(i, TensorInfo) else None for i in entry.inputs],
                input_dtypes=[i.dtype if isinstance(i, TensorInfo) else None for i in entry.inputs],
                output_shapes=[o.shape for o in entry.outputs],
                output_dtypes=[o.dtype for o in entry.outputs],
                device=tensors[0].device if tensors else "cpu",
                host_time_ns=records.get("time_ns", entry.duration_ns),
                gpu_time_ns=records.get("gpu_time_ns"),
                alloc_bytes=records.get("alloc_bytes"),
                free_bytes=records.get("free_bytes"),
                live_bytes=records.get("live_bytes"),
                reserved_bytes=records.get("reserved_bytes"),
                call_site=entry.call_site,
                function=outermost_composite(entry.scopes),
            )
        )
    if not rows:
        raise ValueError(
            "this Tape holds no profiled ops: record it inside `with tk.profiler.profile():`"
        )
    return rows


def _join_backward(rows: list[dict]) -> None:
    """A backward op takes the module and the function of the forward op it differentiates
    where it has none of its own; an op outside any composite function is its own."""
    forward_of = {r["index"]: r for r in rows}
    for row in rows:
        forward = forward_of.get(row["forward_index"]) if row["forward_index"] is not None else None
        if forward is not None:
            row["module"] = row["module"] or forward["module"]
            row["function"] = row["function"] or forward["function"] or forward["name"]
        row["function"] = row["function"] or row["name"]


def _times_by(rows: list[dict], key: str, empty: str = "") -> list[dict]:
    """Host (and GPU) time per value of ``key`` (a module path, a function) and phase,
    largest total first; rows without a value count under ``empty``."""
    groups: dict[str, dict] = {}
    for row in rows:
        name = row[key] or empty
        entry = groups.setdefault(
            name, {key: name, "count": 0, "total_ns": 0, "host_ns": {}, "gpu_ns": {}}
        )
        entry["count"] += 1
        entry["total_ns"] += row["host_time_ns"]
        phase = row["phase"]
        entry["host_ns"][phase] = entry["host_ns"].get(phase, 0) + row["host_time_ns"]
        if row["gpu_time_ns"] is not None:
            entry["gpu_ns"][phase] = entry["gpu_ns"].get(phase, 0) + row["gpu_time_ns"]
    return sorted(groups.values(), key=lambda m: m["total_ns"], reverse=True)


# ------------------------------------------------------------------------ memory timeline
def _timeline(rows: list[dict], max_points: int) -> dict | None:
    """Allocated, reserved and peak bytes after each op (bucketed to ``max_points``)."""
    measured = [r for r in rows if r["live_bytes"] is not None]
    if not measured:
        return None
    device = _timeline_device(measured)
    others = sum(r["device"] != device for r in measured)
    measured = [r for r in measured if r["device"] == device]
    on_cpu = device == "cpu"
    index, allocated, reserved, peak = [], [], [], []
    top = 0
    for row in measured:
        live = row["live_bytes"]
        top = max(top, live, row["peak_bytes"] or 0)
        index.append(row["index"])
        allocated.append(live)
        reserved.append(live if on_cpu else row["reserved_bytes"])
        peak.append(top)
    peak_at = max(range(len(allocated)), key=allocated.__getitem__)
    backward = next((r["index"] for r in measured if r["phase"] == "backward"), None)
    stride = math.ceil(len(index) / max_points)
    if stride > 1:
        index = index[::stride]
        allocated, reserved, peak = (_bucket_max(s, stride) for s in (allocated, reserved, peak))
    allocator = CPU_ALLOCATOR if on_cpu else GPU_ALLOCATOR
    if all(v is None for v in reserved):
        allocator += NO_RESERVED
    if others:
        ops = "1 op" if others == 1 else f"{others} ops"
        allocator += f"; {device} only ({ops} on other devices not drawn)"
    return {
        "device": device,
        "allocator": allocator,
        "caching": not on_cpu,
        "index": index,
        "allocated": allocated,
        "reserved": reserved,
        "peak": peak,
        "peak_bytes": top,
        "peak_index": measured[peak_at]["index"],
        "backward_start": backward,
        "stride": stride,
    }


def _timeline_device(measured: list[dict]) -> str:
    """The device whose memory the timeline draws: the CUDA device with the most ops, or the
    CPU when no op ran on CUDA (live bytes of different devices do not add up)."""
    counts: dict[str, int] = {}
    for row in measured:
        if row["device"] != "cpu":
            counts[row["device"]] = counts.get(row["device"], 0) + 1
    return max(counts, key=counts.__getitem__) if counts else "cpu"


def _bucket_max(values: list, stride: int) -> list:
    """The largest known value of each run of ``stride`` values (None if none is known)."""
    out = []
    for start in range(0, len(values), stride):
        known = [v for v in values[start : start + stride] if v is not None]
        out.append(max(known) if known else None)
    return out


# ------------------------------------------------------------------- allocator block view
def block_view(
    snapshot: dict, *, max_points: int = MAX_POINTS, max_blocks: int = MAX_BLOCKS
) -> dict:
    """The caching allocator's blocks from a ``tk.cuda.memory._snapshot()``-style dict.

    Each block (an address on a device) moves between ``in_use`` (an ``alloc``), ``cached``
    (a ``free``: back in the pool, still reserved) and ``returned`` (a ``segment_free``
    covering it: given back to the device); an ``alloc`` reusing a cached address takes its
    new size. ``history`` lists ``[event number, state, size]``; the
    ``timeline`` gives in-use, cached and reserved bytes after each event (bucketed to
    ``max_points``). Blocks still live in ``snapshot["blocks"]`` but absent from the traces
    were allocated before recording began and show as in use from event 0. At most
    ``max_blocks`` blocks are kept (the largest); ``omitted_blocks`` counts the rest.
    """
    events, live_blocks = _snapshot_events(snapshot)
    blocks: dict[tuple[int, int], dict] = {}
    held = dict.fromkeys(("new", "in_use", "cached", "returned"), 0)  # bytes per state
    reserved = 0
    timeline: dict[str, list] = {"event": [], "in_use": [], "cached": [], "reserved": []}
    ooms = []

    def move(key: tuple[int, int], event: dict, state: str, number: int, resize: bool) -> None:
        block = blocks.get(key)
        if block is None:  # first seen: made now, or (a free) allocated before recording
            block = blocks[key] = _block(event)
        held[block["state"]] -= block["size"]
        if resize:
            block.update(size=event["size"], op=event.get("op"), call_site=event.get("call_site"))
        held[state] += block["size"]
        block["state"] = state
        block["history"].append([number, state, block["size"]])

    for number, event in enumerate(events):
        action, key, size = event["action"], (event["device"], event["addr"]), event["size"]
        if action == "segment_alloc":
            reserved += size
        elif action == "alloc":
            move(key, event, "in_use", number, resize=True)
        elif action in _FREE_ACTIONS:
            move(key, event, "cached", number, resize=False)
        elif action in _RETURN_ACTIONS:
            reserved -= size
            inside = [
                k
                for k, block in blocks.items()
                if k[0] == key[0] and key[1] <= k[1] < key[1] + size and block["state"] == "cached"
            ]
            for k in inside:
                move(k, event, "returned", number, resize=False)
        elif action == "oom":
            ooms.append({"event": number, "device": event["device"], "size": size})
        timeline["event"].append(number)
        timeline["in_use"].append(held["in_use"])
        timeline["cached"].append(held["cached"])
        timeline["reserved"].append(reserved)
    for live in live_blocks:
        key = (live["device"], live["addr"])
        if key not in blocks:
            move(key, live, "in_use", 0, resize=True)
    every = sorted(blocks.values(), key=lambda b: b["size"], reverse=True)
    kept = sorted(every[:max_blocks], key=lambda b: (b["device"], b["addr"]))
    stride = math.ceil(len(events) / max_points) if events else 1
    if stride > 1:
        timeline = {
            "event": timeline["event"][::stride],
            **{k: _bucket_max(timeline[k], stride) for k in ("in_use", "cached", "reserved")},
        }
    return {
        "events": len(events),
        "devices": sorted({b["device"] for b in every}),
        "blocks": kept,
        "omitted_blocks": len(every) - len(kept),
        "totals": {state: held[state] for state in ("in_use", "cached", "returned")},
        "timeline": {**timeline, "stride": stride},
        "ooms": ooms,
    }


def _block(event: dict) -> dict:
    return {
        "device": event["device"],
        "addr": event["addr"],
        "size": event["size"],
        "state": "new",
        "op": event.get("op"),
        "call_site": event.get("call_site"),
        "history": [],
    }


def _snapshot_events(snapshot: Any) -> tuple[list[dict], list[dict]]:
    """The snapshot's events (oldest first) and live blocks, checked to have the fields the
    view reads; copies, each with its device."""
    if not isinstance(snapshot, dict) or not isinstance(snapshot.get("device_traces"), list):
        raise ValueError(
            "snapshot must be a dict with a 'device_traces' list, as "
            f"tk.cuda.memory._snapshot() returns; got {type(snapshot).__name__}"
        )
    events = []
    for device, trace in enumerate(snapshot["device_traces"]):
        if not isinstance(trace, list):
            raise ValueError(f"snapshot['device_traces'][{device}] must be a list")
        for i, event in enumerate(trace):
            _check_event(event, f"snapshot['device_traces'][{device}][{i}]")
            events.append({**event, "device": event.get("device", device)})
    live_blocks = snapshot.get("blocks", [])
    if not isinstance(live_blocks, list):
        raise ValueError(f"snapshot['blocks'] must be a list, got {type(live_blocks).__name__}")
    for i, live in enumerate(live_blocks):
        _check_event(
            {"action": "alloc", **live} if isinstance(live, dict) else live,
            f"snapshot['blocks'][{i}]",
        )
    return events, [{"device": 0, **live} for live in live_blocks]


def _check_event(event: Any, where: str) -> None:
    if not isinstance(event, dict):
        raise ValueError(f"{where} must be a dict, got {type(event).__name__}")
    if not isinstance(event.get("action"), str):
        raise ValueError(f"{where} needs a string 'action', got {event.get('action')!r}")
    for key in ("addr", "size"):
        value = event.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{where} needs a non-negative int {key!r}, got {value!r}")


# ------------------------------------------------------------------------ graph selection
def selection_links(entries: Any, node_ids: Any) -> dict[str, dict]:
    """How selections map between the profile and a graph of the same Tape.

    ``entries`` are Tape entries or their dicts (their ``records`` hold the profiler index);
    ``node_ids`` the graph's node ids (an op's is ``op<entry index>``). Returns ``node_of``
    (profiler index -> node id: the op's own node, else, for a backward op, its forward op's)
    and ``index_of`` (node id -> profiler index).
    """
    nodes = set(node_ids)
    fields = [
        (e.index, e.records, e.backward_of)
        if hasattr(e, "records")
        else (e["index"], e.get("records") or {}, e.get("backward_of"))
        for e in entries
    ]
    node_of: dict[int, str] = {}
    index_of: dict[str, int] = {}
    for entry, records, backward_of in fields:
        index = records.get("profiler_index")
        if index is None:
            continue
        own = f"op{entry}"
        if own in nodes:
            node_of[index] = own
            index_of[own] = index
        elif backward_of is not None and f"op{backward_of}" in nodes:
            node_of[index] = f"op{backward_of}"
    return {"node_of": node_of, "index_of": index_of}
