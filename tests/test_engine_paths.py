"""The engine's ways of running one graph agree: ``backward()`` (the plain runner), ``grad()``,
the notebook stepper and ``backward_steps``, a Tape observing, anomaly mode, ``create_graph``
and ``retain_graph`` (the Tensor runner) give identical gradients, hook calls and errors on
the same graphs: broadcasting, shared inputs, views, in-place changes, multi-output ops."""

from __future__ import annotations

import numpy as np
import pytest

import tensorkit as tk
from tensorkit.notebook import BackwardStepper


def _leaves(seed: int, shapes: list[tuple], dtype=np.float64) -> list:
    rng = np.random.default_rng(seed)
    return [
        tk.tensor(rng.uniform(0.5, 1.5, shape).astype(dtype), requires_grad=True)
        for shape in shapes
    ]


def _inplace(a, b):
    h = a * 2
    h.mul_(b)  # in place on a non-leaf: its old value was not saved by anyone
    return tk.exp(h)


GRAPHS = {
    "broadcast": ([(3, 4), (4,), (3, 1)], lambda a, b, c: tk.tanh(a * b + c) / (b + 2)),
    "shared_input": ([(5,)], lambda a: tk.sin(a) * a + tk.exp(a) * a - a),
    "views": ([(4, 6)], lambda a: (a.T[1:, :2] * a[:2, 1:].T).sum(0) + a.reshape(2, 12)[0, 3:5]),
    "in_place": ([(3,), (3,)], _inplace),
    "matmul_mlp": (
        [(4, 5), (5, 3), (3,)],
        lambda x, w, b: tk.softmax(tk.relu(x @ w + b), 1) * tk.sigmoid(x @ w),
    ),
    "multi_output": (
        [(2, 3, 4)],
        lambda a: tk.nn.functional.layer_norm(a, (3, 4)) * a.split(2, dim=2)[1].sum(),
    ),
    "mean_and_div": ([(3, 4), (4,)], lambda a, b: a.mean(0) / b.sqrt() - b.log()),
}


def _outputs(name: str):
    shapes, function = GRAPHS[name]
    leaves = _leaves(7, shapes)
    return leaves, function(*leaves).sum()


def _by_backward(name):
    leaves, loss = _outputs(name)
    loss.backward()
    return [t.grad for t in leaves]


def _by_grad(name):
    leaves, loss = _outputs(name)
    return list(tk.autograd.grad(loss, leaves))


def _by_stepper(name):
    leaves, loss = _outputs(name)
    stepper = BackwardStepper(loss, retain_graph=False)
    stepper.run_to_end()
    assert stepper.done and stepper.error is None
    return [t.grad for t in leaves]


def _by_steps(name):
    leaves, loss = _outputs(name)
    steps = list(tk.autograd.backward_steps(loss))
    assert steps and [s.index for s in steps] == list(range(len(steps)))
    return [t.grad for t in leaves]


def _by_tape(name):
    leaves, loss = _outputs(name)
    with tk.autograd.Tape() as tape:
        loss.backward()
    assert any(entry.phase == "backward" for entry in tape.entries)
    return [t.grad for t in leaves]


def _by_anomaly(name):
    with tk.autograd.detect_anomaly():
        leaves, loss = _outputs(name)
        loss.backward()
    return [t.grad for t in leaves]


def _by_create_graph(name):
    leaves, loss = _outputs(name)
    grads = tk.autograd.grad(loss, leaves, create_graph=True)
    assert all(g.requires_grad for g in grads if g.grad_fn is not None)
    return [g.detach() for g in grads]


def _by_retain_graph(name):
    """Two passes with retain_graph: the second adds the same gradients again (halved)."""
    leaves, loss = _outputs(name)
    loss.backward(retain_graph=True)
    loss.backward()
    return [t.grad / 2 for t in leaves]


WAYS = {
    "grad": _by_grad,
    "stepper": _by_stepper,
    "backward_steps": _by_steps,
    "tape": _by_tape,
    "anomaly": _by_anomaly,
    "create_graph": _by_create_graph,
    "retain_graph": _by_retain_graph,
}


@pytest.mark.parametrize("way", list(WAYS))
@pytest.mark.parametrize("graph", list(GRAPHS))
def test_every_way_gives_the_plain_backward_gradients(graph, way):
    expected = _by_backward(graph)
    got = WAYS[way](graph)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == e.dtype and tuple(g.shape) == tuple(e.shape)
        np.testing.assert_array_equal(g.numpy(), e.numpy())  # (2g)/2 is exact too


