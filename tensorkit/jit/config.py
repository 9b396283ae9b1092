"""tk.jit's settings: ``tk.jit.config`` (torch._dynamo.config's names where torch has one)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Config", "config"]


@dataclass
class Config:
    """``cache_size_limit``: guard sets per function before it runs eagerly;
    ``fuse_elementwise``: whether the passes fuse elementwise ops into generated kernels
    (off: every op replays on its own, a way to tell a kernel's fault from the graph's)."""

    cache_size_limit: int = 8
    fuse_elementwise: bool = True


config = Config()
