"""``tk.nn.parallel``: DistributedDataParallel, over ``tk.distributed``."""

from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
