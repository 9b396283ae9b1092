"""Call sites as the user knows them ("cell [3], line 2", "train.py:14") and inputs named by
the expressions at their call sites, in a real IPython shell too."""

from __future__ import annotations

import gc
import inspect
import os
import re
import sys
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tensorkit as tk
from tensorkit._callsite import call_site_info, display_site
from tensorkit.notebook import build_graph
from tensorkit.notebook.profile_model import build_profile
from tensorkit.notebook.recording_html import to_html

HERE = os.path.relpath(__file__)


def _line(marker: str, function: Any) -> int:
    source, start = inspect.getsourcelines(function)
    return start + next(i for i, text in enumerate(source) if marker in text)


def test_files_inside_the_working_directory_are_shown_relative(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "project" / "train.py"
    monkeypatch.chdir(tmp_path)
    assert display_site(f"{script}:14") == os.path.join("project", "train.py") + ":14"
    monkeypatch.chdir(tmp_path / "..")
    assert display_site(f"{script}:14") == f"{os.path.relpath(script)}:14"
    outside = tmp_path.parent / "elsewhere.py"
    monkeypatch.chdir(tmp_path)
    assert display_site(f"{outside}:3") == f"{outside}:3", "outside the cwd: the full path"
    assert call_site_info(f"{script}:14") == {
        "site": f"{script}:14",
        "file": str(script),
        "line": 14,
        "cell": None,
        "display": os.path.join("project", "train.py") + ":14",
    }


def test_pseudo_files_and_sites_without_a_line_are_shown_as_they_are() -> None:
    assert display_site("<string>:3") == "<string>:3"
    assert display_site("no line here") == "no line here"
    assert display_site(None) is None and call_site_info(None) is None
    assert call_site_info("odd:site")["line"] is None


def test_kernel_cells_never_show_the_kernel_s_file_name() -> None:
    unknown = "/tmp/ipykernel_4242/2279561458.py:2"  # a cell of a kernel not running here
    assert display_site(unknown) == "notebook cell, line 2"
    assert call_site_info(unknown)["cell"] is None
    assert display_site("<ipython-input-4-6f1d0c2b>:7") == "cell [4], line 7"
    assert display_site(r"C:\Temp\ipykernel_17\99.py:5") == "notebook cell, line 5"


@pytest.fixture
def shell() -> Iterator[Any]:
    """The shared IPython shell (its namespace and compiler restored afterwards)."""
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    before, compiler = dict(ip.user_ns), ip.compile
    ip.run_cell("import tensorkit as tk\nfrom tensorkit.notebook import build_graph")
    try:
        yield ip
    finally:
        ip.compile = compiler
        ip.user_ns.clear()
        ip.user_ns.update(before)


def _run(shell: Any, code: str) -> int:
    """Run ``code`` as the next numbered cell; its execution count."""
    number = shell.execution_count
    result = shell.run_cell(code, store_history=True)
    result.raise_error()
    return number


CELL = """\
images = tk.randn(2, 3)
model = tk.nn.Sequential(tk.nn.Linear(3, 1))
with tk.autograd.Tape() as tape:
    out = model(images).sum()
"""


@pytest.mark.parametrize("compiler", ["IPython", "ipykernel"])
def test_ops_run_in_a_cell_show_the_cell_and_line(shell: Any, compiler: str) -> None:
    if compiler == "ipykernel":
        xcompiler = pytest.importorskip("ipykernel.compiler")
        shell.compile = xcompiler.XCachingCompiler()  # /tmp/ipykernel_<pid>/<hash>.py files
    _run(shell, "x = 1")
    number = _run(shell, CELL)
    tape = shell.user_ns["tape"]
    graph = build_graph(tape)
    sites = {n["call_site"]["display"] for n in graph["nodes"] if n["kind"] == "op"}
    assert sites == {f"cell [{number}], line 4"}
    site = next(n["call_site"] for n in graph["nodes"] if n["kind"] == "op")
    assert site["cell"] == number and site["line"] == 4
    if compiler == "ipykernel":
        assert re.search(r"ipykernel_\d+", site["file"])
    text = tape.to_text()
    assert f"cell [{number}], line 4" in text and site["file"] not in text
    labels = {n["label"] for n in graph["nodes"] if n["kind"] == "tensor"}
    assert labels == {"images", "0.weight", "0.bias"}, "inputs by the cell's variable names"


def test_inputs_are_named_by_names_attribute_chains_and_subscripts(run_script: Any) -> None:
    script = run_script(
        """
        from types import SimpleNamespace
        import tensorkit as tk

        batch = SimpleNamespace(images=tk.randn(2), extra={"mask": tk.ones(2)})
        inputs = [tk.randn(2), tk.randn(2), tk.randn(2)]
        i = 1
        with tk.autograd.Tape() as tape:
            a = batch.images * inputs[0]
            b = a + inputs[i] * batch.extra["mask"] + inputs[-1]
            (b * tk.randn(2)).sum()
        """
    )
    graph = build_graph(script["tape"])
    assert [n["label"] for n in graph["nodes"] if n["kind"] == "tensor"] == [
        "batch.images",
        "inputs[0]",
        "inputs[i]",
        'batch.extra["mask"]',
        "inputs[-1]",
        "tensor",  # made inline: no name
    ]


def test_module_members_used_outside_the_module_are_named_by_the_expression(
    run_script: Any,
) -> None:
    script = run_script(
        """
        import tensorkit as tk

        layer = tk.nn.Linear(2, 2)
        x = tk.randn(1, 2)
        with tk.autograd.Tape() as tape:
            y = x @ layer.weight.T
        """
    )
    assert sorted(script["tape"].tensor_names.values()) == ["layer.weight", "x"]


HOLDER = """
import tensorkit as tk


class Holder:
    def __init__(self):
        self.reads = 0
        self._value = tk.randn(2)

    @property
    def value(self):
        self.reads += 1
        return self._value


holder = Holder()
with tk.autograd.Tape() as tape:
    (holder.value * 2.0).sum()
"""


def test_naming_runs_no_code_of_the_user_s(run_script: Any) -> None:
    script = run_script(HOLDER)
    assert script["holder"].reads == 1, "the property ran once: for the op, not for the name"
    assert list(script["tape"].tensor_names.values()) == []


def test_statements_over_several_lines_are_read_whole(run_script: Any) -> None:
    script = run_script(
        """
        import tensorkit as tk

        left, right = tk.randn(2), tk.randn(2)
        with tk.autograd.Tape() as tape:
            tk.add(
                left,
                right,
            )
        """
    )
    assert sorted(script["tape"].tensor_names.values()) == ["left", "right"]


def test_a_model_s_input_is_named_as_its_caller_wrote_it(run_script: Any) -> None:
    script = run_script(
        """
        import tensorkit as tk


        class Net(tk.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = tk.nn.Linear(2, 1)

            def forward(self, x):
                return self.fc(x).relu()


        net = Net()
        images = tk.randn(3, 2)
        with tk.autograd.Tape() as tape:
            net(images).sum()
        """
    )
    assert sorted(script["tape"].tensor_names.values()) == ["fc.bias", "fc.weight", "images"]


def _recorded_in_a_function() -> tuple[tk.autograd.Tape, Any]:
    local_input = tk.randn(2)
    with tk.autograd.Tape() as tape:
        (local_input * 2.0).sum()
    return tape, weakref.ref(local_input)


def test_a_function_s_local_variables_count_only_where_reading_them_keeps_nothing() -> None:
    tape, ref = _recorded_in_a_function()
    gc.collect()
    assert ref() is None, "naming left no reference to the function's variables"
    expected = ["local_input"] if sys.version_info >= (3, 13) else []
    assert list(tape.tensor_names.values()) == expected


def _inplace_error() -> None:
    x = tk.randn(3, requires_grad=True)
    y = x.exp()
    y.add_(1.0)  # MARK-INPLACE
    y.sum().backward()


def test_in_place_errors_show_the_call_site_as_the_graph_does() -> None:
    line = _line("MARK-INPLACE", _inplace_error)
    with pytest.raises(RuntimeError, match=f"by add_ at {re.escape(HERE)}:{line}\\."):
        _inplace_error()


def test_profile_rows_and_recording_tables_show_the_display_text(tmp_path: Path) -> None:
    x = tk.randn(3, requires_grad=True)
    with tk.profiler.profile(with_stack=True) as prof, tk.autograd.Tape() as tape:
        y = (x * 2.0).sum()  # MARK-PROFILED
    line = _line("MARK-PROFILED", test_profile_rows_and_recording_tables_show_the_display_text)
    assert y.item() == pytest.approx(2.0 * x.sum().item())
    rows = build_profile(prof)["rows"]
    assert rows and {r["call_site"] for r in rows} == {f"{HERE}:{line}"}
    page = to_html(tape, tmp_path / "page.html").read_text(encoding="utf-8")
    assert f"<td>{HERE}:{line}<pre>" in page