def _hook_log(run):
    """Which hooks ran, in order, with the gradient sums they saw, for one way of running."""
    log = []
    x, w = _leaves(3, [(3,), (3,)])
    h = x * w
    h.register_hook(lambda g: log.append(("h", round(float(g.sum().item()), 12))) or g * 2)
    h.retain_grad()
    out = tk.exp(h) * x
    out.grad_fn.register_prehook(lambda grads: log.append(("pre", len(grads))))
    out.grad_fn.register_hook(lambda gi, go: log.append(("post", len(gi), len(go))))
    x.register_hook(lambda g: log.append(("x", round(float(g.sum().item()), 12))))
    x.register_post_accumulate_grad_hook(lambda t: log.append(("x acc", t.grad is not None)))
    run(out.sum())
    return log, [t.grad.detach().numpy().tolist() for t in (x, w, h)]


def _run_stepper(loss):
    BackwardStepper(loss, retain_graph=False).run_to_end()


def _run_with_tape(loss):
    with tk.autograd.Tape():
        loss.backward()


def _run_create_graph(loss):
    loss.backward(create_graph=True)


@pytest.mark.parametrize(
    "run",
    [_run_stepper, _run_with_tape, _run_create_graph],
    ids=["stepper", "tape", "create_graph"],
)
def test_hooks_run_alike_on_every_path(run):
    expected = _hook_log(lambda loss: loss.backward())
    assert expected[0][0][0] == "pre" and ("x acc", True) in expected[0]
    assert _hook_log(run) == expected


def _leaf_of(loss):
    """The leaf x of ``_modified_saved_tensor``'s graph, found through its nodes."""
    node = loss.grad_fn
    while type(node).__name__ != "AccumulateGrad":
        node = next(edge[0] for edge in node.next_functions if edge[0] is not None)
    return node.variable


def _modified_saved_tensor():
    x = tk.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1
    y = tk.sin(h)
    h.add_(1)
    return y.sum(), y.grad_fn


@pytest.mark.parametrize(
    "run",
    [
        lambda loss: loss.backward(),
        lambda loss: tk.autograd.grad(loss, _leaf_of(loss)),
        lambda loss: list(tk.autograd.backward_steps(loss)),
        _run_with_tape,
        _run_create_graph,
        _run_stepper,
    ],
    ids=["backward", "grad", "backward_steps", "tape", "create_graph", "stepper"],
)
def test_an_inplace_change_of_a_saved_value_raises_the_same_error_everywhere(run):
    loss, node = _modified_saved_tensor()
    if run is _run_stepper:
        stepper = BackwardStepper(loss, retain_graph=False)
        stepper.run_to_end()
        assert "modified by an inplace operation" in stepper.error["message"]
        return
    with pytest.raises(
        RuntimeError, match=r"modified by an inplace operation.*SinBackward0"
    ) as info:
        run(loss)
    assert info.value.backward_node is node


def test_a_second_pass_through_freed_values_raises_on_both_runners():
    for run in (lambda loss: loss.backward(), lambda loss: list(tk.autograd.backward_steps(loss))):
        x = tk.tensor([1.0, 2.0], requires_grad=True)
        loss = (tk.exp(x) * x).sum()
        run(loss)
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            run(loss)


def test_anomaly_mode_is_an_observer_that_names_the_forward_call():
    x = tk.tensor([0.0, 1.0], requires_grad=True)
    with tk.autograd.detect_anomaly():
        assert tk.autograd.is_anomaly_enabled()
        assert any(type(o).__name__ == "AnomalyObserver" for o in tk._state.observers)
        y = tk.sqrt(x).sum()  # d sqrt(0) = inf
        with pytest.raises(RuntimeError, match=r"Function 'SqrtBackward0' returned inf") as info:
            y.backward()
        assert "test_engine_paths.py" in str(info.value)
    assert not tk.autograd.is_anomaly_enabled()
    assert not tk._state.observers
    with tk.autograd.detect_anomaly(), tk.autograd.set_detect_anomaly(False):
        assert not tk._state.observers  # off inside: nothing observes


def _shares(a, b) -> bool:
    return np.shares_memory(np.asarray(a._data), np.asarray(b._data))


def _sum_of_two(a, b):
    return (a + b) * 3.0  # add hands one gradient array to both leaves


ALIAS_WAYS = {
    "backward": lambda loss, *_: loss.backward(),
    "backward_steps": lambda loss, *_: list(tk.autograd.backward_steps(loss)),
    "create_graph": lambda loss, *_: loss.backward(create_graph=True),
    "inputs": lambda loss, a, b: loss.backward(inputs=[a, b]),
    "hook": lambda loss, a, b: (a.register_hook(lambda g: None), loss.backward()),
}


