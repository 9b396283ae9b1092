"""One backward node's work on Tensor gradients, and the one place gradients are summed.

``work`` runs a node as every runner does when it holds Tensors: tensor hooks, capture of a
``grad()`` input, then the node's rule (pre hooks, rule, shape/dtype fixes, post hooks) or, for
an :class:`AccumulateGrad`, the leaf's hooks and its ``.grad``. ``sum_gradients`` is where two
gradients of one value meet: in a node's input buffer, in a captured input, in a leaf's
``.grad``.

A pass's *claims* (``claimed``: the memory of every gradient array someone else may hold,
keyed by id) decide when a gradient becomes ``.grad`` without a copy, as PyTorch's
AccumulateGrad steals a gradient only when nothing else refers to it: the root gradients,
those a hook was shown and each array already stored as a ``.grad`` are claimed, so one
array never becomes two leaves' ``.grad`` (``a + b`` hands its gradient to both) nor a
user's tensor. ``claimed`` None copies every time (the leaf's hooks were shown ``g``).
"""

from __future__ import annotations

from typing import Any

from .. import _state
from .._dtype import from_numpy_dtype
from ..tensor import Tensor, wrap
from .graph import AccumulateGrad, Node

__all__ = [
    "accumulate",
    "add_to_grad",
    "claim",
    "run_post_accumulate_hooks",
    "sum_gradients",
    "sum_into",
    "validate",
    "work",
]


def sum_gradients(a: Any, b: Any) -> Any:
    """``a + b`` for two gradients of one value: Tensors, or the raw arrays the plain runner
    carries. Added as an op when something records or observes it, or when shapes, dtypes or
    devices differ (then the op's promotion and checks apply); otherwise as arrays."""
    if type(a) is Tensor:
        da, db = a._data, b._data
        if (
            _state.grad_enabled
            or _state.observing
            or da.shape != db.shape
            or da.dtype != db.dtype
            or a._device is not b._device
        ):
            return a + b
        total = da + db
        if type(total) is not type(da):  # NumPy returns a scalar for 0-d operands
            total = a._device.xp.asarray(total)
        return wrap(total, a._device)
    if a.shape == b.shape and a.dtype == b.dtype:
        return a + b
    from .runners import as_tensor

    return (as_tensor(a) + as_tensor(b))._data


def sum_into(slots: list, nr: int, g: Any) -> None:
    """Add gradient ``g`` into ``slots[nr]`` (a node's input buffer or the captured list)."""
    previous = slots[nr]
    slots[nr] = g if previous is None else sum_gradients(previous, g)


def work(node: Node, grads_in: tuple, create_graph: bool, retain_graph: bool, plan: Any) -> tuple:
    """One node's work on Tensor gradients: tensor hooks, capture, then its rule (or the leaf
    accumulation). Returns ``(grads_in after hooks, grads_out)``, or None for a node that no
    captured input depends on (skipped). ``plan`` is the pass's (``engine._Plan``): its
    capture targets, captured gradients, needed nodes and claims (see the module docstring)."""
    if node._tensor_pre_hooks is not None or node._retain_grad_hooks is not None:
        grads_in = _run_tensor_pre_hooks(node, grads_in)
        for g in grads_in:
            if g is not None:
                claim(plan.claimed, g._data)
    targets = plan.targets
    if targets and node in targets:
        for slot, nr in targets[node]:
            if grads_in[nr] is not None:
                sum_into(plan.captured, slot, grads_in[nr])
    if plan.needed is not None and node not in plan.needed:
        return None
    if type(node) is AccumulateGrad:
        accumulate(node, grads_in[0], create_graph, plan.claimed)
        return grads_in, ()
    grads_out = _run_node(node, grads_in)
    if not retain_graph and (node._saved_inputs is not None or node._saved_outputs is not None):
        node.free_saved()
    return grads_in, grads_out


