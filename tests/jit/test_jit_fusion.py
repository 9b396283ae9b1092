"""Elementwise fusion: the pass (passes/fuse.py), the scalar forms (elementwise.py) and the
generated kernels (fusion.py).

Every scalar form is checked against its op's own array forward (the eager code) in both
kernel languages: the numba kernel here, and the CUDA C compiled for the host with g++ (the
same expressions, with ``__device__`` defined away), so the C is known to compile and compute
the same values before a GPU runs it (scripts/gpu_check.sh)."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import tensorkit as tk
import tensorkit.nn as nn
from tensorkit import jit
from tensorkit.jit import fusion
from tensorkit.jit.ir import Node, Ref, Value
from tensorkit.jit.passes.fuse import fuse_elementwise
from tensorkit.ops._apply import OPS

SHAPE = (4, 37)
RTOL = {"float32": 2e-6, "float64": 1e-13}


# ------------------------------------------------------------------------------ forms
def _case(op, refs, constants=(), attrs=None, condition=False):
    """(member node, input arrays maker) for one op: ``refs`` tensor arguments, then the
    number ``constants``; ``condition`` adds where's bool condition attribute."""
    return op, refs, constants, attrs or {}, condition


CASES = [
    _case("add", 2),
    _case("mul", 2),
    _case("div", 2),
    _case("neg", 1),
    _case("exp", 1),
    _case("log", 1),
    _case("log1p", 1),
    _case("expm1", 1),
    _case("sqrt", 1),
    _case("rsqrt", 1),
    _case("reciprocal", 1),
    _case("sin", 1),
    _case("cos", 1),
    _case("erf", 1),
    _case("abs", 1),
    _case("tanh", 1),
    _case("sigmoid", 1),
    _case("relu", 1),
    _case("square", 1),
    _case("clone", 1),
    _case("pow", 1, (2,)),
    _case("pow", 1, (3,)),
    _case("pow", 1, (0.5,)),
    _case("pow", 1, (-1,)),
    _case("pow", 1, (2.5,)),
    _case("lerp", 2, (0.1,)),
    _case("lerp", 2, (0.9,)),
    _case("where", 2, condition=True),
    _case("maximum", 2),
    _case("minimum", 2),
    _case("clamp", 1, (-0.5, 0.75)),
    _case("clamp", 1, (None, 0.75)),
    _case("threshold_backward", 2),
    _case("tanh_backward", 2),
    _case("sigmoid_backward", 2),
]
SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-6, 3e-4, 20.0, -20.0, 88.0, -100.0]


def _inputs(refs: int, dtype: str, condition: bool) -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    arrays = []
    for _ in range(refs):
        a = rng.standard_normal(SHAPE[0] * SHAPE[1]) * 3
        a[: len(SPECIAL)] = SPECIAL
        rng.shuffle(a)
        arrays.append(a.reshape(SHAPE).astype(dtype))
    if condition:
        arrays.append(rng.random(SHAPE) > 0.5)
    return arrays


def _fused(case, dtype: str, device: str = "cpu") -> tuple[Node, list[np.ndarray]]:
    op, refs, constants, attrs, condition = case
    args = tuple(Ref(i) for i in range(refs)) + tuple(constants)
    attrs = dict(attrs)
    if condition:
        attrs["condition"] = Ref(refs)
    member = Node(op, args, attrs, (Value(99, SHAPE, dtype, device),))
    inputs = tuple(Ref(i) for i in range(refs + condition))
    node = Node("fused", inputs, {}, member.outputs, kind="fused", members=[member])
    return node, _inputs(refs, dtype, condition)


def _eager(node: Node, arrays: list[np.ndarray]) -> np.ndarray:
    (member,) = node.members
    args = [arrays[a.id] if type(a) is Ref else a for a in member.args]
    attrs = {k: arrays[v.id] if type(v) is Ref else v for k, v in member.attrs.items()}
    with np.errstate(all="ignore"):
        return OPS[member.op].forward(np, *args, **attrs)


def _name(case) -> str:
    op, _, constants, attrs, _ = case
    return "-".join([op, *map(str, constants), *(f"{k}={v}" for k, v in attrs.items())])


