"""``merge_traces``: the Chrome traces of several ranks as one, a process track per rank."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["merge_traces"]


def merge_traces(paths: Sequence[str | Path], path: str | Path | None = None) -> dict[str, Any]:
    """Merge traces written by ``profile.export_chrome_trace`` on each rank into one
    document (written to ``path`` when given): every event moves to the process track of its
    rank (``pid`` = rank, named "rank R"), its time shifted onto a common clock, the host
    clock read at each profile's start (comparable across processes of one machine)."""
    documents = [json.loads(Path(p).read_text(encoding="utf-8")) for p in paths]
    if not documents:
        raise ValueError("merge_traces needs at least one trace")
    starts = [doc.get("otherData", {}).get("start_ns") for doc in documents]
    if any(start is None for start in starts):
        missing = [str(p) for p, start in zip(paths, starts, strict=True) if start is None]
        raise ValueError(f"traces without otherData.start_ns (not tensorkit's?): {missing}")
    origin = min(starts)
    events: list[dict[str, Any]] = []
    ranks = []
    for index, (doc, start) in enumerate(zip(documents, starts, strict=True)):
        rank = int(doc["otherData"].get("rank", index))
        ranks.append(rank)
        shift_us = (start - origin) / 1e3
        events.append(
            {"ph": "M", "name": "process_name", "pid": rank, "args": {"name": f"rank {rank}"}}
        )
        events.append(
            {"ph": "M", "name": "process_sort_index", "pid": rank, "args": {"sort_index": rank}}
        )
        for event in doc["traceEvents"]:
            moved = {**event, "pid": rank}
            if "ts" in moved:
                moved["ts"] = moved["ts"] + shift_us
            events.append(moved)
    if len(set(ranks)) != len(ranks):
        raise ValueError(f"merge_traces got several traces of the same rank: ranks {ranks}")
    merged = {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {"ranks": ranks, "start_ns": origin, "sources": [str(p) for p in paths]},
    }
    if path is not None:
        Path(path).write_text(json.dumps(merged), encoding="utf-8")
    return merged
