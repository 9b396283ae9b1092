"""The nn functions' fast paths give the values and gradients of the composite formulas they
replace, and of PyTorch: the fused softmax, linear as one op (addmm) and over many leading
dims, and attention without fully masked rows."""

from __future__ import annotations

import numpy as np
import pytest
from harness import check_grads, check_torch

import tensorkit as tk
import tensorkit.nn.functional as F  # noqa: N812

RNG = np.random.default_rng(7)


def composite_softmax(x: tk.Tensor, dim: int) -> tk.Tensor:
    """The formula the fused softmax replaces."""
    return (x - tk.logsumexp(x, dim, keepdim=True)).exp()


# The composite's exp(x - logsumexp) is off by up to |x - logsumexp| ulps (about 20 here).
@pytest.mark.parametrize(("dtype", "rtol"), [(np.float32, 4e-6), (np.float64, 1e-14)])
def test_fused_softmax_values_are_the_composite_formulas_with_its_nans(dtype, rtol) -> None:
    x = RNG.standard_normal((3, 4, 5)).astype(dtype) * 4
    x[0, 0] = [np.inf, 1.0, 2.0, 3.0, 4.0]  # NaN where the formula gives NaN
    x[0, 1] = -np.inf  # a fully masked row: NaN
    x[1, 2, :2] = -np.inf
    x[2, 3, 0] = 800.0  # no overflow
    for dim in (0, 1, -1):
        got = F.softmax(tk.tensor(x), dim).numpy()
        expected = composite_softmax(tk.tensor(x), dim).numpy()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=0)
        assert got.dtype == dtype


def test_fused_softmax_computes_as_pytorch_does() -> None:
    """``exp(x - max) * (1 / sum)``: closer to torch.softmax than the composite formula."""
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((256, 128)).astype(np.float32) * 3
    expected = torch.softmax(torch.tensor(x), -1).numpy()
    fused = np.abs(F.softmax(tk.tensor(x), -1).numpy() - expected)
    composite = np.abs(composite_softmax(tk.tensor(x), -1).numpy() - expected)
    assert fused.max() <= 4 * np.finfo(np.float32).eps  # 3.6e-7 at worst over 200 seeds
    assert fused.mean() < composite.mean()


def test_fused_softmax_gradients_match_torch_and_the_composite() -> None:
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((2, 3, 6)).astype(np.float32)
    for dim in (0, 2):
        check_torch(lambda t, d=dim: F.softmax(t, d), lambda t, d=dim: torch.softmax(t, d), x)
    strided = np.asfortranarray(x[0])
    check_torch(lambda t: F.softmax(t, 1), lambda t: torch.softmax(t, 1), strided)
    w = RNG.standard_normal(x.shape).astype(np.float32)
    grads = []
    for fn in (F.softmax, composite_softmax):
        leaf = tk.tensor(x, requires_grad=True)
        (fn(leaf, -1) * tk.tensor(w)).sum().backward()
        grads.append(leaf.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5, atol=1e-7)


def test_fused_softmax_gradcheck_and_double_backward() -> None:
    x = RNG.standard_normal((3, 4))
    check_grads(lambda t: F.softmax(t, 1), x)
    check_grads(lambda t: F.softmax(t, 0), x)
    check_grads(lambda t: F.log_softmax(t, -1), x)
    # create_graph runs the Tensor rule, a plain backward the array rule: the same numbers
    w = tk.tensor(RNG.standard_normal((3, 4)))
    plain, graph = tk.tensor(x, requires_grad=True), tk.tensor(x, requires_grad=True)
    (F.softmax(plain, 1) * w).sum().backward()
    (grad,) = tk.autograd.grad((F.softmax(graph, 1) * w).sum(), graph, create_graph=True)
    np.testing.assert_allclose(grad.detach().numpy(), plain.grad.numpy(), rtol=1e-12)
    assert grad.requires_grad


def test_softmax_outside_the_fused_op_and_bad_dims() -> None:
    half = RNG.standard_normal((2, 3)).astype(np.float16)
    np.testing.assert_array_equal(
        F.softmax(tk.tensor(half), 1).numpy(), composite_softmax(tk.tensor(half), 1).numpy()
    )
    assert F.softmax(tk.tensor(2.0), 0).item() == 1.0
    assert F.softmax(tk.zeros(0, 3), 1).shape == (0, 3)
    with pytest.raises(
        IndexError,
        match=r"Dimension out of range \(expected to be in range of "
        r"\[-2, 1\], but got 2\)",
    ):
        F.softmax(tk.zeros(2, 3), 2)