@pytest.mark.parametrize("way", list(ALIAS_WAYS))
def test_no_two_leaves_share_one_gradient_array(way):
    """One gradient array reaching two leaves becomes at most one ``.grad`` as it is: changing
    one leaf's ``.grad`` in place (clipping, an optimizer) leaves the other's alone."""
    a, b = _leaves(3, [(4, 5), (4, 5)])
    ALIAS_WAYS[way](_sum_of_two(a, b).sum(), a, b)
    assert not _shares(a.grad, b.grad)
    expected = np.full((4, 5), 3.0)
    with tk.no_grad():
        a.grad.mul_(0.0)
    np.testing.assert_array_equal(b.grad.numpy(), expected)


def test_a_root_gradient_the_user_passed_is_never_a_leafs_grad():
    a, b = _leaves(4, [(3,), (3,)])
    seed = tk.ones(3, dtype=tk.float64)
    (a + b).backward(seed)
    assert not _shares(a.grad, seed) and not _shares(b.grad, seed)
    with tk.no_grad():
        a.grad.zero_()
    np.testing.assert_array_equal(seed.numpy(), np.ones(3))


def test_a_retained_gradient_and_a_leafs_grad_are_separate_arrays():
    a, c = _leaves(5, [(3,), (3,)])
    y = a + c
    y.retain_grad()
    (y * 2.0).sum().backward()
    assert not _shares(y.grad, a.grad) and not _shares(a.grad, c.grad)


def test_a_fresh_weight_gradient_is_still_stored_without_a_copy(monkeypatch):
    """The claims keep the no-copy path: a matmul's weight gradient is a fresh array that only
    the weight receives, so it becomes ``.grad`` without a clone; the shared one is cloned."""
    clones = []
    original = tk.Tensor.clone

    def counting_clone(self, *args, **kwargs):
        clones.append(tuple(self.shape))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(tk.Tensor, "clone", counting_clone)
    x = tk.tensor(np.random.default_rng(0).normal(size=(8, 4)))
    w, b = _leaves(6, [(4, 3), (8, 3)])
    (x @ w + b).sum().backward()
    assert (4, 3) not in clones
    np.testing.assert_allclose(w.grad.numpy(), x.numpy().T @ np.ones((8, 3)))


def _reference_order(root_node) -> list:
    """The engine's order, worked out independently: of the nodes whose every consumer has
    run, the most recently created (highest ``seq``) runs next; leaves' accumulators (``seq``
    infinite) first, among themselves in the order they became ready, the queue's tie-break."""
    consumers: dict = {}
    stack, seen = [root_node], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for child, _ in node.next_functions:
            if child is not None:
                consumers.setdefault(id(child), []).append(node)
                stack.append(child)
    done: set = set()
    ready, order = [root_node], []
    ticket = {id(root_node): 0}  # when each node became ready
    while ready:
        ready.sort(key=lambda n: (n.seq, -ticket[id(n)]))
        node = ready.pop()
        order.append(node)
        done.add(id(node))
        for child, _ in node.next_functions:
            if child is None or child in ready:
                continue
            if all(id(c) in done for c in consumers[id(child)]):
                ticket[id(child)] = len(ticket)
                ready.append(child)
    return order


@pytest.mark.parametrize("graph", list(GRAPHS))
def test_nodes_run_in_dependency_then_creation_order(graph):
    """A chain's next node is taken without the ready queue; the order stays the queue's."""
    _, loss = _outputs(graph)
    expected = _reference_order(loss.grad_fn)
    steps = list(tk.autograd.backward_steps(loss))
    assert [s.node for s in steps] == expected


@pytest.mark.parametrize(
    "run",
    [lambda loss: loss.backward(), _run_with_tape, _run_create_graph, _run_stepper],
    ids=["backward", "tape", "create_graph", "stepper"],
)
def test_leaves_one_node_makes_ready_accumulate_in_its_edges_order(run):
    """Ties among ready nodes (every AccumulateGrad) break by when they became ready, never
    by memory address: hooks, and DDP's buckets, see one order on every run."""
    for _ in range(10):
        leaves = _leaves(0, [(2,)] * 8)
        order: list[int] = []
        for i, leaf in enumerate(leaves):
            leaf.register_post_accumulate_grad_hook(lambda _, i=i, order=order: order.append(i))
        run((tk.cat(leaves) * 2).sum())
        assert order == list(range(8))
