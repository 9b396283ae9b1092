"""The graph model's groups and labels: modules by class and path, composite functions as one
node each (linear, conv2d, batch_norm, attention...), record_function ranges, gradient
mirrors, parameters and inputs by name."""

from __future__ import annotations

import json

import pytest

import tensorkit as tk
from tensorkit.notebook import build_graph, to_text
from tensorkit.notebook.grouping import fold_paths

F = tk.nn.functional
GRAD = "\u2207"


def _ops(graph: dict, group_id: str) -> list[str]:
    by_id = {n["id"]: n for n in graph["nodes"]}
    return [by_id[i]["op"] for i in graph["groups"][group_id]["nodes"] if by_id[i]["kind"] == "op"]


def _folded(graph: dict) -> tuple[dict[str, dict], list[dict]]:
    """The nodes and edges a view shows at first (the model's ``collapsed`` folded)."""
    nodes, edges = fold_paths(graph["nodes"], graph["edges"], graph["collapsed"], graph["groups"])
    return {n["id"]: n for n in nodes}, edges


def _inputs(nodes: dict[str, dict], edges: list[dict], node_id: str) -> list[str]:
    into = sorted((e for e in edges if e["target"] == node_id), key=lambda e: e["position"])
    return [nodes[e["source"]]["label"] for e in into]


# Inputs are globals: they are named by their variable names on every Python (a function's
# local variables count from Python 3.13 on, see tensorkit._callsite).
x = tk.randn(2, 3)
sequences = tk.randn(2, 5, 3)
images = tk.randn(2, 1, 4, 4)
src = tk.randn(1, 3, 8)


def _mlp_tape() -> tk.autograd.Tape:
    """An MLP over a batch of sequences: each linear layer folds the batch into rows (view,
    linear, view)."""
    model = tk.nn.Sequential(tk.nn.Linear(3, 4), tk.nn.Tanh(), tk.nn.Linear(4, 1))
    with tk.autograd.Tape() as tape:
        model(sequences).sum()
    return tape


def test_a_linear_layer_reads_as_one_linear_node() -> None:
    """A linear layer on a matrix is one op (addmm, bias first, as PyTorch's), in a box named
    after the function, folded at first as every function is."""
    model = tk.nn.Sequential(tk.nn.Linear(3, 4), tk.nn.Tanh(), tk.nn.Linear(4, 1))
    with tk.autograd.Tape() as tape:
        model(x).sum().backward()
    graph = build_graph(tape)
    json.dumps(graph, allow_nan=False)
    groups = graph["groups"]
    assert _ops(graph, "Sequential.0/linear#1") == ["addmm"]
    assert groups["Sequential.0"]["count"] == 1 + 3, "its addmm op, x, weight and bias"
    assert graph["collapsed"] == ["Sequential.0/linear#1", "Sequential.2/linear#1"]
    nodes, edges = _folded(graph)
    assert nodes["g:Sequential.0/linear#1"]["ops"] == {"addmm": 1}
    assert _inputs(nodes, edges, "g:Sequential.0/linear#1") == ["0.bias", "x", "0.weight"]
    assert _inputs(nodes, edges, "g:Sequential.2/linear#1") == ["2.bias", "tanh", "2.weight"]


def test_a_linear_layer_on_sequences_reads_as_one_linear_box() -> None:
    graph = build_graph(_mlp_tape())
    groups = graph["groups"]
    assert list(groups) == [
        "Sequential",
        "Sequential.0",
        "Sequential.0/linear#1",
        "Sequential.1",
        "Sequential.2",
        "Sequential.2/linear#1",
    ]
    assert {g: groups[g]["label"] for g in groups} == {
        "Sequential": "Sequential",
        "Sequential.0": "Linear \u00b7 0",
        "Sequential.0/linear#1": "linear",
        "Sequential.1": "Tanh \u00b7 1",
        "Sequential.2": "Linear \u00b7 2",
        "Sequential.2/linear#1": "linear",
    }
    linear = groups["Sequential.0/linear#1"]
    assert linear["kind"] == "function" and linear["name"] == "linear"
    assert linear["parent"] == "Sequential.0" and linear["module"] == "Sequential.0"
    assert groups["Sequential.0"]["children"] == ["Sequential.0/linear#1"]
    assert _ops(graph, "Sequential.0/linear#1") == ["view", "addmm", "view"]
    assert groups["Sequential.0"]["count"] == 3 + 3, "its linear's ops, x, weight and bias"
    assert graph["collapsed"] == ["Sequential.0/linear#1", "Sequential.2/linear#1"]
    nodes, edges = _folded(graph)
    first = nodes["g:Sequential.0/linear#1"]
    assert first["label"] == "linear" and first["group"] == "Sequential.0"
    assert first["count"] == 3 and first["ops"] == {"view": 2, "addmm": 1}
    assert _inputs(nodes, edges, first["id"]) == ["sequences", "0.bias", "0.weight"]
    assert _inputs(nodes, edges, "g:Sequential.2/linear#1") == ["tanh", "2.bias", "2.weight"]


