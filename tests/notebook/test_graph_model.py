"""The graph view's data model: plain data, argument order, module groups, bounded size."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import tensorkit as tk
from tensorkit.notebook import build_graph, graph_model, to_text
from tensorkit.notebook.grouping import fold_paths
from tensorkit.notebook.layout import layer_bands, layer_nodes


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
    site = matmul["call_site"]
    assert site["file"] == __file__ and site["site"] == f"{__file__}:{site['line']}"
    assert site["display"] == f"{os.path.relpath(__file__)}:{site['line']}"
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
    assert {n["module"] for n in full["nodes"] if n["kind"] == "tensor"} == {
        "Sequential.0",
        "Sequential.2",
    }, "the input and the parameters join the modules that use them"
    small = build_graph(_sequential_tape(), max_nodes=4)
    kinds = [n["kind"] for n in small["nodes"]]
    assert kinds.count("group") == 3 and small["omitted"] == 0
    groups = [n for n in small["nodes"] if n["kind"] == "group"]
    assert sorted(g["module"] for g in groups) == ["Sequential.0", "Sequential.1", "Sequential.2"]
    assert sum(g["count"] for g in groups) == len(full["nodes"]) - 1  # the final sum is outside
    assert small["groups"]["Sequential.0"]["collapsed"]
    ids = {n["id"] for n in small["nodes"]}
    assert all(e["source"] in ids and e["target"] in ids for e in small["edges"])
    top = build_graph(_sequential_tape(), max_nodes=2)
    assert [n["kind"] for n in top["nodes"]] == ["group", "op"] and top["omitted"] == 0
    tiny = build_graph(_sequential_tape(), max_nodes=1)
    assert len(tiny["nodes"]) == 1 and tiny["omitted"] == 1
    json.dumps(tiny, allow_nan=False)
    with pytest.raises(ValueError, match="max_nodes must be at least 1, got 0"):
        build_graph(_sequential_tape(), max_nodes=0)


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
    bounded = build_graph(y, max_nodes=2000)
    assert len(bounded["nodes"]) == 2000 and bounded["omitted"] == 8001
    assert len(build_graph(y)["nodes"]) == graph_model.MAX_NODES


def test_parameters_sit_next_to_the_ops_using_them() -> None:
    # x -> a -> b -> c and w -> v -> c: w and v move up to c; a sink keeps its depth.
    edges = [{"source": s, "target": t} for s, t in ["xa", "ab", "bc", "wv", "vc", "xd"]]
    layout = layer_nodes(list("xabcwvd"), edges)
    assert layout["depth"] == {"x": 0, "a": 1, "b": 2, "c": 3, "w": 1, "v": 2, "d": 1}
    assert layout["layers"] == [["x"], ["a", "w", "d"], ["b", "v"], ["c"]]


def test_side_computations_line_up_with_their_module() -> None:
    # main: x -> m.a -> bn.b -> bn.c; side, in module m.bn: s -> u; "lone" has no module.
    nodes = [
        {"id": i, "module": m}
        for i, m in [("x", ""), ("a", "m"), ("b", "m.bn"), ("c", "m.bn"), ("s", "m.bn")]
        + [("u", "m.bn"), ("lone", "")]
    ]
    edges = [{"source": s, "target": t} for s, t in ["xa", "ab", "bc", "su"]]
    layout = layer_bands(nodes, edges)
    assert layout["depth"] == {"x": 0, "a": 1, "b": 2, "c": 3, "s": 2, "u": 3, "lone": 0}
    assert layout["bands"] == [[["x", "lone"], ["a"], ["b", "s"], ["c", "u"]]]


def _create_graph_tape() -> tuple[tk.autograd.Tape, tk.Tensor]:
    """y = sum(x**3); g = dy/dx with create_graph; then d(sum g)/dx (second order)."""
    x = tk.tensor([1.5, 2.0], requires_grad=True)
    with tk.autograd.Tape() as tape:
        y = (x**3).sum()
        (g,) = tk.autograd.grad(y, x, create_graph=True)
        g.sum().backward()
    return tape, x


def test_create_graph_ops_form_bands_linked_to_their_ops() -> None:
    tape, _ = _create_graph_tape()
    forward_only = build_graph(tape)
    assert {n.get("band") for n in forward_only["nodes"]} == {0}
    assert forward_only["links"] == []
    graph = build_graph(tape, include_backward=True)
    json.dumps(graph, allow_nan=False)
    by_id = {n["id"]: n for n in graph["nodes"]}
    ops = [n for n in graph["nodes"] if n["kind"] == "op"]
    bands = {n["id"]: n["band"] for n in ops}
    assert {bands[f"op{e.index}"] for e in tape.entries if e.phase == "forward"} == {0}
    pow_op = next(n for n in ops if n["op"] == "pow" and n["band"] == 0)
    rule = [n for n in ops if n["backward_of"] == pow_op["id"]]
    assert rule and {n["band"] for n in rule} == {1}
    second = [n for n in ops if n["backward_of"] in {r["id"] for r in rule}]
    assert second and {n["band"] for n in second} == {2}, "the grad of the grad is band 2"
    links = {(lk["source"], lk["target"]) for lk in graph["links"]}
    assert links == {(n["backward_of"], n["id"]) for n in ops if n["backward_of"]}
    assert all(by_id[a]["band"] + 1 == by_id[b]["band"] for a, b in links)
    assert len(graph["layout"]["bands"]) == 3
    assert graph["layout"]["layers"] == graph["layout"]["bands"][0]
    for band, layers in enumerate(graph["layout"]["bands"]):
        for depth, layer in enumerate(layers):
            assert all((by_id[i]["band"], by_id[i]["depth"]) == (band, depth) for i in layer)
    assert "-- gradient ops, band 2" in to_text(graph)


def test_metrics_time_bytes_and_gradient_norms() -> None:
    tape, x = _create_graph_tape()
    graph = build_graph(tape, include_backward=True)
    ops = [n for n in graph["nodes"] if n["kind"] == "op"]
    entries = {f"op{e.index}": e for e in tape.entries}
    for node in ops:
        entry = entries[node["id"]]
        assert node["metrics"]["time_ns"] == entry.duration_ns > 0
        assert node["metrics"]["bytes"] == sum(o.nbytes for o in entry.outputs)
        rule = [e for e in tape.entries if e.backward_of == entry.index]
        assert node["metrics"].get("backward_ns") == (
            sum(e.duration_ns for e in rule) if rule else None
        )
    pow_op = next(n for n in ops if n["op"] == "pow" and n["band"] == 0)
    # pow's rule made 3 x^2 * (gradient of the sum, ones): its norm
    expected = (3 * x.detach() ** 2).norm().item()
    assert abs(pow_op["metrics"]["grad_norm"] - expected) < 1e-5
    leaf = next(n for n in graph["nodes"] if n["kind"] == "tensor" and n["requires_grad"])
    assert abs(leaf["metrics"]["grad_norm"] - x.grad.norm().item()) < 1e-6
    from_tensor = build_graph((x**2).sum())
    accumulator = next(n for n in from_tensor["nodes"] if n["kind"] == "leaf")
    assert abs(accumulator["metrics"]["grad_norm"] - x.grad.norm().item()) < 1e-6


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # on purpose
def test_gradient_norms_that_overflow_or_are_infinite_are_left_out() -> None:
    x = tk.ones(4, dtype=tk.float64, requires_grad=True)
    z = tk.tensor([0.0, 1.0], requires_grad=True)
    with tk.autograd.Tape() as tape:
        (x * 1e308).sum().backward()  # each gradient is 1e308, their norm 2e308 overflows
        z.sqrt().sum().backward()  # d sqrt(z) / dz is inf at 0
    graph = build_graph(tape, include_backward=True)
    json.dumps(graph, allow_nan=False)
    for op in ("mul", "sqrt"):
        node = next(n for n in graph["nodes"] if n["op"] == op and n["band"] == 0)
        assert "backward_ns" in node["metrics"] and "grad_norm" not in node["metrics"]
    leaves = [n for n in graph["nodes"] if n["kind"] == "tensor" and n["band"] == 0]
    assert len(leaves) == 2 and all("grad_norm" not in n["metrics"] for n in leaves)


def test_bytes_come_from_the_profiler_when_it_records_memory() -> None:
    w = tk.randn(64, 64, requires_grad=True)
    with tk.profiler.profile(record_memory=True), tk.autograd.Tape() as tape:
        (w @ w).sum()
    matmul = next(n for n in build_graph(tape)["nodes"] if n["op"] == "matmul")
    assert matmul["metrics"]["bytes"] == matmul["records"]["alloc_bytes"]


class _Block(tk.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = tk.nn.Conv2d(4, 4, 3, padding=1, bias=False)
        self.bn = tk.nn.BatchNorm2d(4)
        self.relu = tk.nn.ReLU()

    def forward(self, x: tk.Tensor) -> tk.Tensor:
        return self.relu(self.bn(self.conv(x)) + x)


def _depth(groups: dict, group_id: str) -> int:
    depth = 0
    while groups[group_id]["parent"] is not None:
        group_id = groups[group_id]["parent"]
        depth += 1
    return depth


def test_large_graphs_open_folded_by_module_and_gradients_group_with_them() -> None:
    model = tk.nn.Sequential(tk.nn.Conv2d(3, 4, 3, padding=1), _Block(), _Block())
    with tk.autograd.Tape() as tape:
        model(tk.randn(1, 3, 5, 5)).sum().backward()
    graph = build_graph(tape, include_backward=True, collapse_above=40)
    groups = graph["groups"]
    functions = [g for g in groups if groups[g]["kind"] == "function"]
    assert len(functions) == 10, "3 conv2d, 2 batch_norm, and their gradient mirrors"

    def at_depth(level: int) -> list[str]:
        return [g for g in groups if g in functions or _depth(groups, g) == level]

    def shown(level: int) -> int:
        return len(fold_paths(graph["nodes"], graph["edges"], at_depth(level), groups)[0])

    assert len(fold_paths(graph["nodes"], graph["edges"], functions, groups)[0]) > 40
    level = min(_depth(groups, g) for g in graph["collapsed"] if g not in functions)
    assert graph["collapsed"] == at_depth(level)
    assert shown(level) <= 40 < shown(level + 1), "the deepest level showing at most 40"
    assert "\u2207Sequential.1.conv" in groups
    ungrouped = [n for n in graph["nodes"] if not n["module"]]
    assert len(ungrouped) <= 4, "only the final sum's own ops stay outside the modules"
    clones = [n for n in graph["nodes"] if n.get("grad_of")]
    assert clones and all(n["module"].startswith("\u2207Sequential") for n in clones)
    top = build_graph(tape, include_backward=True, collapse_above=shown(0))["collapsed"]
    assert top == at_depth(0)
    forward = build_graph(tape, collapse_above=10_000)
    assert forward["collapsed"] == [g for g in forward["groups"] if g in functions]
    small = build_graph(tape, include_backward=True, max_nodes=shown(1))
    ids = {n["id"] for n in small["nodes"]}
    assert {(lk["source"], lk["target"]) for lk in small["links"]} >= {
        ("g:Sequential.1", "g:\u2207Sequential.1"),
        ("g:Sequential.2", "g:\u2207Sequential.2"),
    }, "links follow the ops into the groups that fold them"
    assert all(lk["source"] in ids and lk["target"] in ids for lk in small["links"])


def test_import_pulls_in_no_front_end_libraries() -> None:
    code = (
        "import sys, tensorkit.notebook; "
        "bad = [m for m in ('ipywidgets', 'anywidget', 'matplotlib') if m in sys.modules]; "
        "sys.exit(bool(bad))"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_building_leaves_the_garbage_collector_as_it_found_it() -> None:
    import gc

    tape, _ = _small_tape()
    assert gc.isenabled()
    build_graph(tape)
    assert gc.isenabled()
    gc.disable()
    try:
        build_graph(tape)
        assert not gc.isenabled()
    finally:
        gc.enable()