@pytest.fixture(autouse=True)
def _own_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """Kernels of this module's tests in a directory of their own (shared by its tests)."""
    monkeypatch.setenv("TENSORKIT_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "kernels"))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=_name)
def test_each_scalar_form_computes_its_ops_forward(case, dtype: str) -> None:
    node, arrays = _fused(case, dtype)
    expected = _eager(node, arrays)
    with np.errstate(all="ignore"):
        got = fusion.kernel_for(node)(np, *arrays)
    assert got.dtype == np.dtype(dtype) and got.shape == SHAPE
    np.testing.assert_allclose(got, expected, rtol=RTOL[dtype], atol=0, equal_nan=True)


def test_add_and_sub_with_an_alpha_stay_out_of_fused_groups() -> None:
    """Their forward rounds ``a + alpha * b`` once (as PyTorch), which a numba kernel cannot
    spell; without an alpha they fuse."""
    from tensorkit.jit.elementwise import SCALAR_FORMS

    for name in ("add", "sub"):
        with_alpha, plain = (
            Node(name, (Ref(0), Ref(1)), attrs, (Value(2, SHAPE, "float32", "cpu"),))
            for attrs in ({"alpha": 2.0}, {})
        )
        assert not SCALAR_FORMS[name].accepts(with_alpha)
        assert SCALAR_FORMS[name].accepts(plain)


def test_float32_tanh_is_within_one_rounding_of_the_exact_value() -> None:
    x = np.concatenate([np.linspace(-12, 12, 200_001), np.geomspace(1e-38, 1, 2001)])
    x = np.concatenate([x, -x, np.zeros(-len(x) * 2 % 4096)]).astype(np.float32)
    node, _ = _fused(_case("tanh", 1), "float32")
    node.members[0].outputs = node.outputs = (Value(99, (4096,), "float32", "cpu"),)
    assert fusion.strategy(node) == "numba"  # small enough for numba's own _tanh
    kernel = fusion.kernel_for(node)
    got = np.concatenate([kernel(np, part) for part in x.reshape(-1, 4096)]).astype(np.float64)
    exact = np.tanh(x.astype(np.float64))
    ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(got - exact) / ulp) <= 1.0


# ------------------------------------------------------------------------------ CUDA C
HARNESS = """
#include <cmath>
using namespace std;
#define __device__
{preamble}
extern "C" void run(long n, {pointers}) {{
    for (long i = 0; i < n; ++i) {{
{loads}
{outputs}
{operation}
{stores}
    }}
}}
"""
C_TYPES = {"float32": "float", "float64": "double", "bool": "bool"}


def _host_compiled(node: Node, directory: Path):
    """The node's CUDA kernel (in_params, out_params, preamble, operation) compiled for the
    host as a loop over contiguous arrays."""
    source = fusion.kernel_source(node)
    lines = source.splitlines()
    ins = [p.split() for p in lines[1].removeprefix("// in: ").split(", ")]
    outs = [p.split() for p in lines[2].removeprefix("// out: ").split(", ")]
    preamble = "\n".join(line for line in lines[3:] if line.startswith("__device__"))
    operation = "\n".join(line for line in lines[3:] if not line.startswith("__device__"))
    text = HARNESS.format(
        preamble=preamble,
        pointers=", ".join(
            [f"const {C_TYPES[t]}* p_{n}" for t, n in ins]
            + [f"{C_TYPES[t]}* q_{n}" for t, n in outs]
        ),
        loads="\n".join(f"        {C_TYPES[t]} {n} = p_{n}[i];" for t, n in ins),
        outputs="\n".join(f"        {C_TYPES[t]} {n};" for t, n in outs),
        operation="\n".join("        " + line for line in operation.splitlines()),
        stores="\n".join(f"        q_{n}[i] = {n};" for _, n in outs),
    )
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "kernel.cpp"
    path.write_text(text)
    library = directory / "kernel.so"
    subprocess.run(
        ["g++", "-O1", "-shared", "-fPIC", "-o", str(library), str(path)],
        check=True,
        capture_output=True,
        text=True,
    )
    return ctypes.CDLL(str(library)).run


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ to compile the CUDA C")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=_name)
def test_each_cuda_form_compiles_and_computes_its_ops_forward(
    case, dtype: str, tmp_path: Path
) -> None:
    node, arrays = _fused(case, dtype, "cuda:0")
    expected = _eager(node, arrays)
    run = _host_compiled(node, tmp_path)
    arrays = [np.ascontiguousarray(a) for a in arrays]
    out = np.empty(SHAPE, dtype)
    run(
        ctypes.c_long(out.size),
        *[a.ctypes.data_as(ctypes.c_void_p) for a in arrays],
        out.ctypes.data_as(ctypes.c_void_p),
    )
    np.testing.assert_allclose(out, expected, rtol=RTOL[dtype] * 2, atol=0, equal_nan=True)


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_form_in_one_cuda_kernel_on_a_gpu_computes_its_ops_forward(dtype: str) -> None:
    """Runs in scripts/gpu_check.sh: one ElementwiseKernel whose outputs are every case (one
    compile per dtype), against the ops' forwards on the host."""
    import cupy

    arrays = _inputs(2, dtype, condition=True)
    members = []
    for index, case in enumerate(CASES):
        op, refs, constants, attrs, condition = case
        args = tuple(Ref(i) for i in range(refs)) + tuple(constants)
        attrs = {**attrs, **({"condition": Ref(2)} if condition else {})}
        members.append(Node(op, args, attrs, (Value(100 + index, SHAPE, dtype, "cuda:0"),)))
    outputs = tuple(m.outputs[0] for m in members)
    node = Node("fused", (Ref(0), Ref(1), Ref(2)), {}, outputs, kind="fused", members=members)
    node.multi_output = True
    with np.errstate(all="ignore"):
        got = fusion.kernel_for(node)(cupy, *[cupy.asarray(a) for a in arrays])
    for case, member, result in zip(CASES, members, got, strict=True):
        single = Node("fused", node.args, {}, member.outputs, kind="fused", members=[member])
        expected = _eager(single, arrays)
        np.testing.assert_allclose(
            cupy.asnumpy(result),
            expected,
            rtol=RTOL[dtype] * 4,
            equal_nan=True,
            err_msg=_name(case),
        )


