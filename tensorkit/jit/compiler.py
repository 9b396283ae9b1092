"""``tk.compile``: a function or module that replays captured graphs when it can.

Each call is looked up by its *guards*: per tensor argument its shape, dtype, device and
requires_grad, the other arguments' values, grad mode, and a module's training flags; a guard
set has one cache entry. An entry is captured on its first call and captured again on the next
one: when the two recordings agree (same ops, attributes and Python numbers), the graph is
optimized and lowered, and later calls replay it (checking that the module's parameters are
still the same tensors). Two recordings that differ mean Python state steers the call (a
number that changes each step, an optimizer creating its state): the entry keeps recording
until they agree.

A value read into Python whose result can be compared (``bool(t)``, ``item()``, ``int(t)``,
``float(t)``, a small ``tolist()``) is a guarded graph break: the graph holds a guard node
with the value the recording read, and an entry compiles one *path* per tuple of such
values (``if loss.item() > 1:`` gives two), as torch.compile specializes on them. A call
replays the path that ran last; when a guard reads another value the replay stops before
any effect, and the path agreeing with the values read so far replays instead, else the call
is recorded (two agreeing recordings compile the new path). Past ``config.cache_size_limit``
paths an entry warns, naming the read and the values it gave, and runs eagerly. Any other
graph break (``numpy()``, a random draw or an autograd.Function the IR cannot hold, an
in-place write to a view) makes the entry run eagerly; ``tk.jit.explain`` lists why. After
``config.cache_size_limit`` guard sets a new one warns, naming the guard that failed, and
runs eagerly.

Python side effects that read no tensor value (printing a message, appending to a list)
happen in the recorded calls only, as with ``jax.jit``.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass, field
from typing import Any

from .. import _notebook_hooks, _state
from ..tensor import Tensor
from .capture import Capture, GraphBreak, TracingError, capture, flatten
from .config import config
from .guards import GuardFailure, same
from .ir import BUFFER, EXTERNAL, INPUT, PARAMETER, Graph, Ref
from .passes import optimize
from .runtime import CompiledGraph, SharedMemoryError
from .trace import _is_module, _name_of

__all__ = ["CompiledFunction", "compile", "config"]


@dataclass
class Path:
    """One compiled graph of a guard set: the values its guards read when it was recorded
    (in read order), the graph, and the tensors a replay reads besides the arguments."""

    values: tuple
    compiled: CompiledGraph
    tensors: list  # the live placeholder tensors
    inputs: list  # (placeholder index, argument leaf position)
    input_spec: Any  # the arguments' structure (capture.flatten), for tk.jit.save
    compiled_at: int  # the how-many-th graph this function compiled


@dataclass
class Entry:
    """One guard set's state: its compiled paths (``path`` the one replayed first), the
    recordings waiting for an agreeing one, or an eager verdict."""

    guards: tuple
    recordings: int = 0
    path: Path | None = None
    paths: list[Path] = field(default_factory=list)
    waiting: list[Capture] = field(default_factory=list)  # one per tuple of guarded values
    seen: list[tuple] = field(default_factory=list)  # the tuples of guarded values recorded
    parameters: list = field(default_factory=list)  # the module's parameters when compiled
    breaks: list[GraphBreak] = field(default_factory=list)  # the last recording's
    unstable: str = ""  # why the last two recordings differed
    eager: bool = False  # an unguarded break, or too many paths: calls run eagerly

    @property
    def compiled(self) -> CompiledGraph | None:
        """The graph of the path replayed first (None before one compiled)."""
        return None if self.path is None else self.path.compiled


class CompiledFunction:
    """What ``tk.compile`` returns: call it like the original (see the module docstring)."""

    def __init__(self, fn: Any, fullgraph: bool = False) -> None:
        self.fn = fn
        self._orig_mod = fn  # torch.compile's name for what was compiled
        self.fullgraph = fullgraph
        self.module = fn if _is_module(fn) else None
        self.entries: dict[tuple, Entry] = {}
        self._warned_limit = False
        self._compiles = 0
        functools.update_wrapper(self, fn, updated=())

    # ------------------------------------------------------------------ calls
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _state.ops_in_backward or _state.anomaly:
            # A capture, a Tape or anomaly mode watches every op: run the code itself.
            return self.fn(*args, **kwargs)
        if kwargs or any(isinstance(a, tuple | list | dict) for a in args):
            leaves, spec = flatten((list(args), kwargs))
        else:  # plain arguments: flatten's leaves are the arguments themselves
            leaves, spec = args, len(args)
        guards = self._guards(leaves, spec)
        entry = self.entries.get(guards)
        if entry is None:
            if len(self.entries) >= config.cache_size_limit:
                self._warn_limit(guards)
                return self.fn(*args, **kwargs)
            entry = self.entries[guards] = Entry(guards)
        path = entry.path
        if path is not None and (self.module is None or self._parameters_unchanged(entry)):
            try:
                return path.compiled.run(_feeds(path, leaves))
            except GuardFailure as failure:  # the replay had no effects
                return self._switch(entry, failure, leaves, args, kwargs)
            except SharedMemoryError:  # raised before anything ran: eager handles aliasing
                return self.fn(*args, **kwargs)
        if entry.eager:
            return self.fn(*args, **kwargs)
        return self._record(entry, args, kwargs)

    def _switch(
        self, entry: Entry, failure: GuardFailure, leaves: Any, args: tuple, kwargs: dict
    ) -> Any:
        """Replay the path agreeing with the values the failed replays read, else record."""
        known = (*entry.path.values[: failure.number], failure.value)
        while True:
            path = next((p for p in entry.paths if _agrees(p.values, known)), None)
            if path is None:
                return self._record(entry, args, kwargs, failure)
            try:
                result = path.compiled.run(_feeds(path, leaves))
            except GuardFailure as again:
                if again.number < len(known):  # an earlier read changed: trust eager code
                    return self._record(entry, args, kwargs, again)
                failure = again
                known = (*path.values[: again.number], again.value)
                continue
            except SharedMemoryError:
                return self.fn(*args, **kwargs)
            entry.path = path
            return result

    def _record(
        self, entry: Entry, args: tuple, kwargs: dict, failure: GuardFailure | None = None
    ) -> Any:
        """Run the call eagerly under a capture; compile its path once two recordings of
        it agree. ``failure``: the guard a replay of this call failed at, if one did."""
        recorded = capture(self.fn, args, kwargs, self.module)
        entry.recordings += 1
        graph = recorded.graph
        entry.breaks = list(graph.breaks)
        if graph.breaks and self.fullgraph:
            listed = "; ".join(str(b) for b in graph.breaks)
            raise TracingError(f"tk.compile(fullgraph=True): graph break: {listed}")
        if not all(b.guarded for b in graph.breaks):
            self._go_eager(entry)
            return recorded.result
        values = guard_values(graph)
        if failure is not None and any(_same(p.values, values) for p in entry.paths):
            self._warn_unreplayable(failure, values)  # eager read what a compiled path expects
            self._go_eager(entry)
            return recorded.result
        if not any(_agrees(seen, values) for seen in entry.seen):
            entry.seen.append(values)
            if len(entry.seen) > config.cache_size_limit:
                self._warn_paths(entry, graph)
                self._go_eager(entry)
                return recorded.result
        previous = next((c for c in entry.waiting if _agrees(guard_values(c.graph), values)), None)
        if previous is not None:
            entry.waiting.remove(previous)
            difference = differences(previous, recorded)
            if difference is None:
                self._compile(entry, recorded, values)
                return recorded.result
            entry.unstable = difference
        entry.waiting.append(recorded)
        return recorded.result

    def _compile(self, entry: Entry, recorded: Capture, values: tuple) -> None:
        graph = optimize(recorded.graph)
        inputs = [
            (i, int(p.name.split()[-1]))
            for i, p in enumerate(graph.placeholders)
            if p.kind == INPUT
        ]
        self._compiles += 1
        compiled = CompiledGraph(graph, _name_of(self.fn))
        path = Path(values, compiled, recorded.tensors, inputs, recorded.input_spec, self._compiles)
        entry.paths.append(path)
        entry.path = path
        entry.parameters = self._current_parameters()

    def _go_eager(self, entry: Entry) -> None:
        entry.eager = True
        entry.path = None
        entry.paths.clear()
        entry.waiting.clear()

    def latest(self) -> Entry:
        """The guard set whose current path compiled last (what ``tk.jit.save`` and
        ``show`` take); raises ValueError when no call has compiled yet."""
        compiled = [e for e in self.entries.values() if e.path is not None]
        if not compiled:
            raise ValueError(
                f"{_name_of(self.fn)} has no compiled graph yet: a guard set compiles once two "
                "recorded calls agree (tk.jit.explain says why a call does not compile)"
            )
        return max(compiled, key=lambda e: e.path.compiled_at)

    # ------------------------------------------------------------------ guards
    def _guards(self, leaves: list, spec: Any) -> tuple:
        parts: list = [_state.grad_enabled, spec]
        for leaf in leaves:
            if isinstance(leaf, Tensor):
                data = leaf._data
                parts.append((data.shape, data.dtype, leaf._device, leaf._requires_grad))
            else:
                parts.append(_hashable(leaf))
        if self.module is not None:
            parts.append(tuple(m.training for m in self.module.modules()))
        return tuple(parts)

    def _current_parameters(self) -> list:
        if self.module is None:
            return []
        return [*self.module.parameters(), *self.module.buffers()]

    def _parameters_unchanged(self, entry: Entry) -> bool:
        """Whether the module's parameters are the compiled ones (else forget the paths)."""
        current = self._current_parameters()
        if len(current) == len(entry.parameters) and all(
            a is b for a, b in zip(current, entry.parameters, strict=True)
        ):
            return True
        entry.path = None  # a parameter was replaced: record again
        entry.paths.clear()
        entry.waiting.clear()
        entry.seen.clear()
        entry.recordings = 0
        return False

    def _warn_limit(self, guards: tuple) -> None:
        if self._warned_limit:
            return
        self._warned_limit = True
        nearest = next(iter(self.entries))
        warnings.warn(
            f"tk.compile: {_name_of(self.fn)} hit config.cache_size_limit "
            f"({config.cache_size_limit}): {describe_guard_failure(nearest, guards)}; "
            "new kinds of calls now run eagerly",
            stacklevel=3,
        )

    def _warn_paths(self, entry: Entry, graph: Graph) -> None:
        """Warn that ``entry`` read more tuples of guarded values than it keeps paths for,
        naming the first read whose values differ and the values it gave."""
        seen = entry.seen
        longest = max(len(v) for v in seen)
        number = next(
            n
            for n in range(longest)
            if not all(len(v) > n and same(v[n], seen[0][n]) for v in seen)
        )
        reads = {node.attrs["number"]: node for node in graph.nodes if node.kind == "guard"}
        read = reads.get(number)
        where = f"Tensor.{read.op} at {read.site or 'an unknown call site'}" if read else "a read"
        given = [v[number] for v in seen if len(v) > number]
        shown = ", ".join(repr(v) for v in given[:6]) + (", ..." if len(given) > 6 else "")
        warnings.warn(
            f"tk.compile: {_name_of(self.fn)} hit config.cache_size_limit "
            f"({config.cache_size_limit}) paths for one guard set: {where} read {shown}; "
            "these calls now run eagerly "
            "(a value that changes every call, such as a loss, is better compared as a tensor)",
            stacklevel=4,
        )

    def _warn_unreplayable(self, failure: GuardFailure, values: tuple) -> None:
        node = failure.node
        eager = values[failure.number] if failure.number < len(values) else "nothing"
        warnings.warn(
            f"tk.compile: {_name_of(self.fn)}: at Tensor.{node.op} at "
            f"{node.site or 'an unknown call site'} the compiled graph read {failure.value!r} "
            f"where eager code reads {eager!r} (fused kernels round differently, or the call "
            "is not deterministic); these calls now run eagerly",
            stacklevel=4,
        )

    def show(self) -> Any:
        """The graph widget of its latest compiled graph, with guards and graph breaks
        (needs tensorkit.notebook and anywidget)."""
        return _notebook_hooks.lookup("jit.show")(self)

    def __getattr__(self, name: str) -> Any:
        """Attributes of the compiled module or function (``parameters()``, ``train()``)."""
        if name == "fn":
            raise AttributeError(name)
        return getattr(self.fn, name)

    def __repr__(self) -> str:
        return f"<tk.compile of {_name_of(self.fn)}: {len(self.entries)} guard sets>"


