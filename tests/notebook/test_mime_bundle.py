"""Every widget output carries its recorded view: the recording as
application/vnd.tensorkit.recording+json and a self-contained text/html that draws it."""

from __future__ import annotations

import base64
import gzip
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import tensorkit as tk

pytest.importorskip("anywidget")

from tensorkit.notebook import recorded
from tensorkit.notebook.replay_widget import ReplayWidget

ROOT = Path(__file__).resolve().parents[2]
MIME = "application/vnd.tensorkit.recording+json"


def _net():
    tk.manual_seed(0)
    return tk.nn.Sequential(tk.nn.Linear(3, 4), tk.nn.Tanh(), tk.nn.Linear(4, 1))


def _data(widget) -> dict:
    bundle = widget._repr_mimebundle_()
    return bundle[0] if isinstance(bundle, tuple) else bundle


def _unpacked(html: str) -> list[str]:
    """The gzip+base64 strings inlined in a recorded_html fragment, decoded."""
    packed = re.findall(r'unpack\("([A-Za-z0-9+/=]+)"\)', html)
    return [gzip.decompress(base64.b64decode(p)).decode() for p in packed]


def test_graph_output_carries_its_graph_as_shown() -> None:
    with tk.autograd.Tape() as tape:
        _net()(tk.randn(2, 3)).sum().backward()
    widget = tape.show()
    widget.color_by = "grad_norm"
    data = _data(widget)
    assert "application/vnd.jupyter.widget-view+json" in data
    payload = data[MIME]
    assert payload["format"] == "tensorkit.recording" and payload["graph"] == widget.graph
    assert payload["view"]["sections"] == ["graph"]
    assert payload["view"]["color_by"] == "grad_norm"
    assert payload["view"]["collapsed"] == widget.collapsed
    css, viewer, recording = _unpacked(data["text/html"])
    assert json.loads(recording) == payload
    assert viewer == (ROOT / "tensorkit/notebook/static/recording_view.js").read_text()
    assert ".tk-recorded-note" in css
    assert widget._repr_html_().startswith('<div id="tk-recorded-')


def test_stepper_output_replays_its_whole_pass_and_leaves_the_stepper_alone() -> None:
    net = _net()
    widget = tk.notebook.step_backward(net(tk.randn(5, 3)).pow(2).mean())
    stepped = []
    for _ in range(2):
        widget.action = "next"
        stepped.append(widget.state["step"]["node"]["id"])
    grads = [p.grad for p in net.parameters()]
    payload = _data(widget)[MIME]
    assert widget.stepper.position == 2
    assert all(p.grad is g for p, g in zip(net.parameters(), grads, strict=True))
    (replay,) = payload["view"]["replay"]
    assert payload["view"]["sections"] == ["replay"] and payload["view"]["position"] == 2
    final = widget.stepper.run_to_end()
    assert len(replay["steps"]) == replay["total_steps"] == final["position"]
    assert [s["node"]["id"] for s in replay["steps"][:2]] == stepped
    leaf = next(s for s in replay["steps"] if "leaf_grad" in s)
    assert leaf["leaf_grad"]["shape"] == leaf["grads_in"][0]["shape"]
    assert all(p.grad is not None for p in net.parameters())


def test_profile_outputs_carry_the_profile_and_its_links_to_the_graph() -> None:
    net = _net()
    with tk.profiler.profile() as prof, tk.autograd.Tape() as tape:
        net(tk.randn(4, 3)).sum().backward()
    alone = _data(prof.show())[MIME]
    assert alone["view"]["sections"] == ["profile"] and alone["graph"] is None
    assert alone["profile"]["total_ops"] == len(prof.events())
    view = prof.show(tape=tape)
    linked = _data(view)[MIME]
    assert linked["view"]["sections"] == ["graph", "profile"]
    index = next(e.records["profiler_index"] for e in tape.entries if e.name == "tanh")
    node = linked["view"]["links"]["node_of"][str(index)]
    assert view.index_of(node) == index


