"""The per-rank view of a distributed run in a real JupyterLab: two ranks launched through
``tensorkit.distributed.run`` train through DistributedDataParallel under the profiler, and
``tkn.show_ranks`` of their traces draws a track per rank (compute bars above collective
bars) with the hidden share Python's model computed; saved, closed and reopened without
running, the notebook shows the same view from its recording."""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = [
    pytest.mark.browser,
    pytest.mark.xdist_group("browser"),
    pytest.mark.skipif(
        importlib.util.find_spec("mpi4py") is None,
        reason="tk.distributed needs mpi4py and MPICH (pip install 'tensorkit[distributed]')",
    ),
]

LAUNCH = '''
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import tensorkit.notebook as tkn

PROGRAM = """
import sys

import tensorkit as tk
import tensorkit.distributed as dist
from tensorkit import nn

dist.init_process_group("mpi")
_ = tk.manual_seed(0)
mlp = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
model = nn.parallel.DistributedDataParallel(mlp, bucket_cap_mb=0.01)
optimizer = tk.optim.SGD(model.parameters(), lr=0.01)
x, y = tk.randn(16, 64), tk.randint(0, 10, (16,))
with tk.profiler.profile() as prof:
    for _ in range(2):
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
prof.export_chrome_trace(f"{sys.argv[1]}/rank_{dist.get_rank()}.json")
"""
folder = Path(tempfile.mkdtemp())
(folder / "steps.py").write_text(PROGRAM)
launch = [sys.executable, "-m", "tensorkit.distributed.run", "--nproc-per-node", "2"]
subprocess.run([*launch, str(folder / "steps.py"), str(folder)], check=True, timeout=120)
traces = sorted(folder.glob("rank_*.json"))
model = tkn.build_ranks(traces)
print("EXPECT", json.dumps({"ranks": [r["rank"] for r in model["ranks"]]}))
'''
SHOW = "tkn.show_ranks(traces)"


MIME = "application/vnd.tensorkit.recording+json"


def _check_view(view: Any, expect: Any) -> dict:
    """The ranks view's tracks, bars, share line and summary rows; returns what it drew."""
    expect(view).to_be_visible()
    tracks = view.locator("svg.tk-profile-ranks g.tk-rank-track")
    expect(tracks).to_have_count(2)
    assert tracks.evaluate_all("ts => ts.map(t => t.dataset.rank)") == ["0", "1"]
    bars = []
    for i in range(2):
        track = tracks.nth(i)
        compute = track.locator("g.tk-rank-compute rect").count()
        comm = track.locator("g.tk-rank-comm rect.tk-rank-collective").count()
        assert compute >= 1 and comm >= 1
        bars.append((compute, comm))
    share = view.locator(".tk-rank-share")
    expect(share).to_contain_text("communication")
    expect(view.locator("table.tk-rank-summary tr[data-rank]")).to_have_count(2)
    return {"bars": bars, "share": share.inner_text()}


def _save(nb: Any) -> None:
    """Ctrl+S, then wait (bounded) until the file on disk holds the view's recording."""
    nb.page.locator(".jp-Notebook").first.click()
    nb.page.keyboard.press("Control+s")
    path = nb.lab.root / nb.name
    deadline = time.monotonic() + 30
    while MIME not in path.read_text():
        if time.monotonic() > deadline:
            raise AssertionError(f"{nb.name} was not saved with its recording within 30 s")
        time.sleep(0.1)  # polling interval of a bounded wait


def test_show_ranks_draws_a_track_per_rank_live_and_reopened(open_notebook, lab, expect) -> None:
    name = "ranks.ipynb"
    nb = open_notebook(name, [LAUNCH, SHOW])
    nb.run_all()
    assert nb.errors() == []
    assert nb.printed("EXPECT")["ranks"] == [0, 1]
    live = _check_view(nb.code_cells().nth(1).locator(".jp-OutputArea-output .tk-ranks"), expect)
    nb.screenshot("ranks", nb.code_cells().nth(1))
    _save(nb)
    nb.page.goto("about:blank")  # closed
    lab.shutdown_kernel(name)

    saved = Path(lab.root) / f".{name}.saved"  # reopened as saved, nothing run
    saved.write_bytes((Path(lab.root) / name).read_bytes())
    try:
        again = open_notebook(name, source=saved)
    finally:
        saved.unlink()
    recorded = again.code_cells().nth(1).locator(".jp-OutputArea-output .tk-ranks")
    assert _check_view(recorded, expect) == live
    again.screenshot("ranks-reopened", again.code_cells().nth(1))