def _run_tensor_pre_hooks(node: Node, grads_in: tuple) -> tuple:
    if node._tensor_pre_hooks is None and node._retain_grad_hooks is None:
        return grads_in
    grads = list(grads_in)
    for nr, hooks in (node._tensor_pre_hooks or {}).items():
        for hook in list(hooks.values()):
            if grads[nr] is not None:
                replaced = hook(grads[nr])
                if replaced is not None:
                    grads[nr] = _check_hook_result(hook, grads[nr], replaced)
    for nr, hook in (node._retain_grad_hooks or {}).items():
        if grads[nr] is not None:
            hook(grads[nr])
    return tuple(grads)


def _hook_name(hook: Any) -> str:
    return getattr(hook, "__name__", type(hook).__name__)


def _check_hook_result(hook: Any, old: Tensor, new: Any) -> Tensor:
    """A tensor hook's replacement gradient must keep the gradient's type, dtype and shape."""
    if not isinstance(new, Tensor):
        raise TypeError(
            f"expected Variable or None (got {type(new).__name__}) from hook '{_hook_name(hook)}'"
        )
    if new._data.dtype != old._data.dtype:
        raise RuntimeError(
            f"hook '{_hook_name(hook)}' has changed the type of value (was {old.dtype} got "
            f"{new.dtype})"
        )
    if new._data.shape != old._data.shape:
        raise RuntimeError(f"hook '{_hook_name(hook)}' has changed the size of value")
    return new


def _check_node_hook_result(hook: Any, replaced: Any, expected: int) -> tuple:
    """A node hook's replacement gradients: a tuple of the same length."""
    if not isinstance(replaced, tuple):
        raise TypeError(f"expected tuple, but hook returned '{type(replaced).__name__}'")
    if len(replaced) != expected:
        raise RuntimeError(
            f"hook '{_hook_name(hook)}' has returned an incorrect number of values (got "
            f"{len(replaced)}, but expected {expected})"
        )
    return replaced


def _run_node(node: Node, grads_in: tuple) -> tuple:
    if node.output_meta is not None:
        grads_in = _materialize(node, grads_in)
    if node._pre_hooks:
        for hook in list(node._pre_hooks.values()):
            replaced = hook(grads_in)
            if replaced is not None:
                grads_in = _check_node_hook_result(hook, replaced, len(grads_in))
    grads_out = node.op.backward(node, *grads_in)
    if type(grads_out) is not tuple:
        grads_out = (grads_out,)
    if len(grads_out) != len(node.edges):
        raise RuntimeError(
            f"function {node.name()} returned an incorrect number of gradients (expected "
            f"{len(node.edges)}, got {len(grads_out)})"
        )
    for g, meta in zip(grads_out, node.input_meta, strict=True):
        if g is not None and (
            meta is None
            or type(g) is not Tensor
            or g._data.shape != meta[0]
            or g._data.dtype != meta[1]
        ):
            grads_out = validate(node, grads_out)
            break
    if node._post_hooks:
        for hook in list(node._post_hooks.values()):
            replaced = hook(grads_out, grads_in)
            if replaced is not None:
                grads_out = _check_node_hook_result(hook, replaced, len(grads_out))
    return grads_out


def _materialize(node: Node, grads_in: tuple) -> tuple:
    """Replace missing gradients of multi-output nodes by zeros (as PyTorch does)."""
    if all(g is not None for g in grads_in):
        return grads_in
    from ..ops.creation import zeros

    if not node.attrs.get("materialize_grads", True):
        return grads_in
    grads = list(grads_in)
    for nr, g in enumerate(grads):
        shape, np_dtype = node.output_meta[nr]
        if g is None and np_dtype is not None:
            dtype = from_numpy_dtype(np_dtype)
            grads[nr] = zeros(shape, dtype=dtype, device=_device_of(grads_in))
    return tuple(grads)


def _device_of(grads: tuple) -> Any:
    for g in grads:
        if g is not None:
            return g.device
    return None


