"""Shareable recordings: one JSON file round trip, validation, atomic save, standalone HTML."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

import tensorkit as tk
from tensorkit.notebook import build_graph, recording
from tensorkit.notebook.recording import (
    Recording,
    RecordingError,
    open_recording,
    save_tape,
)
from tensorkit.notebook.recording_html import to_html
from tensorkit.notebook.replay import replay_passes

CHROMIUM = "/usr/bin/chromium"


def _tape() -> tk.autograd.Tape:
    w = tk.randn(3, 2, requires_grad=True)
    x = tk.tensor([[1.0, 2.0, 3.0]])
    with tk.autograd.Tape() as tape:
        loss = (x @ w).tanh().sum()
        loss.backward()
    return tape


def _plain(value: object) -> object:
    return json.loads(json.dumps(value))


def test_round_trip_keeps_graph_entries_and_snippets(tmp_path: Path) -> None:
    tape = _tape()
    path = save_tape(tape, tmp_path / "run.json")
    data = json.loads(path.read_text())
    assert data["format"] == recording.FORMAT and data["version"] == recording.VERSION
    rec = open_recording(path)
    assert isinstance(rec, Recording)
    assert rec.graph == _plain(build_graph(tape))
    assert rec.entries == _plain([e.to_dict() for e in tape.entries])
    assert rec.backward_steps == _plain(tape.backward_steps)
    assert rec.backward_passes == _plain(tape.backward_passes)
    assert rec.replay == _plain(replay_passes(tape.backward_steps, tape.backward_passes))
    assert rec.replay[0]["steps"][0]["node"] == {"id": "n0", "name": "SumBackward0"}
    assert rec.to_dict() == data
    assert [e["name"] for e in rec.entries if e["phase"] == "forward"] == [
        "matmul",
        "tanh",
        "sum",
    ]
    site = rec.entries[0]["call_site"]
    assert site and "test_recording.py" in site
    snippet = rec.snippets[site]
    current = [line for line in snippet["lines"] if line["line"] == snippet["line"]]
    assert "x @ w" in current[0]["text"]
    assert len(snippet["lines"]) == 5
    assert f"{len(tape.entries)} entries" in repr(rec)
    html = rec._repr_html_()
    assert "matmul" in html and "x @ w" in html
    assert "Backward steps, pass 0" in html and "n2: MmBackward0" in html


def test_module_does_not_use_pickle() -> None:
    assert "pickle" not in Path(recording.__file__).read_text()


def _write(tmp_path: Path, content: str) -> Path:
    path = tmp_path / "bad.json"
    path.write_text(content)
    return path


def _valid(tmp_path: Path) -> dict:
    return json.loads(save_tape(_tape(), tmp_path / "ok.json").read_text())


def test_bad_json_is_a_clear_value_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="invalid JSON"):
        open_recording(_write(tmp_path, "{not json"))
    with pytest.raises(ValueError, match="top level"):
        open_recording(_write(tmp_path, "[1, 2]"))


def test_wrong_format_and_version(tmp_path: Path) -> None:
    data = _valid(tmp_path)
    with pytest.raises(ValueError, match="unsupported recording version 99"):
        open_recording(_write(tmp_path, json.dumps({**data, "version": 99})))
    with pytest.raises(ValueError, match="'format'"):
        open_recording(_write(tmp_path, json.dumps({**data, "format": "other"})))


def test_failed_save_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "run.json"
    path.write_text("old contents")

    def broken(*args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(recording.os, "replace", broken)
    with pytest.raises(OSError, match="disk full"):
        save_tape(_tape(), path)
    assert path.read_text() == "old contents"
    assert os.listdir(tmp_path) == ["run.json"]


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077])
def test_files_get_the_mode_of_the_users_other_files(tmp_path: Path, umask: int) -> None:
    tape = _tape()
    previous = os.umask(umask)
    try:
        written = [
            save_tape(tape, tmp_path / "run.json"),
            to_html(tape, tmp_path / "run.html"),
            to_html(open_recording(tmp_path / "run.json"), tmp_path / "again.html"),
        ]
        (tmp_path / "other.txt").write_text("a file the user makes")
    finally:
        os.umask(previous)
    expected = stat.S_IMODE((tmp_path / "other.txt").stat().st_mode)
    assert expected == 0o666 & ~umask
    assert {path.name: stat.S_IMODE(path.stat().st_mode) for path in written} == {
        "run.json": expected,
        "run.html": expected,
        "again.html": expected,
    }
    (tmp_path / "run.json").chmod(0o640)  # a file replaced keeps its mode
    save_tape(tape, tmp_path / "run.json")
    assert stat.S_IMODE((tmp_path / "run.json").stat().st_mode) == 0o640


def _html(tmp_path: Path) -> tuple[Path, dict]:
    tape = _tape()
    path = to_html(open_recording(save_tape(tape, tmp_path / "run.json")), tmp_path / "run.html")
    return path, _plain(build_graph(tape))


def test_html_is_self_contained(tmp_path: Path) -> None:
    path, graph = _html(tmp_path)
    page = path.read_text()
    assert {p.name for p in tmp_path.iterdir()} == {"run.html", "run.json"}
    model = re.search(r'<script type="application/json" id="tk-graph-model">(.*?)</script>', page)
    assert model is not None
    assert json.loads(model.group(1))["graph"] == graph
    bundle = (recording.STATIC / "graph.js").read_text()
    assert "function paintSvg" in page and "graph_default.render" in page
    assert bundle.splitlines()[1][:2000] in page  # the bundle's code (minified: one line)
    assert "export {" not in page
    assert ".tk-node" in page  # the CSS
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*https?://""", page, re.IGNORECASE)
    assert "<script src" not in page and "<link" not in page
    assert "x @ w" in page  # the call-site snippet in the entries table


