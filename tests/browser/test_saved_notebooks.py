"""Saved notebooks with no kernel behind their widgets, in a real JupyterLab and Notebook 7 with
tensorkit's extension: a notebook run, saved, closed and reopened without running shows each
output's recorded view (the graph, the replay stepping through the recorded backward steps,
the profile) where the live widgets were; a recording file opens in a tab from the file
browser; ``jupyter nbconvert --to html`` pages draw the graph; a live stepper whose kernel is
gone says so when clicked."""

from __future__ import annotations

import json
import re
import secrets
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from notebook_kernel import notebook_client

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

MIME = "application/vnd.tensorkit.recording+json"
SETUP = """
import json
import tensorkit as tk
import tensorkit.notebook as tkn

tk.manual_seed(0)
model = tk.nn.Sequential(tk.nn.Linear(3, 4), tk.nn.Tanh(), tk.nn.Linear(4, 1))
x = tk.randn(5, 3)
with tk.profiler.profile() as prof, tk.autograd.Tape() as tape:
    loss = model(x).pow(2).mean()
    loss.backward()
first = tkn.BackwardStepper(model(x).pow(2).mean()).next()["step"]["node"]["id"]
print("EXPECT", json.dumps({"first": first, "rows": len(prof.events())}))
"""
OUTPUTS = ["tape.show()", "tkn.step_backward(model(x).pow(2).mean())", "prof.show(tape=tape)"]
NOTE = ".tk-recorded-note"
GRAPH_NODES = ".tk-graph-widget svg.tk-graph-svg g.tk-node"


def _save_and_wait(nb: Any) -> None:
    """Ctrl+S, then wait (bounded) until the file on disk holds the three outputs' recordings."""
    nb.page.locator(".jp-Notebook").first.click()
    nb.page.keyboard.press("Control+s")
    path = nb.lab.root / nb.name
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if path.read_text().count(MIME) >= len(OUTPUTS):
            return
        time.sleep(0.1)  # polling interval of a bounded wait
    raise AssertionError(f"{nb.name} was not saved with its recordings within 30 s")


def _live_counts(page: Any, expect: Any) -> dict:
    """What the live widgets draw: the graph's nodes, the profile's rows."""
    graph = page.locator(".jp-OutputArea-output").nth(1).locator(GRAPH_NODES)
    expect(graph.first).to_be_visible()
    rows = page.locator(".tk-profile .tk-profile-table tbody tr")
    expect(rows.first).to_be_visible()
    return {"graph_nodes": graph.count(), "profile_rows": rows.count()}


def _check_recorded(page: Any, expect: Any, live: dict, expected: dict) -> None:
    """Each widget output shows its recorded view, as the live widget drew it."""
    expect(page.locator(NOTE)).to_have_count(len(OUTPUTS))
    assert page.get_by_text("Error displaying widget").count() == 0
    recorded = page.locator(".tk-recorded")
    graph = recorded.nth(0).locator(GRAPH_NODES)
    expect(graph).to_have_count(live["graph_nodes"])
    replay = recorded.nth(1).locator(".tk-replay-widget")
    expect(replay.locator("g.tk-current")).to_have_count(0)
    replay.locator("button.tk-button", has_text="Next").first.click()
    expect(replay.locator("g.tk-current")).to_have_attribute("data-id", expected["first"])
    rows = recorded.nth(2).locator(".tk-profile .tk-profile-table tbody tr")
    expect(rows).to_have_count(live["profile_rows"])


def test_saved_notebook_reopened_without_running_shows_the_recordings(
    open_notebook: Any, lab_extension: Path, lab: Any, browser: Any, expect: Any, artifacts: Path
) -> None:
    name = "saved.ipynb"
    nb = open_notebook(name, [SETUP, *OUTPUTS])
    nb.run_all()
    assert nb.errors() == []
    expected = nb.printed("EXPECT")
    # Live: every output is its widget (the renderer handed over), none a recording.
    expect(nb.page.locator(".tk-stepper-widget")).to_have_count(1)
    assert nb.page.locator(NOTE).count() == 0
    live = _live_counts(nb.page, expect)
    _save_and_wait(nb)
    nb.page.goto("about:blank")  # closed
    lab.shutdown_kernel(name)

    # JupyterLab, reopened: a new kernel, nothing run.
    again = _reopen(open_notebook, lab, name)
    _check_recorded(again.page, expect, live, expected)
    again.screenshot("jupyterlab-reopened")

    # Notebook 7, the same file.
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(lab.url(f"notebooks/{name}"))
        _check_recorded(page, expect, live, expected)
        page.screenshot(path=str(artifacts / "test_saved_notebooks-notebook7.png"))
    finally:
        page.close()
        lab.shutdown_kernel(name)


