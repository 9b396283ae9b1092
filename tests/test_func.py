"""tk.func: grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian and vmap.

Parity tests run the same functions through torch.func (skipped without PyTorch); the others
check against finite differences and closed forms, composition, pytrees and misuse errors.
"""

from __future__ import annotations

import re
from collections import namedtuple
from typing import Any

import numpy as np
import pytest

import tensorkit as tk
from tensorkit.func import tree_flatten, tree_unflatten

F = tk.func
RNG = np.random.default_rng(0)
X = RNG.standard_normal(4)
Y = RNG.standard_normal(4)
A = RNG.standard_normal((4, 4))
BATCH = RNG.standard_normal((5, 4))
Pair = namedtuple("Pair", ["a", "b"])


def t(a: Any, requires_grad: bool = False) -> tk.Tensor:
    return tk.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


def values(tree: Any) -> list[np.ndarray]:
    """The leaves of a pytree of tk or torch tensors as NumPy arrays."""
    return [np.asarray(leaf.detach().numpy()) for leaf in tree_flatten(tree)[0]]


def assert_trees_close(mine: Any, expected: Any, atol: float = 1e-8) -> None:
    assert str(tree_flatten(mine)[1]) == str(tree_flatten(expected)[1])
    for got, want in zip(values(mine), values(expected), strict=True):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, atol=atol, rtol=1e-6)