def test_html_from_a_tape_matches(tmp_path: Path) -> None:
    tape = _tape()
    page = to_html(tape, tmp_path / "tape.html").read_text()
    assert '"op": "matmul"' in page


def _dump_dom(path: Path, tmp_path: Path) -> tuple[str, str]:
    """The DOM of the page at ``path`` after headless Chromium ran its scripts, and the end of
    Chromium's log (for a failure message)."""
    profile = tmp_path / "chromium-profile"
    try:
        result = subprocess.run(
            [
                CHROMIUM,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                f"--user-data-dir={profile}",
                "--dump-dom",
                path.resolve().as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    return result.stdout, result.stderr[-2000:]


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"no chromium at {CHROMIUM}")
def test_html_renders_in_headless_chromium(tmp_path: Path) -> None:
    path, graph = _html(tmp_path)
    dom, errors = _dump_dom(path, tmp_path)
    assert "<svg" in dom and "tk-graph-svg" in dom, errors
    graph_view = dom.split('id="tk-replay"')[0]  # the replay section draws its own graph
    nodes = re.findall(r'<g class="tk-node tk-(\w+)[^"]*" data-id="([^"]+)"', graph_view)
    assert sorted(i for _, i in nodes) == sorted(n["id"] for n in graph["nodes"])


def test_show_gives_a_graph_widget(tmp_path: Path) -> None:
    pytest.importorskip("anywidget")
    from tensorkit.notebook.widgets import GraphWidget

    w = tk.randn(3, 2, requires_grad=True)
    with tk.autograd.Tape() as tape:
        (w * 2).sum()  # no backward: nothing to replay
    rec = open_recording(save_tape(tape, tmp_path / "run.json"))
    widget = rec.show()
    assert rec.replay == []
    assert isinstance(widget, GraphWidget) and widget.graph == rec.graph


def test_tape_methods_and_tk_notebook_open(tmp_path):
    w = tk.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    with tk.autograd.Tape() as tape:
        (tk.ones(1, 2) @ w).relu().sum()
    path = tmp_path / "run.json"
    tape.save(str(path))
    recording = tk.notebook.open(str(path))
    assert [e["name"] for e in recording.entries] == ["matmul", "relu", "sum"]
    page = tmp_path / "run.html"
    tape.to_html(str(page))
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>") or html.lstrip().lower().startswith("<!doctype html")
    assert all(f'"{name}"' in html for name in ("matmul", "relu", "sum"))


# ------------------------------------------------------------------------------- profile
def _profiled_tape() -> tk.autograd.Tape:
    w = tk.randn(3, 2, requires_grad=True)
    x = tk.tensor([[1.0, 2.0, 3.0]])
    with tk.profiler.profile(record_memory=True), tk.autograd.Tape() as tape:
        loss = (x @ w).tanh().sum()
        loss.backward()
    return tape


def test_profile_round_trip(tmp_path: Path) -> None:
    from tensorkit.notebook.profile_model import build_profile

    tape = _profiled_tape()
    path = tape.save(str(tmp_path / "run.json"))
    data = json.loads(Path(path).read_text())
    assert data["version"] == recording.VERSION
    rec = tk.notebook.open(str(path))
    assert rec.profile == _plain(build_profile(tape))
    assert [r["name"] for r in rec.profile["rows"]] == [e.name for e in tape.entries]
    assert rec.profile["memory"]["allocated"] == [e.records["live_bytes"] for e in tape.entries]
    assert rec.to_dict() == data
    shown = rec._repr_mimebundle_()["application/vnd.tensorkit.recording+json"]
    assert shown["profile"] == rec.profile and "profile" in shown["view"]["sections"]
    assert open_recording(save_tape(_tape(), tmp_path / "plain.json")).profile is None


def test_version_1_files_still_open(tmp_path: Path) -> None:
    data = _valid(tmp_path)
    del data["profile"]
    rec = open_recording(_write(tmp_path, json.dumps({**data, "version": 1})))
    assert rec.version == 1 and rec.profile is None and len(rec.entries) == len(data["entries"])
    with pytest.raises(RecordingError, match=r"recording: profile: missing"):
        open_recording(_write(tmp_path, json.dumps({**data, "version": 2})))  # 2 needs it


def test_version_2_files_open_with_nothing_to_replay(tmp_path: Path) -> None:
    data = _valid(tmp_path)
    del data["backward_passes"]
    for step in data["backward_steps"]:
        del step["pass"], step["step"]
    rec = open_recording(_write(tmp_path, json.dumps({**data, "version": 2})))
    assert rec.version == 2 and rec.replay == [] and rec.backward_passes == []
    assert len(rec.backward_steps) == len(data["backward_steps"])
    assert "Backward steps" not in rec._repr_html_()
    assert 'id="tk-replay"' not in to_html(rec, tmp_path / "old.html").read_text()
    with pytest.raises(RecordingError, match=r"recording: backward_passes: missing"):
        open_recording(_write(tmp_path, json.dumps(data)))  # version 3 needs it


def _set(path: str, value: Any) -> Any:
    """A change to a recording's data: set the item at ``path`` (keys and indices, by dots)."""

    def change(data: dict) -> None:
        *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
        for key in parents:
            data = data[key]
        data[last] = value

    return change


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_set("backward_passes", {}), r"backward_passes: expected a list, got an object"),
        (_set("backward_passes.0", []), r"backward_passes\[0\] must be an object"),
        (_set("backward_passes.0.leaves.0.id", 3), r"backward_passes\[0\]\.leaves\[0\] must"),
        (_set("backward_passes.0.leaves.0.shape", [-1]), r"leaves\[0\]\.shape must be a list"),
        (_set("backward_steps.2.pass", 5), r"backward_steps\[2\]\.pass must be the index"),
        (_set("backward_steps.1.step", "x"), r"backward_steps\[1\]\.step must be an object"),
        (_set("backward_steps.1.step.node", "n1"), r"backward_steps\[1\]\.step\.node must"),
        (_set("backward_steps.0.step.index", "0"), r"step\.index must be an int"),
        (_set("backward_steps.0.step.rule", [1]), r"step\.rule must be an object or null"),
        (_set("backward_steps.0.step.grads_in", {}), r"step\.grads_in must be a list"),
        (_set("backward_steps.0.step.grads_in.0", 1), r"grads_in\[0\] must be a tensor payload"),
        (
            _set("backward_steps.0.step.grads_in.0.shape", "3"),
            r"grads_in\[0\]\.shape must be a list of sizes",
        ),
        (_set("backward_steps.0.step.grads_out.0.to", 7), r"grads_out\[0\]\.to must be a node"),
        (_set("backward_steps.0.step.grads_out.0.position", None), r"int 'position'"),
        (
            _set("backward_steps.0.step.grads_out.0.grad.values", {"<b>": 1}),
            r"grads_out\[0\]\.grad\.values must be a number",
        ),
        (_set("backward_steps.0.step.saved", [{"role": 1}]), r"step\.saved\[0\] must be"),
        (_set("backward_steps.0.step.chain", "x"), r"step\.chain must be a list or null"),
    ],
)
def test_bad_replay_fields_are_named(tmp_path: Path, change: Any, message: str) -> None:
    data = _valid(tmp_path)
    change(data)
    with pytest.raises(ValueError, match="is not a valid tensorkit recording: .*" + message):
        open_recording(_write(tmp_path, json.dumps(data)))