def validate(node: Node, grads_out: tuple) -> tuple:
    """Each gradient must match its input's shape and dtype: sum broadcast dims, cast dtype."""
    fixed = list(grads_out)
    for i, (g, meta) in enumerate(zip(grads_out, node.input_meta, strict=True)):
        if g is None:
            continue
        if meta is None:
            fixed[i] = None
            continue
        if not isinstance(g, Tensor):
            raise TypeError(
                f"function {node.name()} returned a gradient of type {type(g).__name__} at "
                f"index {i}; expected a Tensor"
            )
        shape, np_dtype = meta
        data = g._data
        if data.shape != shape:
            g = _sum_to(node, i, g, shape)
        if g._data.dtype != np_dtype:
            if g._data.dtype.kind == "c" and np_dtype.kind != "c":
                g = g.real
            g = g.to(from_numpy_dtype(np_dtype))
        fixed[i] = g
    return tuple(fixed)


def _sum_to(node: Node, index: int, g: Tensor, shape: tuple) -> Tensor:
    from ..ops.reduction import sum_to_shape

    try:
        return sum_to_shape(g, shape)
    except ValueError:
        raise RuntimeError(
            f"Function {node.name()} returned an invalid gradient at index {index} - got "
            f"{list(g.shape)} but expected shape compatible with {list(shape)}"
        ) from None


def accumulate(node: AccumulateGrad, g: Tensor, create_graph: bool, claimed: dict | None) -> None:
    """Run the leaf's hooks and add ``g`` to its ``.grad``, stored without a copy only when
    ``_storable`` and unclaimed (see the module docstring)."""
    leaf = node.variable
    if leaf._leaf_hooks:
        claimed = None  # the hooks were shown the gradient (or gave their own)
        for hook in list(leaf._leaf_hooks.values()):
            replaced = hook(g)
            if replaced is not None:
                g = _check_hook_result(hook, g, replaced)
    storable = (
        claimed is not None and leaf.grad is None and _storable(g) and claim(claimed, g._data)
    )
    add_to_grad(leaf, g if create_graph else g.detach(), storable)
    run_post_accumulate_hooks(leaf)


def run_post_accumulate_hooks(leaf: Tensor) -> None:
    if leaf._post_accumulate_hooks:
        for hook in list(leaf._post_accumulate_hooks.values()):
            hook(leaf)


def add_to_grad(leaf: Tensor, g: Tensor, storable: bool) -> None:
    """Accumulate out of place, so no gradient handed out earlier (a step's record, a user's
    tensor passed as ``gradient=``) is ever changed behind its holder's back. The first
    gradient becomes ``.grad`` as it is when ``storable`` (see ``_storable``), else a copy."""
    if leaf.grad is None:
        leaf.grad = g if storable else g.clone()
    else:
        leaf.grad = sum_gradients(leaf.grad, g)


def claim(claimed: dict, array: Any) -> bool:
    """Claim ``array``'s memory (its base's, for a view) for one holder: False when it was
    claimed already."""
    base = getattr(array, "base", None)
    owner = array if base is None else base
    key = id(owner)
    if key in claimed:
        return False
    claimed[key] = owner  # kept alive for the pass, so the id is not reused
    return True


def _storable(g: Tensor) -> bool:
    """Whether ``g`` may become a ``.grad`` as it is: not a view of another Tensor (a view op's
    output, as the Tensor runner's rules make them, is copied, so a Tape sees the op that made
    each ``.grad``), and its array owns its memory or is a writable view of all of its base's
    (a transposed or reshaped fresh result of a rule, as the plain runner holds them: as
    unshared as the base itself). A broadcast (read-only) or partial view is copied."""
    if g._base is not None:
        return False
    data = g._data
    base = data.base
    if base is None:
        return True
    flags = data.flags
    return (
        type(base) is type(data)
        and base.base is None
        and getattr(flags, "writeable", True)  # CuPy arrays are always writable
        and data.nbytes == base.nbytes
        and (flags.c_contiguous or flags.f_contiguous)
    )
