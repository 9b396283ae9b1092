"""Function transforms, as in ``torch.func``: grad, vjp, jvp, jacrev, jacfwd, hessian, vmap,
and ``functional_call`` (a module run with some of its parameters and buffers swapped).

Every transform runs ``func`` on fresh tensors that require grad (an alias of the argument when
it already takes part in a graph, a detached copy otherwise) and differentiates with
``autograd.grad(create_graph=True)``, so its results are themselves differentiable and the
transforms compose: ``grad(grad(f))``, ``jacfwd(jacrev(f))``, ``vmap(grad(f))``. Forward mode
(``jvp``, ``jacfwd``) uses the double-vjp trick. A result is detached unless it depends on a
tensor from outside the transform (an enclosing transform's input, or a user tensor that
requires grad), and ``.grad`` is never written. ``vmap`` calls ``func`` once per sample and
stacks the results.

Arguments and results may be pytrees: tensors (or other leaves) nested in tuples, lists,
namedtuples and dicts.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from . import autograd
from .autograd.graph import AccumulateGrad, Node, edge_of
from .ops.creation import eye
from .ops.shape import stack
from .random import get_rng_state, set_rng_state
from .tensor import Tensor

__all__ = [
    "grad",
    "grad_and_value",
    "vjp",
    "jvp",
    "jacrev",
    "jacfwd",
    "hessian",
    "vmap",
    "functional_call",
    "TreeSpec",
    "tree_flatten",
    "tree_unflatten",
]

Argnums = int | tuple[int, ...]


# ------------------------------------------------------------------------------ pytrees
@dataclass(frozen=True)
class TreeSpec:
    """The structure of a pytree: a container (its type, dict keys, children) or a leaf."""

    kind: type | None = None
    keys: tuple = ()
    children: tuple[TreeSpec, ...] = ()

    @property
    def is_leaf(self) -> bool:
        return self.kind is None

    @property
    def num_leaves(self) -> int:
        return 1 if self.is_leaf else sum(c.num_leaves for c in self.children)

    def __str__(self) -> str:
        if self.is_leaf:
            return "*"
        items = [str(c) for c in self.children]
        if self.kind is dict:
            return (
                "{" + ", ".join(f"{k!r}: {c}" for k, c in zip(self.keys, items, strict=True)) + "}"
            )
        if self.kind is list:
            return "[" + ", ".join(items) + "]"
        name = "" if self.kind is tuple else self.kind.__name__
        return name + "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


_LEAF = TreeSpec()


def _container(tree: Any) -> tuple[type, tuple, tuple] | None:
    """``(kind, keys, children)`` for a tuple, list, namedtuple or dict; None for a leaf."""
    kind = type(tree)
    if kind is tuple or kind is list:
        return kind, (), tuple(tree)
    if kind is dict:
        keys = tuple(tree)
        return dict, keys, tuple(tree[k] for k in keys)
    if isinstance(tree, tuple) and hasattr(kind, "_fields"):
        return kind, (), tuple(tree)
    return None


def tree_flatten(tree: Any) -> tuple[list, TreeSpec]:
    """The leaves of ``tree`` in order, and its structure."""
    leaves: list = []
    return leaves, _flatten_into(tree, leaves)


def _flatten_into(tree: Any, leaves: list) -> TreeSpec:
    node = _container(tree)
    if node is None:
        leaves.append(tree)
        return _LEAF
    kind, keys, children = node
    return TreeSpec(kind, keys, tuple(_flatten_into(c, leaves) for c in children))


def tree_unflatten(leaves: list, spec: TreeSpec) -> Any:
    """Rebuild a pytree of structure ``spec`` from its leaves."""
    if len(leaves) != spec.num_leaves:
        raise ValueError(f"expected {spec.num_leaves} leaves for structure {spec}")
    return _build(spec, iter(leaves))


def _build(spec: TreeSpec, leaves: Iterator) -> Any:
    if spec.is_leaf:
        return next(leaves)
    children = [_build(c, leaves) for c in spec.children]
    if spec.kind is dict:
        return dict(zip(spec.keys, children, strict=True))
    if spec.kind is list:
        return children
    if spec.kind is tuple:
        return tuple(children)
    return spec.kind(*children)  # a namedtuple


class _StructureError(ValueError):
    """A pytree whose structure differs from the one expected."""


def _flatten_like(tree: Any, spec: TreeSpec) -> list:
    """The leaves of ``tree`` in ``spec``'s order; raises _StructureError if they differ."""
    if spec.is_leaf:
        if _container(tree) is not None:
            raise _StructureError
        return [tree]
    node = _container(tree)
    if node is None or node[0] is not spec.kind or len(node[2]) != len(spec.children):
        raise _StructureError
    if spec.kind is dict:
        if set(tree) != set(spec.keys):
            raise _StructureError
        children = [tree[k] for k in spec.keys]
    else:
        children = list(node[2])
    leaves = []
    for child, child_spec in zip(children, spec.children, strict=True):
        leaves.extend(_flatten_like(child, child_spec))
    return leaves


