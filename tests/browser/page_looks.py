"""What the looks tests read from a page: the node details panel's computed layout, a
widget's colours beside the host's theme variables, and the contrast of node text."""

from __future__ import annotations

import itertools
from typing import Any

# Each row of the details panel: its key's and its value's boxes (left, right, top, bottom).
DETAILS_BOXES_JS = """(panel) => [...panel.querySelectorAll('.tk-details-row')].map((row) => {
  const box = (el) => { const r = el.getBoundingClientRect();
    return [r.left, r.right, r.top, r.bottom]; };
  const key = row.querySelector('.tk-details-key');
  const value = row.querySelector('.tk-details-value');
  return { key: key.textContent, k: box(key), v: box(value) };
})"""

# The widget's background and text colours, JupyterLab's layout-color0 / ui-font-color0 as
# the browser resolves them in the same place, and an op node's fill and text colours.
COLOURS_JS = """(widget) => {
  const probe = document.createElement('div');
  probe.style.background = 'var(--jp-layout-color0, rgb(255, 255, 255))';
  probe.style.color = 'var(--jp-ui-font-color0, rgb(0, 0, 0))';
  widget.parentElement.append(probe);
  const host = getComputedStyle(probe);
  const own = getComputedStyle(widget);
  const node = widget.querySelector('g.tk-node.tk-op, g.tk-node:not(.tk-tensor)');
  const out = { bg: own.backgroundColor, fg: own.color, hostBg: host.backgroundColor,
    hostFg: host.color, nodeFill: getComputedStyle(node.querySelector('rect')).fill,
    nodeText: getComputedStyle(node.querySelector('text')).fill };
  probe.remove();
  return out;
}"""

SLACK_PX = 1.5  # rounding of sub-pixel layout


def check_details_layout(panel: Any) -> list[str]:
    """Assert the details panel reads as two columns: every key starts at one left edge,
    every value at another to the right of the widest key, each value on its key's line,
    rows one under the other. Returns the keys shown."""
    rows = panel.evaluate(DETAILS_BOXES_JS)
    assert len(rows) >= 4, rows
    key_lefts = {round(r["k"][0]) for r in rows}
    value_lefts = [r["v"][0] for r in rows]
    assert max(key_lefts) - min(key_lefts) <= SLACK_PX, rows
    assert max(value_lefts) - min(value_lefts) <= SLACK_PX, rows
    widest_key = max(r["k"][1] for r in rows)
    assert min(value_lefts) >= widest_key + 4 - SLACK_PX, rows  # a gap, no overlap
    for row in rows:
        assert abs(row["k"][2] - row["v"][2]) <= SLACK_PX, row  # same line
        assert row["v"][1] > row["v"][0] and row["k"][1] > row["k"][0], row
    for above, below in itertools.pairwise(rows):
        assert below["k"][2] >= max(above["k"][3], above["v"][3]) - SLACK_PX, (above, below)
    return [r["key"] for r in rows]


def rgb(css: str) -> tuple[float, ...]:
    """'rgb(1, 2, 3)' or 'rgba(1, 2, 3, 1)' as channels in [0, 1] (alpha dropped)."""
    inside = css[css.index("(") + 1 : css.index(")")].replace("/", ",").replace(" ", ",")
    channels = [float(c) for c in inside.split(",") if c][:3]
    return tuple(c / 255 for c in channels)


def luminance(css: str) -> float:
    """WCAG relative luminance of a CSS colour."""

    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(c) for c in rgb(css))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(first: str, second: str) -> float:
    """WCAG contrast ratio of two CSS colours (1 to 21)."""
    high, low = sorted((luminance(first), luminance(second)), reverse=True)
    return (high + 0.05) / (low + 0.05)
