"""``tk.multiprocessing``: Python's ``multiprocessing`` with tensors shared, not copied.

Everything ``multiprocessing`` offers is here under the same names (``Process``, ``Queue``,
``Pipe``, ``Pool``, ``get_context``, ``set_start_method``, ...). Once ``install()`` has run
(``import tensorkit`` does it), a CPU tensor sent through a queue, pipe or pool of any start
method travels as a reference to a shared-memory block: it is moved there first, in place, as
``tensor.share_memory_()`` does, and the receiver maps the same memory, so in-place changes
are seen by both. Blocks are reference counted across processes and removed when the last
process holding one drops it or exits. ``spawn``/``start_processes`` run ``fn(i, *args)`` in
``nprocs`` processes and raise the first failure, with its traceback, as PyTorch's do.
"""

import multiprocessing as _multiprocessing
from multiprocessing import *  # noqa: F403

from .sharing import (
    get_all_sharing_strategies,
    get_sharing_strategy,
    install,
    is_shared,
    set_sharing_strategy,
    share_memory_,
)
from .spawn import (
    ProcessContext,
    ProcessException,
    ProcessExitedException,
    ProcessRaisedException,
    spawn,
    start_processes,
)

__all__ = [
    *_multiprocessing.__all__,
    "install",
    "is_shared",
    "share_memory_",
    "get_all_sharing_strategies",
    "get_sharing_strategy",
    "set_sharing_strategy",
    "ProcessContext",
    "ProcessException",
    "ProcessExitedException",
    "ProcessRaisedException",
    "spawn",
    "start_processes",
]