def _broadcast_prefix(prefix: Any, tree: Any) -> list:
    """One value per leaf of ``tree``: a leaf of ``prefix`` applies to the whole subtree at
    the same place in ``tree``. Raises _StructureError if ``prefix`` is no prefix of ``tree``."""
    node = _container(prefix)
    if node is None:
        return [prefix] * tree_flatten(tree)[1].num_leaves
    kind, keys, children = node
    target = _container(tree)
    if target is None or target[0] is not kind or len(target[2]) != len(children):
        raise _StructureError
    if kind is dict:
        if set(keys) != set(target[1]):
            raise _StructureError
        pairs = [(prefix[k], tree[k]) for k in keys]
    else:
        pairs = list(zip(children, target[2], strict=True))
    values = []
    for sub_prefix, subtree in pairs:
        values.extend(_broadcast_prefix(sub_prefix, subtree))
    return values


# --------------------------------------------------------------------- graph plumbing
@dataclass
class _Lifted:
    """Arguments with the differentiated ones replaced by fresh tensors that require grad."""

    args: tuple
    inputs: list[Tensor]  # the fresh tensors, flat, in argument order
    specs: list[TreeSpec]  # the structure of each differentiated argument
    own: set[int]  # ids of the leaves this transform made

    def regroup(self, flat: list) -> list:
        """Split values aligned with ``inputs`` back into one pytree per argument."""
        trees, start = [], 0
        for spec in self.specs:
            trees.append(tree_unflatten(flat[start : start + spec.num_leaves], spec))
            start += spec.num_leaves
        return trees


def _lift(args: tuple, positions: tuple[int, ...], api: str) -> _Lifted:
    """Replace ``args[p]`` for each position by fresh tensors to differentiate against."""
    new_args, inputs, specs, own = list(args), [], [], set()
    for p in positions:
        leaves, spec = tree_flatten(args[p])
        fresh = [_fresh(leaf, api, own) for leaf in leaves]
        inputs.extend(fresh)
        specs.append(spec)
        new_args[p] = tree_unflatten(fresh, spec)
    return _Lifted(tuple(new_args), inputs, specs, own)


def _fresh(value: Any, api: str, own: set[int]) -> Tensor:
    if not isinstance(value, Tensor):
        raise ValueError(
            f"{api}: the arguments to differentiate must be Tensors (or pytrees of Tensors), "
            f"got {type(value).__name__}"
        )
    if value.requires_grad:
        return value.view_as(value)  # its own node, still linked to the enclosing graph
    leaf = value.detach().requires_grad_()
    own.add(id(leaf))
    return leaf


def _reaches(tensor: Tensor, hit: Callable[[Node], bool]) -> bool:
    """Whether ``hit`` holds for some node of ``tensor``'s backward graph."""
    edge = edge_of(tensor)
    if edge is None:
        return False
    pending, seen = [edge[0]], {edge[0]}
    while pending:
        node = pending.pop()
        if hit(node):
            return True
        for e in node.edges:
            if e is not None and e[0] not in seen:
                seen.add(e[0])
                pending.append(e[0])
    return False


