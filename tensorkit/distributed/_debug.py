"""TENSORKIT_DISTRIBUTED_DEBUG=DETAIL: before each collective the ranks compare what they are
about to run (the op, its root, each tensor's shape and dtype) with one small all-gather, and
a mismatch raises an error naming every rank's call instead of hanging or mixing buffers."""

from __future__ import annotations

import os
import zlib
from typing import Any

import numpy as np

from ._buffers import describe
from ._work import Work

__all__ = ["check_collective", "debug_level"]

_FINGERPRINT_BYTES = 248  # the text each rank shares, then its CRC32 (8 bytes, 256 in all)


def debug_level() -> str:
    """OFF, INFO or DETAIL, from TENSORKIT_DISTRIBUTED_DEBUG (read at each call)."""
    return os.environ.get("TENSORKIT_DISTRIBUTED_DEBUG", "OFF").upper()


def fingerprint(name: str, tensors: list[Any], **extra: Any) -> str:
    """What a rank is about to run, as text: ``all_reduce(op=SUM) float32[4, 3]``."""
    args = ", ".join(f"{key}={value}" for key, value in extra.items())
    shapes = ", ".join(describe(t) for t in tensors)
    return f"{name}({args}) {shapes}".strip()


def check_collective(pg: Any, name: str, tensors: list[Any], **extra: Any) -> None:
    """In DETAIL mode, raise RuntimeError unless every rank of ``pg`` runs the same call."""
    if debug_level() != "DETAIL":
        return
    mine = fingerprint(name, tensors, **extra)
    record = np.zeros(_FINGERPRINT_BYTES + 8, dtype=np.uint8)
    text = mine.encode()[:_FINGERPRINT_BYTES]
    record[: len(text)] = np.frombuffer(text, dtype=np.uint8)
    record[_FINGERPRINT_BYTES:] = np.frombuffer(
        np.uint64(zlib.crc32(mine.encode())).tobytes(), dtype=np.uint8
    )
    everyone = np.zeros((pg.size(), record.size), dtype=np.uint8)
    mpi = pg.backend if pg.backend.name == "mpi" else pg.backend.bootstrap
    describe = f"debug check before {name} (rank {pg.rank()} of {pg.size()})"
    Work([mpi.all_gather(record, everyone)], None, describe, pg.deadline_s).wait()
    if all((row == record).all() for row in everyone):
        return
    calls = [
        bytes(row[:_FINGERPRINT_BYTES]).rstrip(b"\0").decode(errors="replace") for row in everyone
    ]
    listing = "; ".join(f"rank {pg.ranks[r]} runs {call}" for r, call in enumerate(calls))
    raise RuntimeError(
        f"Detected mismatch between collectives on ranks of group {pg.name}: {listing} "
        f"(TENSORKIT_DISTRIBUTED_DEBUG=DETAIL)"
    )