def compile(model: Any = None, *, fullgraph: bool = False, **options: Any) -> Any:  # noqa: A001
    """Compile ``model`` (a function or module), as ``torch.compile``; usable as a decorator,
    with or without arguments. ``fullgraph=True`` raises at a graph break instead of running
    the call eagerly. Other torch.compile options (``dynamic``, ``backend``, ``mode``) are
    accepted for compatibility and ignored, except ``disable=True`` (returns the model)."""
    if options.pop("disable", False):
        return model if model is not None else (lambda m: m)
    unknown = set(options) - {"dynamic", "backend", "mode", "options"}
    if unknown:
        raise TypeError(f"compile() got unexpected keyword arguments {sorted(unknown)}")
    if model is None:
        return lambda m: CompiledFunction(m, fullgraph)
    return CompiledFunction(model, fullgraph)


# ---------------------------------------------------------------------- comparing recordings
def differences(first: Capture, second: Capture) -> str | None:
    """None when two recordings of one guard set describe the same computation, else where
    they first differ (what ``tk.compile`` waits out, and ``explain`` reports)."""
    a, b = first.graph, second.graph
    if len(a.placeholders) != len(b.placeholders) or any(
        (p.kind, p.value) != (q.kind, q.value)
        for p, q in zip(a.placeholders, b.placeholders, strict=True)
    ):
        return "the call read different tensors"
    for p, x, y in zip(a.placeholders, first.tensors, second.tensors, strict=True):
        if p.kind in (PARAMETER, BUFFER, EXTERNAL) and x is not y:
            return f"the call read a different tensor object ({p.kind} {p.name})"
    for node_a, node_b in zip(a.nodes, b.nodes, strict=False):  # lengths compared below
        if not _same_node(node_a, node_b):
            return (
                f"at {node_b.site or 'an op'}, {node_a.op} ran with other arguments "
                f"({_args_text(node_a)} then {_args_text(node_b)})"
            )
    if len(a.nodes) != len(b.nodes):
        return f"the call ran {len(a.nodes)} ops, then {len(b.nodes)}"
    for g_a, g_b in ((a.backward, b.backward),):
        if len(g_a) != len(g_b) or not all(map(_same_node, g_a, g_b)):
            return "the backward differed"
    same_outputs = _outputs_equal(a, b)
    if not same_outputs or a.mutations != b.mutations or a.leaf_grads != b.leaf_grads:
        return "the call returned or wrote different values"
    if any(not _arrays_equal(a.constants[k], b.constants.get(k)) for k in a.constants):
        return "a tensor the call made had a different value"
    return None


