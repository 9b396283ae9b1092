"""The graph view of tk.jit graphs (notebook/jit_graph.py): the IR as the graph widget's model
(module groups, placeholders, the backward band, fused groups holding their member ops and
the kernel source, guards and graph breaks) and the widget that shows it. Fused nodes are
made here by hand (with the pass off), as the fusion pass makes them: ``Node(kind="fused",
args=external Refs, outputs=values, members=the original nodes, source=...)``."""

from __future__ import annotations

import json

import pytest

import tensorkit as tk
import tensorkit.jit as jit
from tensorkit import _notebook_hooks
from tensorkit.jit.ir import Graph, Node, Ref
from tensorkit.notebook import recording_schema
from tensorkit.notebook.jit_graph import build_jit_graph


@pytest.fixture(autouse=True)
def _no_fusion_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test here places its fused nodes by hand (the pass's own nodes are drawn in
    tests/jit/test_jit_fusion.py)."""
    monkeypatch.setattr(jit.config, "fuse_elementwise", False)


KERNEL = "def fused_add_tanh(a, b):\n    return np.tanh(a + b)\n"


def _model() -> tk.nn.Module:
    tk.manual_seed(0)
    return tk.nn.Sequential(tk.nn.Linear(4, 3), tk.nn.Tanh(), tk.nn.Linear(3, 2))


def _traced() -> jit.TracedFunction:
    return jit.trace(_model(), (tk.randn(2, 4),))


def fuse(nodes: list[Node], ops: list[str], source: str = KERNEL, module: str | None = None):
    """Replace the first run of consecutive nodes whose ops are ``ops`` by one fused node
    (its args: the Refs the run reads from outside it; its outputs: the last member's)."""
    start = next(i for i in range(len(nodes)) if [n.op for n in nodes[i : i + len(ops)]] == ops)
    members = nodes[start : start + len(ops)]
    made = {v.id for m in members for v in m.outputs}
    args = tuple(
        dict.fromkeys(a for m in members for a in m.args if type(a) is Ref and a.id not in made)
    )
    fused = Node(
        op="fused",
        args=args,
        attrs={},
        outputs=members[-1].outputs,
        module=members[0].module if module is None else module,
        phase=members[0].phase,
        kind="fused",
        members=members,
        source=source,
    )
    nodes[start : start + len(ops)] = [fused]
    return fused


def _by_id(model: dict) -> dict[str, dict]:
    return {n["id"]: n for n in model["nodes"]}


def test_a_fused_node_is_a_folded_group_of_its_member_ops_with_the_kernel_source() -> None:
    traced = _traced()
    fuse(traced.graph.nodes, ["add", "tanh"])  # Linear 0's bias add and the Tanh after it
    model = build_jit_graph(traced)
    fused = {g: group for g, group in model["groups"].items() if group["kind"] == "fused"}
    assert list(fused) == ["Sequential.0/fused#1"]
    group = fused["Sequential.0/fused#1"]
    assert group["label"] == "fused: add·tanh (2 ops)"
    assert group["ops"] == ["add", "tanh"]
    assert group["source"] == KERNEL
    assert group["parent"] == "Sequential.0"
    assert "Sequential.0/fused#1" in model["groups"]["Sequential.0"]["children"]
    assert group["nodes"] == ["n2.0", "n2.1"] and group["count"] == 2
    nodes = _by_id(model)
    assert [nodes[m]["op"] for m in group["nodes"]] == ["add", "tanh"]
    assert nodes["n2.1"]["module"] == "Sequential.1"  # a member keeps its own module
    assert model["collapsed"] == ["Sequential.0/fused#1"]
    assert model["jit"]["fused"] == 1
    # The edges reach the members: into the add from the matmul and the bias, out of the tanh
    # to the next Linear's addmm op, its input after its bias (and to the backward that reads
    # it). That op, whose result is the output, stays one op (tk.jit's decomposition).
    edges = {(e["source"], e["target"], e["position"]) for e in model["edges"]}
    assert {("n1", "n2.0", 0), ("p2", "n2.0", 1), ("n2.1", "n3", 1)} <= edges
    assert nodes["n3"]["op"] == "addmm"
    assert not any(e["source"] == "n2" or e["target"] == "n2" for e in model["edges"])
    # The bias joins the module holding the fused group, so the folded box shows it as input.
    assert nodes["p2"]["group"] == "Sequential.0"


def test_fused_groups_are_numbered_per_module_and_long_labels_are_cut() -> None:
    tk.manual_seed(0)
    layers = [tk.nn.Linear(4, 3), tk.nn.Tanh(), tk.nn.Linear(3, 3), tk.nn.Tanh()]
    traced = jit.trace(tk.nn.Sequential(*layers, tk.nn.Linear(3, 2)), (tk.randn(2, 4),))
    nodes = traced.graph.nodes
    fuse(nodes, ["permute", "matmul", "add", "tanh", "permute", "matmul"], module="Sequential")
    model = build_jit_graph(traced)
    group = model["groups"]["Sequential/fused#1"]
    assert group["label"] == "fused: permute·matmul·add·tanh·…·matmul (6 ops)"
    assert group["parent"] == "Sequential"
    # Two fused nodes of one module: two groups, numbered in graph order.
    traced = _traced()
    fuse(traced.graph.nodes, ["permute", "matmul"])
    fuse(traced.graph.nodes, ["add"], source="second")
    model = build_jit_graph(traced)
    sources = {g: x["source"] for g, x in model["groups"].items() if x["kind"] == "fused"}
    assert sources == {"Sequential.0/fused#1": KERNEL, "Sequential.0/fused#2": "second"}
    assert model["collapsed"] == list(sources)
    # A fused node that names no module sits in the module all its members ran in.
    traced = _traced()
    fuse(traced.graph.nodes, ["add", "tanh"], module="")
    model = build_jit_graph(traced)
    assert model["groups"]["Sequential/fused#1"]["parent"] == "Sequential"


def test_ops_are_grouped_by_module_and_placeholders_named_by_placeholder() -> None:
    model = build_jit_graph(_traced())
    groups = model["groups"]
    assert {g: (x["label"], x["parent"]) for g, x in groups.items()} == {
        "Sequential": ("Sequential", None),
        "Sequential.0": ("Linear · 0", "Sequential"),
        "Sequential.1": ("Tanh · 1", "Sequential"),
        "Sequential.2": ("Linear · 2", "Sequential"),
    }
    nodes = _by_id(model)
    assert [nodes[n]["op"] for n in groups["Sequential.0"]["nodes"] if n.startswith("n")] == [
        "permute",
        "matmul",
        "add",
    ]
    tensors = {n["label"]: n for n in model["nodes"] if n["kind"] == "tensor"}
    assert set(tensors) == {
        "input 0",
        "0.weight",
        "0.bias",
        "2.weight",
        "2.bias",
        "gradient of output 0",
    }
    assert tensors["0.weight"]["placeholder"] == "parameter"
    assert tensors["0.weight"]["requires_grad"] is True
    assert tensors["0.weight"]["shapes"]["out"] == [[3, 4]]
    assert tensors["2.bias"]["group"] == "Sequential.2"
    assert nodes["n1"]["shapes"] == {"in": [[2, 4], [4, 3]], "out": [[2, 3]]}
    assert nodes["n0"]["attrs"] == {"axes": [1, 0]}
    assert model["source"] == "jit" and model["collapsed"] == []


def test_the_backward_is_a_band_of_its_own_and_can_hold_fused_groups() -> None:
    traced = _traced()
    fuse(traced.graph.backward, ["sum", "view"])  # the last bias's gradient
    model = build_jit_graph(traced)
    nodes = _by_id(model)
    forward = [n for n in model["nodes"] if n["kind"] == "op" and n["band"] == 0]
    backward = [n for n in model["nodes"] if n["kind"] == "op" and n["band"] == 1]
    assert len(forward) == len(traced.graph.nodes)
    assert len(backward) == len(traced.graph.backward) + 1  # two members for one node
    assert {n["phase"] for n in backward} == {"backward"}
    assert "tanh_backward" in {n["op"] for n in backward}
    seed = next(n for n in model["nodes"] if n["label"] == "gradient of output 0")
    assert seed["band"] == 1 and seed["placeholder"] == "grad_output"
    assert len(model["layout"]["bands"]) == 2
    group = model["groups"]["fused#1"]
    assert (group["parent"], group["nodes"]) == (None, ["b3.0", "b3.1"])
    assert nodes["b3.0"]["band"] == 1
    assert model["collapsed"] == ["fused#1"]
    # The backward reads forward values: edges across the bands.
    assert any(
        nodes[e["source"]]["band"] == 0 and nodes[e["target"]]["band"] == 1 for e in model["edges"]
    )


def model_node(model: dict, node_id: str) -> dict:
    return next(n for n in model["nodes"] if n["id"] == node_id)


def test_graph_breaks_and_guards_are_listed_beside_the_graph() -> None:
    def steered(x):
        y = x * 2
        if y.sum().item() > 0:
            return y.tanh()
        return y

    explained = jit.explain(steered, tk.ones(2, 3))
    model = build_jit_graph(explained)
    (found,) = model["jit"]["breaks"]
    assert found["kind"] == "value_read"
    assert found["reason"] == "Tensor.item() reads a tensor's value into Python"
    assert "test_jit_graph.py:" in found["site"]
    assert (found["guarded"], found["value"]) == (True, "12.0")
    line = steered.__code__.co_firstlineno + 2
    assert model["jit"]["guards"] == [
        "grad mode is as now",
        "input 0: float32[2, 3] on cpu, requires_grad=False",
        f"Tensor.item() at tests/notebook/test_jit_graph.py:{line} == 12.0",
    ]
    assert model["jit"]["title"] == "tk.jit.explain: 2 graph(s), 1 break(s)"
    assert [n["op"] for n in model["nodes"] if n["kind"] == "op"] == ["mul", "sum", "tanh"]
    # The guard is a node of its own kind, labelled by the read and its value, fed by the sum.
    (guard,) = [n for n in model["nodes"] if n["kind"] == "guard"]
    assert guard["label"] == "item() = 12.0"
    assert guard["call_site"]["display"].endswith(f"test_jit_graph.py:{line}")
    (edge,) = [e for e in model["edges"] if e["target"] == guard["id"]]
    assert model_node(model, edge["source"])["op"] == "sum"
    # A plain Graph lists its own breaks; a traced function its input checks.
    assert build_jit_graph(explained.graph)["jit"]["breaks"] == [found]
    traced = build_jit_graph(_traced())["jit"]
    assert traced["guards"] == ["input 0: float32[2, 4] on cpu"]
    assert traced["title"] == "tk.jit.trace of Sequential" and traced["breaks"] == []


def test_a_compiled_function_shows_its_latest_compiled_guard_set() -> None:
    compiled = tk.compile(_model())
    with pytest.raises(ValueError, match=r"tk\.compile of Sequential .*not been called yet"):
        build_jit_graph(compiled)
    x = tk.randn(2, 4)
    compiled(x)
    with pytest.raises(ValueError, match=r"recorded its calls but not compiled them yet"):
        build_jit_graph(compiled)
    compiled(x)
    model = build_jit_graph(compiled)
    assert model["jit"]["title"] == "tk.compile of Sequential: guard set 1 of 1"
    assert model["jit"]["guards"] == [
        "grad mode on",
        "argument 0: float32[2, 4] on cpu, requires_grad=False",
        "Sequential's modules in training mode, its parameters the same tensors",
    ]
    assert model["groups"]["Sequential.0"]["label"] == "Linear · 0"
    assert any(n["band"] == 1 for n in model["nodes"])


def test_the_passes_rewrites_are_listed_beside_a_compiled_graph() -> None:
    """What the panel shows under "rewrites": the lines tk.jit.explain prints."""
    model = tk.nn.Sequential(tk.nn.Conv2d(1, 4, 3), tk.nn.ReLU(), tk.nn.Conv2d(4, 2, 3))
    compiled = tk.compile(model)
    x = tk.randn(2, 1, 9, 9)
    for _ in range(2):
        compiled(x)
    rewrites = build_jit_graph(compiled)["jit"]["rewrites"]
    assert "convolutions run channels last: 2 (Sequential.0, Sequential.2)" in rewrites
    assert rewrites == tk.jit.explain(model, x).rewrites
    assert build_jit_graph(jit.trace(lambda t: t * 2, (tk.ones(3),)))["jit"]["rewrites"] == []


def test_a_compiled_function_that_only_breaks_names_its_breaks() -> None:
    @tk.compile
    def steered(x, scale):
        return x * float(x.sum().numpy()) * scale

    steered(tk.ones(2), 3)
    with pytest.raises(
        ValueError,
        match=r"tk\.compile of .*steered has no compiled graph to show: its calls run eagerly "
        r"at graph breaks \(Tensor\.numpy\(\) reads .* no guard on a value can follow "
        r"\(at .*test_jit_graph\.py:\d+\)\); "
        r"tk\.jit\.explain\(.*steered, \*args\) shows the graph of one call",
    ):
        build_jit_graph(steered)


def test_guards_of_other_arguments_in_words() -> None:
    @tk.compile
    def scaled(x, scale):
        return x * scale

    x = tk.randn(3)
    scaled(x, 2)
    scaled(x, 2)
    assert build_jit_graph(scaled)["jit"]["guards"] == [
        "grad mode on",
        "argument 0: float32[3] on cpu, requires_grad=False",
        "argument 1 == 2",
    ]


def test_a_compiled_guard_set_lists_the_values_its_graph_guards_on() -> None:
    """The panel's guards name each guarded read, as tk.jit.explain's text does."""

    @tk.compile
    def clipped(x):
        if bool((x > 1).any()):
            return x.clamp(max=1)
        return x * 2

    x = tk.tensor([0.5, 2.0])
    clipped(x)
    clipped(x)
    line = clipped.fn.__code__.co_firstlineno + 2
    guards = build_jit_graph(clipped)["jit"]["guards"]
    assert guards[-1] == f"Tensor.__bool__() at tests/notebook/test_jit_graph.py:{line} == True"
    assert guards[0] == "grad mode on"


def test_other_objects_are_refused_by_name() -> None:
    with pytest.raises(
        TypeError,
        match=r"build_jit_graph expects a tk\.jit Graph, TracedFunction, CompiledFunction or "
        r"ExplainOutput, got Tensor",
    ):
        build_jit_graph(tk.ones(2))


def test_the_model_is_json_and_fits_the_recording_schema() -> None:
    traced = _traced()
    fuse(traced.graph.nodes, ["add", "tanh"])
    model = build_jit_graph(traced)
    assert json.loads(json.dumps(model, allow_nan=False)) == model
    recording_schema.check(model, recording_schema.GRAPH)
    assert Graph is type(traced.graph)


anywidget = pytest.importorskip("anywidget", reason="the widget needs anywidget")


def test_show_compiled_is_a_graph_widget_opening_with_fused_groups_folded() -> None:
    from tensorkit.notebook import show_compiled, widgets
    from tensorkit.notebook.recorded import MIME_TYPE

    traced = _traced()
    fuse(traced.graph.nodes, ["add", "tanh"])
    widget = show_compiled(traced)
    assert isinstance(widget, widgets.GraphWidget)
    assert widget.graph == build_jit_graph(traced)
    assert widget.collapsed == ["Sequential.0/fused#1"]
    assert (widget.selected, widget.color_by, widget.show_backward) == ("", "none", True)
    data = widget._repr_mimebundle_()
    data = data[0] if isinstance(data, tuple) else data
    assert data[MIME_TYPE]["graph"]["jit"]["fused"] == 1
    assert data[MIME_TYPE]["view"]["collapsed"] == ["Sequential.0/fused#1"]
    assert "kernel of" in widget._esm  # the front end that draws the kernel's source


def test_the_core_finds_show_compiled_through_its_hook() -> None:
    import tensorkit.notebook as tkn

    show = _notebook_hooks.lookup("jit.show")
    assert show is tkn.show_compiled
    assert show(_traced()).graph["jit"]["title"] == "tk.jit.trace of Sequential"
    assert "jit.show" in _notebook_hooks.KINDS
