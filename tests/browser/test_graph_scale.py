"""The graph view at scale, in headless Chromium: a 20,000-op tape of a ResNet-like model (the
benchmark's, bench/bench_widgets.py) drawn folded, a block and a unit in it opened and closed,
expand all and collapse all, a search, and panning the expanded graph. The timings are
recorded in ``<artifacts>/graph-scale-timings.json`` (not asserted: machines differ); what is
asserted is what the view drew after each step."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def bench() -> Any:
    sys.path.insert(0, str(BENCH))
    try:
        import bench_widgets
    finally:
        sys.path.remove(str(BENCH))
    return bench_widgets


def _nested_or_disjoint(frames: list[list]) -> list[tuple[str, str]]:
    """Pairs of group frames ([id, x, y, width, height]) that overlap without one holding the
    other."""
    eps = 1e-6

    def holds(a: list, b: list) -> bool:
        return (
            a[1] - eps <= b[1]
            and a[2] - eps <= b[2]
            and b[1] + b[3] <= a[1] + a[3] + eps
            and b[2] + b[4] <= a[2] + a[4] + eps
        )

    bad = []
    ordered = sorted(frames, key=lambda f: f[1])
    for i, a in enumerate(ordered):
        for b in ordered[i + 1 :]:
            if b[1] >= a[1] + a[3]:
                break  # sorted by left edge: no later frame reaches back into a
            apart = b[2] >= a[2] + a[4] or a[2] >= b[2] + b[4]
            if not apart and not holds(a, b) and not holds(b, a):
                bad.append((a[0], b[0]))
    return bad


def _matches(graph: dict, query: str) -> dict[str, int]:
    """Per top-level group, how many of its nodes match `query` (a node's label, op, grad_fn,
    id or module, or a group holding it by its label)."""
    groups = graph["groups"]
    q = query.lower()
    counts: dict[str, int] = {}
    for node in graph["nodes"]:
        chain = []
        gid = node.get("group") or None
        while gid is not None:
            chain.append(gid)
            gid = groups[gid]["parent"]
        fields = [node.get(k) for k in ("label", "op", "grad_fn", "id", "module")]
        texts = [str(f).lower() for f in fields if f] + [groups[g]["label"].lower() for g in chain]
        if chain and any(q in t for t in texts):
            counts[chain[-1]] = counts.get(chain[-1], 0) + 1
    return counts


def test_a_20000_op_tape_folds_unfolds_and_pans(browser: Any, artifacts: Path, bench: Any) -> None:
    tape, model = bench.resnet_tape()
    built = bench.measure_model(tape, model, repeats=1)
    graph = built["graph"]
    assert built["ops"] >= 20_000
    with bench.widget_page(browser) as page:
        out = bench.scale_run(page, graph, repeats=2)
        page.screenshot(path=str(artifacts / "graph-scale-zoomed.png"))
    timings = {k: v for k, v in out.items() if k != "steps"}
    record = {"ops": built["ops"], "nodes": built["nodes"], "build_ms": built["build_ms"]}
    (artifacts / "graph-scale-timings.json").write_text(json.dumps({**record, **timings}))
    steps = out["steps"]
    groups = graph["groups"]

    first = steps["first"]
    assert first["nodes"] < 200, "folded as it opens: a readable number of boxes"
    folded = dict(first["folded"])
    top = [g for g in graph["collapsed"] if g in folded]
    assert top, first["folded"]
    for gid in top:
        count = groups[gid]["count"]
        assert folded[gid] == f"{count} node{'' if count == 1 else 's'}", gid
    assert first["arrows"] == first["withinBand"] > 0

    opened = steps["unfoldedBlock"]
    before = {f[0] for f in first["frames"]}
    block = next(f[0] for f in opened["frames"] if f[0] not in before)
    assert groups[block]["kind"] == "module"
    folded_ids = set(graph["collapsed"])

    def shown(gid: str) -> int:
        """Boxes that show for open group `gid`'s contents."""
        children = groups[gid]["children"]
        return len(groups[gid]["nodes"]) + sum(1 if c in folded_ids else shown(c) for c in children)

    assert opened["nodes"] == first["nodes"] - 1 + shown(block)
    unit = steps["unfoldedUnit"]
    assert len(unit["frames"]) == len(opened["frames"]) + 1
    inner = next(f[0] for f in unit["frames"] if f[0] not in {g[0] for g in opened["frames"]})
    assert groups[inner]["kind"] == "function"
    assert unit["nodes"] == opened["nodes"] - 1 + shown(inner)
    assert steps["foldedBack"]["nodes"] == first["nodes"]
    assert sorted(steps["foldedBack"]["frames"]) == sorted(first["frames"])

    expanded = steps["expanded"]
    assert expanded["renderer"] == "canvas"
    assert expanded["nodes"] == len(graph["nodes"])
    assert expanded["arrows"] == expanded["withinBand"] > len(graph["nodes"]) / 2
    assert _nested_or_disjoint(expanded["frames"]) == []
    assert len(expanded["frames"]) == len(groups)

    roots = [g for g, group in groups.items() if group["parent"] is None]
    assert sorted(g for g, _ in steps["collapsedAll"]["folded"]) == sorted(roots)

    revealed = steps["revealed"]
    assert revealed == {"id": revealed["id"], "shown": True, "inView": True, "selected": True}

    searched = dict(steps["searched"]["folded"])
    want = _matches(graph, "batch_norm")
    assert want, "the model has batch norms"
    for gid, sub in searched.items():
        found = want.get(gid, 0)
        expected = f"{found} of {groups[gid]['count']} match"
        assert sub == expected, (gid, sub, expected)

    assert steps["fitted"]["scale"] * steps["fitted"]["bounds"]["width"] <= 1280
    assert abs(steps["zoomed"]["scale"] - 1) < 0.01
    assert out["fpsFitted"]["fps"] > 0 and out["fpsZoom1"]["fps"] > 0
