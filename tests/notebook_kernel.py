"""An nbclient NotebookClient whose kernel talks over IPC sockets rather than TCP ports.

jupyter_client picks free TCP ports by binding and releasing them; the kernel binds them a
moment later, and a kernel or server started in between by another test worker can take one
(the kernel dies with "ZMQError: Address already in use"). Unix sockets in a directory of
their own cannot collide; the directory goes when the client does.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any


def notebook_client(nb: Any, **options: Any) -> Any:
    """``nbclient.NotebookClient(nb, timeout=120, **options)`` on a python3 kernel over IPC."""
    import nbclient
    from jupyter_client import KernelManager

    sockets = tempfile.TemporaryDirectory(prefix="tk-kernel-")  # short: unix paths are limited
    manager = KernelManager(
        kernel_name="python3", transport="ipc", ip=str(Path(sockets.name) / "kernel")
    )
    client = nbclient.NotebookClient(nb, km=manager, timeout=120, kernel_name="python3", **options)
    client.socket_directory = sockets  # removed when the client is collected
    return client