def _reopen(open_notebook: Any, lab: Any, name: str) -> Any:
    """Open the saved notebook ``name`` again in a new page (its file kept as saved)."""
    saved = lab.root / f".{name}.saved"
    saved.write_bytes((lab.root / name).read_bytes())
    try:
        return open_notebook(name, source=saved)
    finally:
        saved.unlink()


def _small_tape() -> Any:
    import tensorkit as tk

    x = tk.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with tk.autograd.Tape() as tape:
        (x * x).tanh().sum().backward()
    return tape


def test_recording_file_opens_in_a_tab_from_the_file_browser(
    lab: Any, lab_extension: Path, browser: Any, expect: Any, artifacts: Path
) -> None:
    import tensorkit as tk

    path = _small_tape().save(str(lab.root / "run.tkrec.json"))
    recording = tk.notebook.open(str(path))
    first = recording.replay[0]["steps"][0]["node"]["id"]
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(lab.url(f"lab/workspaces/{secrets.token_hex(4)}"))
        page.locator(".jp-DirListing-item", has_text="run.tkrec.json").dblclick()
        tab = page.locator(".jp-MainAreaWidget", has=page.locator(".tk-recorded"))
        expect(tab).to_have_count(1)
        current = page.locator(".lm-TabBar-tab.lm-mod-current", has_text="run.tkrec.json")
        expect(current).to_be_visible()
        expect(tab.locator(NOTE)).to_contain_text("that Tape.save recorded")
        expect(tab.locator(f".tk-recorded-graph {GRAPH_NODES}")).to_have_count(
            len(recording.graph["nodes"])
        )
        replay = tab.locator(".tk-replay-widget")
        replay.locator("button.tk-button", has_text="Next").first.click()
        expect(replay.locator("g.tk-current")).to_have_attribute("data-id", first)
        page.screenshot(path=str(artifacts / "test_saved_notebooks-recording-file.png"))
        # Taller than the tab: the tab scrolls to its end.
        scroller = tab.locator(".tk-recording-renderer")
        assert scroller.evaluate("(e) => e.scrollHeight > e.clientHeight")
        scroller.evaluate("(e) => { e.scrollTop = e.scrollHeight; }")
        expect(replay.locator(".tk-panel")).to_be_in_viewport()
    finally:
        page.close()


NBCONVERT_CELLS = [
    """
import json
import tensorkit as tk
import tensorkit.notebook as tkn

tk.manual_seed(0)
model = tk.nn.Sequential(tk.nn.Linear(3, 4), tk.nn.Tanh(), tk.nn.Linear(4, 1))
x = tk.randn(5, 3)
with tk.profiler.profile() as prof, tk.autograd.Tape() as tape:
    model(x).pow(2).mean().backward()
""",
    *OUTPUTS,
]


