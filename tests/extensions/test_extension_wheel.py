"""The packaging recipe of docs/guide/extensions.md: a tiny project whose C kernel setuptools
builds into a wheel (through cffi's ``cffi_modules`` and ``tk.utils.cpp_extension.ffibuilder``),
offline; the installed wheel's functions take tensors with their checks."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

FILES = {
    "pyproject.toml": """\
[build-system]
requires = ["setuptools", "cffi", "tensorkit"]
build-backend = "setuptools.build_meta"

[project]
name = "tk-double"
version = "0.1.0"
""",
    "setup.py": """\
from setuptools import setup

setup(packages=["tk_double"], cffi_modules=["build_kernels.py:ffibuilder"])
""",
    "build_kernels.py": """\
from tensorkit.utils.cpp_extension import ffibuilder as make_builder

ffibuilder = make_builder("tk_double._kernels", ["csrc/double.c"], ["double_it"])
""",
    "csrc/double.c": """\
#include <stdint.h>

void double_it(int64_t n, const float x[n], float out[n]) {
    for (int64_t i = 0; i < n; i++) out[i] = 2.0f * x[i];
}
""",
    "tk_double/__init__.py": """\
from tensorkit.utils.cpp_extension import load_module

kernels = load_module("tk_double._kernels")
""",
}

USE = """
import re
import tensorkit as tk
import tk_double

x = tk.arange(4, dtype=tk.float32)
out = tk.empty(4)
tk_double.kernels.double_it(4, x, out)
print(out.tolist())
try:
    tk_double.kernels.double_it(4, x, tk.empty(3))
except ValueError as error:
    print(error)
"""


@pytest.mark.slow
def test_a_wheel_is_built_offline_and_its_functions_take_tensors(tmp_path: Path) -> None:
    pytest.importorskip("cffi")
    project = tmp_path / "project"
    for name, text in FILES.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PIP_NO_INDEX": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path / "dist"),
            str(project),
        ],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    (wheel,) = (tmp_path / "dist").glob("tk_double-0.1.0-*.whl")
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        archive.extractall(site)
    assert any(n.startswith("tk_double/_kernels") and n.endswith(".so") for n in names)
    env["PYTHONPATH"] = f"{site}{os.pathsep}{ROOT}"
    result = subprocess.run(
        [sys.executable, "-c", USE],
        cwd=tmp_path,
        check=True,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.stdout.splitlines() == [
        "[0.0, 2.0, 4.0, 6.0]",
        "double_it(): argument 'out' (position 3) must have shape out[n] (n=4), got [3]",
    ]