def test_a_cuda_kernel_is_one_elementwise_kernel_with_the_groups_parameters(monkeypatch) -> None:
    made = []

    class RecordingKernel:
        def __init__(self, in_params, out_params, operation, name, preamble=""):
            made.append((in_params, out_params, operation, name, preamble))

        def __call__(self, *arrays):
            return arrays[0]

    monkeypatch.setitem(sys.modules, "cupy", type(sys)("cupy"))
    monkeypatch.setattr(sys.modules["cupy"], "ElementwiseKernel", RecordingKernel, raising=False)
    node, _ = _fused(_case("where", 2, condition=True), "float32", "cuda:0")
    assert fusion.strategy(node) == "cuda"
    fusion.kernel_for(node)
    ((in_params, out_params, operation, name, _),) = made
    assert in_params == "float32 a0, float32 a1, bool a2" and out_params == "float32 o0"
    assert operation == "float t99 = (a2 ? a0 : a1);\no0 = t99;\n"
    assert name.startswith("tk_fused_")


# ------------------------------------------------------------------------------ the pass
def _graph(fn, *args):
    with tk.no_grad():
        return jit.trace(fn, args)


def test_a_chain_becomes_one_node_whose_outputs_are_the_values_read_outside_it() -> None:
    def gelu(x):
        return 0.5 * x * (1 + tk.tanh(0.7978845608 * (x + 0.044715 * x**3)))

    x = tk.randn(1000, requires_grad=True)
    traced = jit.trace(lambda x: gelu(x).sum(), (x,))
    forward = [n for n in traced.graph.nodes if n.kind == "fused"]
    backward = [n for n in traced.graph.backward if n.kind == "fused"]
    assert len(forward) == 1 and len(backward) == 1  # the group's backward is fused too
    (node,) = forward
    assert [m.op for m in node.members] == ["mul", "pow", "mul", "add", "mul", "tanh", "add", "mul"]
    read_later = {r for n in [*traced.graph.nodes, *traced.graph.backward] for r in n.refs()}
    assert {v.id for v in node.outputs} <= read_later  # every output is read outside
    inner = {m.outputs[0].id for m in node.members} - {v.id for v in node.outputs}
    assert inner and not inner & read_later  # the rest never leaves the kernel
    loss = traced(x)
    loss.backward()
    got = x.grad.numpy().copy()
    x.grad = None
    gelu(x).sum().backward()
    np.testing.assert_allclose(loss.item(), gelu(x).sum().item(), rtol=1e-6)
    np.testing.assert_allclose(got, x.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_a_group_closes_where_another_op_reads_it() -> None:
    def f(x):
        y = x.exp() * 2
        s = y.sum()  # reads the group: it can run no later than here
        return (y + s).tanh() + 1  # a new group, reading the first's value and the sum

    x = tk.randn(6)
    traced = _graph(f, x)
    kinds = [(n.kind, n.op) for n in traced.graph.nodes]
    assert kinds == [("fused", "fused"), ("op", "sum"), ("fused", "fused")]
    np.testing.assert_allclose(traced(x).numpy(), f(x).numpy(), rtol=1e-6)


def test_inputs_broadcast_into_a_group_of_the_output_shape() -> None:
    bias, scale = tk.randn(5), tk.randn(1, 1)

    def f(x):
        return ((x + bias) * scale).relu() - 0.5

    x = tk.randn(3, 5)
    traced = _graph(f, x)
    (node,) = traced.graph.nodes
    assert node.kind == "fused" and len(node.args) == 3
    np.testing.assert_allclose(traced(x).numpy(), f(x).numpy(), rtol=1e-6)


def test_a_group_over_a_transposed_view_writes_its_result_in_c_order() -> None:
    """A fused kernel lays its result out in C order whatever its inputs' strides, so a
    group reading a transposed view is also the layout copy the ops after it need."""
    y = tk.randn(4, 6, 5)
    bias = tk.randn(4, 1)

    def f(y):
        return (y.permute(1, 0, 2) + bias).relu()

    traced = _graph(f, y)
    assert [n.kind for n in traced.graph.nodes] == ["op", "fused"]
    out = traced(y).numpy()
    assert out.flags.c_contiguous and out.shape == (6, 4, 5)
    np.testing.assert_array_equal(out, f(y).numpy())


def test_ops_over_other_shapes_or_dtypes_start_groups_of_their_own() -> None:
    def f(x, d):
        small = x.sum(0).exp() * 2  # shape (4,)
        wide = (d.sin() * 3).cos()  # float64
        return (x * small + 1).neg(), wide

    x, d = tk.randn(3, 4), tk.randn(3, 4, dtype=tk.float64)
    traced = _graph(f, x, d)
    groups = [n for n in traced.graph.nodes if n.kind == "fused"]
    shapes = sorted((n.outputs[0].shape, n.outputs[0].dtype) for n in groups)
    assert shapes == [((3, 4), "float32"), ((3, 4), "float64"), ((4,), "float32")]
    for got, expected in zip(traced(x, d), f(x, d), strict=True):
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6)