def _same_node(a: Any, b: Any) -> bool:
    return (
        a.op == b.op
        and a.kind == b.kind
        and a.cast == b.cast
        and _equal(a.args, b.args)
        and _equal(a.attrs, b.attrs)
        and a.outputs == b.outputs
    )


def _equal(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(map(_equal, a, b))
    if hasattr(a, "shape") and hasattr(a, "dtype") and not isinstance(a, Tensor):
        return _arrays_equal(a, b)
    if isinstance(a, float) and a != a:
        return b != b
    return a == b


def _arrays_equal(a: Any, b: Any) -> bool:
    if b is None or a.shape != b.shape or a.dtype != b.dtype:
        return False
    return bool((a == b).all()) or bool(((a == b) | ((a != a) & (b != b))).all())


def _outputs_equal(a: Graph, b: Graph) -> bool:
    if len(a.outputs) != len(b.outputs) or a.output_spec != b.output_spec:
        return False
    return all(
        (x == y) if type(x) is Ref or type(y) is Ref else _equal(x, y)
        for x, y in zip(a.outputs, b.outputs, strict=True)
    )


def _args_text(node: Any) -> str:
    shown = [a for a in node.args if type(a) is not Ref]
    return ", ".join(repr(a) for a in shown) or repr(node.attrs)


# ---------------------------------------------------------------------- helpers
def guard_values(graph: Graph) -> tuple:
    """The values a recording's guards read, in read order (a path's key)."""
    return tuple(node.attrs["value"] for node in graph.nodes if node.kind == "guard")


def _feeds(path: Path, leaves: Any) -> list:
    """The tensors a replay of ``path`` reads: its placeholders' with this call's arguments."""
    tensors = list(path.tensors)
    for index, position in path.inputs:
        tensors[index] = leaves[position]
    return tensors


def _same(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and _agrees(a, b)


def _agrees(values: tuple, known: tuple) -> bool:
    """Whether a path's guarded values start with ``known`` (``guards.same`` each)."""
    return len(values) >= len(known) and all(map(same, values, known))


def describe_guard_failure(old: tuple, new: tuple) -> str:
    """Which guard tells two calls apart, in words."""
    if old[0] != new[0]:
        return f"grad mode changed ({old[0]} -> {new[0]})"
    if old[1] != new[1]:
        return "the arguments' structure changed"
    for position, (a, b) in enumerate(zip(old[2:], new[2:], strict=True)):
        if a == b:
            continue
        if isinstance(a, tuple) and len(a) == 4 and isinstance(b, tuple) and len(b) == 4:
            names = ("shape", "dtype", "device", "requires_grad")
            for name, x, y in zip(names, a, b, strict=True):
                if x != y:
                    shown = (list(x), list(y)) if name == "shape" else (x, y)
                    return f"argument {position}'s {name} changed from {shown[0]} to {shown[1]}"
        return f"argument {position} changed from {a!r} to {b!r}"
    return "a module's training mode changed"


def _hashable(value: Any) -> Any:
    try:
        hash(value)
    except TypeError:
        return ("unhashable", type(value).__name__, id(value))
    return (type(value).__name__, value)
