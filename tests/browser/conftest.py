"""Fixtures for the real-browser tests: a JupyterLab server, headless Chromium (Playwright),
and a helper that opens a notebook, runs all its cells and saves screenshots.

Everything these tests need is checked once; when something is missing they skip with one
reason, unless ``TENSORKIT_REQUIRE_BROWSER=1`` (CI) turns that into a failure. Chromium is
Debian's (``CHROMIUM``, default ``/usr/bin/chromium``): Playwright's own download is not used.
Screenshots go to ``$TENSORKIT_ARTIFACTS/browser/`` (default ``<repo>/test-artifacts/browser``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
PACKAGES = ("playwright", "jupyterlab", "notebook", "nbformat", "anywidget", "ipykernel")
SERVER_START_S = 60  # bound on waiting for the server to answer
WAIT_MS = 30_000  # bound on every wait in the page (Playwright's default timeout)
RUN_ALL_MS = 120_000  # bound on running a whole notebook
VIEWPORT = {"width": 1600, "height": 1000}
_REPORTS = pytest.StashKey[dict]()


def _artifacts() -> Path:
    base = os.environ.get("TENSORKIT_ARTIFACTS")
    return (Path(base) if base else REPO / "test-artifacts") / "browser"


def _missing() -> list[str]:
    """What the browser tests need and cannot find."""
    missing = [
        f"the Python package {name!r} (pip install -e '.[test]')"
        for name in PACKAGES
        if importlib.util.find_spec(name) is None
    ]
    chromium = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    if not (os.path.isfile(chromium) and os.access(chromium, os.X_OK)):
        missing.append(f"Chromium at {chromium} (apt-get install chromium, or set CHROMIUM)")
    return missing


@pytest.fixture(scope="session")
def _browser_env() -> str:
    """The Chromium executable; skips (or fails under TENSORKIT_REQUIRE_BROWSER=1) when
    something the browser tests need is missing."""
    missing = _missing()
    if missing:
        reason = "browser tests need " + "; ".join(missing)
        if os.environ.get("TENSORKIT_REQUIRE_BROWSER") == "1":
            pytest.fail(f"TENSORKIT_REQUIRE_BROWSER=1 but {reason}", pytrace=False)
        pytest.skip(reason)
    return os.environ.get("CHROMIUM", "/usr/bin/chromium")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator:
    """Keep each phase's report on the item, so fixtures can tell whether the test failed."""
    report = yield
    item.stash.setdefault(_REPORTS, {})[report.when] = report
    return report


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """The folder for screenshots (created)."""
    folder = _artifacts()
    folder.mkdir(parents=True, exist_ok=True)
    return folder


# ------------------------------------------------------------------------------ server
@dataclass
class Lab:
    """A running JupyterLab: its address, token, notebook folder and log file."""

    base: str
    token: str
    root: Path
    log: Path

    def url(self, path: str) -> str:
        return f"{self.base}/{path}?token={self.token}"

    def api(self, method: str, path: str) -> Any:
        request = urllib.request.Request(
            f"{self.base}/api/{path}",
            method=method,
            headers={"Authorization": f"token {self.token}"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read()
        return json.loads(body) if body else None

    def shutdown_kernel(self, notebook: str) -> None:
        """End the session (and kernel) of one notebook, so idle kernels do not pile up."""
        for session in self.api("GET", "sessions"):
            if session["path"] == notebook:
                self.api("DELETE", f"sessions/{session['id']}")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _write_settings(home: Path) -> Path:
    """Isolated user settings: no news / update checks, every cell rendered."""
    settings = home / "settings"
    files = {
        "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
            "fetchNews": "false",
            "checkForUpdates": False,
        },
        "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    }
    for name, content in files.items():
        path = settings / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(content))
    labconfig = home / "config" / "labconfig"
    labconfig.mkdir(parents=True)
    disabled = {"@jupyterlab/apputils-extension:announcements": True}
    (labconfig / "page_config.json").write_text(json.dumps({"disabledExtensions": disabled}))
    return settings


def _wait_until_up(proc: subprocess.Popen, lab: Lab) -> None:
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"jupyter lab exited early:\n{lab.log.read_text()}")
        try:
            lab.api("GET", "status")
            return
        except (OSError, urllib.error.URLError):
            time.sleep(0.1)  # polling interval of the bounded start loop
    raise RuntimeError(f"jupyter lab did not answer in {SERVER_START_S} s:\n{lab.log.read_text()}")