def test_replay_output_and_saved_files_carry_the_replay(tmp_path: Path) -> None:
    with tk.autograd.Tape() as tape:
        _net()(tk.randn(2, 3)).sum().backward()
    saved = json.loads(tape.save(str(tmp_path / "run.tkrec.json")).read_text())
    assert saved["view"]["sections"] == ["graph", "replay"]
    rec = tk.notebook.open(str(tmp_path / "run.tkrec.json"))
    assert saved["view"]["replay"] == rec.replay
    widget = ReplayWidget(rec.replay, position=3)
    payload = _data(widget)[MIME]
    assert payload["view"]["replay"] == rec.replay and payload["view"]["position"] == 3


def test_payload_misuse_names_the_sections() -> None:
    with pytest.raises(ValueError, match=r"unknown recorded section\(s\) \['table'\]"):
        recorded.recording_payload(["table"])
    with pytest.raises(ValueError, match=r"recorded section\(s\) \['profile'\] have no data"):
        recorded.recording_payload(["profile"], graph={"nodes": [], "edges": []})


def test_html_fragments_are_compressed_and_unique() -> None:
    with tk.autograd.Tape() as tape:
        _net()(tk.randn(2, 3)).sum()
    payload = _data(tape.show())[MIME]
    first, second = recorded.recorded_html(payload), recorded.recorded_html(payload)
    ids = {re.search(r'id="(tk-recorded-\w+)"', page)[1] for page in (first, second)}
    assert len(ids) == 2, "two outputs of one page must not share an element id"
    raw = len(json.dumps(payload)) + len(recorded._viewer()[0])
    assert len(first) < raw, "the inlined viewer and data are compressed"
    assert "</script" not in first.split("<script>", 1)[1].rsplit("</script>", 1)[0]


def _build_script():
    spec = importlib.util.spec_from_file_location("build", ROOT / "extensions" / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_shipped_extension_matches_its_sources() -> None:
    build = _build_script()
    assert build.check_hash() == [], "rebuild: python extensions/build.py build"
    package = json.loads((build.OUTPUT / "package.json").read_text())
    assert package["name"] == "tensorkit"
    entry = package["jupyterlab"]["_build"]["load"]
    assert (build.OUTPUT / entry).is_file()


@pytest.mark.slow
def test_shipped_extension_is_what_the_builder_makes() -> None:
    build = _build_script()
    if not build.can_build():
        pytest.skip("needs node and `npm --prefix extensions ci`")
    assert build.check_rebuild() == []


def test_reopened_recording_shows_one_recording_for_its_views(tmp_path: Path) -> None:
    with tk.profiler.profile(), tk.autograd.Tape() as tape:
        _net()(tk.randn(2, 3)).sum().backward()
    rec = tk.notebook.open(str(tape.save(str(tmp_path / "run.tkrec.json"))))
    payload = _data(rec.show())[MIME]
    assert payload["view"]["sections"] == ["graph", "profile", "replay"]
    assert payload["graph"] == rec.graph and payload["profile"] == rec.profile
    assert payload["view"]["replay"] == rec.replay
    assert payload["view"] == rec.view, "what the file's tab shows, the output shows"
    shown = rec._repr_mimebundle_()
    assert shown[MIME] == payload and shown["text/plain"] == repr(rec)
    assert "tk-recorded-output" in shown["text/html"]
    assert 'class="tk-recording-entries"' in shown["text/html"]


def test_installed_extension_is_enabled() -> None:
    from jupyter_core.paths import jupyter_path

    if not any(
        (Path(d) / "tensorkit" / "package.json").is_file() for d in jupyter_path("labextensions")
    ):
        pytest.skip("tensorkit is not installed with its extension here (pip install -e .)")
    listing = subprocess.run(
        [sys.executable, "-m", "jupyter", "labextension", "list"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    plain = re.sub(r"\x1b\[[0-9;]*m", "", listing.stdout + listing.stderr)
    assert re.search(r"tensorkit v0\.1\.0 enabled OK \(python, tensorkit\)", plain), plain
