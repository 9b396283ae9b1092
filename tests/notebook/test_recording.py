"""Shareable recordings: one JSON file round trip, validation, atomic save, standalone HTML."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import tensorkit as tk
from tensorkit.notebook import build_graph, recording
from tensorkit.notebook.recording import Recording, open_recording, save_tape, to_html

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


@pytest.mark.parametrize("key", ["entries", "graph", "snippets", "backward_steps"])
def test_missing_keys_are_named(tmp_path: Path, key: str) -> None:
    data = _valid(tmp_path)
    del data[key]
    with pytest.raises(ValueError, match=f"missing key\\(s\\): {key}"):
        open_recording(_write(tmp_path, json.dumps(data)))


def test_bad_structure_is_named(tmp_path: Path) -> None:
    data = _valid(tmp_path)
    del data["entries"][1]["name"]
    with pytest.raises(ValueError, match=r"entries\[1\] is missing key\(s\): name"):
        open_recording(_write(tmp_path, json.dumps(data)))
    data = _valid(tmp_path)
    data["graph"]["nodes"] = {}
    with pytest.raises(ValueError, match=r"graph\.nodes"):
        open_recording(_write(tmp_path, json.dumps(data)))


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
    assert "function drawNodes" in page and "graph_default.render" in page
    assert bundle.splitlines()[5] in page
    assert "export {" not in page
    assert ".tk-node" in page  # the CSS
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*https?://""", page, re.IGNORECASE)
    assert "<script src" not in page and "<link" not in page
    assert "x @ w" in page  # the call-site snippet in the entries table


def test_html_from_a_tape_matches(tmp_path: Path) -> None:
    tape = _tape()
    page = to_html(tape, tmp_path / "tape.html").read_text()
    assert '"op": "matmul"' in page


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"no chromium at {CHROMIUM}")
def test_html_renders_in_headless_chromium(tmp_path: Path) -> None:
    path, graph = _html(tmp_path)
    profile = tmp_path / "profile"
    try:
        result = subprocess.run(
            [
                CHROMIUM,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
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
    dom = result.stdout
    assert "<svg" in dom and "tk-graph-svg" in dom, result.stderr[-2000:]
    nodes = re.findall(r'<g class="tk-node tk-(\w+)[^"]*" data-id="([^"]+)"', dom)
    assert sorted(i for _, i in nodes) == sorted(n["id"] for n in graph["nodes"])


def test_show_gives_a_graph_widget(tmp_path: Path) -> None:
    pytest.importorskip("anywidget")
    from tensorkit.notebook.widgets import GraphWidget

    rec = open_recording(save_tape(_tape(), tmp_path / "run.json"))
    widget = rec.show()
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
