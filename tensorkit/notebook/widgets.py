"""The graph widget (anywidget) and the static SVG fallback that every widget shares.

The front ends are ES modules bundled from ``widgets/src`` into ``static/`` (no node needed at
install time). Each widget's state is its data model as synced traits:

- :class:`GraphWidget`: ``graph`` (the :func:`~tensorkit.notebook.build_graph` model),
  ``selected`` (a node id), ``collapsed`` (module paths), ``color_by``, ``show_backward``.
- :class:`~tensorkit.notebook.stepper_widget.StepperWidget` (its own module).

Where widgets cannot run (a static notebook render, nbviewer), widgets also offer an
SVG of the graph computed here (``_repr_mimebundle_``'s ``text/html``), folded, coloured and
with the legend as the widget shows it.
"""

from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from ..autograd.tape import Tape
from ..tensor import Tensor
from .graph_model import build_graph
from .grouping import fold_paths
from .layout import layer_bands

__all__ = ["COLOR_MODES", "GraphWidget", "graph_svg", "show"]

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
_RECORDS = {"forward_time": "time_ns", "bytes": "alloc_bytes"}  # models made before metrics


class _FallbackHTML:
    """Adds the static SVG of ``self.graph`` as ``text/html`` next to the widget view."""

    graph: dict

    def _repr_html_(self) -> str:
        return graph_svg(self.graph, **self._svg_options())

    def _svg_options(self) -> dict:
        return {}

    def _repr_mimebundle_(self, **kwargs: Any) -> dict:
        bundle = super()._repr_mimebundle_(**kwargs) or {}  # type: ignore[misc]
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle, None)
        data = {**data, "text/html": self._repr_html_()}
        return data if metadata is None else (data, metadata)


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

    def _svg_options(self) -> dict:
        return {
            "collapsed": self.collapsed,
            "color_by": self.color_by,
            "show_backward": self.show_backward,
        }


def show(source: Tape | Tensor, **kwargs: Any) -> GraphWidget:
    """A :class:`GraphWidget` of a Tape's ops (with the gradient ops the tape recorded, as a
    band below, unless ``include_backward=False``) or of a tensor's backward graph;
    ``kwargs`` go to :func:`~tensorkit.notebook.build_graph`."""
    if isinstance(source, Tape):
        kwargs.setdefault("include_backward", True)
    return GraphWidget(graph=build_graph(source, **kwargs))


# ---------------------------------------------------------------------- static fallback
_W, _H, _GAP_X, _GAP_Y, _PAD, _BAND_GAP, _LEGEND = 132, 40, 56, 30, 12, 70, 34
_NO_DATA = "#eeeeee"
_LOG_SPAN = 100


def graph_svg(
    graph: dict,
    *,
    collapsed: list[str] | None = None,
    color_by: str = "none",
    show_backward: bool = True,
) -> str:
    """A self-contained SVG (in a div) of the graph: the ``collapsed`` module paths folded
    (by default the model's ``collapsed``), nodes by layers, one band below the other, edges
    as curves, dashed links to gradient ops; one ``<g class="tk-node ...">`` per node, with
    a hover title; nodes coloured ``color_by`` with a legend above the graph."""
    nodes, edges, links = _visible(graph, collapsed, show_backward)
    colors, legend = _colors(nodes, color_by)
    top = _PAD + (_LEGEND if legend else 0)
    place, band_tops, width, height = _place_bands(layer_bands(nodes, edges)["bands"], top)
    parts = [
        f'<div class="tk-static"><svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif">'
    ]
    if legend:
        parts.append(_legend_svg(legend))
    parts += [
        f'<text class="tk-band-label" x="{_PAD}" y="{y - 24}" font-size="13" fill="#8e6bbf">'
        f"{'gradient ops (backward)' if band == 1 else f'gradient ops, order {band}'}</text>"
        for band, y in enumerate(band_tops)
        if band
    ]
    edges = [e for e in edges if e["source"] in place and e["target"] in place]
    arity: dict[str, int] = {}
    for edge in edges:
        arity[edge["target"]] = max(arity.get(edge["target"], 0), edge["position"] + 1)
    band = {n["id"]: n.get("band", 0) for n in nodes}
    parts += [_edge_svg(edge, place, arity[edge["target"]], band) for edge in edges]
    parts += [_link_svg(link, place) for link in links if {*link.values()} <= place.keys()]
    parts += [_node_svg(node, place[node["id"]], colors.get(node["id"])) for node in nodes]
    parts.append("</svg></div>")
    return "".join(parts)


