"""Fused kernels: the one kernel a fused node runs.

A fused node (made by ``passes.fuse``) holds member ops that compute element by element.
:func:`kernel_source` writes them as one kernel and :func:`kernel_for` builds it, in one of
three ways (:func:`strategy`):

- "numba" (CPU): a numba ufunc, each member a line over the previous ones
  (``numba.vectorize`` for one output, ``guvectorize`` with scalar core dimensions for
  several), so NumPy's ufunc machinery does the broadcasting and strides, writing each result
  in C order whatever its inputs' layouts (a group over a transposed view, as
  ``passes.decompose`` makes of a convolution's bias add, is a layout copy that computes on
  the way); large arrays use
  numba's parallel target when ``tk.get_num_threads()`` is above 1. Kernels are cached on
  disk by a hash of their source: the source file is written to ``$TENSORKIT_CACHE_DIR/jit``
  (default ``~/.cache/tensorkit/jit``) and imported only when its bytes are the source just
  generated, with numba's compiled cache beside it.
- "blocks" (CPU): the members' own array forwards, lowered like any plan (``plan.lower``),
  run over cache-sized blocks of the output, so every intermediate stays in cache and only the
  group's inputs and outputs cross memory. Used for large groups that call libm functions
  (exp, tanh, ...): NumPy computes those with SIMD loops (tanh 0.5 ns an element on float32
  here) where a numba kernel calls scalar libm (2 to 16 ns). Also what runs without numba
  (``pip install tensorkit[jit]``) or where a numba kernel does not compile: a warning says
  so once, and the values are eager's.
- "cuda": a CuPy ``ElementwiseKernel`` (C), which broadcasts the same way; CuPy caches the
  compiled code on disk by its source's hash.

Source is built from the IR only: op forms from ``elementwise.SCALAR_FORMS``, value names
(``a0``, ``t12``) and numbers written as numeric literals, so nothing from a file becomes code.
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import os
import sys
import warnings
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from .._backend.threads import get_num_threads, parallel_parts
from .elementwise import (
    SCALAR_FORMS,
    Operands,
    c_helpers,
    calls_libm,
    python_helpers,
    reduced_axes,
)
from .ir import Node, Ref

__all__ = ["cache_dir", "kernel_for", "kernel_source", "strategy"]

# Arrays at least this large (elements) use numba's parallel target when threads allow.
PARALLEL_MIN_ELEMENTS = 1 << 18
# Groups larger than this (elements) that call libm run as "blocks" (see the module's text).
BLOCKS_MIN_ELEMENTS = 1 << 14
# Elements of one block: 256 KiB of float32, so a member's operands and result stay in L2
# while each member's NumPy call covers enough elements that its Python cost is small
# (gelu over 10M float32 here: 14.2 ms in blocks of 2**14, 9.7 ms in blocks of 2**16,
# 13.2 ms in blocks of 2**17).
BLOCK_ELEMENTS = 1 << 16
_NUMBA_TYPES = {"float32": "float32", "float64": "float64", "bool": "boolean"}
_C_TYPES = {"float32": "float", "float64": "double", "bool": "bool"}

_kernels: dict[tuple, Callable] = {}  # (source hash, shapes) -> kernel, for this process
_warned: set[str] = set()


def cache_dir() -> Path:
    """Where generated CPU kernels and numba's compiled code are kept."""
    root = os.environ.get("TENSORKIT_CACHE_DIR") or Path.home() / ".cache" / "tensorkit"
    return Path(root) / "jit"


def strategy(node: Node) -> str:
    """How the fused node runs: "cuda", "blocks" or "numba" (see the module's text)."""
    value = node.outputs[0]
    if value.device.startswith("cuda"):
        return "cuda"
    elements = math.prod(value.shape)
    if elements > BLOCKS_MIN_ELEMENTS and any(calls_libm(m) for m in node.members):
        return "blocks"
    return "numba"


def kernel_for(node: Node) -> Callable:
    """``f(xp, *arrays)`` computing the fused node's outputs from its arguments (one array,
    or a tuple of them when it has several outputs)."""
    how = strategy(node)
    source = kernel_source(node)
    key = hashlib.sha256(source.encode()).hexdigest()
    shapes = (node.members[-1].outputs[0].shape, *(m.outputs[0].shape for m in node.members))
    kernel = _kernels.get((key, shapes))  # a source serves every shape; its wrapper one
    if kernel is None:
        build = {"cuda": _cuda_kernel, "blocks": _blocks_kernel, "numba": _numba_kernel}[how]
        kernel = build(node, source, key)
        _kernels[key, shapes] = kernel
    return kernel


