"""The README as a newcomer follows it: its examples run as written, every command it gives
works from a fresh clone (make targets that exist, the project's .venv/bin/python, never a bare
``python`` that has no tensorkit), its GPU example runs on a CUDA device, and its links
resolve."""

from __future__ import annotations

import re
import types
from pathlib import Path

import numpy as np
import pytest
from cuda_standin import install

import tensorkit as tk

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
TEXT = README.read_text()
PYTHON_BLOCKS = re.findall(r"```python\n(.*?)```", TEXT, re.S)
COMMANDS = re.findall(r"`([^`\n]+)`", TEXT) + re.findall(r"^\$ (.+)$", TEXT, re.M)


def _run_block(code: str) -> dict:
    namespace: dict = {}
    exec(compile(code, str(README), "exec"), namespace)  # the project's own README
    return namespace


def test_readme_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    namespace = _run_block(PYTHON_BLOCKS[0])
    printed = capsys.readouterr().out
    assert "fwd matmul(1x3, 3x2) -> 1x2" in printed
    assert "AccumulateGrad" in printed
    assert isinstance(namespace["w"].grad, tk.Tensor) and namespace["w"].grad.shape == (3, 2)


def test_readme_gpu_example_runs_on_a_cuda_device(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (block,) = [code for code in PYTHON_BLOCKS if 'device="cuda"' in code]
    fake = install(monkeypatch, numpy_backed=True)  # a NumPy-backed stand-in for CuPy and a GPU
    # CuPy's generator for tk.randn on the device: NumPy's Generator with its own bit generator
    random = types.SimpleNamespace(Generator=np.random.Generator, XORWOW=np.random.PCG64)
    monkeypatch.setattr(fake, "random", random, raising=False)
    namespace = _run_block(block)
    first, result = capsys.readouterr().out.splitlines()
    assert first == "True 1"
    assert result.endswith(" cuda:0") and float(result.split()[0]) > 0  # a sum of ReLUs
    assert namespace["x"].device == tk.device("cuda:0") and namespace["back"].device.type == "cpu"


def test_readme_gpu_example_is_harmless_without_a_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    if tk.cuda.is_available():
        pytest.skip("this machine has a GPU")
    (block,) = [code for code in PYTHON_BLOCKS if 'device="cuda"' in code]
    _run_block(block)
    assert capsys.readouterr().out == "False 0\n"


def _make_targets() -> set[str]:
    makefile = (ROOT / "Makefile").read_text()
    rules = re.findall(r"^([\w. -]+?)\s*:(?!=)", makefile, re.M)
    return {target for rule in rules for target in rule.split()}


def test_every_make_command_is_a_target() -> None:
    commands = [c for c in COMMANDS if c.startswith("make ")]
    assert {"make run", "make test", "make lab", "make charlm", "make sine"} <= set(commands)
    targets = _make_targets()
    for command in commands:
        words = [w for w in command.split()[1:] if "=" not in w]
        assert words and set(words) <= targets, command


def test_python_commands_use_the_projects_environment() -> None:
    runs = [c for c in COMMANDS if re.search(r"(^|\s)(python3?|\S+/python3?) -m ", c)]
    assert runs, "the README names no python command"
    for command in runs:
        assert command.split()[0] == ".venv/bin/python", command
    assert ".venv/bin/python -m tensorkit.examples.charlm --help" in COMMANDS


def test_the_cuda_extra_it_installs_exists() -> None:
    assert ".venv/bin/python -m pip install -e '.[cuda]'" in COMMANDS
    pyproject = (ROOT / "pyproject.toml").read_text()  # (tomllib is Python 3.11+)
    assert re.search(r'^cuda = \["cupy-cuda12x[^"]*"\]$', pyproject, re.M)


def test_make_lab_text_matches_the_makefile() -> None:
    makefile = (ROOT / "Makefile").read_text()
    port = re.search(r"^LAB_PORT \?= (\d+)$", makefile, re.M).group(1)
    assert f"http://127.0.0.1:{port}/lab/tree/notebooks/01_tour.ipynb?token=..." in TEXT
    assert f"ssh -N -L {port}:localhost:{port} you@the-remote-machine" in COMMANDS
    assert "TOUR := notebooks/01_tour.ipynb" in makefile


def test_links_and_named_files_exist() -> None:
    links = re.findall(r"\]\(([^)#]+)\)", TEXT)
    local = [link for link in links if not link.startswith("http")]
    assert "docs/guide/gpu.md" in local
    for link in local:
        assert (ROOT / link).exists(), link
    for named in ("scripts/gpu_check.sh", "notebooks/01_tour.ipynb", ".venv/bin/python"):
        assert named in TEXT
    assert (ROOT / "scripts/gpu_check.sh").exists() and (ROOT / "notebooks/01_tour.ipynb").exists()
