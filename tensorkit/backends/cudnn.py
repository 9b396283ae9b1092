"""``tk.backends.cudnn``: whether CUDA convolutions, pooling and batch norm use cuDNN.

``enabled`` (True), ``benchmark`` (False: cuDNN's heuristics pick the algorithms; True: they
are timed once per shape, CuPy's ``auto_tune``), ``deterministic`` (False; True asks for
deterministic backward algorithms and max pooling) and ``allow_tf32`` (True, PyTorch's
default; False keeps float32 convolutions on the im2col path, as CuPy's bindings cannot stop
cuDNN from using TF32 on Ampere and later). ``is_available()`` is False without CuPy's cuDNN
bindings (CuPy v14 removed them) or the cuDNN library.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from .._backend import cudnn as _cudnn
from ._flags import FlagModule, switch

__all__ = ["flags", "is_available", "version"]  # and the four switches

is_available = _cudnn.is_available
version = _cudnn.version


@contextmanager
def flags(
    enabled: bool = False,
    benchmark: bool = False,
    deterministic: bool = False,
    allow_tf32: bool = True,
) -> Iterator[None]:
    """Set all four switches for a block (PyTorch's defaults for the arguments), then restore
    them."""
    module = sys.modules[__name__]
    saved = dict(_cudnn.FLAGS)
    try:
        for name, value in (
            ("enabled", enabled),
            ("benchmark", benchmark),
            ("deterministic", deterministic),
            ("allow_tf32", allow_tf32),
        ):
            setattr(module, name, value)
        yield
    finally:
        _cudnn.FLAGS.update(saved)


def _flag(name: str, setter: str) -> property:
    return switch(
        name,
        setter,
        lambda: _cudnn.FLAGS[name],
        lambda value: _cudnn.FLAGS.__setitem__(name, value),
    )


class _CudnnModule(FlagModule):
    enabled = _flag("enabled", "set_enabled_cudnn")
    benchmark = _flag("benchmark", "set_benchmark_cudnn")
    deterministic = _flag("deterministic", "set_deterministic_cudnn")
    allow_tf32 = _flag("allow_tf32", "set_allow_tf32_cudnn")


sys.modules[__name__].__class__ = _CudnnModule