# ------------------------------------------------------------------------------ source
class _Writer:
    """Names and constants of one kernel being written in ``language`` ("cpu" or "cuda")."""

    def __init__(self, node: Node, language: str) -> None:
        self.node = node
        self.language = language
        self.inputs = [a.id for a in node.args]
        self.names = {value_id: f"a{i}" for i, value_id in enumerate(self.inputs)}
        self.constants: dict[tuple[str, str], str] = {}  # (dtype, literal) -> name

    def constant(self, value: float, dtype: str) -> str:
        literal = _literal(float(value))
        if self.language == "cuda":
            return f"(({_C_TYPES[dtype]}){literal})"
        key = (dtype, literal)
        if key not in self.constants:
            self.constants[key] = f"_k{len(self.constants)}"
        return self.constants[key]

    def lines(self) -> list[tuple[str, str, str]]:
        """(dtype, variable, expression) per elementwise member, in order (a trailing
        reduction is the kernel's own loop)."""
        body = []
        members = self.node.members
        for member in members[:-1] if _reduction(self.node) else members:
            operands = Operands(member, self.names, self.constant)
            form = SCALAR_FORMS[member.op]
            expression = form.c(operands) if self.language == "cuda" else form.python(operands)
            (value,) = member.outputs
            name = f"t{value.id}"
            self.names[value.id] = name
            body.append((value.dtype, name, expression))
        return body


def _reduction(node: Node) -> tuple[Node, tuple[int, ...], tuple[int, ...]] | None:
    """(the reduction, its axes, the shape it reduces) when the node ends with one."""
    last = node.members[-1]
    if last.op not in ("sum", "mean") or len(node.members) < 2:
        return None
    shape = node.members[-2].outputs[0].shape
    axes = reduced_axes(last, len(shape))
    return None if axes is None else (last, axes, shape)


def kernel_source(node: Node) -> str:
    """The kernel's source, as :func:`strategy` runs it: a Python module for numba, the block
    loop and its plan for "blocks", or the C of a CuPy ElementwiseKernel with its parameters
    in a leading comment block."""
    how = strategy(node)
    if how == "blocks":
        return _blocks_source(node)
    language = "cuda" if how == "cuda" else "cpu"
    writer = _Writer(node, language)
    body = writer.lines()
    dtypes = _dtypes(node)
    members = "+".join(m.op for m in node.members)
    reduction = _reduction(node)
    if reduction is not None and language == "cpu":
        return _numba_reduction_source(node, writer, body, dtypes, reduction, members)
    if reduction is not None:
        return _cuda_reduction_source(node, writer, body, dtypes, reduction, members)
    outputs = [writer.names[v.id] for v in node.outputs]
    dtype = node.outputs[0].dtype
    if language == "cuda":
        return _cuda_source(node, body, outputs, dtypes, dtype, members)
    arguments = [f"a{i}" for i in range(len(writer.inputs))]
    lines = [
        f"# tk.jit fused kernel: {members}",
        "import math",
        "",
        "import numba",
        "import numpy as np",
        "",
    ]
    lines += [
        f"{name} = np.{kind}({literal})" for (kind, literal), name in writer.constants.items()
    ]
    lines += ["", "", python_helpers(dtype, "\n".join(e for _, _, e in body))]
    in_types = [_NUMBA_TYPES[dtypes[i]] for i in writer.inputs]
    out_type = _NUMBA_TYPES[dtype]
    if len(outputs) == 1:
        lines.append(f"def _body({', '.join(arguments)}):")
        lines += [f"    {name} = {expression}" for _, name, expression in body]
        lines += [f"    return {outputs[0]}", "", ""]
        lines.append(f'SIGNATURE = "{out_type}({", ".join(in_types)})"')
        lines.append("LAYOUT = None")
    else:
        results = [f"o{i}" for i in range(len(outputs))]
        lines.append(f"def _body({', '.join(arguments + results)}):")
        lines += [f"    {name} = {expression}" for _, name, expression in body]
        lines += [f"    {o}[0] = {name}" for o, name in zip(results, outputs, strict=True)]
        lines += ["", ""]
        all_types = in_types + [f"{out_type}[:]"] * len(outputs)
        lines.append(f'SIGNATURE = "void({", ".join(all_types)})"')
        lines.append(
            f'LAYOUT = "{",".join(["()"] * len(arguments))}->{",".join(["()"] * len(outputs))}"'
        )
    return "\n".join(lines) + "\n"