class _Block(tk.nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv1 = tk.nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = tk.nn.BatchNorm2d(channels)

    def forward(self, x: tk.Tensor) -> tk.Tensor:
        return F.relu(self.bn1(self.conv1(x)) + x)


class _Net(tk.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = tk.nn.Conv2d(1, 2, 3, padding=1)
        self.layer1 = tk.nn.Sequential(_Block(2))
        self.pool = tk.nn.MaxPool2d(2)
        self.fc = tk.nn.Linear(8, 3)

    def forward(self, x: tk.Tensor) -> tk.Tensor:
        return self.fc(self.pool(self.layer1(self.stem(x))).flatten(1))


def _conv_net_graph(**options: object) -> dict:
    net = _Net()
    labels = tk.tensor([0, 2])
    with tk.autograd.Tape() as tape:
        loss = F.cross_entropy(net(images), labels)
        loss.backward()
    return build_graph(tape, **options)


def test_a_conv_net_names_modules_by_class_and_path_and_batch_norm_is_one_node() -> None:
    graph = _conv_net_graph()
    groups = graph["groups"]
    labels = {g: groups[g]["label"] for g in groups}
    assert labels["_Net"] == "_Net"
    assert labels["_Net.layer1"] == "Sequential \u00b7 layer1"
    assert labels["_Net.layer1.0"] == "_Block \u00b7 layer1.0"
    assert labels["_Net.layer1.0.conv1"] == "Conv2d \u00b7 layer1.0.conv1"
    assert labels["_Net.layer1.0.bn1"] == "BatchNorm2d \u00b7 layer1.0.bn1"
    assert labels["_Net.pool"] == "MaxPool2d \u00b7 pool"
    norm = "_Net.layer1.0.bn1/batch_norm#1"
    assert labels[norm] == "batch_norm" and groups[norm]["parent"] == "_Net.layer1.0.bn1"
    assert {"mul", "add"} <= set(_ops(graph, norm)), "its ops inside, one node by default"
    assert _ops(graph, "_Net.layer1.0") == ["add", "relu"], "the block's own ops"
    assert labels["_Net.pool/max_pool2d#1"] == "max_pool2d"
    loss = "cross_entropy#1"
    assert groups[loss]["parent"] is None and groups[loss]["kind"] == "function"
    assert [groups[c]["label"] for c in groups[loss]["children"]] == ["nll_loss"]
    assert set(graph["collapsed"]) == {g for g in groups if groups[g]["kind"] == "function"}
    names = {n["label"] for n in graph["nodes"] if n["kind"] == "tensor" and n["band"] == 0}
    assert {
        "images",
        "stem.weight",
        "stem.bias",
        "layer1.0.conv1.weight",
        "layer1.0.bn1.weight",
        "layer1.0.bn1.running_mean",
        "fc.weight",
    } <= names
    nodes, _ = _folded(graph)
    found = [n for n in nodes.values() if "batch_norm" in n["label"]]
    assert [n["id"] for n in found] == [f"g:{norm}"], "a search for batch_norm finds it"
    assert {"stem.weight", "images"} <= {n["label"] for n in nodes.values()}


def test_each_call_is_its_own_group() -> None:
    layer = tk.nn.Linear(2, 2)
    x = tk.randn(1, 2)
    with tk.autograd.Tape() as tape:
        F.linear(F.linear(x, layer.weight), layer.weight)
        layer(layer(x))
    groups = build_graph(tape)["groups"]
    assert [g for g in groups if groups[g]["kind"] == "function"] == [
        "linear#1",
        "linear#2",
        "Linear/linear#1",
        "Linear/linear#2",
    ]
    assert groups["Linear"]["children"] == ["Linear/linear#1", "Linear/linear#2"]
    assert groups["Linear"]["label"] == "Linear"
    assert all(groups[g]["label"] == "linear" for g in groups if g != "Linear")


def test_a_transformer_encoder_layer_shows_its_attention_and_norms() -> None:
    layer = tk.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
    with tk.autograd.Tape() as tape:
        layer(src).sum()
    graph = build_graph(tape)
    groups = graph["groups"]
    attention = "TransformerEncoderLayer.self_attn/multi_head_attention_forward#1"
    assert groups["TransformerEncoderLayer.self_attn"]["label"] == (
        "MultiheadAttention \u00b7 self_attn"
    )
    assert groups[attention]["kind"] == "function"
    inside = [groups[c]["label"] for c in groups[attention]["children"]]
    assert "scaled_dot_product_attention" in inside and "linear" in inside
    assert groups["TransformerEncoderLayer.norm1/layer_norm#1"]["label"] == "layer_norm"
    assert attention in graph["collapsed"]
    assert all(groups[c]["parent"] == attention for c in groups[attention]["children"])
    names = {n["label"] for n in graph["nodes"] if n["kind"] == "tensor"}
    assert {"src", "self_attn.in_proj_weight", "linear1.weight", "norm2.bias"} <= names
    nodes, _ = _folded(graph)
    assert [n["label"] for n in nodes.values() if n.get("path") == attention] == [
        "multi_head_attention_forward"
    ], "nested functions fold into the outermost"


class _Mixer(tk.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = tk.nn.Linear(2, 2)

    def forward(self, x: tk.Tensor) -> tk.Tensor:
        with tk.profiler.record_function("mix"):
            return self.proj(x * 2.0)


def test_record_function_ranges_are_groups_that_nest() -> None:
    model = _Mixer()
    x = tk.randn(1, 2)
    with tk.autograd.Tape() as tape:
        with tk.profiler.record_function("step"):
            with tk.profiler.record_function("forward"):
                out = model(x)
            F.mse_loss(out, tk.zeros(1, 2))
        with tk.profiler.record_function("step"):
            (x * 3.0).sum()
    graph = build_graph(tape)
    groups = graph["groups"]
    assert groups["step#1"]["kind"] == "range" and groups["step#1"]["label"] == "step"
    assert groups["step#1"]["children"] == ["step#1/forward#1", "step#1/mse_loss#1"]
    assert groups["step#1/forward#1"]["children"] == ["_Mixer"]
    assert groups["_Mixer"]["parent"] == "step#1/forward#1"
    assert groups["_Mixer"]["children"] == ["_Mixer/mix#1"], "a range inside a forward"
    assert groups["_Mixer/mix#1"]["children"] == ["_Mixer.proj"]
    assert groups["_Mixer.proj"]["parent"] == "_Mixer/mix#1"
    assert _ops(graph, "_Mixer/mix#1") == ["mul"]
    assert groups["step#1/mse_loss#1"]["kind"] == "function"
    assert _ops(graph, "step#2") == ["mul", "sum"], "the second call is a group of its own"
    ranges = [g for g in groups if groups[g]["kind"] == "range"]
    assert not set(ranges) & set(graph["collapsed"]), "ranges open; functions fold"


def test_a_model_called_in_two_ranges_keeps_its_place_by_path() -> None:
    model = tk.nn.Sequential(tk.nn.Linear(2, 2))
    x = tk.randn(1, 2)
    with tk.autograd.Tape() as tape:
        for name in ("first", "second"):
            with tk.profiler.record_function(name):
                model(x)
        with tk.profiler.record_function("second"):
            model(x) * 2.0
    groups = build_graph(tape)["groups"]
    assert groups["Sequential"]["parent"] is None
    assert "first#1" not in groups, "a range holding nothing of its own is left out"
    assert groups["second#2"]["nodes"] and groups["second#2"]["children"] == []
    assert len([g for g in groups if g.startswith("Sequential.0/linear#")]) == 3


def test_gradient_ops_go_in_the_mirror_of_their_ops_group() -> None:
    graph = _conv_net_graph(include_backward=True)
    groups = graph["groups"]
    by_id = {n["id"]: n for n in graph["nodes"]}
    rules = [n for n in graph["nodes"] if n["kind"] == "op" and n["backward_of"]]
    assert rules
    for node in rules:
        forward = by_id[node["backward_of"]]
        assert node["group"] == (GRAD + forward["group"] if forward["group"] else "")
    norm = GRAD + "_Net.layer1.0.bn1/batch_norm#1"
    assert groups[norm]["kind"] == "function" and groups[norm]["label"] == "\u2207 batch_norm"
    assert groups[norm]["parent"] == GRAD + "_Net.layer1.0.bn1"
    assert groups[GRAD + "_Net.layer1.0.bn1"]["label"] == "\u2207 BatchNorm2d \u00b7 layer1.0.bn1"
    assert (
        groups[GRAD + "_Net"]["parent"] is None and groups[GRAD + "_Net"]["module"] == GRAD + "_Net"
    )
    assert norm in graph["collapsed"]
    copies = [n for n in graph["nodes"] if n["kind"] == "op" and n.get("grad_of")]
    assert copies and all(n["group"].startswith(GRAD + "_Net") for n in copies)
    leaf = next(n for n in graph["nodes"] if n["label"] == "layer1.0.conv1.weight")
    copy = next(n for n in copies if n["grad_of"] == leaf["id"])
    assert copy["group"] == GRAD + leaf["group"] == GRAD + "_Net.layer1.0.conv1"


def test_second_order_gradients_mirror_twice() -> None:
    model = tk.nn.Sequential(tk.nn.Linear(2, 1))
    x = tk.randn(3, 2, requires_grad=True)
    with tk.autograd.Tape() as tape:
        y = model(x).tanh().sum()
        (g,) = tk.autograd.grad(y, x, create_graph=True)
        g.pow(2).sum().backward()
    graph = build_graph(tape, include_backward=True)
    groups = graph["groups"]
    twice = GRAD * 2 + "Sequential.0/linear#1"
    assert twice in groups and groups[twice]["label"] == "\u2207\u2207 linear"
    assert groups[twice]["parent"] == GRAD * 2 + "Sequential.0"
    assert all(n["band"] == 2 for n in graph["nodes"] if n["group"] == twice)
    assert {n["module"] for n in graph["nodes"] if n["group"] == twice} == {
        GRAD * 2 + "Sequential.0"
    }


def test_above_max_nodes_functions_fold_first_then_modules() -> None:
    tape = _mlp_tape()
    full = build_graph(tape)
    functions_only = len(_folded(full)[0])
    graph = build_graph(tape, max_nodes=functions_only)
    assert len(graph["nodes"]) == functions_only and graph["omitted"] == 0
    folded = {n["path"]: n for n in graph["nodes"] if n["kind"] == "group"}
    assert set(folded) == {"Sequential.0/linear#1", "Sequential.2/linear#1"}
    assert folded["Sequential.0/linear#1"]["label"] == "linear"
    assert folded["Sequential.0/linear#1"]["group"] == "Sequential.0"
    groups = graph["groups"]
    assert [g for g in groups if groups[g]["collapsed"]] == list(folded)
    assert graph["collapsed"] == [], "what Python folded is not folded again"
    assert "[linear] 3 ops" in to_text(graph)
    smaller = build_graph(tape, max_nodes=functions_only - 1)
    assert {n["path"] for n in smaller["nodes"] if n["kind"] == "group"} == {
        "Sequential.0",
        "Sequential.1",
        "Sequential.2",
    }
    assert {n["label"] for n in smaller["nodes"] if n["kind"] == "group"} == {
        "Linear \u00b7 0",
        "Tanh \u00b7 1",
        "Linear \u00b7 2",
    }


def test_graphs_without_the_new_keys_still_fold() -> None:
    """Recordings made before groups had kinds, labels and ids of their own (widgets/test/fold
    tests the front end's fallback for them)."""
    graph = build_graph(_mlp_tape())
    old = json.loads(json.dumps(graph))
    for node in old["nodes"]:
        del node["label"], node["group"]
        node["call_site"] = node["call_site"] and node["call_site"]["site"]
    old["groups"] = {
        g: {k: v for k, v in group.items() if k in ("path", "parent", "children", "nodes", "count")}
        for g, group in old["groups"].items()
        if group["kind"] == "module"
    }
    for group in old["groups"].values():
        group["children"] = [c for c in group["children"] if c in old["groups"]]
    old["collapsed"] = ["Sequential.0"]
    nodes, _ = fold_paths(old["nodes"], old["edges"], old["collapsed"], old["groups"])
    folded = next(n for n in nodes if n["kind"] == "group")
    assert folded["id"] == "g:Sequential.0" and folded["count"] == 6
    assert folded["label"] == "Sequential.0"


def test_unnamed_tensors_read_tensor_and_a_flat_graph_has_no_groups() -> None:
    with tk.autograd.Tape() as tape:
        (tk.randn(2) * 2.0).sum()
    graph = build_graph(tape)
    assert [n["label"] for n in graph["nodes"]] == ["tensor", "mul", "sum"]
    flat = build_graph(_mlp_tape(), group_by_module=False)
    assert flat["groups"] == {} and flat["collapsed"] == []
    assert {n["group"] for n in flat["nodes"]} == {""}


@pytest.mark.parametrize("include_backward", [False, True])
def test_every_node_is_in_its_groups_nodes_and_counts_add_up(include_backward: bool) -> None:
    graph = _conv_net_graph(include_backward=include_backward)
    groups = graph["groups"]
    placed = {i for g in groups.values() for i in g["nodes"]}
    assert placed == {n["id"] for n in graph["nodes"] if n["group"]}
    for group_id, group in groups.items():
        assert group["path"] == group_id
        assert group["count"] == len(group["nodes"]) + sum(
            groups[c]["count"] for c in group["children"]
        )
        assert all(groups[c]["parent"] == group_id for c in group["children"])
        assert group["parent"] is None or group_id in groups[group["parent"]]["children"]