@pytest.mark.parametrize("bias_shape", [(6,), (1, 6), (4, 6), (), (1,)])
def test_linear_with_a_bias_is_one_op_with_pytorchs_values_and_gradients(bias_shape) -> None:
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((4, 5))
    w = RNG.standard_normal((6, 5))
    b = RNG.standard_normal(bias_shape)
    check_torch(F.linear, torch.nn.functional.linear, x, w, b)
    check_grads(F.linear, x, w, b)  # float64 gradcheck and gradgradcheck
    complex_leaves = [
        tk.tensor(a + 1j * RNG.standard_normal(a.shape), requires_grad=True) for a in (x, w, b)
    ]
    assert tk.autograd.gradcheck(F.linear, complex_leaves)
    assert tk.autograd.gradgradcheck(F.linear, complex_leaves)
    leaves = [tk.tensor(a, requires_grad=True) for a in (x, w, b)]
    out = F.linear(*leaves)
    assert type(out.grad_fn).__name__ == "AddmmBackward0"  # PyTorch's node, bias first
    assert [edge[0].variable for edge in out.grad_fn.next_functions] == [leaves[2], *leaves[:2]]


def test_a_linear_layers_weight_gradient_is_its_own_c_ordered_array() -> None:
    layer = tk.nn.Linear(5, 6)
    layer(tk.randn(4, 5, requires_grad=True)).sum().backward()
    grad = layer.weight.grad.numpy()
    assert grad.flags.c_contiguous and grad.flags.owndata and grad.flags.writeable


def test_a_linear_layers_bias_gradient_is_ready_before_its_weights_as_in_pytorch() -> None:
    """The order post-accumulate hooks (and so DDP's buckets) see, the same on every run."""
    torch = pytest.importorskip("torch")
    orders = []
    for lib in (tk, torch):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU(), lib.nn.Linear(4, 2))
        order: list[str] = []
        for name, p in model.named_parameters():
            p.register_post_accumulate_grad_hook(
                lambda _, name=name, order=order: order.append(name)
            )
        for _ in range(5):
            order.clear()
            model(lib.randn(2, 3)).sum().backward()
            orders.append(list(order))
    assert orders[0] == ["2.bias", "2.weight", "0.bias", "0.weight"]
    assert all(order == orders[0] for order in orders)


def test_linear_misuse_raises_pytorchs_errors() -> None:
    torch = pytest.importorskip("torch")
    from nn_parity import same_error

    f32, f64 = (np.ones((2, 4), dtype=d) for d in (np.float32, np.float64))
    w32, w64 = (np.ones((3, 4), dtype=d) for d in (np.float32, np.float64))
    b32, b64 = (np.ones(3, dtype=d) for d in (np.float32, np.float64))
    cases = [
        (f64, w32, b32),  # mat1 against mat2
        (f32, w64, b32),  # self (the bias) against mat2, checked first
        (f32, w32, b64),
        (f32, w32, np.ones(4, dtype=np.float32)),  # a bias that does not broadcast
        (f32, w32, np.ones((3, 3), dtype=np.float32)),
    ]
    for args in cases:
        same_error(
            lambda args=args: F.linear(*map(tk.tensor, args)),
            lambda args=args: torch.nn.functional.linear(*map(torch.tensor, args)),
        )
    with pytest.raises(RuntimeError, match=r"expand: the number of sizes provided \(2\) must be"):
        F.linear(tk.ones(2, 4), tk.ones(3, 4), tk.ones(2, 2, 3))  # torch names its tensor type
    for args in [(f32.tolist(), w32), (f32, w32.tolist()), (f32, w32, 1.0)]:
        mine = [tk.tensor(a) if isinstance(a, np.ndarray) else a for a in args]
        theirs = [torch.tensor(a) if isinstance(a, np.ndarray) else a for a in args]
        same_error(
            lambda mine=mine: F.linear(*mine),
            lambda theirs=theirs: torch.nn.functional.linear(*theirs),
        )


@pytest.mark.parametrize("shape", [(4, 5), (2, 3, 5), (2, 2, 3, 5)])
def test_linear_over_leading_dims_matches_torch(shape) -> None:
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal(shape).astype(np.float32)
    w = RNG.standard_normal((6, 5)).astype(np.float32)
    b = RNG.standard_normal(6).astype(np.float32)
    check_torch(F.linear, torch.nn.functional.linear, x, w, b)
    check_torch(F.linear, torch.nn.functional.linear, x, w)
    check_grads(F.linear, x, w, b)


