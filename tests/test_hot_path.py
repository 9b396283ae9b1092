"""The engine's plain runner (``backward()``/``grad()`` with nothing recorded or observed),
which runs the ops' namespaced rules on raw arrays, agrees bit for bit with the Tensor runner
(the step iterator), which runs the same rules on Tensors; every fallback (hooks, mixed
dtypes, complex, broadcasting) still gives the iterator's answer, and saved-value checks keep
their errors."""

from __future__ import annotations

import numpy as np
import pytest

import tensorkit as tk
from tensorkit.autograd.engine import _execute


def _grads_by_iterator(loss, leaves, gradient=None):
    for _ in tk.autograd.backward_steps(loss, gradient):
        pass
    return [leaf.grad for leaf in leaves]


def _captured_by_iterator(roots, grads, inputs):
    """The gradients of ``inputs`` as the step iterator captures them (its return value)."""
    steps = _execute(roots, grads, None, False, inputs, describe=True)
    while True:
        try:
            next(steps)
        except StopIteration as stop:
            return stop.value


def _leaves(seed, shapes, dtype):
    rng = np.random.default_rng(seed)
    return [
        tk.tensor(rng.uniform(0.5, 1.5, shape).astype(dtype), requires_grad=True)
        for shape in shapes
    ]


def _assert_same(plain, iterated):
    assert len(plain) == len(iterated)
    for a, b in zip(plain, iterated, strict=True):
        assert (a is None) == (b is None)
        if a is not None:
            assert a.dtype == b.dtype
            assert tuple(a.shape) == tuple(b.shape)
            np.testing.assert_array_equal(a.numpy(), b.numpy())