def _export(tree: Any, own: set[int]) -> Any:
    """Detach the tensors of ``tree`` whose graph reaches only leaves in ``own``."""

    def outside(node: Node) -> bool:
        return isinstance(node, AccumulateGrad) and id(node.variable) not in own

    leaves, spec = tree_flatten(tree)
    exported = [
        x.detach() if isinstance(x, Tensor) and not _reaches(x, outside) else x for x in leaves
    ]
    return tree_unflatten(exported, spec)


def _vjp(outputs: list[Tensor], cotangents: list[Tensor], inputs: list[Tensor]) -> list[Tensor]:
    """``sum_k cotangent_k^T d output_k / d input`` for each input, zeros where unused."""
    pairs = [(o, c) for o, c in zip(outputs, cotangents, strict=True) if o.requires_grad]
    if not pairs:
        return [t.detach().new_zeros(t.shape) for t in inputs]
    grads = autograd.grad(
        [o for o, _ in pairs],
        inputs,
        [c for _, c in pairs],
        retain_graph=True,
        create_graph=True,
        allow_unused=True,
        materialize_grads=True,
    )
    return list(grads)


class _Linearization:
    """Outputs of a function together with their vjps ``g = J^T u`` for dummy cotangents ``u``
    that require grad: differentiating ``g`` w.r.t. ``u`` along tangents ``t`` gives ``J t``."""

    def __init__(self, outputs: list[Tensor], inputs: list[Tensor], own: set[int]) -> None:
        self.outputs = outputs
        self.dummies = [
            o.detach().new_zeros(o.shape).requires_grad_() if o.requires_grad else None
            for o in outputs
        ]
        own.update(id(u) for u in self.dummies if u is not None)
        used = [(o, u) for o, u in zip(outputs, self.dummies, strict=True) if u is not None]
        self.vjps: list[Tensor | None] = [None] * len(inputs)
        if used:
            self.vjps = list(
                autograd.grad(
                    [o for o, _ in used],
                    inputs,
                    [u for _, u in used],
                    retain_graph=True,
                    create_graph=True,
                    allow_unused=True,
                )
            )

    def push(self, tangents: list[Tensor | None]) -> list[Tensor]:
        """``J t`` for each output; ``tangents`` is aligned with the inputs (None means 0)."""
        pairs = [
            (g, t)
            for g, t in zip(self.vjps, tangents, strict=True)
            if g is not None and t is not None and g.requires_grad
        ]
        dummies = [u for u in self.dummies if u is not None]
        if not pairs:
            return [o.detach().new_zeros(o.shape) for o in self.outputs]
        found = iter(
            autograd.grad(
                [g for g, _ in pairs],
                dummies,
                [t for _, t in pairs],
                retain_graph=True,
                create_graph=True,
                allow_unused=True,
                materialize_grads=True,
            )
        )
        return [
            next(found) if u is not None else o.detach().new_zeros(o.shape)
            for o, u in zip(self.outputs, self.dummies, strict=True)
        ]


# --------------------------------------------------------------------------- checks
def _positions(argnums: Argnums, nargs: int) -> tuple[int, ...]:
    """``argnums`` validated and made non-negative, as a tuple."""
    items = argnums if isinstance(argnums, tuple) else (argnums,)
    if not all(isinstance(a, int) and not isinstance(a, bool) for a in items):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {argnums!r}")
    if not items:
        raise RuntimeError("argnums must be non-empty")
    positions = []
    for a in items:
        if not -nargs <= a < nargs:
            raise RuntimeError(f"Got argnums={a}, but only {nargs} positional inputs")
        positions.append(a % nargs)
    if len(set(positions)) != len(positions):
        raise RuntimeError(f"argnums elements must be unique, got {argnums!r}")
    return tuple(positions)


def _split_aux(output: Any, has_aux: bool, api: str) -> tuple[Any, Any]:
    if not has_aux:
        return output, None
    if not (isinstance(output, tuple) and len(output) == 2):
        raise RuntimeError(
            f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True"
        )
    return output


