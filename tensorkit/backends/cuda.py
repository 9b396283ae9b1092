"""``tk.backends.cuda``: ``matmul.allow_tf32``, TF32 for float32 CUDA matmuls.

False by default, as in PyTorch since 1.12. It is the float32 matmul precision seen as a bool:
True sets it to "high", False to "highest" (``tk.set_float32_matmul_precision``), and it reads
True for "high" and "medium".
"""

from __future__ import annotations

import sys
from importlib.machinery import ModuleSpec

from .._backend import precision
from ._flags import FlagModule, switch

__all__ = ["matmul"]


class _MatmulModule(FlagModule):
    allow_tf32 = switch(
        "allow_tf32",
        "set_allow_tf32_cublas",
        lambda: precision.get_float32_matmul_precision() != "highest",
        lambda value: precision.set_float32_matmul_precision("high" if value else "highest"),
    )


matmul = _MatmulModule(f"{__name__}.matmul", "``allow_tf32``: TF32 for float32 CUDA matmuls.")
matmul.__spec__ = ModuleSpec(matmul.__name__, None)  # importable by name, as in torch
sys.modules[matmul.__name__] = matmul