@pytest.fixture(scope="session")
def lab(_browser_env: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """JupyterLab on 127.0.0.1 (free port, random token, isolated config), stopped by its own
    process handle at the end of the session."""
    root = tmp_path_factory.mktemp("labroot")
    home = tmp_path_factory.mktemp("labhome")
    settings = _write_settings(home)
    port, token = _free_port(), secrets.token_hex(16)
    lab = Lab(f"http://127.0.0.1:{port}", token, root, home / "jupyter.log")
    env = dict(
        os.environ,
        JUPYTER_CONFIG_DIR=str(home / "config"),
        JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        JUPYTER_DATA_DIR=str(home / "data"),
        JUPYTER_PLATFORM_DIRS="1",
        IPYTHONDIR=str(home / "ipython"),
    )
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        f"--LabApp.user_settings_dir={settings}",
        f"--LabApp.workspaces_dir={home / 'workspaces'}",
        "--allow-root",
    ]
    with open(lab.log, "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=root)
        try:
            _wait_until_up(proc, lab)
            yield lab
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=15)


@pytest.fixture(scope="session")
def lab_extension(lab: Lab) -> Path:
    """The tensorkit JupyterLab extension the lab loads: the one installed with the package
    (``share/jupyter/labextensions/tensorkit``, as ``pip install`` puts it, and as CI has it),
    built from this tree's sources. Skips (fails under TENSORKIT_REQUIRE_BROWSER=1) when it is
    missing or stale."""
    from jupyter_core.paths import jupyter_path

    installed = next(
        (
            Path(d) / "tensorkit"
            for d in jupyter_path("labextensions")
            if (Path(d) / "tensorkit" / "package.json").is_file()
        ),
        None,
    )
    built = REPO / "tensorkit" / "labextension" / "sources.sha256"
    problem = None
    if installed is None:
        problem = "the tensorkit JupyterLab extension installed (pip install -e .)"
    elif (installed / "sources.sha256").read_bytes() != built.read_bytes():
        problem = f"the extension at {installed} to match this tree (reinstall: pip install -e .)"
    if problem is not None:
        if os.environ.get("TENSORKIT_REQUIRE_BROWSER") == "1":
            pytest.fail(f"TENSORKIT_REQUIRE_BROWSER=1 but the tests need {problem}", pytrace=False)
        pytest.skip(f"these tests need {problem}")
    return installed


# ----------------------------------------------------------------------------- browser
@pytest.fixture(scope="session")
def browser(_browser_env: str) -> Iterator[Any]:
    """Headless Chromium (Debian's), driven by Playwright."""
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=WAIT_MS)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=_browser_env, headless=True, args=CHROMIUM_FLAGS
        )
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="session")
def expect(browser: Any) -> Callable:
    """Playwright's ``expect`` (retrying assertions, bounded by WAIT_MS)."""
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect


class NotebookPage:
    """A browser page showing one notebook of the lab, with its console messages."""

    def __init__(self, lab: Lab, page: Any, name: str, stem: str) -> None:
        self.lab, self.page, self.name, self.stem = lab, page, name, stem
        self.console: list[str] = []
        page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}"))
        page.on("pageerror", lambda e: self.console.append(f"pageerror: {e}"))
        page.set_default_timeout(WAIT_MS)

    def open(self, workspace: str) -> None:
        """Load the notebook, alone in a new workspace, and wait until its kernel is idle."""
        from playwright.sync_api import expect

        self.page.goto(self.lab.url(f"lab/workspaces/{workspace}/tree/{self.name}"))
        expect(self.page.locator(".jp-NotebookPanel")).to_have_count(1)
        kernel = self.page.get_by_role("button", name=re.compile(r"\| Idle$"))
        expect(kernel).to_be_visible(timeout=RUN_ALL_MS)

    def run_all(self) -> None:
        """Run ▸ Run All Cells, as a person would, and wait until every code cell has an
        execution count (or an error stopped the run) and the kernel is idle."""
        from playwright.sync_api import expect

        self.page.get_by_role("menuitem", name="Run", exact=True).click()
        self.page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
        self.page.wait_for_function(_RUN_FINISHED_JS, timeout=RUN_ALL_MS)
        kernel = self.page.get_by_role("button", name=re.compile(r"\| Idle$"))
        expect(kernel).to_be_visible(timeout=RUN_ALL_MS)

    def code_cells(self) -> Any:
        return self.page.locator(".jp-Notebook .jp-CodeCell")

    def execution_counts(self) -> list[str]:
        """The input prompts of the code cells ("[3]:", "[ ]:", "[*]:")."""
        return [t.strip() for t in self.code_cells().locator(".jp-InputPrompt").all_inner_texts()]

    def errors(self) -> list[str]:
        """What went wrong that a person would notice: error outputs (JupyterLab 4.6 renders a
        traceback as a stderr output; an ``application/vnd.jupyter.error`` rendering counts
        too) and uncaught exceptions in the page (a widget's front end failing)."""
        return self.page.evaluate(_ERRORS_JS) + [
            line for line in self.console if line.startswith("pageerror:")
        ]

    def printed(self, marker: str) -> Any:
        """The JSON that a cell printed after ``marker`` on one line (``print(marker, json)``)."""
        output = self.page.locator(_OUTPUT, has_text=marker)
        output.first.wait_for()
        texts = output.all_inner_texts()
        assert len(texts) == 1, f"expected one output printing {marker!r}, got {len(texts)}"
        line = next(ln for ln in texts[0].splitlines() if ln.startswith(marker))
        return json.loads(line[len(marker) :])

    def rerun_cell(self, index: int) -> None:
        """Run code cell ``index`` again (click into its editor, Ctrl+Enter)."""
        self.code_cells().nth(index).locator(".jp-InputArea-editor").click()
        self.page.keyboard.press("Control+Enter")

    def screenshot(self, label: str, locator: Any = None) -> Path:
        """Save ``<test>-<label>.png``: the page, or only ``locator``'s element."""
        path = _artifacts() / f"{self.stem}-{label}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        (locator or self.page).screenshot(path=str(path))
        return path

    def save_artifacts(self, failed: bool) -> list[Path]:
        """A screenshot of the page; on failure ``-FAILED.png`` and the console log. Files of
        an earlier failure of the same test are removed when it passes."""
        folder = _artifacts()
        folder.mkdir(parents=True, exist_ok=True)
        shot, log = folder / f"{self.stem}-FAILED.png", folder / f"{self.stem}-FAILED.console.txt"
        if not failed:
            shot.unlink(missing_ok=True)
            log.unlink(missing_ok=True)
            shot = folder / f"{self.stem}.png"
        self.page.screenshot(path=str(shot))
        if not failed:
            return [shot]
        log.write_text("\n".join(self.console) + "\n")
        return [shot, log]