def _output_tensors(output: Any, api: str) -> tuple[list[Tensor], TreeSpec]:
    leaves, spec = tree_flatten(output)
    for leaf in leaves:
        if not isinstance(leaf, Tensor):
            raise RuntimeError(
                f"{api}: expected f to return only Tensors, got unsupported type "
                f"{type(leaf).__name__}"
            )
    return leaves, spec


def _matching(tree: Any, spec: TreeSpec, what: str, reference: str, api: str) -> list[Tensor]:
    """The leaves of ``tree``, which must be tensors structured as ``spec``."""
    try:
        leaves = _flatten_like(tree, spec)
    except _StructureError:
        raise RuntimeError(
            f"{api}: expected {what} to have the same structure as {reference}: got "
            f"{tree_flatten(tree)[1]} for {what} and {spec} for {reference}"
        ) from None
    for leaf in leaves:
        if not isinstance(leaf, Tensor):
            raise RuntimeError(f"{api}: {what} must be Tensors, got {type(leaf).__name__}")
    return leaves


def _check_shapes(given: list[Tensor], expected: list[Tensor], what: str, api: str) -> None:
    for i, (g, e) in enumerate(zip(given, expected, strict=True)):
        if tuple(g.shape) != tuple(e.shape):
            raise RuntimeError(
                f"{api}: {what}[{i}] has shape {list(g.shape)} but the matching tensor has "
                f"shape {list(e.shape)}"
            )


# ----------------------------------------------------------------------- grad and vjp
def grad_and_value(func: Callable, argnums: Argnums = 0, has_aux: bool = False) -> Callable:
    """``func`` -> a function returning ``(gradient, value)`` of ``func``'s scalar output
    (``(gradient, (value, aux))`` with ``has_aux``) w.r.t. the arguments at ``argnums``."""
    return _gradient_transform(func, argnums, has_aux, "grad_and_value", with_value=True)


def grad(func: Callable, argnums: Argnums = 0, has_aux: bool = False) -> Callable:
    """``func`` -> a function returning the gradient of ``func``'s scalar output w.r.t. the
    arguments at ``argnums`` (a pytree per argument; a tuple of them if argnums is a tuple)
    and, with ``has_aux``, ``(gradient, aux)``."""
    return _gradient_transform(func, argnums, has_aux, "grad", with_value=False)


def _gradient_transform(
    func: Callable, argnums: Argnums, has_aux: bool, name: str, with_value: bool
) -> Callable:
    api = f"{name}(f)(*args)"

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        positions = _positions(argnums, len(args))
        with autograd.enable_grad():
            lifted = _lift(args, positions, api)
            value, aux = _split_aux(func(*lifted.args, **kwargs), has_aux, api)
            _check_scalar(value, api)
            grads = lifted.regroup(_vjp([value], [value.new_ones(())], lifted.inputs))
        gradient = _export(grads[0] if isinstance(argnums, int) else tuple(grads), lifted.own)
        value, aux = _export((value, aux), lifted.own)
        if with_value:
            return gradient, ((value, aux) if has_aux else value)
        return (gradient, aux) if has_aux else gradient

    return wrapper


def _check_scalar(value: Any, api: str) -> None:
    if not isinstance(value, Tensor):
        raise RuntimeError(f"{api}: expected f(*args) to return a Tensor, got {type(value)}")
    if value.ndim != 0:
        raise RuntimeError(
            f"{api}: expected f(*args) to return a scalar Tensor, got a tensor of shape "
            f"{list(value.shape)}. Use vjp or jacrev for non-scalar outputs."
        )