def _place_bands(
    bands: list[list[list[str]]], top: float
) -> tuple[dict[str, tuple[float, float]], list[float], float, float]:
    """Top-left corner of each node (x by depth, right to left in gradient bands, y by order
    with each layer centred), the top of each band, and the drawing's width and height."""
    columns = max((len(layers) for layers in bands), default=0)
    step = _W + _GAP_X
    place: dict[str, tuple[float, float]] = {}
    band_tops = []
    for band, layers in enumerate(bands):
        band_tops.append(top)
        tallest = max((len(layer) for layer in layers), default=0)
        for depth, layer in enumerate(layers):
            offset = (tallest - len(layer)) * (_H + _GAP_Y) / 2
            x = _PAD + (columns - 1 - depth if band else depth) * step
            for i, node_id in enumerate(layer):
                place[node_id] = (x, top + offset + i * (_H + _GAP_Y))
        top += tallest * (_H + _GAP_Y) - _GAP_Y + _BAND_GAP
    width = 2 * _PAD + max(columns * step - _GAP_X, 0)
    return place, band_tops, width, top - _BAND_GAP + _PAD


def _visible(
    graph: dict, collapsed: list[str] | None, show_backward: bool
) -> tuple[list[dict], list[dict], list[dict]]:
    """The graph's nodes, edges and links with bands hidden and modules folded."""
    nodes = graph.get("nodes", [])
    if not show_backward:
        nodes = [n for n in nodes if not n.get("band")]
    kept = {n["id"] for n in nodes}
    edges = [e for e in graph.get("edges", []) if e["source"] in kept and e["target"] in kept]
    links = [lk for lk in graph.get("links", []) if {lk["source"], lk["target"]} <= kept]
    paths = graph.get("collapsed", []) if collapsed is None else collapsed
    folded = {p for p in paths if p in graph.get("groups", {})}
    if not folded:
        return nodes, edges, links
    nodes, edges = fold_paths(nodes, edges, folded, graph["groups"])
    owner = {m: n["id"] for n in nodes for m in n.get("members", ())}
    moved = {
        (owner.get(lk["source"], lk["source"]), owner.get(lk["target"], lk["target"]))
        for lk in links
    }
    links = [{"source": a, "target": b} for a, b in sorted(moved) if a != b]
    return nodes, edges, links


def _measure(node: dict, mode: str) -> float | None:
    if mode == "nan":
        summary = node.get("summary")
        return None if not summary else float(bool(summary.get("nan") or summary.get("inf")))
    value = node.get("metrics", {}).get(COLOR_MODES[mode][2])
    if value is None and mode in _RECORDS:
        value = node.get("records", {}).get(_RECORDS[mode])
    return value if isinstance(value, int | float) and math.isfinite(value) else None


def _colors(nodes: list[dict], color_by: str) -> tuple[dict[str, str], dict | None]:
    """Fills per node id and the legend (as the front end's format.js nodeColors)."""
    mode = _ALIASES.get(color_by, color_by)
    if mode not in COLOR_MODES:
        raise ValueError(f"color_by must be one of {', '.join([*COLOR_MODES, *_ALIASES])}")
    if mode == "none":
        return {}, None
    measured = {n["id"]: _measure(n, mode) for n in nodes}
    values = [v for v in measured.values() if v is not None]
    legend: dict[str, Any] = {"label": COLOR_MODES[mode][0], "unit": COLOR_MODES[mode][1]}
    legend["missing"] = len(measured) - len(values)
    if mode == "nan" or not values:
        scale = {"min": 0.0, "max": 1.0, "log": False}
        legend["swatches"] = mode == "nan"
    else:
        scale = _scale(values)
        legend.update(scale)
    colors = {
        i: _NO_DATA if v is None else _weight_color(_weight(scale, v)) for i, v in measured.items()
    }
    return colors, legend


