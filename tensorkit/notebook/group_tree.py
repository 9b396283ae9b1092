"""The tree of groups a graph's nodes sit in: nn modules, the composite functions they call
(``linear``, ``conv2d``, ``batch_norm``, ...) and the user's ``record_function`` ranges.

Each op ran inside a chain of levels, outermost first: the modules of its module path, and
between them the ranges open at that time, each at the module it was opened in (a Tape
entry's ``scope_calls``). So ``with record_function("fwd"): model(x)`` puts ``fwd`` around
the model's modules, and ``F.linear`` called by ``Sequential.0`` sits inside that module.

Group ids are opaque strings: a module's is its dotted path ("Net.layer1.0"); a function's
or range's is ``<parent id>/<name>#<n>`` (``<name>#<n>`` at the top), ``n`` counting the
calls of that name in that parent from 1, so each call is its own group. Gradient groups
(the ops a rule ran, see :mod:`~tensorkit.notebook.graph_model`) mirror these with a "∇"
before the id, one per band.

A module's parent is the level before it in every chain that holds it; where chains differ
(a model called inside two ranges), it is the module above it by path, and the ranges keep
only the ops that ran in them directly.
"""

from __future__ import annotations

from .._ranges import composites

__all__ = ["GRAD_PREFIX", "GroupTree", "group_label"]

GRAD_PREFIX = "\u2207"  # "∇": the ids of gradient groups, once per band
_SEPARATOR = " \u00b7 "  # "Conv2d · layer1.0.conv1"


class GroupTree:
    """Builds ``groups`` (see :func:`~tensorkit.notebook.build_graph`) as nodes are placed.

    ``module_classes`` maps module paths to class names (a Tape's ``module_classes``).
    """

    def __init__(self, module_classes: dict[str, str]) -> None:
        self.module_classes = module_classes
        self.groups: dict[str, dict] = {}
        self._parents_seen: dict[str, set[str | None]] = {}  # module path -> levels before it
        self._call_numbers: dict[tuple[str | None, str], dict] = {}
        self._chains: dict[tuple, str] = {}
        self._ancestors: dict[str, list[str]] = {}

    # ------------------------------------------------------------------- forward ops
    def forward_group(self, module_path: str, scopes: tuple, scope_calls: tuple) -> str:
        """The id of the innermost group of an op that ran in ``module_path`` inside
        ``scopes`` (a Tape entry's; "" for none), creating the groups along its chain."""
        key = (module_path, scopes, scope_calls)
        known = self._chains.get(key)
        if known is None:
            known = self._chains[key] = self._place_chain(module_path, scopes, scope_calls)
        return known

    def _place_chain(self, module_path: str, scopes: tuple, scope_calls: tuple) -> str:
        previous: str | None = None
        module = ""
        for level in _chain(module_path, scopes, scope_calls):
            if level[0] == "module":
                module = level[1]
                self._parents_seen.setdefault(module, set()).add(previous)
                if module not in self.groups:
                    self._add(module, None, "module", module)
                previous = module
                continue
            _, name, call, kind = level
            calls = self._call_numbers.setdefault((previous, name), {})
            number = calls.setdefault(call, len(calls) + 1)
            group_id = f"{previous}/{name}#{number}" if previous else f"{name}#{number}"
            if group_id not in self.groups:
                self._add(group_id, previous, kind, module, name)
            previous = group_id
        return previous or ""

    def resolve_parents(self) -> None:
        """Give each module group its parent (call once all forward ops are placed)."""
        for path, seen in self._parents_seen.items():
            parent = next(iter(seen)) if len(seen) == 1 else path.rpartition(".")[0] or None
            self.groups[path]["parent"] = parent
        self._ancestors.clear()

    # ---------------------------------------------------------------- gradient groups
    def gradient_group(self, forward_id: str) -> str:
        """The gradient group mirroring ``forward_id`` ("∇" + it; "" for ""), created with
        the mirrors of its ancestors."""
        if not forward_id:
            return ""
        missing = []
        group_id: str | None = GRAD_PREFIX + forward_id
        while group_id is not None and group_id not in self.groups:
            base = self.groups.get(group_id[1:])
            if base is None:  # nothing to mirror ("∇AccumulateGrad"): a group of its own
                self._add(group_id, None, "module", group_id)
                break
            missing.append((group_id, base))
            group_id = None if base["parent"] is None else GRAD_PREFIX + base["parent"]
        for group_id, base in reversed(missing):
            parent = None if base["parent"] is None else GRAD_PREFIX + base["parent"]
            module = GRAD_PREFIX + base["module"] if base["module"] else ""
            self._add(group_id, parent, base["kind"], module, base.get("name"))
        return GRAD_PREFIX + forward_id

    # ------------------------------------------------------------------------ reading
    def ancestors(self, group_id: str) -> list[str]:
        """``group_id`` and the groups above it, innermost first (empty for "")."""
        chain = self._ancestors.get(group_id)
        if chain is None:
            chain = []
            current: str | None = group_id or None
            while current is not None:
                chain.append(current)
                current = self.groups[current]["parent"]
            self._ancestors[group_id] = chain
        return chain

    def finish(self, nodes: list[dict]) -> dict[str, dict]:
        """The groups holding ``nodes`` (each node's ``group``): children, the node ids
        directly inside (ops before tensors), counts and labels; empty groups dropped."""
        for node in sorted(nodes, key=lambda n: n["kind"] == "tensor"):
            group_id = node["group"]
            if group_id:
                self.groups[group_id]["nodes"].append(node["id"])
            for ancestor in self.ancestors(group_id):
                self.groups[ancestor]["count"] += 1
        kept = {gid: g for gid, g in self.groups.items() if g["count"]}
        for group_id, group in kept.items():
            group["label"] = group_label(group, self.module_classes)
            if group["parent"] is not None:
                kept[group["parent"]]["children"].append(group_id)
        return kept

    def _add(
        self, group_id: str, parent: str | None, kind: str, module: str, name: str | None = None
    ) -> None:
        group = {
            "path": group_id,
            "parent": parent,
            "children": [],
            "nodes": [],
            "count": 0,
            "kind": kind,
            "label": "",
            "module": module,
        }
        if name is not None:
            group["name"] = name
        self.groups[group_id] = group