def finite_difference_grad(f: Any, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    out = np.zeros_like(x)
    for i in range(x.size):
        step = np.zeros_like(x)
        step.flat[i] = eps
        out.flat[i] = (f(t(x + step)).item() - f(t(x - step)).item()) / (2 * eps)
    return out


# --------------------------------------------------------------------- torch parity
@pytest.fixture
def torch() -> Any:
    return pytest.importorskip("torch")


def both(torch: Any, *arrays: np.ndarray) -> tuple[list, list]:
    return [t(a) for a in arrays], [torch.tensor(a) for a in arrays]


def scalar_fns(lib: Any) -> list:
    return [
        lambda x, y: (x.sin() * y).sum(),
        lambda x, y: (x * x).sum() / (1 + (y * y).sum()),
        lambda x, y: lib.tanh(x @ y) * x.exp().sum(),
    ]


@pytest.mark.torch
@pytest.mark.parametrize("index", range(3))
@pytest.mark.parametrize("argnums", [0, 1, -1, (0, 1), (1, 0)])
def test_grad_matches_torch(torch: Any, index: int, argnums: Any) -> None:
    mine, theirs = both(torch, X, Y)
    f_tk, f_torch = scalar_fns(tk)[index], scalar_fns(torch)[index]
    assert_trees_close(F.grad(f_tk, argnums)(*mine), torch.func.grad(f_torch, argnums)(*theirs))


@pytest.mark.torch
def test_grad_and_value_with_aux_matches_torch(torch: Any) -> None:
    mine, theirs = both(torch, X, Y)

    def f(x: Any, y: Any) -> Any:
        return (x * y).sum().cos(), {"double": 2 * x, "y": y}

    got = F.grad_and_value(f, argnums=(0, 1), has_aux=True)(*mine)
    want = torch.func.grad_and_value(f, argnums=(0, 1), has_aux=True)(*theirs)
    assert_trees_close(got, want)


@pytest.mark.torch
def test_vjp_matches_torch(torch: Any) -> None:
    mine, theirs = both(torch, X, Y)
    cotangents = ({"s": RNG.standard_normal(4)}, RNG.standard_normal(()))

    def f(x: Any, y: Any) -> Any:
        return ({"s": x.sin() * y}, (x * y).sum()), x.mean()

    out, fn, aux = F.vjp(f, *mine, has_aux=True)
    out_t, fn_t, aux_t = torch.func.vjp(f, *theirs, has_aux=True)
    assert_trees_close((out, aux), (out_t, aux_t))
    ct = ({"s": t(cotangents[0]["s"])}, t(cotangents[1]))
    ct_t = ({"s": torch.tensor(cotangents[0]["s"])}, torch.tensor(cotangents[1]))
    assert_trees_close(fn(ct), fn_t(ct_t))
    assert_trees_close(fn(ct), fn_t(ct_t))  # vjp_fn can be called again


@pytest.mark.torch
def test_jvp_matches_torch(torch: Any) -> None:
    mine, theirs = both(torch, X, Y)
    tangents = RNG.standard_normal(4), RNG.standard_normal(4)
    tan, tan_t = both(torch, *tangents)

    def f(x: Any, y: Any) -> Any:
        return (x * y).exp(), (x @ y).sin()

    got = F.jvp(f, tuple(mine), tuple(tan))
    want = torch.func.jvp(f, tuple(theirs), tuple(tan_t))
    assert_trees_close(got, want)


@pytest.mark.torch
@pytest.mark.parametrize("transform", ["jacrev", "jacfwd"])
@pytest.mark.parametrize("argnums", [0, (0, 1)])
def test_jacobians_match_torch(torch: Any, transform: str, argnums: Any) -> None:
    mine, theirs = both(torch, X, A)

    def f(x: Any, m: Any) -> Any:
        return {"mv": (m @ x).tanh(), "norm": (x * x).sum()}

    got = getattr(F, transform)(f, argnums)(*mine)
    want = getattr(torch.func, transform)(f, argnums)(*theirs)
    assert_trees_close(got, want)


@pytest.mark.torch
@pytest.mark.parametrize("argnums", [0, 1, (0, 1)])
def test_hessian_matches_torch(torch: Any, argnums: Any) -> None:
    mine, theirs = both(torch, X, Y)
    f_tk, f_torch = scalar_fns(tk)[2], scalar_fns(torch)[2]
    assert_trees_close(
        F.hessian(f_tk, argnums)(*mine), torch.func.hessian(f_torch, argnums)(*theirs)
    )


@pytest.mark.torch
@pytest.mark.parametrize(
    ("in_dims", "out_dims"),
    [(0, 0), ((0, None), 1), ((1, 0), -1), ((None, 1), (0, 1))],
)
def test_vmap_matches_torch(torch: Any, in_dims: Any, out_dims: Any) -> None:
    a, b = RNG.standard_normal((5, 5)), RNG.standard_normal((5, 5))
    mine, theirs = both(torch, a, b)

    def f(x: Any, y: Any) -> Any:
        return x * y.sum(), (x + y).exp()

    assert_trees_close(
        F.vmap(f, in_dims, out_dims)(*mine), torch.func.vmap(f, in_dims, out_dims)(*theirs)
    )


@pytest.mark.torch
def test_per_sample_gradients_match_torch(torch: Any) -> None:
    targets = RNG.standard_normal(5)
    mine, theirs = both(torch, A, BATCH, targets)

    def loss(w: Any, x: Any, y: Any) -> Any:
        return ((w @ x).tanh().sum() - y) ** 2

    got = F.vmap(F.grad(loss), in_dims=(None, 0, 0))(*mine)
    want = torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0))(*theirs)
    assert got.shape == (5, 4, 4)
    assert_trees_close(got, want)


@pytest.mark.torch
def test_nested_vmap_of_jacrev_matches_torch(torch: Any) -> None:
    batch = RNG.standard_normal((2, 3, 4))
    mine, theirs = both(torch, batch)
    f_tk = F.vmap(F.vmap(F.jacrev(lambda x: x.sin() * x.sum())))
    f_torch = torch.func.vmap(torch.func.vmap(torch.func.jacrev(lambda x: x.sin() * x.sum())))
    assert_trees_close(f_tk(*mine), f_torch(*theirs))


# --------------------------------------------------------- closed forms and differences
def test_grad_matches_finite_differences() -> None:
    def f(x: tk.Tensor) -> tk.Tensor:
        return (x.sin() * x.exp()).sum() + (x @ x).sqrt()

    np.testing.assert_allclose(F.grad(f)(t(X)).numpy(), finite_difference_grad(f, X), atol=1e-6)


def test_hessian_of_quadratic_form_is_a_plus_a_transpose() -> None:
    m = t(A)
    h = F.hessian(lambda x: x @ m @ x)(t(X))
    np.testing.assert_allclose(h.numpy(), A + A.T, atol=1e-12)