# Each case: input shapes and a function of the leaves giving a tensor (summed to a loss).
CASES = {
    "add": ([(5,), (5,)], lambda a, b: a + b),
    "add_broadcast": ([(3, 5), (5,)], lambda a, b: a + b),
    "mul_stretched": ([(2, 3, 4), (3, 1)], lambda a, b: a * b),  # summed over a lead and a 1
    "add_zero_dim": ([(3, 4), ()], lambda a, b: a + b),
    "add_alpha": ([(5,), (5,)], lambda a, b: tk.add(a, b, alpha=2.5)),
    "sub": ([(5,), (5,)], lambda a, b: a - b),
    "sub_scalar": ([(5,)], lambda a: 2 - a),
    "mul": ([(5,), (5,)], lambda a, b: a * b),
    "mul_self": ([(5,)], lambda a: a * a),
    "mul_scalar": ([(5,)], lambda a: a * 0.5),
    "div": ([(5,), (5,)], lambda a, b: a / b),
    "rdiv": ([(5,)], lambda a: 3 / a),
    "neg": ([(5,)], lambda a: -a),
    "exp": ([(5,)], tk.exp),
    "log": ([(5,)], tk.log),
    "sqrt": ([(5,)], tk.sqrt),
    "sin": ([(5,)], tk.sin),
    "cos": ([(5,)], tk.cos),
    "tanh": ([(5,)], tk.tanh),
    "sigmoid": ([(5,)], tk.sigmoid),
    "relu": ([(5,)], lambda a: tk.relu(a - 1)),
    "sum_dim": ([(3, 4)], lambda a: a.sum(1)),
    "sum_keepdim": ([(3, 4)], lambda a: a.sum(0, keepdim=True) * a),
    "mean": ([(3, 4)], lambda a: a.mean(0)),
    "matmul": ([(3, 4), (4, 2)], lambda a, b: a @ b),
    "matmul_batched": ([(2, 3, 4), (4, 2)], lambda a, b: a @ b),
    "matvec": ([(3, 4), (4,)], lambda a, b: a @ b),
    "layer_norm": ([(3, 4, 5)], lambda a: tk.nn.functional.layer_norm(a, (4, 5)) * a),
    "softmax": ([(3, 5)], lambda a: tk.nn.functional.softmax(a, 1) * a),
    "cross_entropy": (
        [(4, 5)],
        lambda a: tk.nn.functional.cross_entropy(a, tk.tensor([0, 3, 1, 4])),
    ),
    "nll_ignored_weighted": (
        [(4, 5), (5,)],
        lambda a, w: tk.nn.functional.nll_loss(a, tk.tensor([0, -100, 1, 4]), weight=w.detach()),
    ),
    "chain": (
        [(6,), (6,)],
        lambda x, w: tk.relu(tk.tanh(tk.exp(tk.sin(x * w + x)) - x) * 0.5 + 0.1) * x,
    ),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("name", list(CASES))
def test_plain_backward_matches_iterator_bit_for_bit(name, dtype):
    shapes, function = CASES[name]
    plain = _leaves(0, shapes, dtype)
    function(*plain).sum().backward()
    iterated = _leaves(0, shapes, dtype)
    _assert_same([t.grad for t in plain], _grads_by_iterator(function(*iterated).sum(), iterated))


@pytest.mark.parametrize("name", ["mul", "div", "exp", "sin", "tanh", "matmul", "mean"])
def test_complex_gradients_fall_back_to_tensor_rules(name):
    shapes, function = CASES[name]

    def leaves():
        made = _leaves(1, shapes, np.float64)
        return [tk.tensor(t.numpy(force=True) * (1 + 0.5j), requires_grad=True) for t in made]

    plain = leaves()
    function(*plain).abs().sum().backward()
    iterated = leaves()
    expected = _grads_by_iterator(function(*iterated).abs().sum(), iterated)
    _assert_same([t.grad for t in plain], expected)
    assert plain[0].grad.dtype == tk.complex128


def test_mixed_dtypes_fall_back_to_tensor_rules():
    def run(backward):
        a = tk.tensor(np.linspace(0.5, 1.5, 5, dtype=np.float32), requires_grad=True)
        b = tk.tensor(np.float64(1.0 / 3.0), requires_grad=True)  # 0-d: does not promote a
        backward(tk.sin(a * b).sum())
        return [a.grad, b.grad]

    plain = run(lambda loss: loss.backward())
    iterated = run(lambda loss: _grads_by_iterator(loss, []))
    _assert_same(plain, iterated)
    assert plain[0].dtype == tk.float32 and plain[1].dtype == tk.float64


def test_grad_with_inputs_in_the_middle_matches_iterator():
    def run(plain):
        x = tk.tensor(np.linspace(0.5, 1.5, 4), requires_grad=True)
        h = tk.tanh(x * 2)
        loss = (tk.exp(h) * x).sum()
        if plain:
            return tk.autograd.grad(loss, [h, x])
        return _captured_by_iterator(loss, None, [h, x])

    _assert_same(list(run(True)), list(run(False)))


def test_root_gradient_reaching_a_leaf_is_copied_on_both_paths():
    """The user's ``gradient=`` tensor becomes ``.grad`` as a copy (as in PyTorch, which
    steals a gradient only when nothing else holds it): zeroing ``.grad`` leaves it alone."""
    for plain in (True, False):
        x = tk.tensor([1.0, 2.0], requires_grad=True)
        v = tk.tensor([3.0, 4.0])
        y = x + 0
        if plain:
            y.backward(v)
        else:
            _grads_by_iterator(y, [x], v)
        assert not np.shares_memory(x.grad.numpy(), v.numpy())
        assert x.grad._version_counter is not v._version_counter
        np.testing.assert_array_equal(x.grad.numpy(), [3.0, 4.0])
        with tk.no_grad():
            x.grad.zero_()
        np.testing.assert_array_equal(v.numpy(), [3.0, 4.0])


def test_hooks_and_retain_grad_run_on_the_plain_path():
    x = tk.tensor([0.5, 1.0, 2.0], requires_grad=True)
    h = x * 3
    h.retain_grad()
    seen = []
    h.register_hook(lambda g: seen.append(g.numpy().copy()) or g * 2)
    node_calls = []
    out = tk.exp(h)
    out.grad_fn.register_hook(lambda grads_in, grads_out: node_calls.append(len(grads_in)))
    x.register_hook(lambda g: g + 1)
    out.sum().backward()
    expected_h = np.exp(x.detach().numpy() * 3)
    np.testing.assert_allclose(seen[0], expected_h, rtol=1e-6)
    np.testing.assert_allclose(h.grad.numpy(), expected_h * 2, rtol=1e-6)  # after the hook
    assert node_calls == [1]
    np.testing.assert_allclose(x.grad.numpy(), expected_h * 2 * 3 + 1, rtol=1e-6)


def test_array_rule_reports_an_inplace_change_of_a_saved_tensor():
    x = tk.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1
    y = tk.sin(h)
    h.add_(1)
    with pytest.raises(
        RuntimeError, match=r"modified by an inplace operation.*SinBackward0"
    ) as info:
        y.sum().backward()
    assert info.value.backward_node is y.grad_fn


def test_array_rule_reports_an_inplace_change_of_a_saved_output():
    x = tk.tensor([1.0, 2.0], requires_grad=True)
    y = tk.exp(x)
    y.mul_(2)
    with pytest.raises(RuntimeError, match=r"ExpBackward0 \(output 0\) is at version 1"):
        y.sum().backward()


def test_array_rule_refuses_a_second_backward_through_freed_values():
    x = tk.tensor([1.0, 2.0], requires_grad=True)
    loss = (x * x).sum()
    loss.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()
    loss2 = (x * x).sum()
    loss2.backward(retain_graph=True)
    loss2.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0 + 4.0, 4.0 + 8.0])


