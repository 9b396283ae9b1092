"""The per-rank view of a distributed run in a real JupyterLab: two ranks launched through
``tensorkit.distributed.run`` train through DistributedDataParallel under the profiler, and
``tkn.show_ranks`` of their traces draws a track per rank (compute bars above collective
bars) with the hidden share Python's model computed."""

from __future__ import annotations

import importlib.util

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


def test_show_ranks_draws_a_track_per_rank(open_notebook, expect) -> None:
    nb = open_notebook("ranks.ipynb", [LAUNCH, SHOW])
    nb.run_all()
    assert nb.errors() == []
    ranks = nb.printed("EXPECT")["ranks"]
    assert ranks == [0, 1]
    view = nb.code_cells().nth(1).locator(".jp-OutputArea-output .tk-ranks")
    expect(view).to_be_visible()
    tracks = view.locator("svg.tk-profile-ranks g.tk-rank-track")
    expect(tracks).to_have_count(2)
    assert tracks.evaluate_all("ts => ts.map(t => t.dataset.rank)") == ["0", "1"]
    for i in range(2):
        track = tracks.nth(i)
        assert track.locator("g.tk-rank-compute rect").count() >= 1
        assert track.locator("g.tk-rank-comm rect.tk-rank-collective").count() >= 1
    expect(view.locator(".tk-rank-share")).to_contain_text("communication")
    expect(view.locator("table.tk-rank-summary tr[data-rank]")).to_have_count(2)
    nb.screenshot("ranks", view)