@pytest.mark.parametrize("transform", ["jacrev", "jacfwd"])
def test_jacobian_of_a_linear_map_is_its_matrix(transform: str) -> None:
    m = t(A)
    jac = getattr(F, transform)(lambda x: m @ x)(t(X))
    np.testing.assert_allclose(jac.numpy(), A, atol=1e-12)


def test_jvp_and_vjp_agree_with_the_jacobian() -> None:
    def f(x: tk.Tensor) -> tk.Tensor:
        return x.tanh() * x.sum()

    jac = F.jacrev(f)(t(X)).numpy()
    out, tangent_out = F.jvp(f, (t(X),), (t(Y),))
    np.testing.assert_allclose(out.numpy(), f(t(X)).numpy())
    np.testing.assert_allclose(tangent_out.numpy(), jac @ Y, atol=1e-12)
    _, vjp_fn = F.vjp(f, t(X))
    np.testing.assert_allclose(vjp_fn(t(Y))[0].numpy(), Y @ jac, atol=1e-12)


def test_jacobian_shapes_are_output_shape_plus_input_shape() -> None:
    x = t(RNG.standard_normal((2, 3)))
    for transform in (F.jacrev, F.jacfwd):
        assert transform(lambda v: v.sum(0))(x).shape == (3, 2, 3)
        assert transform(lambda v: v.sum())(x).shape == (2, 3)


def test_constant_and_non_differentiable_outputs_give_zeros() -> None:
    x = t(X)
    np.testing.assert_array_equal(F.grad(lambda v: t(1.0))(x).numpy(), np.zeros(4))
    np.testing.assert_array_equal(F.grad(lambda v: v.floor().sum())(x).numpy(), np.zeros(4))
    _, tangent = F.jvp(lambda v: t(np.ones(2)), (x,), (x,))
    np.testing.assert_array_equal(tangent.numpy(), np.zeros(2))
    np.testing.assert_array_equal(F.jacfwd(lambda v: v.floor())(x).numpy(), np.zeros((4, 4)))


# ---------------------------------------------------------------------- composition
def test_grad_of_grad_of_sin_is_minus_sin() -> None:
    second = F.grad(F.grad(lambda x: x.sin()))
    for value in (0.3, 1.2, -2.0):
        assert second(t(value)).item() == pytest.approx(-np.sin(value))


def test_third_derivative() -> None:
    third = F.grad(F.grad(F.grad(lambda x: x**4)))
    assert third(t(1.5)).item() == pytest.approx(24 * 1.5)


def test_nested_grads_keep_their_inputs_apart() -> None:
    # d/dx [x * d/dy (x * y) at y = x] = d/dx x^2 = 2x: the inner grad must not confuse x, y
    outer = F.grad(lambda x: x * F.grad(lambda y: x * y)(x))
    assert outer(t(3.0)).item() == pytest.approx(6.0)


def test_all_hessian_compositions_agree() -> None:
    def f(x: tk.Tensor) -> tk.Tensor:
        return (x.sin() * x.roll(1)).sum() + x.exp().prod()

    x = t(X)
    expected = F.hessian(f)(x).numpy()
    for composed in (
        F.jacrev(F.jacrev(f)),
        F.jacfwd(F.jacfwd(f)),
        F.jacrev(F.jacfwd(f)),
        F.jacfwd(F.grad(f)),
    ):
        np.testing.assert_allclose(composed(x).numpy(), expected, atol=1e-10)


def test_grad_through_vmap_and_vmap_of_grad() -> None:
    w, batch = t(Y), t(BATCH)

    def loss(w: tk.Tensor, x: tk.Tensor) -> tk.Tensor:
        return (w * x).sum().sin()

    per_sample = F.vmap(F.grad(loss), in_dims=(None, 0))(w, batch)
    total = F.grad(lambda w: F.vmap(loss, in_dims=(None, 0))(w, batch).sum())(w)
    np.testing.assert_allclose(per_sample.numpy().sum(0), total.numpy(), atol=1e-12)
    for i in range(5):
        np.testing.assert_allclose(per_sample[i].numpy(), F.grad(loss)(w, batch[i]).numpy())


