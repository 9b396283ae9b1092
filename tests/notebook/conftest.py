"""Fixtures shared by the notebook tests."""

from __future__ import annotations

import runpy
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture
def run_script(tmp_path: Path) -> Callable[..., dict]:
    """Run source code as a script of its own (module-level code, as notebook cells and
    scripts run, so that its variables can name the tensors it passes): the file's path is
    ``script.__file__`` in the namespace returned."""
    count = 0

    def run(source: str, **variables: object) -> dict:
        nonlocal count
        count += 1
        path = tmp_path / f"script_{count}.py"
        path.write_text(textwrap.dedent(source), encoding="utf-8")
        return runpy.run_path(str(path), init_globals=variables)

    return run
