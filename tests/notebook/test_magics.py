"""The IPython extension: ``%%tape``, ``%%profile`` and ``%gradcheck`` in a headless shell."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("IPython")

from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

import tensorkit as tk
from tensorkit.autograd.tape import Tape

SETUP = """
import tensorkit as tk
x = tk.tensor([1.0, 2.0, 3.0], dtype=tk.float64, requires_grad=True)
"""


@pytest.fixture
def shell() -> Iterator[Any]:
    """The shared shell with the extension loaded; its namespace is restored afterwards."""
    ip = InteractiveShell.instance()
    before = dict(ip.user_ns)
    ip.run_line_magic("load_ext", "tensorkit.notebook")
    ip.run_cell(SETUP)
    try:
        yield ip
    finally:
        ip.run_line_magic("unload_ext", "tensorkit.notebook")
        ip.user_ns.clear()
        ip.user_ns.update(before)


def test_load_ext_registers_magics(shell: Any) -> None:
    magics = shell.magics_manager.magics
    assert {"tape", "profile"} <= set(magics["cell"])
    assert "gradcheck" in magics["line"]


def test_unload_ext_removes_magics() -> None:
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "tensorkit.notebook")
    ip.run_line_magic("unload_ext", "tensorkit.notebook")
    assert "tape" not in ip.magics_manager.magics["cell"]
    assert "gradcheck" not in ip.magics_manager.magics["line"]


def test_tape_cell_stores_and_displays(shell: Any) -> None:
    with capture_output() as captured:
        shell.run_cell_magic("tape", "", "y = (x * 2).sum()")
    tape = shell.user_ns["_tape"]
    assert isinstance(tape, Tape)
    assert [e.name for e in tape.entries] == ["mul", "sum"]
    assert shell.user_ns["y"].item() == 12.0
    assert captured.outputs, "the magic displays the tape"


def test_tape_name_option(shell: Any) -> None:
    with capture_output():
        shell.run_cell_magic("tape", "--name my_tape", "z = x.exp()")
    assert [e.name for e in shell.user_ns["my_tape"].entries] == ["exp"]
    assert "_tape" not in shell.user_ns


def test_tape_falls_back_to_text_without_anywidget(
    shell: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "tensorkit.notebook.widgets", None)  # import fails
    with capture_output() as captured:
        shell.run_cell_magic("tape", "", "y = x * 3")
    text = captured.outputs[0].data["text/plain"]
    assert text == shell.user_ns["_tape"].to_text()
    assert "mul" in text


def test_profile_cell_stores_events_and_shows_the_linked_view(shell: Any) -> None:
    pytest.importorskip("anywidget")
    with capture_output() as captured:
        shell.run_cell_magic("profile", "", "y = (x * x).sum()")
    prof = shell.user_ns["_prof"]
    assert isinstance(prof, tk.profiler.profile)
    events = prof.events()
    assert [e["name"] for e in events] == ["mul", "sum"]
    assert events[0]["input_shapes"][0] == [3]
    assert events[0]["call_site"] and events[0]["alloc_bytes"] == 24  # 3 float64 values
    assert [e.name for e in shell.user_ns["_prof_tape"].entries] == ["mul", "sum"]
    shown = captured.outputs[0].data
    assert "application/vnd.jupyter.widget-view+json" in shown
    assert shown["application/vnd.tensorkit.recording+json"]["profile"]["total_ops"] == 2


def test_profile_falls_back_to_the_table_without_anywidget(
    shell: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "tensorkit.notebook.profile_widget", None)  # import fails
    with capture_output() as captured:
        shell.run_cell_magic("profile", "", "y = (x * x).sum()")
    table = captured.outputs[0].data["text/plain"]
    assert "Self CPU" in table and "mul" in table


def test_profile_name_option(shell: Any) -> None:
    with capture_output():
        shell.run_cell_magic("profile", "--name p", "y = x.exp()")
    assert [e["name"] for e in shell.user_ns["p"].events()] == ["exp"]
    assert [e.name for e in shell.user_ns["p_tape"].entries] == ["exp"]


def test_gradcheck_passes(shell: Any) -> None:
    shell.run_cell("f = lambda a: (a * a).sin()")
    with capture_output() as captured:
        ok = shell.run_line_magic("gradcheck", "(f, (x,))")
    assert ok is True
    assert captured.stdout.strip() == "gradcheck passed"


def test_gradcheck_reports_wrong_backward(shell: Any) -> None:
    shell.run_cell(
        "class Square(tk.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, a):\n"
        "        ctx.save_for_backward(a)\n"
        "        return a * a\n"
        "    @staticmethod\n"
        "    def backward(ctx, grad):\n"
        "        (a,) = ctx.saved_tensors\n"
        "        return grad * a  # planted bug: should be 2 * a\n"
    )
    with capture_output() as captured:
        ok = shell.run_line_magic("gradcheck", "(Square.apply, x)")
    assert ok is False
    assert "gradcheck failed: Jacobian mismatch" in captured.stdout
    assert "Traceback" not in captured.stdout + captured.stderr


def test_gradcheck_bad_expression_is_reported(shell: Any) -> None:
    with capture_output() as captured:
        assert shell.run_line_magic("gradcheck", "undefined_name") is False
        assert shell.run_line_magic("gradcheck", "x") is False
    assert "NameError" in captured.stdout
    assert "(function, inputs) pair" in captured.stdout


def test_notebook_import_stays_free_of_ipython() -> None:
    code = (
        "import sys, tensorkit.notebook as nb; nb.load_ipython_extension; "
        "print('IPython' in sys.modules, 'anywidget' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
