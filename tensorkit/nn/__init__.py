"""``tk.nn``: modules, layers, losses, initialization and utilities, with PyTorch's API:

>>> import tensorkit.nn as nn
>>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
>>> loss = nn.functional.cross_entropy(model(x), y)
"""

from . import functional, init, modules, parallel, utils
from .modules import *  # noqa: F403
from .parameter import Buffer, Parameter

__all__ = ["Buffer", "Parameter", "functional", "init", "parallel", "utils"]
__all__ += modules.__all__