def test_plain_path_restores_grad_mode_after_an_error():
    x = tk.tensor([1.0], requires_grad=True)
    y = tk.sin(x * 1)
    y.grad_fn.register_prehook(lambda grads: 1 / 0)
    with pytest.raises(ZeroDivisionError) as info:
        y.backward()
    assert info.value.backward_node is y.grad_fn
    assert tk.is_grad_enabled()


def test_an_observer_started_during_backward_sees_what_the_iterator_shows():
    def run(plain):
        x = tk.tensor([0.5, 1.5], requires_grad=True)
        tape = tk.autograd.Tape()
        y = tk.sin(tk.exp(x) * 2)

        def start_tape(grads_in, grads_out):
            tape.__enter__()

        y.grad_fn.register_hook(start_tape)
        loss = y.sum()
        try:
            if plain:
                loss.backward()
            else:
                _grads_by_iterator(loss, [])
        finally:
            tape.__exit__(None, None, None)
        entries = [(entry.name, entry.phase) for entry in tape.entries]
        steps = [(step["index"], step["node"]) for step in tape.backward_steps]
        return entries, steps, x.grad.numpy()

    entries, steps, grad = run(True)
    assert (entries, steps) == run(False)[:2]
    assert steps == [
        (1, "SinBackward0"),
        (2, "MulBackward0"),
        (3, "ExpBackward0"),
        (4, "AccumulateGrad"),
    ]
    assert entries and all(phase == "backward" for _, phase in entries)
    expected = np.cos(2 * np.exp([0.5, 1.5])) * 2 * np.exp([0.5, 1.5])
    np.testing.assert_allclose(grad, expected, rtol=1e-6)


def test_plain_backward_runs_the_rules_on_arrays(monkeypatch):
    from tensorkit.ops import binary, matmul, reduction, unary
    from tensorkit.ops._rule_space import ArraySpace

    ran = []

    def counted(op):
        rule = op.rule

        def wrapper(ctx, xp, *args):
            assert isinstance(xp, ArraySpace)
            ran.append(op.name)
            return rule(ctx, xp, *args)

        monkeypatch.setattr(op, "rule", wrapper)

    ops = [binary._ADD, binary._SUB, binary._MUL, reduction._MEAN, matmul._MATMUL]
    ops += [unary._OPS[name] for name in ("sin", "exp", "tanh", "relu")]
    for op in ops:
        counted(op)
    x, w = _leaves(0, [(2, 6), (6, 6)], np.float32)
    (CASES["chain"][1](x @ w, x)).mean().backward()
    assert sorted(set(ran)) == sorted(op.name for op in ops)
    ran.clear()
    complex_x = tk.tensor(np.ones(3) * (1 + 1j), requires_grad=True)
    (tk.exp(complex_x) * complex_x).abs().sum().backward()  # complex: the Tensor rules run
    assert ran == []


def test_a_loss_rule_runs_on_arrays_beside_its_integer_targets(monkeypatch):
    """nll_loss's targets are int64 indices (``OpDef.index_saves``): they do not send its
    node to the Tensor path, whose answer it still gives."""
    from tensorkit.nn.functional import loss
    from tensorkit.ops._rule_space import ArraySpace

    spaces = []
    rule = loss._NLL_LOSS.rule

    def wrapper(ctx, space, *args):
        spaces.append(type(space))
        return rule(ctx, space, *args)

    monkeypatch.setattr(loss._NLL_LOSS, "rule", wrapper)
    (logits,) = _leaves(2, [(6, 3)], np.float32)
    targets = tk.tensor([0, 2, 1, 1, 0, 2])
    tk.nn.functional.cross_entropy(logits, targets).backward()
    assert spaces == [ArraySpace]


@pytest.mark.parametrize("backward_ops", [False, True])
def test_a_profile_keeps_the_plain_runner_unless_it_records_backward_ops(monkeypatch, backward_ops):
    from tensorkit.ops import binary

    ran = []
    rule = binary._MUL.rule
    monkeypatch.setattr(binary._MUL, "rule", lambda *args: ran.append(1) or rule(*args))
    x = tk.ones(3, requires_grad=True)
    with tk.profiler.profile(backward_ops=backward_ops):
        (x * x).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]
    assert ran == ([] if backward_ops else [1])


def test_several_roots_and_backward_inputs_match_iterator():
    def run(plain):
        x, w = _leaves(2, [(4,), (4,)], np.float64)
        h = tk.sin(x * w)
        roots = [(h * 2).sum(), (h * x).mean(), h]
        # a 0-d gradient, and one of another dtype than its root
        grads = [None, tk.tensor(3.0, dtype=tk.float64), tk.ones(4, dtype=tk.float32)]
        if plain:
            tk.autograd.backward(roots, grads, inputs=[w])
            assert x.grad is None
            return [w.grad]
        return _captured_by_iterator(roots, grads, [w])

    _assert_same(run(True), run(False))