def _scale(values: list[float]) -> dict:
    top = max(values)
    positive = [v for v in values if v > 0]
    if top > 0 and top / min(positive) >= _LOG_SPAN:
        return {"min": min(positive), "max": top, "log": True}
    return {"min": min(0.0, *values), "max": top, "log": False}


def _weight(scale: dict, value: float) -> float:
    low, high = scale["min"], scale["max"]
    if high <= low:
        return 1.0
    if scale["log"]:
        w = (math.log(max(value, low)) - math.log(low)) / (math.log(high) - math.log(low))
    else:
        w = (value - low) / (high - low)
    return min(1.0, max(0.0, w))


def _weight_color(weight: float) -> str:
    return f"hsl({round(120 - 120 * weight)}, 70%, 80%)"


def _legend_svg(legend: dict) -> str:
    """Title, then a colour bar from min to max with units (or finite / NaN swatches), then
    the "no data" swatch."""
    esc = html.escape
    x, y = _PAD, _PAD
    parts = [
        f'<g class="tk-legend" font-size="11"><text x="{x}" y="{y + 11}" font-weight="600">'
        f"{esc(legend['label'])}</text>"
    ]
    x += 7 * len(legend["label"]) + 12
    if legend.get("swatches"):
        items = [("finite", _weight_color(0)), ("NaN / inf", _weight_color(1))]
    elif "max" in legend:
        stops = "".join(
            f'<stop offset="{w}" stop-color="{_weight_color(w)}"/>' for w in (0, 0.25, 0.5, 0.75, 1)
        )
        low = _measure_text(legend["min"], legend["unit"])
        high = _measure_text(legend["max"], legend["unit"])
        parts.append(
            f'<defs><linearGradient id="tk-legend-scale">{stops}</linearGradient></defs>'
            f'<text class="tk-legend-min" x="{x + 56}" y="{y + 11}" text-anchor="end">'
            f"{esc(low)}</text>"
            f'<rect x="{x + 60}" y="{y + 1}" width="120" height="12" '
            f'fill="url(#tk-legend-scale)" stroke="#ccc"/>'
            f'<text class="tk-legend-max" x="{x + 186}" y="{y + 11}">{esc(high)}'
            f"{' (log scale)' if legend['log'] else ''}</text>"
        )
        x += 300
        items = []
    else:
        parts.append(f'<text x="{x}" y="{y + 11}" fill="#777">no node has this measure</text>')
        x += 170
        items = []
    items.append((f"no data ({legend['missing']})", _NO_DATA))
    for text, color in items:
        parts.append(
            f'<rect x="{x}" y="{y + 1}" width="12" height="12" fill="{color}" stroke="#ccc"/>'
            f'<text x="{x + 16}" y="{y + 11}">{esc(text)}</text>'
        )
        x += 24 + 7 * len(text)
    parts.append("</g>")
    return "".join(parts)


def _measure_text(value: float, unit: str) -> str:
    """Times (in ns) with SI prefixes, bytes in binary units, other numbers in 4 digits."""
    if unit == "B":
        for name in ("B", "KiB", "MiB"):
            if abs(value) < 1024:
                return f"{value:.4g} {name}"
            value /= 1024
        return f"{value:.4g} GiB"
    if unit == "s":
        seconds = value * 1e-9
        for factor, prefix in ((1, ""), (1e-3, "m"), (1e-6, "µ")):
            if abs(seconds) >= factor:
                return f"{seconds / factor:.4g} {prefix}s"
        return f"{value:.4g} ns"
    return f"{value:.4g}"


