"""``tk.backends``: the switches of the libraries under tensorkit, as ``torch.backends``.

- ``tk.backends.cudnn``: ``enabled``, ``benchmark``, ``deterministic``, ``allow_tf32``,
  ``is_available()``, ``version()`` and ``flags(...)``.
- ``tk.backends.cuda.matmul.allow_tf32``: TF32 for float32 CUDA matmuls (default False; the
  same switch as ``tk.set_float32_matmul_precision``).
- ``tk.backends.numba``: ``enabled`` and ``is_available()`` for the host ops' compiled loops.
"""

from . import cuda, cudnn, numba

__all__ = ["cuda", "cudnn", "numba"]