def vjp(func: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """``(func(*primals), vjp_fn)`` (and ``aux`` with ``has_aux``); ``vjp_fn(cotangents)``,
    with cotangents structured like the output, returns one gradient pytree per primal."""
    api = "vjp(f, *primals)"
    with autograd.enable_grad():
        lifted = _lift(primals, tuple(range(len(primals))), api)
        output, aux = _split_aux(func(*lifted.args), has_aux, api)
        outputs, spec = _output_tensors(output, api)

    def vjp_fn(cotangents: Any) -> tuple:
        """The gradient of ``sum(cotangents * output)`` w.r.t. each primal."""
        given = _matching(cotangents, spec, "cotangents", "the output", "vjp_fn")
        _check_shapes(given, outputs, "cotangents", "vjp_fn")
        with autograd.enable_grad():
            grads = _vjp(outputs, given, lifted.inputs)
        return tuple(_export(lifted.regroup(grads), lifted.own))

    result = (_export(output, lifted.own), vjp_fn)
    return result + (_export(aux, lifted.own),) if has_aux else result


# ------------------------------------------------------------------------------ jvp
def jvp(
    func: Callable,
    primals: tuple | list,
    tangents: tuple | list,
    *,
    strict: bool = False,
    has_aux: bool = False,
) -> tuple:
    """``(func(*primals), J @ tangents)`` (and ``aux`` with ``has_aux``): the directional
    derivative along ``tangents``, structured like the output. With ``strict``, an output
    that does not depend on the primals is an error instead of a zero tangent."""
    api = "jvp(f, primals, tangents)"
    for name, value in (("primals", primals), ("tangents", tangents)):
        if not isinstance(value, tuple | list):
            raise RuntimeError(f"{api}: expected {name} to be a tuple, got {type(value)}")
    with autograd.enable_grad():
        lifted = _lift(tuple(primals), tuple(range(len(primals))), api)
        structure = tree_flatten(tuple(primals))[1]
        given = _matching(tuple(tangents), structure, "tangents", "primals", api)
        _check_shapes(given, lifted.inputs, "tangents", api)
        output, aux = _split_aux(func(*lifted.args), has_aux, api)
        outputs, spec = _output_tensors(output, api)
        if strict:
            _check_dependence(outputs, lifted.inputs, api)
        pushed = _Linearization(outputs, lifted.inputs, lifted.own).push(given)
    result = (_export(output, lifted.own), _export(tree_unflatten(pushed, spec), lifted.own))
    return result + (_export(aux, lifted.own),) if has_aux else result


def _check_dependence(outputs: list[Tensor], inputs: list[Tensor], api: str) -> None:
    nodes = {edge_of(t)[0] for t in inputs}
    for i, o in enumerate(outputs):
        if not _reaches(o, nodes.__contains__):
            raise RuntimeError(
                f"{api}: output {i} of f is independent of the primals; this is not allowed "
                "with strict=True"
            )


# ------------------------------------------------------------------------ jacobians
def jacrev(
    func: Callable,
    argnums: Argnums = 0,
    *,
    has_aux: bool = False,
    chunk_size: int | None = None,
    _preallocate_and_copy: bool = False,
) -> Callable:
    """``func`` -> its Jacobian by reverse mode (one vjp per output element). Each output
    leaf of shape S gets, per differentiated argument leaf of shape T, a tensor of shape
    S + T; with a tuple ``argnums`` each output leaf holds a tuple (one per argument).
    ``chunk_size`` is accepted for PyTorch compatibility (the vjps run one at a time)."""
    if chunk_size is not None and not (isinstance(chunk_size, int) and chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")
    return _jacobian_transform(func, argnums, has_aux, "jacrev", _reverse_blocks)


def jacfwd(
    func: Callable, argnums: Argnums = 0, has_aux: bool = False, *, randomness: str = "error"
) -> Callable:
    """``func`` -> its Jacobian by forward mode (one jvp per input element); results are
    structured as with :func:`jacrev`. ``func`` runs once, so ``randomness`` ("error",
    "different" or "same", as in PyTorch) only needs checking."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(
            f"Only allowed values for randomness are 'error', 'different', or 'same'. "
            f"Got {randomness}"
        )
    return _jacobian_transform(func, argnums, has_aux, "jacfwd", _forward_blocks)


def hessian(func: Callable, argnums: Argnums = 0) -> Callable:
    """``func`` -> its Hessian, ``jacfwd(jacrev(func))``: for a scalar output and an argument
    of shape T, a tensor of shape T + T."""
    return jacfwd(jacrev(func, argnums), argnums)


def _jacobian_transform(
    func: Callable, argnums: Argnums, has_aux: bool, name: str, blocks: Callable
) -> Callable:
    api = f"{name}(f)(*args)"

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        positions = _positions(argnums, len(args))
        with autograd.enable_grad():
            lifted = _lift(args, positions, api)
            output, aux = _split_aux(func(*lifted.args, **kwargs), has_aux, api)
            outputs, spec = _output_tensors(output, api)
            per_output = blocks(outputs, lifted)
        grouped = [lifted.regroup(row) for row in per_output]
        picked = [g[0] if isinstance(argnums, int) else tuple(g) for g in grouped]
        jacobian = _export(tree_unflatten(picked, spec), lifted.own)
        return (jacobian, _export(aux, lifted.own)) if has_aux else jacobian

    return wrapper


def _basis(like: Tensor) -> list[Tensor]:
    """The one-hot tensors shaped and typed like ``like``, in row-major order."""
    n = like.numel()
    rows = eye(n, dtype=like.dtype, device=like.device)
    return [rows[k].reshape(like.shape) for k in range(n)]


def _reverse_blocks(outputs: list[Tensor], lifted: _Lifted) -> list[list[Tensor]]:
    """Jacobian blocks ``[output][input]``, each from vjps with the output's basis vectors."""
    blocks = []
    for o in outputs:
        rows = [_vjp([o], [e], lifted.inputs) for e in _basis(o)]
        blocks.append(
            [_assemble([r[i] for r in rows], 0, o, x) for i, x in enumerate(lifted.inputs)]
        )
    return blocks


def _forward_blocks(outputs: list[Tensor], lifted: _Lifted) -> list[list[Tensor]]:
    """Jacobian blocks ``[output][input]``, each from jvps with the input's basis vectors."""
    linear = _Linearization(outputs, lifted.inputs, lifted.own)
    columns = []  # [input][element][output]
    for i, x in enumerate(lifted.inputs):
        tangents: list[Tensor | None] = [None] * len(lifted.inputs)
        per_element = []
        for e in _basis(x):
            tangents[i] = e
            per_element.append(linear.push(tangents))
        columns.append(per_element)
    return [
        [_assemble([c[j] for c in columns[i]], o.ndim, o, x) for i, x in enumerate(lifted.inputs)]
        for j, o in enumerate(outputs)
    ]


def _assemble(parts: list[Tensor], dim: int, output: Tensor, input: Tensor) -> Tensor:
    """Stack per-element derivatives along ``dim`` into the block of shape out + in."""
    shape = tuple(output.shape) + tuple(input.shape)
    if not parts:
        dtype = input.dtype if dim == 0 else output.dtype
        return input.detach().new_zeros(shape, dtype=dtype)
    return stack(parts, dim=dim).reshape(shape)


# ----------------------------------------------------------------------------- vmap
_RANDOMNESS = ("error", "different", "same")


def vmap(
    func: Callable,
    in_dims: int | tuple = 0,
    out_dims: int | tuple = 0,
    randomness: str = "error",
    *,
    chunk_size: int | None = None,
) -> Callable:
    """``func`` mapped over a batch dimension of its arguments.

    ``in_dims`` is an int, or a tuple with one entry per positional argument: an int, None
    (not batched) or a pytree matching that argument. ``out_dims`` is an int or a pytree
    matching the output (None: an output that is the same for every sample). Keyword
    arguments are not batched. ``func`` runs once per sample, so ``chunk_size`` (accepted for
    compatibility) changes nothing. ``randomness`` concerns the default CPU generator:
    'error' forbids drawing from it, 'same' replays one draw for every sample, 'different'
    lets each sample draw anew.
    """
    if randomness not in _RANDOMNESS:
        raise RuntimeError(
            f"Only allowed values for randomness are 'error', 'different', or 'same'. "
            f"Got {randomness}"
        )
    if chunk_size is not None and not (isinstance(chunk_size, int) and chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")
    name = getattr(func, "__name__", repr(func))

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        api = f"vmap({name}, in_dims={in_dims!r}, ...)(<inputs>)"
        leaves, spec = tree_flatten(args)
        dims = _input_dims(in_dims, args, leaves, api)
        size = _batch_size(leaves, dims, api)
        slices = [x.unbind(d) if d is not None else None for x, d in zip(leaves, dims, strict=True)]
        results = []
        guard = _RandomnessGuard(randomness)
        for b in range(size):
            sample = [x if s is None else s[b] for x, s in zip(leaves, slices, strict=True)]
            guard.before_sample()
            results.append(func(*tree_unflatten(sample, spec), **kwargs))
            guard.after_sample()
        return _stack_results(results, out_dims, f"vmap({name}, ..., out_dims={out_dims!r})")

    return wrapper


def _input_dims(in_dims: Any, args: tuple, leaves: list, api: str) -> list[int | None]:
    """One normalized batch dimension (or None) per leaf of ``args``."""
    if not isinstance(in_dims, int | tuple) or isinstance(in_dims, bool):
        raise ValueError(
            f"{api}: expected `in_dims` to be int or a (potentially nested) tuple matching the "
            f"structure of inputs, got: {type(in_dims).__name__}."
        )
    try:
        dims = _broadcast_prefix(in_dims, args)
    except _StructureError:
        raise ValueError(
            f"{api}: in_dims is not compatible with the structure of the inputs: in_dims has "
            f"structure {tree_flatten(in_dims)[1]} but the inputs have structure "
            f"{tree_flatten(args)[1]}"
        ) from None
    normalized = [_input_dim(d, x, api) for d, x in zip(dims, leaves, strict=True)]
    if all(d is None for d in normalized):
        raise ValueError(
            f"{api}: at least one input must be a Tensor mapped over a dimension (got in_dims "
            f"{in_dims!r})"
        )
    return normalized


def _input_dim(dim: Any, value: Any, api: str) -> int | None:
    if dim is None or value is None:  # None arguments hold no tensor: nothing to map
        return None
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise ValueError(f"{api}: in_dims entries must be int or None, got {dim!r}")
    if not isinstance(value, Tensor):
        raise ValueError(
            f"{api}: got in_dim={dim} for an input of type {type(value).__name__}; only "
            "Tensors can be mapped over, use None as the in_dim of other arguments"
        )
    if value.ndim == 0 or not -value.ndim <= dim < value.ndim:
        raise ValueError(
            f"{api}: got in_dim={dim} for an input with {value.ndim} dimensions; expected "
            f"{-value.ndim} <= in_dim < {value.ndim}"
        )
    return dim % value.ndim


def _batch_size(leaves: list, dims: list[int | None], api: str) -> int:
    sizes = [x.shape[d] for x, d in zip(leaves, dims, strict=True) if d is not None]
    if len(set(sizes)) != 1:
        raise ValueError(
            f"{api}: expected all tensors to have the same size in the mapped dimension, got "
            f"sizes {sizes} for the mapped dimension"
        )
    if sizes[0] == 0:
        raise ValueError(f"{api}: cannot map over a batch of size 0 (func runs once per sample)")
    return sizes[0]


class _RandomnessGuard:
    """Applies vmap's ``randomness`` policy to the default generator around each sample."""

    def __init__(self, policy: str) -> None:
        self.policy = policy
        self.start = get_rng_state() if policy != "different" else None

    def before_sample(self) -> None:
        if self.policy == "same":
            set_rng_state(self.start)

    def after_sample(self) -> None:
        if self.policy == "error" and not get_rng_state().equal(self.start):
            set_rng_state(self.start)
            raise RuntimeError(
                "vmap: called a random operation while in randomness error mode. Pass "
                "randomness='same' or 'different' to vmap, or draw the random numbers outside "
                "vmap"
            )


def _stack_results(results: list, out_dims: Any, api: str) -> Any:
    """Combine per-sample results: stack each output leaf along its out_dim."""
    if not isinstance(out_dims, int | tuple) and out_dims is not None:
        raise ValueError(f"{api}: expected `out_dims` to be int, None or a tuple, got {out_dims!r}")
    spec = tree_flatten(results[0])[1]
    try:
        dims = _broadcast_prefix(out_dims, results[0])
        columns = list(zip(*(_flatten_like(r, spec) for r in results), strict=True))
    except _StructureError:
        raise ValueError(
            f"{api}: out_dims is not compatible with the structure of the outputs (out_dims "
            f"{tree_flatten(out_dims)[1]}, outputs {spec}), or the samples' outputs differ in "
            "structure"
        ) from None
    return tree_unflatten(
        [_stack_leaf(list(c), d, api) for c, d in zip(columns, dims, strict=True)], spec
    )


def _stack_leaf(values: list, dim: int | None, api: str) -> Any:
    if dim is None:
        first = values[0]
        if isinstance(first, Tensor) and not all(first.equal(v) for v in values[1:]):
            raise ValueError(f"{api}: an output with out_dim None differs between samples")
        return first
    for v in values:
        if not isinstance(v, Tensor):
            raise ValueError(
                f"{api}: f must only return Tensors where out_dims is not None, got "
                f"{type(v).__name__}"
            )
    return stack(values, dim=dim)


# ---------------------------------------------------------------------- functional_call
def functional_call(
    module: Any,
    parameter_and_buffer_dicts: dict[str, Any] | Sequence[dict[str, Any]],
    args: Any = None,
    kwargs: dict[str, Any] | None = None,
    *,
    tie_weights: bool = True,
    strict: bool = False,
) -> Any:
    """Call ``module(*args, **kwargs)`` with some of its parameters and buffers replaced by
    the given tensors (by dotted name), for the duration of the call, as in PyTorch.

    With ``tie_weights``, a tensor registered under several names (tied weights) is replaced
    under all of them when one is given. With ``strict``, the names must be exactly the
    module's parameters and buffers. Names that are neither are ignored."""
    replacements = _merge_dicts(parameter_and_buffer_dicts)
    slots = _tensor_slots(module)
    if strict:
        _check_strict(module, replacements, slots)
    by_identity = {}
    if tie_weights:
        for name, (_, _, original) in slots.items():
            if name in replacements and original is not None:
                by_identity[id(original)] = replacements[name]
    swapped = []
    for name, (registry, key, original) in slots.items():
        if name in replacements:
            new = replacements[name]
        elif original is not None and id(original) in by_identity:
            new = by_identity[id(original)]
        else:
            continue
        swapped.append((registry, key, original))
        registry[key] = new
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    try:
        return module(*args, **(kwargs or {}))
    finally:
        for registry, key, original in reversed(swapped):
            registry[key] = original


def _merge_dicts(dicts: Any) -> dict[str, Any]:
    if isinstance(dicts, dict):
        return dict(dicts)
    merged: dict[str, Any] = {}
    repeated = []
    for d in dicts:
        for name, value in d.items():
            if name in merged:
                repeated.append(name)
            merged[name] = value
    if repeated:
        raise ValueError(
            f"{repeated} appeared in multiple dictionaries; behavior of functional call is "
            "ambiguous"
        )
    return merged


def _tensor_slots(module: Any) -> dict[str, tuple[dict, str, Any]]:
    """Every parameter and buffer name (tied ones under each name): its registry dict, key
    and current value."""
    slots: dict[str, tuple[dict, str, Any]] = {}
    for prefix, owner in module.named_modules(remove_duplicate=False):
        for kind in ("_parameters", "_buffers"):
            registry = owner.__dict__[kind]
            for key, value in registry.items():
                slots[f"{prefix}.{key}" if prefix else key] = (registry, key, value)
    return slots


def _check_strict(module: Any, replacements: dict, slots: dict) -> None:
    expected = [name for name, slot in slots.items() if slot[2] is not None]
    unexpected = [name for name in replacements if name not in slots]
    missing = [name for name in expected if name not in replacements]
    if not (unexpected or missing):
        return
    message = f"Error(s) in reparametrizing for {module._get_name()}:"
    if unexpected:
        message += "\n\tUnexpected key(s): " + ", ".join(f"'{k}'" for k in unexpected) + "."
    if missing:
        message += "\n\tMissing key(s): " + ", ".join(f"'{k}'" for k in missing) + "."
    raise RuntimeError(message)
