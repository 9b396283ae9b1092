"""The profile view widget (anywidget), its link to the graph widget, and its static HTML.

:class:`ProfileWidget` syncs ``model`` (:func:`~tensorkit.notebook.profile_model.build_profile`)
and ``selected`` (a profiler event index, -1 for none); the front end sorts the op table,
draws time by module, the memory timeline and the allocator's blocks. :func:`show_profile`
puts it beside a :class:`~tensorkit.notebook.widgets.GraphWidget` of a Tape recorded in the
same profile, the two selections linked in Python: a row selects its op's node (a backward
op, the node of the forward op it differentiates), a node selects its op's row.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import Any

import anywidget
import ipywidgets
import traitlets

from ..autograd.tape import Tape, TapeEntry
from ..profiler.report import format_bytes, format_time
from .graph_model import build_graph
from .profile_model import MAX_ROWS, build_profile, selection_links
from .recorded import recording_payload
from .widgets import STATIC, GraphWidget, _FallbackHTML

__all__ = ["ProfileView", "ProfileWidget", "linked_view", "profile_html", "show_profile"]


class ProfileWidget(_FallbackHTML, anywidget.AnyWidget):
    """Per-op table, time by module, memory timeline and allocator blocks of one profile."""

    _esm = STATIC / "profile.js"
    _css = STATIC / "widgets.css"
    model = traitlets.Dict().tag(sync=True)
    selected = traitlets.Int(-1).tag(sync=True)

    @traitlets.validate("selected")
    def _check_selected(self, proposal: dict) -> int:
        if proposal["value"] < -1:
            raise traitlets.TraitError(
                f"selected must be a profiler event index or -1, got {proposal['value']}"
            )
        return proposal["value"]

    def _recording(self) -> dict:
        return recording_payload(["profile"], profile=self.model)


class ProfileView(_FallbackHTML, ipywidgets.VBox):
    """A :class:`GraphWidget` above a :class:`ProfileWidget`, their selections linked."""

    def __init__(
        self, graph: GraphWidget, profile: ProfileWidget, entries: Iterable[TapeEntry | dict]
    ) -> None:
        super().__init__(children=[graph, profile])
        self.graph = graph
        self.profile = profile
        links = selection_links(entries, (node["id"] for node in graph.graph.get("nodes", [])))
        self._node_of: dict[int, str] = links["node_of"]
        self._index_of: dict[str, int] = links["index_of"]
        self._syncing = False
        profile.observe(self._row_selected, "selected")
        graph.observe(self._node_selected, "selected")

    def node_of(self, index: int) -> str:
        """The graph node id showing profiler event ``index`` ("" if the graph has none)."""
        return self._node_of.get(index, "")

    def index_of(self, node_id: str) -> int:
        """The profiler event index of graph node ``node_id`` (-1 if it is not a profiled op)."""
        return self._index_of.get(node_id, -1)

    def _row_selected(self, change: dict) -> None:
        self._sync(lambda: setattr(self.graph, "selected", self.node_of(change["new"])))

    def _node_selected(self, change: dict) -> None:
        self._sync(lambda: setattr(self.profile, "selected", self.index_of(change["new"])))

    def _sync(self, apply: Any) -> None:
        if self._syncing:  # the other side's echo: keep the user's choice
            return
        self._syncing = True
        try:
            apply()
        finally:
            self._syncing = False

    def _recording(self) -> dict:
        return recording_payload(
            ["graph", "profile"],
            graph=self.graph.graph,
            profile=self.profile.model,
            links={"node_of": self._node_of, "index_of": self._index_of},
            collapsed=self.graph.collapsed,
            color_by=self.graph.color_by,
            show_backward=self.graph.show_backward,
        )


def linked_view(graph: dict, profile: dict, entries: Iterable[TapeEntry | dict]) -> ProfileView:
    """A :class:`ProfileView` of a graph model and a profile model; ``entries`` (Tape entries
    or their dicts) map profiler indices to graph nodes."""
    return ProfileView(GraphWidget(graph=graph), ProfileWidget(model=profile), entries)


def show_profile(
    prof: Any,
    tape: Tape | None = None,
    *,
    snapshot: dict | None = None,
    max_rows: int = MAX_ROWS,
    include_backward: bool = False,
) -> ProfileWidget | ProfileView:
    """The profile view of ``prof``; with a ``tape`` recorded inside the same profile, a
    :class:`ProfileView` linking it to the tape's graph. ``snapshot`` (a
    ``tk.cuda.memory._snapshot()`` dict) adds the allocator's blocks; ``include_backward``
    draws backward ops in the graph too."""
    model = build_profile(prof, snapshot=snapshot, max_rows=max_rows)
    if tape is None:
        return ProfileWidget(model=model)
    if not isinstance(tape, Tape):
        raise TypeError(f"tape must be a tensorkit.autograd.Tape, got {type(tape).__name__}")
    _check_same_profile(prof, tape)
    graph = build_graph(tape, include_backward=include_backward)
    return linked_view(graph, model, tape.entries)


def _check_same_profile(prof: Any, tape: Tape) -> None:
    records = prof.records
    profiled = [e for e in tape.entries if e.records.get("profiler_index") is not None]
    for entry in profiled:
        index = entry.records["profiler_index"]
        if index >= len(records) or records[index].name != entry.name:
            raise ValueError(
                f"the tape was not recorded inside this profile: its entry {entry.index} "
                f"({entry.name}) has profiler index {index}, which this profile "
                f"({len(records)} ops) does not hold for that op"
            )
    if not profiled:
        raise ValueError(
            "the tape holds no profiled ops: record it inside the same "
            "`with tk.profiler.profile():` block"
        )


# ------------------------------------------------------------------------------ static HTML
COLUMNS = (  # sort key, header, row field, numeric
    ("index", "#", "index", True),
    ("name", "op", "name", False),
    ("phase", "phase", "phase", False),
    ("module", "module", "module", False),
    ("shapes", "shapes", None, False),
    ("host_time", "host time", "host_time_ns", True),
    ("gpu_time", "GPU time", "gpu_time_ns", True),
    ("bytes", "allocated", "alloc_bytes", True),
    ("call_site", "call site", "call_site", False),
)


def _columns(model: dict) -> list[tuple]:
    has = model.get("has", {})
    hidden = {
        "gpu_time": not has.get("gpu_time"),
        "bytes": not has.get("memory"),
        "shapes": not has.get("shapes"),
        "call_site": not has.get("call_sites"),
    }
    return [c for c in COLUMNS if not hidden.get(c[0])]


def profile_html(model: dict) -> str:
    """The profile as static HTML (for renders without a kernel): the timing mode, the op
    table (same classes and data attributes as the widget's), time by module and by function,
    and peak memory."""
    esc = html.escape
    columns = _columns(model)
    head = "".join(
        f'<th data-sort-key="{key}" aria-sort="none">{esc(label)}</th>'
        for key, label, _, _ in columns
    )
    body = []
    for row in model.get("rows", []):
        cells = []
        for key, _, field, numeric in columns:
            if key == "shapes":
                cells.append(f"<td>{esc(_shapes_text(row))}</td>")
            elif numeric:
                value = row.get(field)
                shown = _cell_number(key, value)
                data = "" if value is None else f' data-value="{esc(str(value))}"'
                cells.append(f'<td class="tk-num"{data}>{esc(shown)}</td>')
            else:
                cells.append(f"<td>{esc(str(row.get(field) or ''))}</td>")
        body.append(f'<tr data-index="{esc(str(row["index"]))}">{"".join(cells)}</tr>')
    omitted = model.get("omitted", {})
    note = ""
    if omitted.get("count"):
        note = (
            f"<p class='tk-muted'>{esc(str(omitted['count']))} cheaper ops not shown "
            f"({format_time(omitted.get('host_time_ns', 0))} host time)</p>"
        )
    groups = "".join(_group_table(model.get(f"{key}s", []), key) for key in ("module", "function"))
    memory = model.get("memory")
    peak = ""
    if memory:
        peak = (
            f"<p>Peak allocated: {format_bytes(memory['peak_bytes'])} after op "
            f"{esc(str(memory['peak_index']))}. {esc(str(memory['allocator']))}.</p>"
        )
    return (
        '<div class="tk-profile tk-static">'
        f"<p class='tk-muted'>{esc(str(model.get('total_ops', 0)))} ops; timing: "
        f"{esc(str(model.get('timing_mode', '')))}</p>"
        f'<table class="tk-profile-table"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>{note}{groups}{peak}</div>"
    )


def _group_table(groups: list[dict], key: str) -> str:
    """Time by module path or by function (``key``): ops, forward and backward time."""
    esc = html.escape
    rows = "".join(
        f"<tr><td>{esc(str(g[key]))}</td><td class='tk-num'>{esc(str(g['count']))}</td>"
        f"<td class='tk-num'>{format_time(g['host_ns'].get('forward', 0))}</td>"
        f"<td class='tk-num'>{format_time(g['host_ns'].get('backward', 0))}</td></tr>"
        for g in groups
    )
    return (
        f'<table class="tk-profile-groups tk-profile-{key}s"><thead><tr><th>{key}</th>'
        f"<th>ops</th><th>forward</th><th>backward</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _shapes_text(row: dict) -> str:
    def shapes(items: list | None) -> str:
        return ", ".join("?" if s is None else "x".join(map(str, s)) or "scalar" for s in items)

    if row.get("output_shapes") is None:
        return ""
    return f"{shapes(row.get('input_shapes') or [])} -> {shapes(row['output_shapes'])}"


def _cell_number(key: str, value: Any) -> str:
    if value is None:
        return ""
    if key.endswith("time"):
        return format_time(value)
    return format_bytes(value) if key == "bytes" else str(value)