def test_integer_ops_and_single_ops_are_left_alone() -> None:
    traced = _graph(lambda i, x: (i + 1, x.exp()), tk.arange(4), tk.randn(4))
    assert [n.kind for n in traced.graph.nodes] == ["op", "op"]


def test_the_pass_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jit.config, "fuse_elementwise", False)
    traced = _graph(lambda x: x.exp() * 2 + 1, tk.randn(3))
    assert [n.op for n in traced.graph.nodes] == ["exp", "mul", "add"]


def test_fuse_elementwise_is_one_function_over_the_ir() -> None:
    with tk.no_grad():
        traced = jit.trace(lambda x: x.exp() * 2 + 1, (tk.randn(3),))
    graph = traced.graph
    before = [n.describe() for n in graph.nodes]
    assert fuse_elementwise(graph) is graph
    assert [n.describe() for n in graph.nodes] == before  # fusing a fused graph changes nothing


def test_the_backward_kernel_recomputes_the_forward_values_it_would_read() -> None:
    w = tk.randn(16)

    def loss(x):
        h = x
        for _ in range(6):  # contracting: float32 rounding does not grow
            h = (h * w * 0.3).sin() + 0.5 * h.tanh()
        return h.sum()

    x = tk.randn(16, requires_grad=True)
    traced = jit.trace(loss, (x,))
    (forward,) = [n for n in traced.graph.nodes if n.kind == "fused"]
    (backward,) = [n for n in traced.graph.backward if n.kind == "fused"]
    assert len(forward.outputs) == 1  # only the value the sum reads; nothing saved
    forward_values = {m.outputs[0].id for m in forward.members}
    assert not {a.id for a in backward.args} & forward_values  # reads x and w, recomputes
    assert len(backward.members) > len(forward.members)
    traced(x).backward()
    got = x.grad.numpy().copy()
    x.grad = None
    loss(x).backward()
    np.testing.assert_allclose(got, x.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_values_of_another_shape_stay_saved() -> None:
    b = tk.randn(1, 8)

    def loss(x, v):
        small = (v * 2).exp()  # (8,): saved, not recomputed in the (4, 8) backward kernel
        return ((x * small).tanh() * b).sum()

    x, v = tk.randn(4, 8, requires_grad=True), tk.randn(8, requires_grad=True)
    traced = jit.trace(loss, (x, v))
    traced(x, v).backward()
    got = [x.grad.numpy().copy(), v.grad.numpy().copy()]
    x.grad = v.grad = None
    loss(x, v).backward()
    for a, e in zip(got, [x.grad.numpy(), v.grad.numpy()], strict=True):
        # tanh's gradient 1 - t*t magnifies one rounding of t near +-1 (eager's too)
        np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-5)