def _module_head(members: str, writer: _Writer, dtype: str, body: list) -> list[str]:
    """A reduction kernel module's first lines: its title, imports, constants, helpers."""
    lines = [f"# tk.jit fused kernel: {members}", "import math", "", "import numba"]
    lines += ["import numpy as np", ""]
    lines += [f"{name} = np.{kind}({lit})" for (kind, lit), name in writer.constants.items()]
    return [*lines, "", "", python_helpers(dtype, "\n".join(e for _, _, e in body))]


def _leads(axes: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    """Whether the reduced axes are the leading ones, some axes kept after them (a layer
    norm's weight gradient, a bias's): the kernel then loops over the rows, adding each into
    a float64 row of sums, the inner loop over contiguous kept values."""
    return axes == tuple(range(len(axes))) and len(axes) < len(shape)


def _numba_leading_reduction_source(
    node: Node, writer: _Writer, body: list, reduction: tuple, members: str
) -> str:
    """A loop (``numba.njit``) over the inputs broadcast to the reduced shape: reduced
    indices outside, kept ones inside, each element added to ``sums`` (float64, the kept
    shape) in the order the gufunc form adds them, so the sums are the same."""
    last, axes, shape = reduction
    dtype = node.outputs[0].dtype
    element = writer.names[last.args[0].id]
    indices = [f"i{d}" for d in range(len(shape))]
    kept = ", ".join(indices[len(axes) :])
    lines = _module_head(members, writer, dtype, body)
    arrays = [f"A{i}" for i in range(len(writer.inputs))]
    lines.append(f"def _body({', '.join([*arrays, 'sums'])}):")
    for d, index in enumerate(indices):
        lines.append(f"    {'    ' * d}for {index} in range(A0.shape[{d}]):")
    pad = "    " * (len(indices) + 1)
    lines += [f"{pad}a{i} = A{i}[{', '.join(indices)}]" for i in range(len(arrays))]
    lines += [f"{pad}{name} = {expression}" for _, name, expression in body]
    lines += [f"{pad}sums[{kept}] += {element}", "", ""]
    lines += ["SIGNATURE = None", 'LAYOUT = "leading"']
    return "\n".join(lines) + "\n"


def _numba_reduction_source(
    node: Node, writer: _Writer, body: list, dtypes: dict, reduction: tuple, members: str
) -> str:
    """A gufunc whose core dimensions are the reduced axes (moved last by the caller): loops
    over them compute each element and add it to a float64 sum. Leading reductions are a
    loop instead (:func:`_leads`)."""
    last, axes, shape = reduction
    if _leads(axes, shape):
        return _numba_leading_reduction_source(node, writer, body, reduction, members)
    dtype = node.outputs[0].dtype
    count = math.prod(shape[a] for a in axes)
    element = writer.names[last.args[0].id]
    k = len(axes)
    index = ", ".join(f"i{d}" for d in range(k))
    lines = _module_head(members, writer, dtype, body)
    arrays = [f"A{i}" for i in range(len(writer.inputs))]
    lines.append(f"def _body({', '.join([*arrays, 'o0'])}):")
    lines.append("    total = np.float64(0)")
    for d in range(k):
        lines.append(f"    {'    ' * d}for i{d} in range(A0.shape[{d}]):")
    pad = "    " * (k + 1)
    lines += [f"{pad}a{i} = A{i}[{index}]" for i in range(len(arrays))]
    lines += [f"{pad}{name} = {expression}" for _, name, expression in body]
    lines.append(f"{pad}total += {element}")
    result = "total" if last.op == "sum" else f"total / {count}"
    lines += [f"    o0[0] = np.{dtype}({result})", "", ""]
    core = ", ".join([":"] * k)
    types = [f"{_NUMBA_TYPES[dtypes[i]]}[{core}]" for i in writer.inputs]
    dims = "(" + ",".join(f"r{d}" for d in range(k)) + ")"
    lines.append(f'SIGNATURE = "void({", ".join([*types, _NUMBA_TYPES[dtype] + "[:]"])})"')
    lines.append(f'LAYOUT = "{",".join([dims] * len(arrays))}->()"')
    return "\n".join(lines) + "\n"


def _cuda_source(
    node: Node, body: list, outputs: list[str], dtypes: dict, dtype: str, members: str
) -> str:
    in_params, out_params, preamble, operation = _cuda_parts(node, body, outputs, dtypes, dtype)
    header = [f"// tk.jit fused kernel: {members}", f"// in: {in_params}", f"// out: {out_params}"]
    return "\n".join(header) + "\n" + preamble + operation


def _cuda_reduction_source(
    node: Node, writer: _Writer, body: list, dtypes: dict, reduction: tuple, members: str
) -> str:
    in_params, out_params, preamble, map_expr, post = _cuda_reduction_parts(
        node, writer, body, dtypes, reduction
    )
    lines = [f"// tk.jit fused kernel: {members}", f"// in: {in_params}", f"// out: {out_params}"]
    lines.append(preamble.rstrip("\n"))
    lines.append(f"// ReductionKernel: map {map_expr}; reduce a + b in double from 0; {post}")
    return "\n".join(lines) + "\n"


def _cuda_reduction_parts(
    node: Node, writer: _Writer, body: list, dtypes: dict, reduction: tuple
) -> tuple:
    """ReductionKernel's in_params, out_params, preamble (the helpers and ``_element``, one
    element's value), map_expr and post_map_expr."""
    last, axes, shape = reduction
    dtype = node.outputs[0].dtype
    ctype = _C_TYPES[dtype]
    in_params = ", ".join(f"{dtypes[a.id]} a{i}" for i, a in enumerate(node.args))
    c_params = ", ".join(f"{_C_TYPES[dtypes[a.id]]} a{i}" for i, a in enumerate(node.args))
    statements = " ".join(f"{_C_TYPES[kind]} {name} = {expr};" for kind, name, expr in body)
    element = f"__device__ {ctype} _element({c_params}) {{ {statements} "
    element += f"return {writer.names[last.args[0].id]}; }}\n"
    preamble = c_helpers(ctype, statements) + element
    map_expr = "_element(" + ", ".join(f"a{i}" for i in range(len(node.args))) + ")"
    count = math.prod(shape[a] for a in axes)
    result = "a" if last.op == "sum" else f"a / {count}.0"
    return in_params, f"{dtype} o0", preamble, map_expr, f"o0 = ({ctype})({result})"


def _cuda_parts(node: Node, body: list, outputs: list[str], dtypes: dict, dtype: str) -> tuple:
    """ElementwiseKernel's in_params, out_params, preamble and operation."""
    in_params = ", ".join(f"{dtypes[a.id]} a{i}" for i, a in enumerate(node.args))
    out_params = ", ".join(f"{dtype} o{i}" for i in range(len(outputs)))
    lines = [f"{_C_TYPES[kind]} {name} = {expression};" for kind, name, expression in body]
    lines += [f"o{i} = {name};" for i, name in enumerate(outputs)]
    operation = "\n".join(lines) + "\n"
    return in_params, out_params, c_helpers(_C_TYPES[dtype], operation), operation


def _dtypes(node: Node) -> dict[int, str]:
    """Dtypes of the node's arguments and its members' values: a member's tensor arguments
    have its own dtype, where's condition is bool (``elementwise.fusible``)."""
    found: dict[int, str] = {}
    for member in node.members:
        dtype = member.outputs[0].dtype
        found[member.outputs[0].id] = dtype
        for arg in member.args:
            if type(arg) is Ref:
                found.setdefault(arg.id, dtype)
        for value in member.attrs.values():
            if type(value) is Ref:
                found.setdefault(value.id, "bool")
    return found


def _literal(value: float) -> str:
    if math.isnan(value):
        return "float('nan')"
    if math.isinf(value):
        return "float('inf')" if value > 0 else "float('-inf')"
    return repr(value)


# ------------------------------------------------------------------------------ CPU
def _numba_kernel(node: Node, source: str, key: str) -> Callable:
    try:
        import numba
    except ImportError:
        _warn_once(
            "numba",
            "tk.jit: numba is not installed, so fused groups run their ops through NumPy "
            "block by block (pip install 'tensorkit[jit]' for generated kernels)",
        )
        return _blocks_kernel(node, source, key)
    try:
        module = _load_module(source, key)
        if module.LAYOUT == "leading":
            loop = numba.njit(nogil=True, cache=True)(module._body)
            fallback = lambda: _blocks_kernel(node, source, key)  # noqa: E731
            return _summing_rows(loop, _reduction(node), node.outputs[0], fallback, key)
        decorate = numba.vectorize if module.LAYOUT is None else numba.guvectorize
        layout = () if module.LAYOUT is None else (module.LAYOUT,)
        serial = _raw_ufunc(
            decorate([module.SIGNATURE], *layout, nopython=True, cache=True)(module._body)
        )
    except Exception as error:  # a kernel numba cannot compile: run its members instead
        _warn_once(
            key,
            f"tk.jit: the fused kernel {_members(node)} did not compile ({type(error).__name__}:"
            f" {str(error).splitlines()[0] if str(error) else ''}); it runs through NumPy",
        )
        return _blocks_kernel(node, source, key)
    parallel: list[Any] = []

    reduction = _reduction(node)
    if reduction is not None:
        return _reducing(serial, reduction, node.outputs[0].shape)
    if math.prod(node.outputs[0].shape) < PARALLEL_MIN_ELEMENTS:
        return lambda xp, *arrays: serial(*arrays, order="C")

    def fused(xp: Any, *arrays: Any) -> Any:
        threads = get_num_threads()
        if threads > 1:
            if not parallel:
                parallel.append(
                    _raw_ufunc(
                        decorate([module.SIGNATURE], *layout, nopython=True, target="parallel")(
                            module._body
                        )
                    )
                )
            numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
            return parallel[0](*arrays, order="C")
        return serial(*arrays, order="C")

    return fused


def _raw_ufunc(kernel: Any) -> Any:
    """The NumPy ufunc inside numba's wrapper (a DUFunc or GUFunc): with its one signature
    fixed it dispatches nothing, and a call skips the wrapper's Python ``__call__`` (about
    0.8 us, a tenth of a small fused step)."""
    return getattr(kernel, "ufunc", kernel)


def _summing_rows(
    loop: Callable, reduction: tuple, out: Any, fallback: Callable[[], Callable], key: str
) -> Callable:
    """Call a leading reduction's loop on the inputs broadcast to the reduced shape, into
    float64 sums of the kept shape; the result in the node's shape and dtype. numba compiles
    the loop on its first call: if that fails, the members run through NumPy from then on,
    with the warning a kernel that does not compile gives."""
    last, axes, shape = reduction
    kept = shape[len(axes) :]
    count = math.prod(shape[: len(axes)])
    instead: list[Callable] = []
    from numba.core import errors as numba_errors

    def fused(xp: Any, *arrays: Any) -> Any:
        if instead:
            return instead[0](xp, *arrays)
        sums = xp.zeros(kept, xp.float64)
        try:
            loop(*(xp.broadcast_to(a, shape) for a in arrays), sums)
        except numba_errors.NumbaError as error:  # typing or lowering, at the first call
            _warn_once(
                key,
                f"tk.jit: a fused reduction did not compile ({type(error).__name__})"
                "; it runs through NumPy",
            )
            instead.append(fallback())
            return instead[0](xp, *arrays)
        if last.op == "mean":
            sums /= count
        return sums.astype(out.dtype).reshape(out.shape)

    return fused


def _reducing(kernel: Callable, reduction: tuple, out_shape: tuple[int, ...]) -> Callable:
    """Call a reduction gufunc on the inputs broadcast to the reduced shape with the reduced
    axes moved last; the result in the node's shape (kept dimensions of size 1 included)."""
    _, axes, shape = reduction
    order = tuple(a for a in range(len(shape)) if a not in axes) + axes

    def fused(xp: Any, *arrays: Any) -> Any:
        views = [xp.broadcast_to(a, shape).transpose(order) for a in arrays]
        return xp.asarray(kernel(*views)).reshape(out_shape)

    return fused


def _load_module(source: str, key: str) -> Any:
    """Import the kernel's source from the cache directory, writing it there first; a file
    whose bytes are not exactly ``source`` is replaced, never run."""
    directory = cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"fused_{key[:32]}.py"
    data = source.encode()
    if not path.is_file() or path.read_bytes() != data:
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_bytes(data)
        os.replace(temporary, path)
    name = f"tensorkit_jit_kernels.fused_{key[:32]}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # numba's cache looks the module up by name
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------------------ CUDA
def _cuda_kernel(node: Node, source: str, key: str) -> Callable:
    """A CuPy ElementwiseKernel (compiled on first call; CuPy caches it on disk)."""
    import cupy

    writer = _Writer(node, "cuda")
    body = writer.lines()
    reduction = _reduction(node)
    if reduction is not None:
        parts = _cuda_reduction_parts(node, writer, body, _dtypes(node), reduction)
        in_params, out_params, preamble, map_expr, post_map_expr = parts
        reducer = cupy.ReductionKernel(
            in_params,
            out_params,
            map_expr,
            "a + b",
            post_map_expr,
            "0",
            f"tk_fused_{key[:16]}",
            reduce_type="double",
            preamble=preamble,
        )
        _, axes, shape = reduction
        out_shape = node.outputs[0].shape

        def reduced(xp: Any, *arrays: Any) -> Any:
            views = [xp.broadcast_to(a, shape) for a in arrays]
            return reducer(*views, axis=axes).reshape(out_shape)

        return reduced
    outputs = [writer.names[v.id] for v in node.outputs]
    in_params, out_params, preamble, operation = _cuda_parts(
        node, body, outputs, _dtypes(node), node.outputs[0].dtype
    )
    kernel = cupy.ElementwiseKernel(
        in_params, out_params, operation, f"tk_fused_{key[:16]}", preamble=preamble
    )

    def fused(xp: Any, *arrays: Any) -> Any:
        return kernel(*arrays)

    return fused


# ------------------------------------------------------------------------------ blocks
def _blocks_kernel(node: Node, source: str, key: str) -> Callable:
    """The members' forwards over blocks of the output (see the module's text)."""
    plan, wanted = _block_plan(node)
    value = node.outputs[0]
    shape, dtype = value.shape, np.dtype(value.dtype)
    blocks = _blocks(shape)

    def fused(xp: Any, *arrays: Any) -> Any:
        if len(blocks) == 1:
            results = plan(*arrays)
        else:
            arrays = tuple(xp.broadcast_to(a, shape) for a in arrays)
            results = tuple(xp.empty(shape, dtype) for _ in wanted)

            def part(chunk: slice) -> None:
                for index in blocks[chunk]:
                    for out, result in zip(results, plan(*(a[index] for a in arrays)), strict=True):
                        out[index] = result

            parallel_parts(part, len(blocks), math.prod(shape), arrays[0])
        return results if len(results) > 1 else results[0]

    return fused


def _block_plan(node: Node) -> tuple[Any, list[int]]:
    """The members lowered to a plan over one block, and the value ids it returns. An
    ``expand`` member is its input itself: the inputs arrive broadcast to the block."""
    from .plan import lower

    renamed: dict[int, int] = {}
    members = []
    for member in node.members:
        member = _renamed(member, renamed)
        if member.op == "expand":
            renamed[member.outputs[0].id] = member.args[0].id
        else:
            members.append(member)
    wanted = [renamed.get(v.id, v.id) for v in node.outputs]
    plan = lower(members, [a.id for a in node.args], wanted, {}, "block")
    return plan, wanted


def _renamed(member: Node, renamed: dict[int, int]) -> Node:
    if not renamed:
        return member
    args = tuple(Ref(renamed.get(a.id, a.id)) if type(a) is Ref else a for a in member.args)
    attrs = {
        k: Ref(renamed.get(v.id, v.id)) if type(v) is Ref else v for k, v in member.attrs.items()
    }
    return replace(member, args=args, attrs=attrs)


def _blocks(shape: tuple[int, ...]) -> list[tuple]:
    """Index tuples covering ``shape`` in blocks of about BLOCK_ELEMENTS: whole trailing axes,
    cut along the first axis whose trailing size fits."""
    if math.prod(shape) <= BLOCK_ELEMENTS:
        return [()]
    axis = next(k for k in range(len(shape)) if math.prod(shape[k + 1 :]) <= BLOCK_ELEMENTS)
    step = max(1, BLOCK_ELEMENTS // math.prod(shape[axis + 1 :]))
    return [
        (*lead, slice(start, min(start + step, shape[axis])))
        for lead in np.ndindex(*shape[:axis])
        for start in range(0, shape[axis], step)
    ]


def _blocks_source(node: Node) -> str:
    plan, _ = _block_plan(node)
    value = node.outputs[0]
    header = [
        f"# tk.jit fused kernel: {'+'.join(m.op for m in node.members)}",
        f"# run over blocks of {BLOCK_ELEMENTS} elements of {value.dtype}{list(value.shape)}:",
        "# each block's intermediates stay in cache; libm functions run in NumPy's SIMD loops",
        "for index in blocks:",
        "    outputs[index] = block(*(a[index] for a in inputs))",
        "",
    ]
    return "\n".join(header) + plan.source


def _members(node: Node) -> str:
    return "fused[" + "+".join(m.op for m in node.members) + "]"


def _warn_once(key: str, message: str) -> None:
    if key not in _warned:
        _warned.add(key)
        warnings.warn(message, RuntimeWarning, stacklevel=3)
