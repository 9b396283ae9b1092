"""``make lab`` as a newcomer meets it: it prints the tour notebook's own URL (which the server
answers), says that the server listens on localhost, and how to forward its port over SSH.

It runs the Makefile's lab target with this Python's environment as the venv (``-o`` keeps
make from reinstalling into it), on a free port, with Jupyter's folders in a temporary one.
"""

from __future__ import annotations

import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("jupyterlab", reason="make lab needs the notebook extra")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("make") is None or os.name != "posix", reason="needs make"),
]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _get(url: str, deadline: float) -> tuple[int, str]:
    """GET ``url``, retrying while the server is not yet accepting connections (Jupyter prints
    its URL a moment before it listens), until ``deadline``."""
    while True:
        try:
            with urllib.request.urlopen(url, timeout=30) as response:
                return response.status, response.read().decode()
        except urllib.error.URLError as error:
            if not isinstance(error.reason, ConnectionRefusedError) or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_make_lab_prints_the_tours_url_and_how_to_reach_it(tmp_path: Path) -> None:
    port = _free_port()
    venv = sys.prefix
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        "JUPYTER_DATA_DIR": str(tmp_path / "data"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"),
        "JUPYTER_PLATFORM_DIRS": "1",
    }
    command = [
        "make",
        "--no-print-directory",
        "-o",
        f"{venv}/.base",
        "lab",
        f"VENV={venv}",
        f"LAB_PORT={port}",
        "LAB_ARGS=--no-browser --allow-root",
    ]
    server = subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group, so the server goes with make
    )
    output = b""
    url_pattern = rf"http://127\.0\.0\.1:{port}/lab/tree/notebooks/01_tour\.ipynb\?token=\w+"
    try:
        deadline = time.monotonic() + 120
        url = None
        while url is None and time.monotonic() < deadline and server.poll() is None:
            ready, _, _ = select.select([server.stdout], [], [], 1.0)
            if ready:
                output += os.read(server.stdout.fileno(), 65536)
                found = re.search(url_pattern, output.decode(errors="replace"))
                url = found and found.group(0)
        text = output.decode(errors="replace")
        assert url, f"no tour URL in make lab's output:\n{text[-3000:]}"
        status, page = _get(url, deadline)
        assert status == 200 and "JupyterLab" in page
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=30)
    assert f"The server listens on localhost only (127.0.0.1:{port})" in text
    assert f"ssh -N -L {port}:localhost:{port} you@the-remote-machine" in text
    assert "/lab/tree/notebooks/01_tour.ipynb?token=..." in text  # said before the server starts