# ------------------------------------------------------------------------------ reductions
def _reduce_cases(x, b):
    return (
        ((x * 2 + b) ** 2).mean(),
        ((x - b).sin() * x).sum(dim=0, keepdim=True),
        (x.exp() * b).sum(dim=-1),
        ((x + 1) * b - 1).mean(dim=(0, 1), keepdim=True),
    )


def test_a_sum_or_mean_ends_a_group_when_nothing_else_leaves_it() -> None:
    x, b = tk.randn(30, 40), tk.randn(40)
    traced = _graph(_reduce_cases, x, b)
    assert [n.kind for n in traced.graph.nodes] == ["fused"] * 4
    assert [n.members[-1].op for n in traced.graph.nodes] == ["mean", "sum", "sum", "mean"]
    assert "total += " in traced.graph.nodes[0].source
    for got, expected in zip(traced(x, b), _reduce_cases(x, b), strict=True):
        assert got.shape == expected.shape
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=2e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [tk.float32, tk.float64])
def test_a_reduction_over_leading_axes_is_a_row_loop_with_the_gufunc_s_sums(
    dtype, tmp_path, monkeypatch
) -> None:
    """A group ending in a sum or mean over its leading axes (a layer norm's weight
    gradient) runs as a loop adding whole rows into float64 sums: the same sums, in the same
    order, as the gufunc over the axes moved last, bit for bit."""
    _fresh(monkeypatch, tmp_path)
    x, b = tk.randn(6, 7, 40, dtype=dtype), tk.randn(40, dtype=dtype)

    def f(x, b):
        return ((x * b) + 1).sum(dim=(0, 1)), (x.exp() * b).mean(dim=0, keepdim=True)

    traced = _graph(f, x, b)
    assert all('LAYOUT = "leading"' in n.source for n in traced.graph.nodes)
    rows = [t.numpy() for t in traced(x, b)]
    monkeypatch.setattr(fusion, "_leads", lambda axes, shape: False)
    monkeypatch.setattr(fusion, "_kernels", {})
    gufunc = _graph(f, x, b)
    assert all("total += " in n.source for n in gufunc.graph.nodes)
    for got, same, expected in zip(rows, gufunc(x, b), f(x, b), strict=True):
        np.testing.assert_array_equal(got, same.numpy())
        np.testing.assert_allclose(got, expected.numpy(), rtol=1e-5)


