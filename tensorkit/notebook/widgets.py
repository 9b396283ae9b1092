"""The graph widget (anywidget) and the recorded view that every widget's output carries.

The front ends are ES modules bundled from ``widgets/src`` into ``static/`` (no node needed at
install time). Each widget's state is its data model as synced traits:

- :class:`GraphWidget`: ``graph`` (the :func:`~tensorkit.notebook.build_graph` model),
  ``selected`` (a node id), ``collapsed`` (module paths), ``color_by``, ``show_backward``.
- :class:`~tensorkit.notebook.stepper_widget.StepperWidget` (its own module).

Every widget's display bundle also carries its recorded view
(:mod:`~tensorkit.notebook.recorded`), which a notebook reopened with no kernel, nbconvert and
the docs show.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anywidget
import ipywidgets
import traitlets

from ..autograd.tape import Tape
from ..tensor import Tensor
from .graph_model import build_graph
from .recorded import MIME_TYPE, recorded_html, recording_payload

__all__ = ["COLOR_MODES", "GraphWidget", "RecordedBox", "show"]

STATIC = Path(__file__).parent / "static"
#: Colouring modes: mode -> (legend label, unit, metric key). "time" and "memory" are the
#: older names of "forward_time" and "bytes".
COLOR_MODES: dict[str, tuple[str, str, str | None]] = {
    "none": ("none", "", None),
    "forward_time": ("forward time", "s", "time_ns"),
    "backward_time": ("backward time", "s", "backward_ns"),
    "bytes": ("bytes allocated", "B", "bytes"),
    "grad_norm": ("gradient norm", "", "grad_norm"),
    "nan": ("NaN / inf", "", None),
}
_ALIASES = {"time": "forward_time", "memory": "bytes"}


class _FallbackHTML:
    """Adds the recorded view of :meth:`_recording` next to the widget view: as
    :data:`~tensorkit.notebook.recorded.MIME_TYPE` (drawn by the JupyterLab extension when
    the widget's model is gone) and as self-contained ``text/html`` (nbconvert, the docs)."""

    def _recording(self) -> dict:
        raise NotImplementedError

    def _repr_html_(self) -> str:
        return recorded_html(self._recording())

    def _repr_mimebundle_(self, **kwargs: Any) -> dict:
        bundle = super()._repr_mimebundle_(**kwargs) or {}  # type: ignore[misc]
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle, None)
        payload = self._recording()
        data = {**data, MIME_TYPE: payload, "text/html": recorded_html(payload)}
        return data if metadata is None else (data, metadata)


class RecordedBox(_FallbackHTML, ipywidgets.VBox):
    """Widgets in a column whose display bundle carries one ``recording`` (a
    :func:`~tensorkit.notebook.recorded.recording_payload`) for them all."""

    def __init__(self, children: list, recording: dict, **kwargs: Any) -> None:
        super().__init__(children=children, **kwargs)
        self.recording = recording

    def _recording(self) -> dict:
        return self.recording


class GraphWidget(_FallbackHTML, anywidget.AnyWidget):
    """The graph of a Tape or of a tensor's backward pass, drawn as SVG.

    ``collapsed`` starts as the model's ``collapsed`` (large graphs open folded by module);
    ``color_by`` is one of :data:`COLOR_MODES` (or "time", "memory"); ``show_backward``
    shows the bands of gradient ops.
    """

    _esm = STATIC / "graph.js"
    _css = STATIC / "widgets.css"
    graph = traitlets.Dict().tag(sync=True)
    selected = traitlets.Unicode("").tag(sync=True)
    collapsed = traitlets.List(traitlets.Unicode()).tag(sync=True)
    color_by = traitlets.Unicode("none").tag(sync=True)
    show_backward = traitlets.Bool(True).tag(sync=True)

    def __init__(self, **kwargs: Any) -> None:
        if "collapsed" not in kwargs:
            kwargs["collapsed"] = list(kwargs.get("graph", {}).get("collapsed", []))
        super().__init__(**kwargs)

    @traitlets.validate("color_by")
    def _check_color_by(self, proposal: dict) -> str:
        value = proposal["value"]
        if value not in COLOR_MODES and value not in _ALIASES:
            choices = ", ".join([*COLOR_MODES, *_ALIASES])
            raise traitlets.TraitError(f"color_by must be one of {choices}, got {value!r}")
        return value

    def _recording(self) -> dict:
        return recording_payload(
            ["graph"],
            graph=self.graph,
            collapsed=self.collapsed,
            color_by=_ALIASES.get(self.color_by, self.color_by),
            show_backward=self.show_backward,
        )


def show(source: Tape | Tensor, **kwargs: Any) -> GraphWidget:
    """A :class:`GraphWidget` of a Tape's ops (with the gradient ops the tape recorded, as a
    band below, unless ``include_backward=False``) or of a tensor's backward graph;
    ``kwargs`` go to :func:`~tensorkit.notebook.build_graph`."""
    if isinstance(source, Tape):
        kwargs.setdefault("include_backward", True)
    return GraphWidget(graph=build_graph(source, **kwargs))