def test_vmap_of_jvp_computes_a_batch_of_directional_derivatives() -> None:
    x = t(X)
    directions = t(BATCH)

    def push(v: tk.Tensor) -> tk.Tensor:
        return F.jvp(lambda u: u.exp() * u.sum(), (x,), (v,))[1]

    jac = F.jacfwd(lambda u: u.exp() * u.sum())(x).numpy()
    np.testing.assert_allclose(F.vmap(push)(directions).numpy(), BATCH @ jac.T, atol=1e-12)


# --------------------------------------------------------- graph hygiene and grad mode
def test_user_tensors_get_no_grad_and_results_are_detached() -> None:
    x = t(X)
    g = F.grad(lambda v: (v * v).sum())(x)
    assert not g.requires_grad and x.grad is None
    assert not F.jacrev(lambda v: v.sin())(x).requires_grad
    out, tangent = F.jvp(lambda v: v.sin(), (x,), (x,))
    assert not out.requires_grad and not tangent.requires_grad


def test_results_stay_differentiable_for_inputs_that_require_grad() -> None:
    x = t(X, requires_grad=True)
    g = F.grad(lambda v: (v**3).sum())(x)
    assert g.requires_grad and x.grad is None
    g.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 6 * X)


def test_closure_over_a_tensor_that_requires_grad() -> None:
    w = t(Y, requires_grad=True)
    g = F.grad(lambda v: (v * w).sum() ** 2)(t(X))
    assert g.requires_grad and w.grad is None
    (gw,) = tk.autograd.grad(g.sum(), w)
    expected = 2 * Y.sum() * X + 2 * (X @ Y)
    np.testing.assert_allclose(gw.numpy(), expected, atol=1e-12)


def test_transforms_work_under_no_grad() -> None:
    with tk.no_grad():
        g = F.grad(lambda v: (v * v).sum())(t(X))
        h = F.hessian(lambda v: (v**3).sum())(t(X))
        assert not tk.is_grad_enabled()
    np.testing.assert_allclose(g.numpy(), 2 * X)
    np.testing.assert_allclose(h.numpy(), np.diag(6 * X), atol=1e-12)


# --------------------------------------------------------------------------- pytrees
def test_tree_flatten_round_trip() -> None:
    tree = {"a": (1, [2, 3]), "b": Pair(4, {"c": None}), "d": []}
    leaves, spec = tree_flatten(tree)
    assert leaves == [1, 2, 3, 4, None]
    assert tree_unflatten(leaves, spec) == tree
    assert str(spec) == "{'a': (*, [*, *]), 'b': Pair(*, {'c': *}), 'd': []}"


def test_grad_over_pytree_arguments() -> None:
    params = {"w": t(A), "b": [t(X), Pair(t(Y), t(2.0))]}

    def f(p: dict, x: tk.Tensor) -> tk.Tensor:
        pair = p["b"][1]
        return ((p["w"] @ x + p["b"][0]) * pair.a).sum() * pair.b

    g = F.grad(f)(params, t(X))
    assert isinstance(g, dict) and isinstance(g["b"][1], Pair)
    np.testing.assert_allclose(g["w"].numpy(), 2 * np.outer(Y, X))
    np.testing.assert_allclose(g["b"][0].numpy(), 2 * Y)
    np.testing.assert_allclose(g["b"][1].b.item(), ((A @ X + X) * Y).sum())


def test_jvp_and_vjp_with_pytree_primals() -> None:
    def f(p: dict) -> tk.Tensor:
        return p["x"] * p["y"]

    primal = {"x": t(X), "y": t(Y)}
    _, tangent = F.jvp(f, (primal,), ({"y": t(np.ones(4)), "x": t(np.zeros(4))},))
    np.testing.assert_allclose(tangent.numpy(), X)
    _, vjp_fn = F.vjp(f, primal)
    (grads,) = vjp_fn(t(np.ones(4)))
    np.testing.assert_allclose(grads["x"].numpy(), Y)


def test_has_aux_everywhere() -> None:
    def f(x: tk.Tensor) -> tuple:
        return (x * x).sum(), {"note": x.mean(), "n": 4}

    g, aux = F.grad(f, has_aux=True)(t(X))
    np.testing.assert_allclose(g.numpy(), 2 * X)
    assert aux["n"] == 4 and aux["note"].item() == pytest.approx(X.mean())
    assert not aux["note"].requires_grad
    for transform in (F.jacrev, F.jacfwd):
        jac, aux = transform(f, has_aux=True)(t(X))
        np.testing.assert_allclose(jac.numpy(), 2 * X)
    _, tangent, aux = F.jvp(f, (t(X),), (t(Y),), has_aux=True)
    assert tangent.item() == pytest.approx(2 * X @ Y) and aux["n"] == 4


