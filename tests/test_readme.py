"""The README's example runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import tensorkit as tk

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_example_runs(capsys):
    code = re.search(r"```python\n(.*?)```", README.read_text(), re.S).group(1)
    namespace: dict = {}
    exec(compile(code, str(README), "exec"), namespace)  # the project's own README
    printed = capsys.readouterr().out
    assert "fwd matmul(1x3, 3x2) -> 1x2" in printed
    assert "AccumulateGrad" in printed
    assert isinstance(namespace["w"].grad, tk.Tensor) and namespace["w"].grad.shape == (3, 2)