def _link_svg(link: dict, place: dict) -> str:
    """A dashed curve from the bottom of an op to the top of a gradient op its rule ran."""
    (x1, y1), (x2, y2) = place[link["source"]], place[link["target"]]
    x1, y1, x2 = x1 + _W / 2, y1 + _H, x2 + _W / 2
    bend = max(20, abs(y2 - y1) / 2)
    path = f"M{x1},{y1} C{x1},{y1 + bend} {x2},{y2 - bend} {x2},{y2}"
    return (
        f'<path class="tk-link" d="{path}" fill="none" stroke="#b07ad6" '
        f'stroke-dasharray="5 4" data-source="{html.escape(link["source"])}" '
        f'data-target="{html.escape(link["target"])}"/>'
    )


def _edge_svg(edge: dict, place: dict, arity: int, band: dict[str, int]) -> str:
    """A curve from the source's right side to the target's slot for this argument (left
    side to right side in a right-to-left gradient band); faint between bands."""
    (x1, y1), (x2, y2) = place[edge["source"]], place[edge["target"]]
    inside = band[edge["source"]] == band[edge["target"]]
    sign = -1 if inside and band[edge["source"]] else 1
    if sign > 0:
        x1 += _W
    else:
        x2 += _W
    y1, y2 = y1 + _H / 2, y2 + _H * (edge["position"] + 1) / (arity + 1)
    bend = sign * max(20, sign * (x2 - x1) / 2)
    path = f"M{x1},{y1} C{x1 + bend},{y1} {x2 - bend},{y2} {x2},{y2}"
    ends = (
        f'data-source="{html.escape(edge["source"])}" data-target="{html.escape(edge["target"])}"'
    )
    style = (
        'class="tk-edge" stroke="#999"'
        if inside
        else ('class="tk-edge tk-edge-cross" stroke="#ccc" stroke-dasharray="2 3"')
    )
    return f'<path {style} d="{path}" fill="none" {ends}/>'


def _node_svg(node: dict, at: tuple[float, float], color: str | None = None) -> str:
    kind = node["kind"]
    op_like = kind in ("op", "grad_fn")
    label = _label(node)
    shapes = ", ".join(_shape(s) for s in (node["shapes"]["out"] or []))
    title = f"{node['id']}: {label} -> {shapes}"
    if node.get("summary"):
        stats = ", ".join(f"{k} {_number(node['summary'].get(k))}" for k in ("min", "max", "mean"))
        title += f"\n{stats}"
    fill, stroke = ("#e8f0fb", "#4a6fa5") if op_like else ("#eef7ee", "#5b8c5a")
    if node.get("band"):
        fill, stroke = "#f6f0fc", "#8e6bbf"
    fill = color or fill
    esc = html.escape
    band = " tk-backward" if node.get("band") else ""
    return (
        f'<g class="tk-node tk-{esc(kind)}{band}" data-id="{esc(node["id"])}" '
        f'transform="translate({at[0]},{at[1]})"><title>{esc(title)}</title>'
        f'<rect width="{_W}" height="{_H}" rx="{8 if op_like else _H / 2}" fill="{fill}" '
        f'stroke="{stroke}"/>'
        f'<text x="{_W / 2}" y="16" text-anchor="middle" font-size="12" font-weight="600">'
        f"{esc(label[:20])}</text>"
        f'<text x="{_W / 2}" y="31" text-anchor="middle" font-size="10" fill="#555">'
        f"{esc(shapes[:24])}</text></g>"
    )


def _label(node: dict) -> str:
    """The model's ``label`` (recordings from before labels: the op, "param" or "tensor")."""
    label = node.get("label")
    if node["kind"] == "group":
        return f"{label or node['module']} ({node['count']})"
    if label:
        return label
    if node["kind"] == "tensor":
        return "param" if node.get("requires_grad") else "tensor"
    return node["op"] or node.get("grad_fn") or node["kind"]


def _number(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float | int) else str(value)


def _shape(shape: list | None) -> str:
    if shape is None:
        return "?"
    return "x".join(map(str, shape)) or "scalar"