def test_bad_payloads_are_named(tmp_path: Path) -> None:
    w = tk.randn(20, 10, requires_grad=True)
    with tk.autograd.Tape() as tape:
        (w * 2).sum().backward()
    good = json.loads(save_tape(tape, tmp_path / "big.json").read_text())
    leaf = next(i for i, s in enumerate(good["backward_steps"]) if "leaf_grad" in s["step"])
    for change, message in [
        (
            _set(f"backward_steps.{leaf}.step.leaf_grad.histogram", None),
            "'values' or a 'histogram'",
        ),
        (_set(f"backward_steps.{leaf}.step.leaf_grad.histogram", {"edges": []}), "'counts' lists"),
        (_set(f"backward_steps.{leaf}.step.leaf_grad.heatmap", 5), "heatmap must be an object"),
        (_set(f"backward_steps.{leaf}.step.leaf_grad.dtype", None), "must be a tensor payload"),
    ]:
        data = json.loads(json.dumps(good))
        change(data)
        with pytest.raises(ValueError, match=rf"backward_steps\[{leaf}\]\.step\.leaf_grad"):
            open_recording(_write(tmp_path, json.dumps(data)))
        with pytest.raises(ValueError, match=re.escape(message)):
            open_recording(_write(tmp_path, json.dumps(data)))