def test_a_row_loop_numba_cannot_compile_runs_through_numpy_with_a_warning(
    tmp_path, monkeypatch
) -> None:
    import numba
    from numba.core.errors import TypingError

    _fresh(monkeypatch, tmp_path)

    def refusing(*args, **kwargs):
        def decorate(function):
            def call(*arrays):
                raise TypingError("no implementation for this layout")

            return call

        return decorate

    monkeypatch.setattr(numba, "njit", refusing)
    x, b = tk.randn(5, 8), tk.randn(8)
    traced = _graph(lambda x, b: (x * b).sum(dim=0), x, b)
    with pytest.warns(RuntimeWarning, match=r"fused reduction did not compile \(TypingError\)"):
        got = traced(x, b)
    np.testing.assert_allclose(got.numpy(), (x * b).sum(dim=0).numpy(), rtol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the warning came once; NumPy runs it from now on
        np.testing.assert_allclose(traced(x, b).numpy(), got.numpy())


def test_a_reduction_stays_apart_when_the_group_s_values_are_read_elsewhere() -> None:
    def f(x):
        h = (x * 3).relu()
        return h.sum(), h  # h leaves the group: the sum is an op of its own

    traced = _graph(f, tk.randn(8, 8))
    assert [n.kind for n in traced.graph.nodes] == ["fused", "op"]
    typed = _graph(lambda x: (x * 3).relu().sum(dtype=tk.float64), tk.randn(8))
    assert [n.kind for n in typed.graph.nodes] == ["fused", "op"]  # a dtype= is not fused


def test_a_training_graph_keeps_the_reduction_apart_from_values_its_backward_saves() -> None:
    w = tk.randn(6, 6, requires_grad=True)
    x = tk.randn(5, 6)

    def loss(w):
        return ((x @ w).tanh() * 2 - 1).pow(2).mean()

    traced = jit.trace(loss, (w,))
    (group,) = [n for n in traced.graph.nodes if n.kind == "fused"]
    assert group.members[-1].op != "mean"  # tanh's output and pow's input are saved
    assert [n.op for n in traced.graph.nodes][-1] == "mean"
    traced(w).backward()
    got = w.grad.numpy().copy()
    w.grad = None
    loss(w).backward()
    np.testing.assert_allclose(got, w.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ to compile the CUDA C")
def test_a_cuda_reduction_s_element_function_compiles_and_sums_as_eager(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = []

    class RecordingReduction:
        def __init__(self, *args, **kwargs):
            made.append((args, kwargs))

    monkeypatch.setitem(sys.modules, "cupy", type(sys)("cupy"))
    monkeypatch.setattr(sys.modules["cupy"], "ReductionKernel", RecordingReduction, raising=False)
    x, b = tk.randn(30, 40), tk.randn(40)
    node = _graph(_reduce_cases, x, b).graph.nodes[1]  # sin, mul, sum over dim 0
    for value in [*node.outputs, *(m.outputs[0] for m in node.members)]:
        object.__setattr__(value, "device", "cuda:0")
    assert fusion.strategy(node) == "cuda"
    fusion.kernel_for(node)
    ((args, kwargs),) = made
    in_params, out_params, map_expr, reduce_expr, post_map_expr, identity, _ = args
    assert (in_params, out_params) == ("float32 a0, float32 a1", "float32 o0")
    assert (map_expr, reduce_expr, identity) == ("_element(a0, a1)", "a + b", "0")
    assert post_map_expr == "o0 = (float)(a)" and kwargs["reduce_type"] == "double"
    source = tmp_path / "element.cpp"
    source.write_text(
        "#include <cmath>\nusing namespace std;\n#define __device__\n"
        + kwargs["preamble"]
        + 'extern "C" double run(long n, const float* a, const float* b) {\n'
        "    double total = 0;\n    for (long i = 0; i < n; ++i) total += _element(a[i], b[i]);\n"
        "    return total;\n}\n"
    )
    library = tmp_path / "element.so"
    subprocess.run(["g++", "-O1", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    run = ctypes.CDLL(str(library)).run
    run.restype = ctypes.c_double
    xs = np.ascontiguousarray(x.numpy()[:, 0])
    bs = np.full(30, b.numpy()[0], np.float32)
    column = run(
        ctypes.c_long(30), xs.ctypes.data_as(ctypes.c_void_p), bs.ctypes.data_as(ctypes.c_void_p)
    )
    expected = _reduce_cases(x, b)[1].numpy()[0, 0]
    np.testing.assert_allclose(column, expected, rtol=1e-5)


# ------------------------------------------------------------------------------ compiled
def test_a_compiled_fused_function_passes_gradcheck_and_gradgradcheck() -> None:
    def f(x, w):
        return (x * w).tanh().sigmoid() * x.exp()

    compiled = tk.compile(f)
    x = tk.randn(3, 4, dtype=tk.float64, requires_grad=True)
    w = tk.randn(4, dtype=tk.float64, requires_grad=True)
    for _ in range(3):
        compiled(x, w)
    (entry,) = compiled.entries.values()
    assert any(n.kind == "fused" for n in entry.compiled.graph.nodes)
    assert tk.autograd.gradcheck(compiled, (x, w))
    assert tk.autograd.gradgradcheck(compiled, (x, w))


def test_a_compiled_adam_step_fuses_the_update_and_matches_eager() -> None:
    def run(compiled: bool) -> list[np.ndarray]:
        tk.manual_seed(3)
        model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4))
        opt = tk.optim.Adam(model.parameters(), lr=1e-2)
        x, y = tk.randn(5, 8), tk.randint(0, 4, (5,))

        def step(x, y):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss.detach()

        fn = tk.compile(step) if compiled else step
        for _ in range(6):
            fn(x, y)
        if compiled:
            (entry,) = fn.entries.values()
            fused = [n for n in entry.compiled.graph.nodes if n.kind == "fused"]
            assert any({"lerp", "sqrt", "div"} <= {m.op for m in n.members} for n in fused)
        return [p.detach().numpy().copy() for p in model.parameters()]

    for a, b in zip(run(True), run(False), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_large_arrays_use_threads_when_allowed_with_the_same_values() -> None:
    x = tk.randn(1 << 19)
    compiled = tk.compile(lambda x: (x * 1.5).sin() + x)
    threads = tk.get_num_threads()
    try:
        tk.set_num_threads(2)
        for _ in range(3):
            threaded = compiled(x)
    finally:
        tk.set_num_threads(threads)
    np.testing.assert_allclose(threaded.numpy(), ((x * 1.5).sin() + x).numpy(), rtol=1e-6)


def test_large_groups_calling_libm_run_their_forwards_block_by_block() -> None:
    bias = tk.randn(1, 300)

    def f(x):
        h = (x + bias).tanh() * 0.5  # tanh: NumPy's SIMD loop beats a numba libm call
        return h, (h.exp() - 1) * x  # two outputs

    x = tk.randn(200, 300)
    traced = _graph(f, x)
    (node,) = traced.graph.nodes
    assert fusion.strategy(node) == "blocks" and node.multi_output
    assert f"run over blocks of {fusion.BLOCK_ELEMENTS} elements of float32[200, 300]" in (
        node.source
    )
    for got, expected in zip(traced(x), f(x), strict=True):  # the same forwards: equal
        np.testing.assert_array_equal(got.numpy(), expected.numpy())
    arithmetic = _graph(lambda x: (x * 3 + bias) * x, x)
    assert fusion.strategy(arithmetic.graph.nodes[0]) == "numba"
    small = _graph(lambda x: (x * 3).tanh(), tk.randn(16))
    assert fusion.strategy(small.graph.nodes[0]) == "numba"


@pytest.mark.parametrize(
    "shape", [(1 << 18,), (3, 270_000), (40, 50, 30), (80, 50, 30), (2, 3, (1 << 16) + 1)]
)
def test_blocks_cover_every_element_once(shape: tuple[int, ...]) -> None:
    seen = np.zeros(shape, np.int64)
    for index in fusion._blocks(shape):
        seen[index] += 1
        assert seen[index].size <= fusion.BLOCK_ELEMENTS or seen[index].ndim == 1
    assert (seen == 1).all()


def test_an_expand_inside_a_blocked_group_is_its_broadcast_input() -> None:
    def f(x, g):
        return g.expand(64, 512) * x.exp() + g.expand(64, 512)

    x, g = tk.randn(64, 512), tk.randn(1, 512)
    traced = _graph(f, x, g)
    (node,) = traced.graph.nodes
    assert fusion.strategy(node) == "blocks" and "expand" in [m.op for m in node.members]
    np.testing.assert_array_equal(traced(x, g).numpy(), f(x, g).numpy())


# ------------------------------------------------------------------------------ the cache
def _fresh(monkeypatch: pytest.MonkeyPatch, directory: Path) -> None:
    monkeypatch.setenv("TENSORKIT_CACHE_DIR", str(directory))
    monkeypatch.setattr(fusion, "_kernels", {})
    monkeypatch.setattr(fusion, "_warned", set())


def test_kernels_are_cached_on_disk_by_a_hash_of_their_source(tmp_path, monkeypatch) -> None:
    _fresh(monkeypatch, tmp_path)
    node, arrays = _fused(_case("tanh_backward", 2), "float32")
    fusion.kernel_for(node)(np, *arrays)
    (path,) = (tmp_path / "jit").glob("fused_*.py")
    assert path.read_text() == fusion.kernel_source(node)
    import hashlib

    assert hashlib.sha256(path.read_bytes()).hexdigest()[:32] in path.name
    assert list((tmp_path / "jit" / "__pycache__").glob("fused_*.nbi"))  # numba's own cache


def test_a_changed_kernel_file_is_replaced_never_run(tmp_path, monkeypatch) -> None:
    _fresh(monkeypatch, tmp_path)
    node, arrays = _fused(_case("mul", 2), "float32")
    fusion.kernel_for(node)
    (path,) = (tmp_path / "jit").glob("fused_*.py")
    marker = tmp_path / "ran"
    path.write_text(f"open({str(marker)!r}, 'w').close()\n")
    monkeypatch.setattr(fusion, "_kernels", {})
    got = fusion.kernel_for(node)(np, *arrays)
    assert not marker.exists() and path.read_text() == fusion.kernel_source(node)
    np.testing.assert_array_equal(got, arrays[0] * arrays[1])


def test_without_numba_fused_groups_run_through_numpy_and_say_so_once(
    tmp_path, monkeypatch
) -> None:
    _fresh(monkeypatch, tmp_path)
    monkeypatch.setitem(sys.modules, "numba", None)  # import numba raises ImportError
    x = tk.randn(8)
    compiled = tk.compile(lambda x: (x.exp() * 2).tanh())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            got = compiled(x)
        tk.compile(lambda x: x.sin() * 3)(x)  # another kernel: no second warning
        tk.compile(lambda x: x.sin() * 3)(x)
        tk.compile(lambda x: x.sin() * 3)(x)
    messages = [str(w.message) for w in caught if "numba" in str(w.message)]
    assert messages == [
        "tk.jit: numba is not installed, so fused groups run their ops through NumPy "
        "block by block (pip install 'tensorkit[jit]' for generated kernels)"
    ]
    np.testing.assert_allclose(got.numpy(), (x.exp() * 2).tanh().numpy(), rtol=1e-6)


def test_a_kernel_that_does_not_compile_runs_through_numpy_with_a_warning(
    tmp_path, monkeypatch
) -> None:
    _fresh(monkeypatch, tmp_path)

    def refuse(source: str, key: str):
        raise TypeError("cannot determine Numba type")

    monkeypatch.setattr(fusion, "_load_module", refuse)
    node, arrays = _fused(_case("sigmoid_backward", 2), "float32")
    with pytest.warns(
        RuntimeWarning,
        match=r"fused\[sigmoid_backward\] did not compile "
        r"\(TypeError: cannot determine Numba type\); it runs through NumPy",
    ):
        kernel = fusion.kernel_for(node)
    np.testing.assert_allclose(kernel(np, *arrays), _eager(node, arrays), rtol=1e-7)


# ------------------------------------------------------------------------------ seen by users
def test_the_graph_view_draws_the_pass_s_fused_group_with_its_kernel_source() -> None:
    from tensorkit.notebook.jit_graph import build_jit_graph

    model = nn.Sequential(nn.Linear(4, 3), nn.Tanh())
    traced = jit.trace(model, (tk.randn(2, 4),))
    (node,) = [n for n in traced.graph.nodes if n.kind == "fused"]
    graph = build_jit_graph(traced)
    (group,) = [g for g in graph["groups"].values() if g["kind"] == "fused"]
    assert group["ops"] == ["add", "tanh"] and group["source"] == node.source
    assert "def _body(a0, a1):" in node.source and "_tanh(" in node.source


def test_a_saved_fused_graph_loads_and_replays_its_kernels(tmp_path: Path) -> None:
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2), nn.Sigmoid())
    x = tk.randn(3, 4)
    with tk.no_grad():
        traced = jit.trace(model, (x,))
    path = tmp_path / "model.tkjit"
    jit.save(traced, path)
    loaded = jit.load(path)
    assert sum(n.kind == "fused" for n in loaded.graph.nodes) == 2
    np.testing.assert_allclose(loaded(x).numpy(), model(x).detach().numpy(), rtol=1e-6)


def test_a_file_whose_fused_node_is_no_kernel_is_refused_naming_the_place(tmp_path: Path) -> None:
    import json

    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh())
    with tk.no_grad():
        traced = jit.trace(model, (tk.randn(3, 4),))
    path = tmp_path / "model.tkjit"
    jit.save(traced, path)
    index = next(i for i, n in enumerate(traced.graph.nodes) if n.kind == "fused")

    def edited(change) -> Path:
        obj = tk.load(path)
        doc = json.loads(obj["graph"])
        change(doc["nodes"][index])
        obj["graph"] = json.dumps(doc)
        out = tmp_path / "edited.tkjit"
        tk.save(obj, out)
        return out

    def to_matmul(node):
        node["members"][0]["op"] = "matmul"

    with pytest.raises(
        jit.LoadError,
        match=rf"edited.tkjit: nodes\[{index}\].members\[0\].op: "
        r"'matmul' here cannot be a fused kernel's step",
    ):
        jit.load(edited(to_matmul))

    def drop_argument(node):
        node["args"] = node["args"][:1]

    with pytest.raises(
        jit.LoadError,
        match=rf"nodes\[{index}\].members\[\d\]: reads %\d+, "
        "which is no argument of the kernel",
    ):
        jit.load(edited(drop_argument))
