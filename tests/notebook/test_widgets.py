"""The notebook widgets: traits equal the data models, the stepper's action protocol, the
bundles' freshness, and saved widget state from a headless run (the recorded view each output
carries: test_mime_bundle.py)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import traitlets
from notebook_kernel import notebook_client

import tensorkit as tk
from tensorkit.notebook import BackwardStepper, build_graph

pytest.importorskip("anywidget", reason="the widgets need anywidget (the notebook extra)")

from tensorkit.notebook import stepper_widget, widgets

ROOT = Path(__file__).resolve().parents[2]


def _model(seed: int = 0) -> tuple[tk.Tensor, tk.autograd.Tape]:
    tk.manual_seed(seed)
    w = tk.randn(3, 2, requires_grad=True)
    b = tk.randn(2, requires_grad=True)
    x = tk.randn(4, 3)
    with tk.autograd.Tape() as tape:
        h = x @ w + b
        loss = (h.tanh() * h).sum()
    return loss, tape


def test_package_imports_without_widgets() -> None:
    code = "import sys, tensorkit.notebook as nb; print('anywidget' in sys.modules, nb.show)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("False ")


def test_graph_widget_traits() -> None:
    loss, tape = _model()
    widget = tk.notebook.show(tape)
    assert isinstance(widget, widgets.GraphWidget)
    assert widget.graph == build_graph(tape)
    assert (widget.selected, widget.collapsed, widget.color_by) == ("", [], "none")
    assert widget.show_backward is True
    assert "tensorkit widgets bundle" in widget._esm
    assert ".tk-node" in widget._css
    assert tk.notebook.show(loss).graph == build_graph(loss)
    for mode in [*widgets.COLOR_MODES, "time", "memory"]:
        widget.color_by = mode
    with pytest.raises(traitlets.TraitError, match=r"color_by must be one of .*got 'rainbow'"):
        widget.color_by = "rainbow"


def test_show_draws_the_gradient_ops_and_opens_large_graphs_folded() -> None:
    loss, tape = _model()
    with tape:
        loss.backward()
    widget = tk.notebook.show(tape)
    assert widget.graph == build_graph(tape, include_backward=True)
    assert any(n["band"] == 1 for n in widget.graph["nodes"])
    assert tk.notebook.show(tape, include_backward=False).graph == build_graph(tape)
    folded = tk.notebook.show(tape, collapse_above=1)
    assert folded.collapsed == folded.graph["collapsed"] != []
    assert widgets.GraphWidget(graph=folded.graph, collapsed=[]).collapsed == []


def test_stepper_actions_match_backward_stepper() -> None:
    loss, _ = _model()
    widget = tk.notebook.step_backward(loss)
    loss_again, _ = _model()
    reference = BackwardStepper(loss_again)
    assert isinstance(widget, stepper_widget.StepperWidget)
    assert widget.graph == build_graph(loss)
    assert widget.state == reference.state()
    for action, expected in [
        ("next", reference.next),
        ("next", reference.next),
        ("previous", reference.previous),
        ("next", reference.next),
        ("reset", reference.reset),
        ("run_to_end", reference.run_to_end),
    ]:
        widget.action = action  # as the front end does
        assert widget.action == ""
        assert widget.state == expected()
    assert widget.state["done"] and widget.state["position"] == 7


def test_stepper_rejects_unknown_action_and_clears_it() -> None:
    loss, _ = _model()
    widget = tk.notebook.step_backward(loss)
    with pytest.raises(ValueError, match="unknown stepper action"):
        widget.action = "jump"
    assert widget.action == "" and widget.state["position"] == 0


def _check_bundle():
    spec = importlib.util.spec_from_file_location(
        "check_bundle", ROOT / "widgets" / "check_bundle.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bundles_match_sources_by_hash() -> None:
    assert _check_bundle().check_hashes() == []


def test_bundle_hash_notices_a_changed_source(tmp_path: Path) -> None:
    check = _check_bundle()
    src = tmp_path / "src"
    src.mkdir()
    for path in check.SRC.iterdir():
        (src / path.name).write_bytes(path.read_bytes())
    assert check.source_hash(src) == check.source_hash()
    (src / "layout.js").write_text("// changed\n", encoding="utf-8")
    assert check.source_hash(src) != check.source_hash()


def test_bundles_match_a_fresh_build() -> None:
    check = _check_bundle()
    if not check.can_rebuild():
        pytest.skip("node or the pinned esbuild is missing (npm --prefix widgets ci)")
    assert check.check_rebuild() == []


NOTEBOOK_CELLS = [
    "import tensorkit as tk\n"
    "tk.manual_seed(0)\n"
    "w = tk.randn(3, 2, requires_grad=True)\n"
    "with tk.autograd.Tape() as tape:\n"
    "    loss = (tk.randn(4, 3) @ w).tanh().sum()\n"
    "graph = tk.notebook.show(tape)\n"
    "graph",
    "stepper = tk.notebook.step_backward(loss)\nstepper.action = 'next'\nstepper",
]


def test_nbclient_saves_widget_state(tmp_path: Path) -> None:
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec("python3")
    except NoSuchKernel:
        pytest.skip("no python3 Jupyter kernel installed")
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell(source) for source in NOTEBOOK_CELLS]
    client = notebook_client(nb, resources={"metadata": {"path": str(ROOT)}})
    client.execute()
    state = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    models = []
    for cell, bundle in zip(nb.cells, ("graph.js", "stepper.js"), strict=True):
        data = cell.outputs[0]["data"]
        model_id = data["application/vnd.jupyter.widget-view+json"]["model_id"]
        assert model_id in state
        model = state[model_id]["state"]
        assert model["_esm"] == (ROOT / "tensorkit/notebook/static" / bundle).read_text()
        assert "tk-recorded-output" in data["text/html"]
        assert "application/vnd.tensorkit.recording+json" in data
        models.append(model)
    assert {n["op"] for n in models[0]["graph"]["nodes"]} >= {"matmul", "tanh", "sum"}
    assert models[1]["state"]["position"] == 1 and models[1]["action"] == ""
    nbformat.validate(nb)
