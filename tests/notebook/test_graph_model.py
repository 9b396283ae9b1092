"""The graph view's data model: plain data, argument order, module groups, bounded size."""

from __future__ import annotations

import json
import subprocess
import sys

import tensorkit as tk
from tensorkit.notebook import build_graph, to_text


def _small_tape() -> tuple[tk.autograd.Tape, tk.Tensor]:
    w = tk.randn(3, 2, requires_grad=True)
    x = tk.tensor([[1.0, 2.0, 3.0]])
    with tk.autograd.Tape() as tape:
        loss = (x @ w).tanh().sum()
    return tape, loss


def test_small_tape_nodes_edges_and_order() -> None:
    tape, _ = _small_tape()
    graph = build_graph(tape)
    json.dumps(graph, allow_nan=False)
    ops = [n for n in graph["nodes"] if n["kind"] == "op"]
    assert [n["op"] for n in ops] == ["matmul", "tanh", "sum"]
    assert [n["kind"] for n in graph["nodes"]].count("tensor") == 2
    matmul = ops[0]
    into_matmul = sorted(
        (e for e in graph["edges"] if e["target"] == matmul["id"]), key=lambda e: e["position"]
    )
    by_id = {n["id"]: n for n in graph["nodes"]}
    assert [by_id[e["source"]]["shapes"]["out"][0] for e in into_matmul] == [[1, 3], [3, 2]]
    assert len(graph["edges"]) == 4
    assert matmul["shapes"] == {"in": [[1, 3], [3, 2]], "out": [[1, 2]]}
    assert matmul["grad_fn"] == "MmBackward0"
    assert matmul["call_site"] and "test_graph_model.py" in matmul["call_site"]
    assert set(ops[1]["summary"]) == {"min", "max", "mean", "std", "nan", "inf"}
    assert [n["depth"] for n in ops] == [1, 2, 3]
    assert graph["layout"]["layers"][3] == [ops[2]["id"]]
    text = to_text(graph)
    assert "tanh(" in text and "-> scalar" in text


def test_include_backward_and_profiler_records() -> None:
    w = tk.randn(3, 2, requires_grad=True)
    with tk.profiler.profile(record_memory=True), tk.autograd.Tape() as tape:
        loss = (w * 2.0).sum()
        loss.backward()
    forward_only = build_graph(tape)
    both = build_graph(tape, include_backward=True)
    assert len(both["nodes"]) > len(forward_only["nodes"])
    assert any(n.get("phase") == "backward" for n in both["nodes"])
    op = next(n for n in forward_only["nodes"] if n["kind"] == "op")
    assert op["records"]["time_ns"] >= 0
    json.dumps(both, allow_nan=False)


def test_nan_and_inf_counts_in_summaries() -> None:
    x = tk.tensor([1.0, 0.0, -1.0])
    with tk.autograd.Tape() as tape:
        (x.log() * 1.0).sum()
    log = next(n for n in build_graph(tape)["nodes"] if n["op"] == "log")
    assert log["summary"]["nan"] == 1 and log["summary"]["inf"] == 1


def _sequential_tape() -> tk.autograd.Tape:
    model = tk.nn.Sequential(tk.nn.Linear(3, 4), tk.nn.Tanh(), tk.nn.Linear(4, 1))
    with tk.autograd.Tape() as tape:
        model(tk.randn(2, 3)).sum()
    return tape


def test_groups_follow_module_paths() -> None:
    graph = build_graph(_sequential_tape())
    groups = graph["groups"]
    assert groups["Sequential"]["children"] == ["Sequential.0", "Sequential.1", "Sequential.2"]
    assert groups["Sequential"]["parent"] is None
    assert groups["Sequential.1"]["parent"] == "Sequential"
    by_id = {n["id"]: n for n in graph["nodes"]}
    assert [by_id[i]["op"] for i in groups["Sequential.1"]["nodes"]] == ["tanh"]
    assert groups["Sequential"]["count"] == sum(
        groups[c]["count"] for c in groups["Sequential"]["children"]
    )
    assert build_graph(_sequential_tape(), group_by_module=False)["groups"] == {}


def test_large_graphs_collapse_module_groups() -> None:
    full = build_graph(_sequential_tape())
    ops = [n for n in full["nodes"] if n["kind"] == "op"]
    tensors = len(full["nodes"]) - len(ops)
    small = build_graph(_sequential_tape(), max_nodes=tensors + 4)
    kinds = [n["kind"] for n in small["nodes"]]
    assert kinds.count("group") == 3 and small["omitted"] == 0
    groups = [n for n in small["nodes"] if n["kind"] == "group"]
    assert [g["module"] for g in groups] == ["Sequential.0", "Sequential.1", "Sequential.2"]
    assert sum(g["count"] for g in groups) == len(ops) - 1  # the final sum is outside
    assert small["groups"]["Sequential.0"]["collapsed"]
    ids = {n["id"] for n in small["nodes"]}
    assert all(e["source"] in ids and e["target"] in ids for e in small["edges"])
    tiny = build_graph(_sequential_tape(), max_nodes=3)
    assert len(tiny["nodes"]) == 3 and tiny["omitted"] > 0
    json.dumps(tiny, allow_nan=False)


def test_graph_from_tensor_walks_grad_fn() -> None:
    _, loss = _small_tape()
    graph = build_graph(loss)
    json.dumps(graph, allow_nan=False)
    assert [n["grad_fn"] for n in graph["nodes"]][:3] == [
        loss.grad_fn.name(),
        "TanhBackward0",
        loss.grad_fn.next_functions[0][0].next_functions[0][0].name(),
    ]
    leaf = next(n for n in graph["nodes"] if n["kind"] == "leaf")
    assert leaf["shapes"]["out"] == [[3, 2]]
    assert len(graph["edges"]) == 3
    assert graph["layout"]["layers"][0] == [leaf["id"]]


def test_ten_thousand_op_chain_builds_and_layers() -> None:
    x = tk.tensor([1.0], requires_grad=True)
    with tk.autograd.Tape(call_sites=False) as tape:
        y = x
        for _ in range(10_000):
            y = y * 1.0001
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)  # nothing here may recurse
    try:
        from_tape = build_graph(tape, max_nodes=20_000)
        from_tensor = build_graph(y, max_nodes=20_000)
    finally:
        sys.setrecursionlimit(limit)
    assert len(from_tape["layout"]["layers"]) == 10_001
    assert len(from_tensor["layout"]["layers"]) == 10_001
    bounded = build_graph(y)
    assert len(bounded["nodes"]) == 2000 and bounded["omitted"] == 8001


def test_import_pulls_in_no_front_end_libraries() -> None:
    code = (
        "import sys, tensorkit.notebook; "
        "bad = [m for m in ('ipywidgets', 'anywidget', 'matplotlib') if m in sys.modules]; "
        "sys.exit(bool(bad))"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
