"""The graph widget (anywidget) and the static SVG fallback that every widget shares.

The front ends are ES modules bundled from ``widgets/src`` into ``static/`` (no node needed at
install time). Each widget's state is its data model as synced traits:

- :class:`GraphWidget`: ``graph`` (the :func:`~tensorkit.notebook.build_graph` model),
  ``selected`` (a node id), ``collapsed`` (module paths), ``color_by``.
- :class:`~tensorkit.notebook.stepper_widget.StepperWidget` (its own module).

Where widgets cannot run (a static notebook render, nbviewer), widgets also offer an
SVG of the graph computed here (``_repr_mimebundle_``'s ``text/html``).
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from ..autograd.tape import Tape
from ..tensor import Tensor
from .graph_model import build_graph

__all__ = ["GraphWidget", "graph_svg", "show"]

STATIC = Path(__file__).parent / "static"
COLOR_MODES = ("none", "time", "memory", "nan")


class _FallbackHTML:
    """Adds the static SVG of ``self.graph`` as ``text/html`` next to the widget view."""

    graph: dict

    def _repr_html_(self) -> str:
        return graph_svg(self.graph)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict:
        bundle = super()._repr_mimebundle_(**kwargs) or {}  # type: ignore[misc]
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle, None)
        data = {**data, "text/html": graph_svg(self.graph)}
        return data if metadata is None else (data, metadata)


class GraphWidget(_FallbackHTML, anywidget.AnyWidget):
    """The graph of a Tape or of a tensor's backward pass, drawn as SVG."""

    _esm = STATIC / "graph.js"
    _css = STATIC / "widgets.css"
    graph = traitlets.Dict().tag(sync=True)
    selected = traitlets.Unicode("").tag(sync=True)
    collapsed = traitlets.List(traitlets.Unicode()).tag(sync=True)
    color_by = traitlets.Unicode("none").tag(sync=True)

    @traitlets.validate("color_by")
    def _check_color_by(self, proposal: dict) -> str:
        if proposal["value"] not in COLOR_MODES:
            raise traitlets.TraitError(f"color_by must be one of {COLOR_MODES}")
        return proposal["value"]


def show(source: Tape | Tensor, **kwargs: Any) -> GraphWidget:
    """A :class:`GraphWidget` of a Tape's ops or of a tensor's backward graph; ``kwargs`` go
    to :func:`~tensorkit.notebook.build_graph`."""
    return GraphWidget(graph=build_graph(source, **kwargs))


# ---------------------------------------------------------------------- static fallback
_W, _H, _GAP_X, _GAP_Y, _PAD = 132, 40, 56, 30, 12


def graph_svg(graph: dict) -> str:
    """A self-contained SVG (in a div) of the graph: nodes by the model's layers, edges as
    curves; one ``<g class="tk-node ...">`` per node, with a hover title."""
    layers = graph.get("layout", {}).get("layers", [])
    tallest = max((len(layer) for layer in layers), default=0)
    place = {}
    for depth, layer in enumerate(layers):
        offset = (tallest - len(layer)) * (_H + _GAP_Y) / 2
        for i, node_id in enumerate(layer):
            place[node_id] = (_PAD + depth * (_W + _GAP_X), _PAD + offset + i * (_H + _GAP_Y))
    width = 2 * _PAD + max(len(layers) * (_W + _GAP_X) - _GAP_X, 0)
    height = 2 * _PAD + max(tallest * (_H + _GAP_Y) - _GAP_Y, 0)
    parts = [
        f'<div class="tk-static"><svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif">'
    ]
    edges = [e for e in graph.get("edges", []) if e["source"] in place and e["target"] in place]
    arity: dict[str, int] = {}
    for edge in edges:
        arity[edge["target"]] = max(arity.get(edge["target"], 0), edge["position"] + 1)
    parts += [_edge_svg(edge, place, arity[edge["target"]]) for edge in edges]
    parts += [_node_svg(node, place[node["id"]]) for node in graph.get("nodes", [])]
    parts.append("</svg></div>")
    return "".join(parts)


def _edge_svg(edge: dict, place: dict, arity: int) -> str:
    """A curve from the source's right side to the target's slot for this argument."""
    (x1, y1), (x2, y2) = place[edge["source"]], place[edge["target"]]
    x1, y1, y2 = x1 + _W, y1 + _H / 2, y2 + _H * (edge["position"] + 1) / (arity + 1)
    bend = max(20, (x2 - x1) / 2)
    path = f"M{x1},{y1} C{x1 + bend},{y1} {x2 - bend},{y2} {x2},{y2}"
    return f'<path class="tk-edge" d="{path}" fill="none" stroke="#999"/>'


def _node_svg(node: dict, at: tuple[float, float]) -> str:
    kind = node["kind"]
    op_like = kind in ("op", "grad_fn")
    label = _label(node)
    shapes = ", ".join(_shape(s) for s in (node["shapes"]["out"] or []))
    title = f"{node['id']}: {label} -> {shapes}"
    if node.get("summary"):
        stats = ", ".join(f"{k} {_number(node['summary'].get(k))}" for k in ("min", "max", "mean"))
        title += f"\n{stats}"
    fill, stroke = ("#e8f0fb", "#4a6fa5") if op_like else ("#eef7ee", "#5b8c5a")
    esc = html.escape
    return (
        f'<g class="tk-node tk-{esc(kind)}" data-id="{esc(node["id"])}" '
        f'transform="translate({at[0]},{at[1]})"><title>{esc(title)}</title>'
        f'<rect width="{_W}" height="{_H}" rx="{8 if op_like else _H / 2}" fill="{fill}" '
        f'stroke="{stroke}"/>'
        f'<text x="{_W / 2}" y="16" text-anchor="middle" font-size="12" font-weight="600">'
        f"{esc(label[:20])}</text>"
        f'<text x="{_W / 2}" y="31" text-anchor="middle" font-size="10" fill="#555">'
        f"{esc(shapes[:24])}</text></g>"
    )


def _label(node: dict) -> str:
    if node["kind"] == "group":
        return f"{node['module']} ({node['count']})"
    if node["kind"] == "tensor":
        return "param" if node.get("requires_grad") else "tensor"
    return node["op"] or node.get("grad_fn") or node["kind"]


def _number(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float | int) else str(value)


def _shape(shape: list | None) -> str:
    if shape is None:
        return "?"
    return "x".join(map(str, shape)) or "scalar"
