"""``ReduceOp``: how a reduction collective combines the ranks' tensors (torch's names)."""

from __future__ import annotations

import enum

__all__ = ["ReduceOp"]


class ReduceOp(enum.Enum):
    """SUM, AVG, PRODUCT, MIN, MAX, as ``torch.distributed.ReduceOp``."""

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"

    def __repr__(self) -> str:
        return f"<RedOpType.{self.name}: {list(ReduceOp).index(self)}>"


COMPLEX_OPS = (ReduceOp.SUM, ReduceOp.AVG, ReduceOp.PRODUCT)