def group_label(group: dict, module_classes: dict[str, str]) -> str:
    """A function's or range's name; a module's class and path ("Conv2d · layer1.0.conv1",
    the path as ``named_modules`` gives it, so without the root's own class name); a gradient
    group's the same after "∇" ("∇ Conv2d · layer1.0.conv1")."""
    group_id = group["path"]
    bands = len(group_id) - len(group_id.lstrip(GRAD_PREFIX))
    mark = GRAD_PREFIX * bands + " " if bands else ""
    if "name" in group:
        return mark + group["name"]
    path = group_id[bands:]
    root, _, below = path.partition(".")
    qualified = below if module_classes.get(root) == root else path
    class_name = module_classes.get(path)
    if class_name is None:
        return mark + (qualified or path)
    return mark + (class_name + _SEPARATOR + qualified if qualified else class_name)


def _chain(module_path: str, scopes: tuple, scope_calls: tuple) -> list[tuple]:
    """The levels of an op, outermost first: ``("module", path)`` per module path prefix and
    ``("scope", name, call, kind)`` per open range, each after the module it was opened in
    (inside the innermost module when that module is not on the op's path)."""
    if len(scope_calls) != len(scopes):  # ranges pushed without call numbers: one call each
        scope_calls = tuple(
            (name, module_path, "function" if name in composites else "range") for name in scopes
        )
    prefixes = []
    if module_path:
        parts = module_path.split(".")
        prefixes = [".".join(parts[: n + 1]) for n in range(len(parts))]
    depth_of = {prefix: n + 1 for n, prefix in enumerate(prefixes)}
    depth_of[""] = 0
    at_depth: list[list[tuple]] = [[] for _ in range(len(prefixes) + 1)]
    depth = 0
    for name, (call, opened_in, kind) in zip(scopes, scope_calls, strict=True):
        depth = max(depth, depth_of.get(opened_in, len(prefixes)))
        at_depth[depth].append(("scope", name, call, kind))
    levels = list(at_depth[0])
    for n, prefix in enumerate(prefixes, start=1):
        levels.append(("module", prefix))
        levels += at_depth[n]
    return levels