_OUTPUT = ".jp-OutputArea-output"
# Error outputs: every application/vnd.jupyter.error rendering, and stderr outputs that hold
# a traceback (JupyterLab 4.6 renders errors that way).
_ERRORS_JS = """() => [...document.querySelectorAll('.jp-OutputArea-output[data-mime-type]')]
  .filter((o) => o.dataset.mimeType === 'application/vnd.jupyter.error' ||
    (o.dataset.mimeType === 'application/vnd.jupyter.stderr' &&
     o.textContent.includes('Traceback')))
  .map((o) => o.textContent)"""
# Done when no cell is queued or running and either every code cell has an execution
# count or an error output ended the run early.
_RUN_FINISHED_JS = f"""() => {{
  const prompts = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')]
    .map((p) => p.textContent.trim());
  if (!prompts.length || prompts.some((p) => p.includes('*'))) return false;
  return prompts.every((p) => /^\\[\\d+\\]:$/.test(p)) || ({_ERRORS_JS})().length > 0;
}}"""


def _stem(item: pytest.Item) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{item.module.__name__}.{item.name}").strip("_")


@pytest.fixture
def open_notebook(lab: Lab, browser: Any, request: pytest.FixtureRequest) -> Iterator[Callable]:
    """``open_notebook(name, cells=None, source=None)``: write ``cells`` (code strings) as
    notebook ``name`` in the lab, or copy ``source`` (an .ipynb) there, open it in a new page
    and wait for its kernel. At the end of the test each page is screenshotted (``-FAILED``
    with its console log when the test failed), closed, and its kernel shut down."""
    import nbformat

    pages: list[NotebookPage] = []

    def opener(
        name: str, cells: list[str] | None = None, source: Path | None = None
    ) -> NotebookPage:
        if source is not None:
            shutil.copy(source, lab.root / name)
        else:
            nb = nbformat.v4.new_notebook()
            # A kernelspec means JupyterLab never asks which kernel to start.
            nb.metadata["kernelspec"] = {
                "name": "python3",
                "display_name": "Python 3",
                "language": "python",
            }
            nb.cells = [nbformat.v4.new_code_cell(code) for code in cells or []]
            nbformat.write(nb, lab.root / name)
        stem = _stem(request.node) + (f"-{len(pages)}" if pages else "")
        page = NotebookPage(lab, browser.new_page(viewport=VIEWPORT), name, stem)
        pages.append(page)
        page.open(workspace=secrets.token_hex(4))
        return page

    yield opener
    reports = request.node.stash.get(_REPORTS, {})
    failed = any(r.failed for r in reports.values())
    for page in pages:
        try:
            saved = page.save_artifacts(failed)
            if failed:
                print(f"\nartifacts: {', '.join(map(str, saved))}")
                print("\n".join(page.console[-40:]))
        finally:
            page.page.close()
            lab.shutdown_kernel(page.name)
