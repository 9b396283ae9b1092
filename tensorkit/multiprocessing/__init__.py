"""``tk.multiprocessing``: Python's ``multiprocessing`` with tensors shared, not copied.

Everything ``multiprocessing`` offers is here under the same names (``Process``, ``Queue``,
``Pipe``, ``Pool``, ``get_context``, ``set_start_method``, ...). Once ``install()`` has run
(``import tensorkit`` does it), a CPU tensor sent through a queue, pipe or pool of any start
method travels as a reference to a shared-memory block: it is moved there first, in place, as
``tensor.share_memory_()`` does, and the receiver maps the same memory, so in-place changes
are seen by both. Blocks are reference counted across processes and removed when the last
process holding one drops it or exits.
"""

import multiprocessing as _multiprocessing
from multiprocessing import *  # noqa: F403

from .sharing import install, is_shared, share_memory_

__all__ = [*_multiprocessing.__all__, "install", "is_shared", "share_memory_"]