# ----------------------------------------------------------------------------- vmap
def test_vmap_in_dims_variants() -> None:
    m, batch = t(A), t(BATCH)
    rows = F.vmap(lambda mat, x: mat @ x, in_dims=(None, 0))(m, batch)
    np.testing.assert_allclose(rows.numpy(), BATCH @ A.T)
    cols = F.vmap(lambda x: x * 2, in_dims=1, out_dims=1)(batch)
    np.testing.assert_allclose(cols.numpy(), 2 * BATCH)
    negative = F.vmap(lambda x: x.sum(), in_dims=-1)(batch)
    np.testing.assert_allclose(negative.numpy(), BATCH.sum(0))


def test_vmap_nested_in_dims_kwargs_and_passthrough() -> None:
    data = {"x": t(BATCH), "bias": t(X)}

    def f(d: dict, scale: float, *, shift: tk.Tensor) -> tk.Tensor:
        return d["x"] * scale + d["bias"] + shift

    out = F.vmap(f, in_dims=({"x": 0, "bias": None}, None))(data, 3.0, shift=t(Y))
    np.testing.assert_allclose(out.numpy(), BATCH * 3 + X + Y)
    assert F.vmap(lambda x, nothing: x.sum(), in_dims=(0, None))(t(BATCH), None).shape == (5,)


def test_vmap_out_dims_tuple_and_none() -> None:
    const = t(Y)
    first, second = F.vmap(lambda x: (x, const), out_dims=(1, None))(t(BATCH))
    np.testing.assert_allclose(first.numpy(), BATCH.T)
    np.testing.assert_allclose(second.numpy(), Y)


def test_vmap_randomness_modes() -> None:
    def noisy(x: tk.Tensor) -> tk.Tensor:
        return x + tk.rand(4, dtype=tk.float64)

    tk.manual_seed(0)
    same = F.vmap(noisy, randomness="same")(t(np.zeros((3, 4)))).numpy()
    np.testing.assert_array_equal(same[0], same[1])
    different = F.vmap(noisy, randomness="different")(t(np.zeros((3, 4)))).numpy()
    assert not np.array_equal(different[0], different[1])
    state = tk.get_rng_state()
    with pytest.raises(RuntimeError, match="randomness error mode"):
        F.vmap(noisy)(t(np.zeros((3, 4))))
    assert tk.get_rng_state().equal(state)


def test_vmap_chunk_size_does_not_change_results() -> None:
    out = F.vmap(lambda x: x.sin(), chunk_size=2)(t(BATCH))
    np.testing.assert_allclose(out.numpy(), np.sin(BATCH))


# ---------------------------------------------------------------------------- misuse
def test_grad_needs_a_scalar_tensor_output() -> None:
    with pytest.raises(RuntimeError, match=r"scalar Tensor, got a tensor of shape \[4\]"):
        F.grad(lambda x: x * 2)(t(X))
    with pytest.raises(RuntimeError, match="to return a Tensor, got <class 'float'>"):
        F.grad(lambda x: 3.0)(t(X))


def test_grad_needs_tensor_inputs() -> None:
    with pytest.raises(ValueError, match=r"must be Tensors .* got float"):
        F.grad(lambda x: x)(3.0)
    with pytest.raises(ValueError, match="got str"):
        F.grad(lambda p: p["x"].sum())({"x": t(X), "name": "x"})
    with pytest.raises(RuntimeError, match="floating point"):
        F.grad(lambda x: x.sum())(tk.arange(3))


@pytest.mark.parametrize(
    ("argnums", "message"),
    [
        (2, r"Got argnums=2, but only 2 positional inputs"),
        (-3, r"Got argnums=-3"),
        ((), "non-empty"),
        ((0, 0), "unique"),
        (1.0, "must be int or Tuple"),
    ],
)
def test_bad_argnums(argnums: Any, message: str) -> None:
    with pytest.raises(RuntimeError, match=message):
        F.grad(lambda x, y: (x * y).sum(), argnums=argnums)(t(X), t(Y))