def _profiled_data(tmp_path: Path) -> dict:
    return json.loads(save_tape(_profiled_tape(), tmp_path / "ok.json").read_text())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda p: p.__setitem__("rows", {}), r"profile\.rows: expected a list, got an object"),
        (
            lambda p: p["rows"][2].__setitem__("index", "2"),
            r"profile\.rows\[2\]\.index: expected an integer, got a string '2'",
        ),
        (lambda p: p["rows"].__setitem__(0, 7), r"profile\.rows\[0\]: expected an object"),
        (
            lambda p: p["modules"][0].__setitem__("count", "<b>"),
            r"profile\.modules\[0\]\.count: expected an integer",
        ),
        (
            lambda p: p["memory"].__setitem__("peak", None),
            r"profile\.memory\.peak: expected a list, got null",
        ),
        (
            lambda p: p.__setitem__("timing_mode", 3),
            r"profile\.timing_mode: expected a string, got an integer 3",
        ),
    ],
)
def test_bad_profiles_are_named(tmp_path: Path, change: Any, message: str) -> None:
    data = _profiled_data(tmp_path)
    change(data["profile"])
    with pytest.raises(ValueError, match=message):
        open_recording(_write(tmp_path, json.dumps(data)))
    data["profile"] = [1]
    with pytest.raises(RecordingError, match="profile: expected an object or null, got a list"):
        open_recording(_write(tmp_path, json.dumps(data)))


def test_show_links_graph_and_profile(tmp_path: Path) -> None:
    pytest.importorskip("anywidget")
    from tensorkit.notebook.profile_widget import ProfileView

    tape = _profiled_tape()
    view = open_recording(save_tape(tape, tmp_path / "run.json")).show().children[0]
    assert isinstance(view, ProfileView)
    tanh = next(e for e in tape.entries if e.name == "tanh")
    view.graph.selected = f"op{tanh.index}"
    assert view.profile.selected == tanh.records["profiler_index"]
    tanh_backward = next(e for e in tape.entries if e.backward_of == tanh.index)
    view.profile.selected = tanh_backward.records["profiler_index"]
    assert view.graph.selected == f"op{tanh.index}"


def test_html_has_the_profile_table_and_bundle(tmp_path: Path) -> None:
    tape = _profiled_tape()
    page = to_html(tape, tmp_path / "run.html").read_text()
    model = re.search(r'<script type="application/json" id="tk-profile-model">(.*?)</script>', page)
    assert model is not None
    from tensorkit.notebook.profile_model import build_profile

    assert json.loads(model.group(1)) == {"model": _plain(build_profile(tape)), "selected": -1}
    links = re.search(r'<script type="application/json" id="tk-profile-links">(.*?)</script>', page)
    assert json.loads(links.group(1))["index_of"] == {
        f"op{e.index}": e.records["profiler_index"] for e in tape.entries if e.phase == "forward"
    }
    profile_bundle = (recording.STATIC / "profile.js").read_text()
    assert profile_bundle.splitlines()[1][:2000] in page and "profile_default.render" in page
    assert "export {" not in page and ".tk-profile-table" in page  # bundle and CSS
    assert 'id="tk-profile-model"' not in to_html(_tape(), tmp_path / "plain.html").read_text()


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"no chromium at {CHROMIUM}")
def test_html_profile_renders_in_headless_chromium(tmp_path: Path) -> None:
    tape = _profiled_tape()
    path = to_html(tape, tmp_path / "run.html")
    dom, errors = _dump_dom(path, tmp_path)
    assert 'class="tk-widget tk-profile"' in dom, errors
    rows = re.findall(r'<tr data-index="(\d+)"', dom)
    assert sorted(map(int, rows)) == sorted(e.records["profiler_index"] for e in tape.entries)
    assert 'data-sort-key="host_time"' in dom and "tk-profile-timeline" in dom


def test_html_has_the_replay_section_and_bundle(tmp_path: Path) -> None:
    tape = _tape()
    page = to_html(tape, tmp_path / "run.html").read_text()
    assert "<h2>Backward steps</h2>" in page
    model = re.search(r'<script type="application/json" id="tk-replay-model">(.*?)</script>', page)
    assert model is not None
    passes = _plain(replay_passes(tape.backward_steps, tape.backward_passes))
    assert json.loads(model.group(1)) == {"passes": passes, "pass_index": 0, "position": 0}
    replay_bundle = (recording.STATIC / "replay.js").read_text()
    assert replay_bundle.splitlines()[1][:2000] in page and "replay_default.render" in page
    assert "export {" not in page and ".tk-replay-steps" in page  # bundle and CSS