def _executed(path: Path, *, widget_state: bool) -> Any:
    """NBCONVERT_CELLS run by nbclient and saved at ``path``, with or without widget state."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nb.cells = [nbformat.v4.new_code_cell(code.strip()) for code in NBCONVERT_CELLS]
    client = notebook_client(nb)
    client.store_widget_state = widget_state
    client.execute()
    nbformat.write(nb, path)
    return nb


def test_saved_widget_state_without_its_kernel_shows_the_recordings(
    open_notebook: Any, lab_extension: Path, expect: Any, tmp_path: Path
) -> None:
    source = tmp_path / "state.ipynb"
    nb = _executed(source, widget_state=True)
    assert nb.metadata["widgets"], "the notebook holds the widgets' saved state"
    page = open_notebook("state.ipynb", source=source).page
    # The saved models come back without a comm to a kernel: the recordings show, and work.
    expect(page.locator(NOTE)).to_have_count(len(OUTPUTS))
    assert page.get_by_text("Error displaying widget").count() == 0
    replay = page.locator(".tk-recorded").nth(1).locator(".tk-replay-widget")
    replay.locator("button.tk-button", has_text="Next").first.click()
    expect(replay.locator("g.tk-current")).to_have_count(1)


def test_nbconvert_html_shows_the_recorded_views(
    lab: Any, browser: Any, expect: Any, artifacts: Path, tmp_path: Path
) -> None:
    # As JupyterLab saves by default: outputs, no widget state (with widget state, nbconvert
    # embeds the widgets themselves, loading their manager from a CDN).
    source = tmp_path / "converted.ipynb"
    nb = _executed(source, widget_state=False)
    subprocess.run(
        [sys.executable, "-m", "nbconvert", "--to", "html", str(source)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    outputs = [cell.outputs[0]["data"] for cell in nb.cells[1:]]
    sizes = {
        code: {"text/html": len(data["text/html"]), MIME: len(json.dumps(data[MIME]))}
        for code, data in zip(OUTPUTS, outputs, strict=True)
    }
    (artifacts / "test_saved_notebooks-nbconvert-sizes.json").write_text(json.dumps(sizes))
    graph = outputs[0][MIME]["graph"]
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto((tmp_path / "converted.html").as_uri())
        recorded = page.locator(".tk-recorded-output .tk-recorded")
        expect(recorded).to_have_count(len(OUTPUTS))
        drawn = recorded.nth(0).locator(GRAPH_NODES)
        expect(drawn.first).to_be_visible()
        labels = set(drawn.locator("text").all_text_contents())
        assert any("tanh" in text for text in labels), labels
        collapsed = set(graph.get("collapsed", []))
        if not collapsed:
            expect(drawn).to_have_count(len(graph["nodes"]))
        replay = recorded.nth(1).locator(".tk-replay-widget")
        replay.locator("button.tk-button", has_text="Next").first.click()
        expect(replay.locator("g.tk-current")).to_have_count(1)
        expect(recorded.nth(2).locator(".tk-profile-table tbody tr").first).to_be_visible()
        page.screenshot(path=str(artifacts / "test_saved_notebooks-nbconvert.png"), full_page=True)
    finally:
        page.close()


KERNEL_GONE_CELLS = [SETUP, "tkn.step_backward(model(x).pow(2).mean())"]


def test_live_stepper_whose_kernel_is_gone_says_so(
    open_notebook: Any, lab_extension: Path, lab: Any, expect: Any
) -> None:
    nb = open_notebook("kernel_gone.ipynb", KERNEL_GONE_CELLS)
    nb.run_all()
    expected = nb.printed("EXPECT")
    stepper = nb.page.locator(".tk-stepper-widget")
    next_button = stepper.locator("button.tk-button", has_text="Next").first
    next_button.click()
    expect(stepper.locator("g.tk-current")).to_have_attribute("data-id", expected["first"])
    notice = stepper.locator(".tk-kernel-notice")
    expect(notice).to_be_hidden()
    lab.shutdown_kernel(nb.name)
    next_button.click()
    expect(notice).to_be_visible()
    expect(notice).to_contain_text(re.compile(r"kernel"))
    nb.screenshot("kernel-gone", stepper)


GUARDED = """
import tensorkit as tk

def clipped(x):
    y = (x * 2).tanh()
    return y if y.sum() > 0 else -y

compiled = tk.compile(clipped)
for _ in range(3):
    compiled(tk.ones(4))
compiled.show()
"""


def test_a_compiled_graphs_guard_box_survives_a_save_and_reopen(
    open_notebook: Any, lab_extension: Path, lab: Any, expect: Any
) -> None:
    """The guard node (a red dashed box) and the break list are in the recording: the
    reopened notebook, with no code run, draws them where the live widget did."""
    name = "guarded.ipynb"
    nb = open_notebook(name, [GUARDED])
    nb.run_all()
    assert nb.errors() == []
    live = nb.page.locator(".jp-OutputArea-output .tk-graph-widget")
    expect(live.locator("svg g.tk-node.tk-guard")).to_have_count(1)
    guard_line = re.compile(r"Tensor\.__bool__\(\) at cell \[\d+\], line 5 == True")
    expect(live.locator(".tk-jit-guards li").last).to_contain_text(guard_line)
    nb.page.locator(".jp-Notebook").first.click()
    nb.page.keyboard.press("Control+s")
    path = lab.root / name
    deadline = time.monotonic() + 30
    while MIME not in path.read_text() and time.monotonic() < deadline:
        time.sleep(0.1)  # polling interval of a bounded wait for the save
    assert MIME in path.read_text(), f"{name} was not saved with its recording within 30 s"
    nb.page.goto("about:blank")
    lab.shutdown_kernel(name)

    again = _reopen(open_notebook, lab, name)
    recorded = again.page.locator(".tk-recorded")
    expect(recorded).to_have_count(1)
    expect(recorded.locator("svg g.tk-node.tk-guard")).to_have_count(1)
    expect(recorded.locator(".tk-jit-breaks li")).to_contain_text("guarded on True")
    expect(recorded.locator(".tk-jit-guards li").last).to_contain_text(guard_line)
    again.screenshot("guard-reopened", recorded)