def test_has_aux_needs_a_pair() -> None:
    for transform in (F.grad, F.jacrev):
        with pytest.raises(RuntimeError, match=r"should be a tuple: \(output, aux\)"):
            transform(lambda x: x.sum(), has_aux=True)(t(X))


def test_vjp_and_jvp_misuse() -> None:
    _, vjp_fn = F.vjp(lambda x: (x, x.sum()), t(X))
    with pytest.raises(RuntimeError, match="same structure"):
        vjp_fn(t(X))
    with pytest.raises(RuntimeError, match=r"cotangents\[1\] has shape \[4\] .* shape \[\]"):
        vjp_fn((t(X), t(X)))
    with pytest.raises(RuntimeError, match="only Tensors, got unsupported type float"):
        F.vjp(lambda x: 2.0, t(X))
    with pytest.raises(RuntimeError, match="expected primals to be a tuple"):
        F.jvp(lambda x: x, t(X), t(X))
    with pytest.raises(RuntimeError, match="same structure"):
        F.jvp(lambda x: x, (t(X),), (t(X), t(X)))
    with pytest.raises(RuntimeError, match=r"tangents\[0\] has shape \[2\]"):
        F.jvp(lambda x: x, (t(X),), (t(np.ones(2)),))
    with pytest.raises(RuntimeError, match="output 1 of f is independent"):
        F.jvp(lambda x: (x, t(1.0)), (t(X),), (t(X),), strict=True)


def test_vmap_in_dims_errors() -> None:
    batch = t(BATCH)
    with pytest.raises(ValueError, match=r"in_dims has structure \(\*,\) but the inputs have"):
        F.vmap(lambda x, y: x + y, in_dims=(0,))(batch, batch)
    with pytest.raises(ValueError, match=r"got sizes \[5, 3\] for the mapped dimension"):
        F.vmap(lambda x, y: x + y)(batch, t(np.ones((3, 4))))
    with pytest.raises(ValueError, match="in_dim=2 for an input with 2 dimensions"):
        F.vmap(lambda x: x, in_dims=2)(batch)
    with pytest.raises(ValueError, match="input of type float"):
        F.vmap(lambda x, s: x * s)(batch, 2.0)
    for bad in (None, [0], "0"):
        with pytest.raises(ValueError, match="expected `in_dims` to be int or"):
            F.vmap(lambda x: x, in_dims=bad)(batch)
    with pytest.raises(ValueError, match="at least one input must be a Tensor mapped"):
        F.vmap(lambda x: x, in_dims=(None,))(batch)
    with pytest.raises(ValueError, match="batch of size 0"):
        F.vmap(lambda x: x)(t(np.ones((0, 2))))


def test_vmap_out_dims_and_option_errors() -> None:
    batch = t(BATCH)
    with pytest.raises(ValueError, match="out_dims is not compatible"):
        F.vmap(lambda x: (x, x), out_dims=(0, 0, 0))(batch)
    with pytest.raises(ValueError, match="must only return Tensors"):
        F.vmap(lambda x: 2.0)(batch)
    with pytest.raises(ValueError, match="out_dim None differs between samples"):
        F.vmap(lambda x: x, out_dims=None)(batch)
    with pytest.raises(IndexError, match="Dimension out of range"):
        F.vmap(lambda x: x, out_dims=3)(batch)
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        F.vmap(lambda x: x, randomness="sometimes")
    with pytest.raises(ValueError, match="chunk_size should be None or greater than 0"):
        F.vmap(lambda x: x, chunk_size=0)


def test_jacobian_options_accepted_and_checked() -> None:
    x = t(X)
    expected = F.jacrev(lambda v: v.exp())(x)
    assert_trees_close(F.jacrev(lambda v: v.exp(), chunk_size=2)(x), expected)
    assert_trees_close(F.jacfwd(lambda v: v.exp(), randomness="same")(x), expected)
    with pytest.raises(ValueError, match=r"jacrev: `chunk_size` should be greater than 0\."):
        F.jacrev(lambda v: v, chunk_size=0)
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        F.jacfwd(lambda v: v, randomness="sometimes")


