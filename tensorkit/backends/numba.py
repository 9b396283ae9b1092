"""``tk.backends.numba``: whether host ops use their compiled loops (numba, the ``jit`` extra).

``enabled`` (True): a convolution's input gradient (``col2im``) on NumPy float32 and float64
arrays runs as a compiled loop, with the same sums as the NumPy form it replaces (see
``_backend/col2im.py``); False runs the NumPy form. ``is_available()`` says whether numba is
installed. tk.jit's fused kernels have their own switch, ``tk.jit.config.fuse_elementwise``.
"""

from __future__ import annotations

import sys

from .._backend import col2im as _col2im
from ._flags import FlagModule, switch

__all__ = ["is_available"]  # and the switch

is_available = _col2im.is_available


class _NumbaModule(FlagModule):
    enabled = switch("enabled", "set_enabled_numba", _col2im.enabled, _col2im.set_enabled)


sys.modules[__name__].__class__ = _NumbaModule
