"""The profile view widget (anywidget) and its link to the graph widget.

:class:`ProfileWidget` syncs ``model`` (:func:`~tensorkit.notebook.profile_model.build_profile`)
and ``selected`` (a profiler event index, -1 for none); the front end sorts the op table,
draws time by module, the memory timeline and the allocator's blocks. :func:`show_profile`
puts it beside a :class:`~tensorkit.notebook.widgets.GraphWidget` of a Tape recorded in the
same profile (side by side where the output is wide enough, stacked where it is not), the two
selections linked in Python: a row selects its op's node (a backward op, the node of the
forward op it differentiates; the graph view pans to the selected node), a node selects its
op's row. :func:`show_ranks` shows a distributed run's ranks (``model["ranks"]``,
:func:`~tensorkit.notebook.rank_model.build_ranks`) in the same widget.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import anywidget
import ipywidgets
import traitlets

from ..autograd.tape import Tape, TapeEntry
from .graph_model import build_graph
from .profile_model import MAX_ROWS, build_profile, selection_links
from .rank_model import MAX_BARS, build_ranks
from .recorded import recording_payload
from .widgets import STATIC, GraphWidget, _FallbackHTML

__all__ = [
    "ProfileView",
    "ProfileWidget",
    "linked_view",
    "show_profile",
    "show_ranks",
]

#: The timing of a ranks-only profile model (:func:`show_ranks`).
RANKS_TIMING = "host wall time of each rank's ops and collectives, on the ranks' common clock"


class ProfileWidget(_FallbackHTML, anywidget.AnyWidget):
    """Per-op table, time by module, memory timeline and allocator blocks of one profile; the
    ranks' compute and communication where the model has ``ranks``."""

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


#: The flex items of the two sides (grow, shrink, basis): side by side in outputs wide enough
#: for both bases, the graph taking 3/5 of what is left; stacked (graph first) in narrower ones.
GRAPH_FLEX = "3 1 560px"
PROFILE_FLEX = "2 1 420px"


class ProfileView(_FallbackHTML, ipywidgets.Box):
    """A :class:`GraphWidget` beside a :class:`ProfileWidget` (stacked on narrow outputs),
    their selections linked."""

    def __init__(
        self, graph: GraphWidget, profile: ProfileWidget, entries: Iterable[TapeEntry | dict]
    ) -> None:
        row = ipywidgets.Layout(
            display="flex", flex_flow="row wrap", align_items="flex-start", width="100%"
        )
        super().__init__(children=[graph, profile], layout=row)
        self.add_class("tk-side-by-side")
        for side, flex in ((graph, GRAPH_FLEX), (profile, PROFILE_FLEX)):
            side.layout.flex = flex
            side.layout.min_width = "0"
            side.layout.margin = "0 8px 8px 0"
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


def show_ranks(traces: dict | Sequence[str | Path], *, max_bars: int = MAX_BARS) -> ProfileWidget:
    """The profile view of a distributed run: a track per rank with its compute and its
    collectives side by side, and the share of communication hidden under backward.
    ``traces``: the Chrome traces each rank exported, or their ``tk.profiler.merge_traces``
    document (see :func:`~tensorkit.notebook.rank_model.build_ranks`)."""
    ranks = build_ranks(traces, max_bars=max_bars)
    model = {"timing_mode": RANKS_TIMING, "total_ops": 0, "rows": [], "modules": [], "ranks": ranks}
    return ProfileWidget(model=model)