# -------------------------------------------------------------------- functional_call
def two_layers(lib: Any) -> Any:
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(4, 3), lib.nn.Tanh(), lib.nn.BatchNorm1d(3)).double()


def named_arrays() -> dict[str, np.ndarray]:
    return {
        "0.weight": RNG.standard_normal((3, 4)),
        "0.bias": RNG.standard_normal(3),
        "2.running_mean": RNG.standard_normal(3),
    }


def test_functional_call_matches_torch(torch: Any) -> None:
    arrays, batch = named_arrays(), RNG.standard_normal((5, 4))

    def run(lib: Any, make: Any) -> Any:
        model = two_layers(lib)
        model.eval()
        params = {name: make(a, name != "2.running_mean") for name, a in arrays.items()}
        x = make(batch, True)
        out = lib.func.functional_call(model, params, (x,))
        out.sum().backward()
        untouched = (model[0].weight.grad, model[0].bias.grad)  # replaced for the call
        return out, params["0.weight"].grad, x.grad, model[2].weight.grad, untouched

    mine = run(tk, lambda a, grad: t(a, requires_grad=grad))
    theirs = run(torch, lambda a, grad: torch.tensor(a, requires_grad=grad))
    for got, want in zip(mine[:4], theirs[:4], strict=True):
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), atol=1e-10)
    assert mine[4] == theirs[4] == (None, None)


def test_functional_call_gradients() -> None:
    from harness import check_grads

    model = two_layers(tk)
    model.eval()

    def through(weight: tk.Tensor, x: tk.Tensor) -> tk.Tensor:
        return F.functional_call(model, {"0.weight": weight}, x)

    check_grads(through, RNG.standard_normal((3, 4)), RNG.standard_normal((2, 4)))


def test_functional_call_restores_the_module_and_composes_with_grad() -> None:
    model = two_layers(tk)
    model.eval()
    before = dict(model.named_parameters())
    params = {name: p.detach() for name, p in before.items()}
    x = t(RNG.standard_normal((2, 4)))

    grads = F.grad(lambda p: F.functional_call(model, p, (x,)).sum())(params)
    assert set(grads) == set(params)
    assert dict(model.named_parameters()) == before
    direct = tk.autograd.grad(model(x).sum(), list(before.values()))
    for name, g in zip(before, direct, strict=True):
        np.testing.assert_allclose(grads[name].numpy(), g.numpy(), atol=1e-12)


def test_functional_call_ties_weights_and_kwargs() -> None:
    class Tied(tk.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = tk.nn.Linear(2, 2, bias=False).double()
            self.b = tk.nn.Linear(2, 2, bias=False).double()
            self.b.weight = self.a.weight

        def forward(self, x: tk.Tensor, scale: float = 1.0) -> tk.Tensor:
            return self.b(self.a(x)) * scale

    model = Tied()
    x = t(np.ones((1, 2)))
    new = {"a.weight": 2 * tk.eye(2, dtype=tk.float64)}
    np.testing.assert_allclose(F.functional_call(model, new, x, {"scale": 0.5}).numpy(), [[2, 2]])
    untied = F.functional_call(model, new, (x,), tie_weights=False)
    np.testing.assert_allclose(untied.detach().numpy(), (model.b(2 * x)).detach().numpy())


def test_functional_call_misuse() -> None:
    model = tk.nn.Linear(2, 2).double()
    x = t(np.ones(2))
    weight = t(np.ones((2, 2)))
    with pytest.raises(
        RuntimeError,
        match=re.escape(
            "Error(s) in reparametrizing for Linear:\n\tUnexpected key(s): 'zzz'.\n"
            "\tMissing key(s): 'bias'."
        ),
    ):
        F.functional_call(model, {"weight": weight, "zzz": weight}, (x,), strict=True)
    with pytest.raises(ValueError, match="\\['weight'\\] appeared in multiple dictionaries"):
        F.functional_call(model, ({"weight": weight}, {"weight": weight}), (x,))
    out = F.functional_call(model, ({"weight": weight}, {"bias": t(np.zeros(2))}), (x,))
    np.testing.assert_allclose(out.detach().numpy(), [2.0, 2.0])