@pytest.mark.parametrize(("shape", "features"), [((2, 0, 5), 5), ((0, 3, 5), 5), ((2, 3, 0), 0)])
def test_linear_over_leading_dims_of_empty_inputs(shape, features) -> None:
    x = tk.zeros(*shape, requires_grad=True)
    w = tk.ones(4, features, requires_grad=True)
    out = F.linear(x, w, tk.ones(4))
    assert out.shape == (*shape[:-1], 4)
    np.testing.assert_array_equal(out.detach().numpy(), np.ones((*shape[:-1], 4)))
    out.sum().backward()
    assert x.grad.shape == shape and w.grad.shape == (4, features)
    assert not w.grad.numpy().any()


def test_linear_of_a_transposed_input_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    w = RNG.standard_normal((6, 5)).astype(np.float32)
    b = RNG.standard_normal(6).astype(np.float32)
    check_torch(
        lambda t, v, c: F.linear(t.transpose(0, 1), v, c),
        lambda t, v, c: torch.nn.functional.linear(t.transpose(0, 1), v, c),
        x,
        w,
        b,
    )
    out = F.linear(tk.tensor(x).transpose(0, 1), tk.tensor(w))
    assert out.shape == (4, 3, 6)
    vector = F.linear(tk.tensor(x), tk.tensor(w[0]))  # a 1-D weight keeps its own path
    np.testing.assert_allclose(vector.numpy(), x @ w[0], rtol=1e-5)


@pytest.mark.parametrize("masked_row", [False, True])
def test_attention_with_and_without_fully_masked_rows_matches_torch(masked_row) -> None:
    torch = pytest.importorskip("torch")
    q, k, v = (RNG.standard_normal((2, 3, 4, 5)).astype(np.float32) for _ in range(3))
    mask = RNG.random((4, 4)) > 0.3
    mask[:, 0] = True
    if masked_row:
        mask[2] = False

    def mine(a, b, c):
        return F.scaled_dot_product_attention(a, b, c, tk.tensor(mask))

    def theirs(a, b, c):
        return torch.nn.functional.scaled_dot_product_attention(a, b, c, torch.tensor(mask))

    if masked_row:  # that row attends to nothing: zeros, as in PyTorch
        out = mine(*(tk.tensor(a) for a in (q, k, v))).numpy()
        assert not out[:, :, 2].any()
    check_torch(mine, theirs, q, k, v)
    check_grads(mine, q, k, v)


def test_fused_layer_norm_is_one_op_with_gradients_to_every_order() -> None:
    x = RNG.standard_normal((2, 3, 4, 5))
    w, b = RNG.standard_normal((4, 5)), RNG.standard_normal((4, 5))
    check_grads(lambda t, w_, b_: F.layer_norm(t, (4, 5), w_, b_, eps=1e-3), x, w, b)
    with tk.autograd.Tape() as tape:
        F.layer_norm(tk.tensor(x.astype(np.float32), requires_grad=True), (4, 5))
    assert [entry.name for entry in tape.entries] == ["native_layer_norm"]
    assert tape.entries[0].grad_fn == "NativeLayerNormBackward0"  # PyTorch's node name
    assert len(tape.entries[0].outputs) == 2
    half = tk.tensor(x.astype(np.float16))  # no fused op: the composite formula
    composite = F.layer_norm(half, (4, 5)).numpy().astype(np.float64)
    fused = F.layer_norm(tk.tensor(x), (4, 5)).numpy()
    np.testing.assert_allclose(composite, fused, atol=1e-2)


def test_fused_layer_norm_plain_backward_matches_the_tensor_rule_and_torch() -> None:
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((6, 7, 16)).astype(np.float32) * 3 + 1
    check_torch(lambda t: F.layer_norm(t, (16,)), lambda t: torch.layer_norm(t, (16,)), x)
    weight = tk.tensor(RNG.standard_normal(x.shape).astype(np.float32))
    plain, graph = tk.tensor(x, requires_grad=True), tk.tensor(x, requires_grad=True)
    (F.layer_norm(plain, (16,)) * weight).sum().backward()
    (grad,) = tk.autograd.grad(
        (F.layer_norm(graph, (16,)) * weight).sum(), graph, create_graph=True
    )
    np.testing.assert_array_equal(grad.detach().numpy(), plain.grad.numpy())
